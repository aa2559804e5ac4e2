"""The public path of :mod:`batonflow.core.engine.context` (its code moved into the ``engine`` room).

Everything public there is importable from here under the same names, and its classes and
functions say ``__module__ == "batonflow.core.context"``: stored runs and pickles name them so.
"""

from .data.events import (
    Event as Event,
)
from .data.events import (
    StopEvent as StopEvent,
)
from .data.events import (
    loaded_class as loaded_class,
)
from .data.serialization import (
    BaseSerializer as BaseSerializer,
)
from .data.serialization import (
    JsonPickleSerializer as JsonPickleSerializer,
)
from .data.serialization import (
    JsonSerializer as JsonSerializer,
)
from .data.serialization import (
    PickleSerializer as PickleSerializer,
)
from .data.state import (
    InMemoryStateStore as InMemoryStateStore,
)
from .engine._collect import (
    repeat_type as repeat_type,
)
from .engine._lanes import (
    RUNNING as RUNNING,
)
from .engine._runtime import (
    CURRENT_EXECUTION as CURRENT_EXECUTION,
)
from .engine._runtime import (
    RunStatus as RunStatus,
)
from .engine._runtime import (
    current_execution as current_execution,
)
from .engine._snapshot import (
    FromDict as FromDict,
)
from .engine._snapshot import (
    SnapshotDict as SnapshotDict,
)
from .engine._snapshot import (
    dump as dump,
)
from .engine._snapshot import (
    restore_into as restore_into,
)
from .engine._stream import (
    StreamQueue as StreamQueue,
)
from .engine._waiters import (
    type_name as type_name,
)
from .engine.context import (
    Context as Context,
)
from .engine.context import (
    StateT as StateT,
)
from .engine.context import (
    Waiting as Waiting,
)
from .engine.context import __all__ as __all__
from .engine.graph import (
    CALLER_EVENTS as CALLER_EVENTS,
)
from .errors import (
    ContextStateError as ContextStateError,
)
from .errors import (
    WorkflowRuntimeError as WorkflowRuntimeError,
)
from .errors import (
    WorkflowStepDoesNotExistError as WorkflowStepDoesNotExistError,
)
from .retrying.retry import (
    RetryInfo as RetryInfo,
)
