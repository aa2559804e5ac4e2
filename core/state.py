"""The public path of :mod:`batonflow.core.data.state` (its code moved into the ``data`` room).

Everything public there is importable from here under the same names, and its classes and
functions say ``__module__ == "batonflow.core.state"``: stored runs and pickles name them so.
"""

from .data._state_edit import (
    RUNNING_TASKS as RUNNING_TASKS,
)
from .data._state_edit import (
    StateEdit as StateEdit,
)
from .data._state_edit import (
    TurnLock as TurnLock,
)
from .data._state_edit import (
    copy_state as copy_state,
)
from .data._state_paths import (
    Missing as Missing,
)
from .data._state_paths import (
    assign as assign,
)
from .data._state_paths import (
    display as display,
)
from .data._state_paths import (
    missing_message as missing_message,
)
from .data._state_paths import (
    step_into as step_into,
)
from .data._state_paths import (
    validation_error as validation_error,
)
from .data._state_paths import (
    walk as walk,
)
from .data._state_serde import (
    FORMAT_VERSION as FORMAT_VERSION,
)
from .data._state_serde import (
    decode_state as decode_state,
)
from .data._state_serde import (
    encode_typed as encode_typed,
)
from .data._state_serde import (
    encode_untyped as encode_untyped,
)
from .data._state_types import (
    UNSET as UNSET,
)
from .data._state_types import (
    DictState as DictState,
)
from .data._state_types import (
    check_state_type as check_state_type,
)
from .data._state_types import (
    merge_parent_state as merge_parent_state,
)
from .data._state_types import (
    most_derived_state_type as most_derived_state_type,
)
from .data.serialization import (
    BaseSerializer as BaseSerializer,
)
from .data.serialization import (
    JsonSerializer as JsonSerializer,
)
from .data.serialization import (
    register_type as register_type,
)
from .data.serialization import (
    serialize_at as serialize_at,
)
from .data.state import (
    InMemoryStateStore as InMemoryStateStore,
)
from .data.state import (
    S as S,
)
from .data.state import (
    StateStore as StateStore,
)
from .data.state import __all__ as __all__
from .errors import (
    ContextSerdeError as ContextSerdeError,
)
from .errors import (
    StateKeyError as StateKeyError,
)
from .errors import (
    StateValidationError as StateValidationError,
)
from .errors import (
    WorkflowConfigurationError as WorkflowConfigurationError,
)
