"""The public path of :mod:`batonflow.core.data.events` (its code moved into the ``data`` room).

Everything public there is importable from here under the same names, and its classes and
functions say ``__module__ == "batonflow.core.events"``: stored runs and pickles name them so.
"""

from .data.events import (
    ChildRunEvent as ChildRunEvent,
)
from .data.events import (
    CollectedEvents as CollectedEvents,
)
from .data.events import (
    CollectionReleaseEvent as CollectionReleaseEvent,
)
from .data.events import (
    Event as Event,
)
from .data.events import (
    HumanResponseEvent as HumanResponseEvent,
)
from .data.events import (
    IdleReleasedEvent as IdleReleasedEvent,
)
from .data.events import (
    InputRequiredEvent as InputRequiredEvent,
)
from .data.events import (
    InternalDispatchEvent as InternalDispatchEvent,
)
from .data.events import (
    JoinedEvents as JoinedEvents,
)
from .data.events import (
    SerializableException as SerializableException,
)
from .data.events import (
    SerializableOptionalException as SerializableOptionalException,
)
from .data.events import (
    StartEvent as StartEvent,
)
from .data.events import (
    StepFailedEvent as StepFailedEvent,
)
from .data.events import (
    StepRestarted as StepRestarted,
)
from .data.events import (
    StepState as StepState,
)
from .data.events import (
    StepStateChanged as StepStateChanged,
)
from .data.events import (
    StopEvent as StopEvent,
)
from .data.events import (
    UnhandledEvent as UnhandledEvent,
)
from .data.events import (
    UnreconstructedException as UnreconstructedException,
)
from .data.events import (
    WorkflowCancelledEvent as WorkflowCancelledEvent,
)
from .data.events import (
    WorkflowFailedEvent as WorkflowFailedEvent,
)
from .data.events import (
    WorkflowIdleEvent as WorkflowIdleEvent,
)
from .data.events import (
    WorkflowTimedOutEvent as WorkflowTimedOutEvent,
)
from .data.events import __all__ as _events_all
from .data.events import (
    exception_from_data as exception_from_data,
)
from .data.events import (
    exception_to_data as exception_to_data,
)
from .data.events import (
    loaded_class as loaded_class,
)
from .data.serialization import (
    SerializableEvent as SerializableEvent,
)
from .data.serialization import (
    SerializableOptionalEvent as SerializableOptionalEvent,
)

# Events inside events are written by the serializer: those field types live beside it.
__all__ = sorted([*_events_all, "SerializableEvent", "SerializableOptionalEvent"])
