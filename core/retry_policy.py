"""LlamaIndex's import path for the retry vocabulary (``workflows.retry_policy``).

Ported code keeps ``from ....retry_policy import retry_policy, wait_fixed`` with only the package
prefix changed to ``batonflow.core``. It holds the same names as :mod:`batonflow.core.retry`.

``batonflow.core.retry_policy`` the *attribute* stays the :func:`retry_policy` function:
``batonflow.core`` imports this module before binding the function, so a later
``import batonflow.core.retry_policy`` finds it loaded and does not rebind the attribute.
"""

from __future__ import annotations

from .retrying.retry import *  # noqa: F403
from .retrying.retry import __all__ as __all__
