"""Module alias of :mod:`batonflow.core.retry` under LlamaIndex's name (``workflows.retry_policy``).

Lets ported code keep ``from ....retry_policy import ConstantDelayRetryPolicy`` with only the
package prefix changed to ``batonflow.core``.
"""

from __future__ import annotations

from .retry import *  # noqa: F403
from .retry import __all__ as __all__
