"""The public path of :mod:`batonflow.core.data.serialization` (its code moved into the ``data`` room).

Everything public there is importable from here under the same names, and its classes and
functions say ``__module__ == "batonflow.core.serialization"``: stored runs and pickles name them so.
"""

from .data._json_values import (
    PLANS as PLANS,
)
from .data._json_values import (
    SCALAR_DECODERS as SCALAR_DECODERS,
)
from .data._json_values import (
    TAG as TAG,
)
from .data._json_values import (
    compact_json as compact_json,
)
from .data._json_values import (
    encode_scalar as encode_scalar,
)
from .data._json_values import (
    json_base as json_base,
)
from .data._json_values import (
    model_plan as model_plan,
)
from .data._json_values import (
    stable_order as stable_order,
)
from .data._type_registry import (
    BUILTIN_EVENTS as BUILTIN_EVENTS,
)
from .data._type_registry import (
    KNOWN as KNOWN,
)
from .data._type_registry import (
    TRUSTED_MODULES as TRUSTED_MODULES,
)
from .data._type_registry import (
    dotted as dotted,
)
from .data._type_registry import (
    qualified_name as qualified_name,
)
from .data._type_registry import (
    register_type as register_type,
)
from .data._type_registry import (
    resolve as resolve,
)
from .data.events import (
    Event as Event,
)
from .data.events import (
    UnreconstructedException as UnreconstructedException,
)
from .data.events import (
    exception_from_data as exception_from_data,
)
from .data.events import (
    exception_to_data as exception_to_data,
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
from .data.serialization import __all__ as __all__
from .data.serialization import (
    deserialize_event as deserialize_event,
)
from .data.serialization import (
    serialize_at as serialize_at,
)
from .data.serialization import (
    serialize_event as serialize_event,
)
from .errors import (
    ContextSerdeError as ContextSerdeError,
)
from .errors import (
    SerializationError as SerializationError,
)
