"""The public path of :mod:`batonflow.core.durable.checkpoints` (its code moved into the ``durable`` room).

Everything public there is importable from here under the same names, and its classes and
functions say ``__module__ == "batonflow.core.checkpoints"``: stored runs and pickles name them so.
"""

from .data.events import (
    Event as Event,
)
from .data.events import (
    StartEvent as StartEvent,
)
from .data.serialization import (
    BaseSerializer as BaseSerializer,
)
from .data.serialization import (
    JsonSerializer as JsonSerializer,
)
from .durable._budget import (
    Budget as Budget,
)
from .durable._memory_store import (
    InMemoryCheckpointStore as InMemoryCheckpointStore,
)
from .durable._records import (
    STATUSES as STATUSES,
)
from .durable._records import (
    Checkpoint as Checkpoint,
)
from .durable._records import (
    InboxItem as InboxItem,
)
from .durable._records import (
    RunRecord as RunRecord,
)
from .durable._records import (
    StoredEvent as StoredEvent,
)
from .durable._sqlite_store import (
    SqliteCheckpointStore as SqliteCheckpointStore,
)
from .durable._store import (
    CheckpointStore as CheckpointStore,
)
from .durable._store import (
    encode as encode,
)
from .durable._store import (
    event_body as event_body,
)
from .durable.checkpoints import (
    CANCEL_REQUEST as CANCEL_REQUEST,
)
from .durable.checkpoints import (
    RunInfo as RunInfo,
)
from .durable.checkpoints import (
    WorkflowCheckpointer as WorkflowCheckpointer,
)
from .durable.checkpoints import __all__ as __all__
from .engine._snapshot import (
    register_workflow as register_workflow,
)
from .errors import (
    CheckpointError as CheckpointError,
)
from .errors import (
    ContextSerdeError as ContextSerdeError,
)
from .errors import (
    SerializationError as SerializationError,
)
