"""The public path of :mod:`batonflow.core.engine.hooks` (its code moved into the ``engine`` room).

Everything public there is importable from here under the same names, and its classes and
functions say ``__module__ == "batonflow.core.hooks"``: stored runs and pickles name them so.
"""

from .engine.hooks import (
    StepBoundary as StepBoundary,
)
from .engine.hooks import (
    StepListener as StepListener,
)
from .engine.hooks import __all__ as __all__
