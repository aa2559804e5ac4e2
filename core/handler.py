"""The public path of :mod:`batonflow.core.engine.handler` (its code moved into the ``engine`` room).

Everything public there is importable from here under the same names, and its classes and
functions say ``__module__ == "batonflow.core.handler"``: stored runs and pickles name them so.
"""

from .data.events import (
    Event as Event,
)
from .data.events import (
    StopEvent as StopEvent,
)
from .engine._runtime import (
    RunStatus as RunStatus,
)
from .engine.handler import (
    WorkflowHandler as WorkflowHandler,
)
from .engine.handler import __all__ as __all__
from .errors import (
    ContextStateError as ContextStateError,
)
