"""The public path of :mod:`batonflow.core.instruments.tracing` (its code moved into the ``instruments`` room).

Everything public there is importable from here under the same names, and its classes and
functions say ``__module__ == "batonflow.core.tracing"``: stored runs and pickles name them so.
"""

from .instruments.instrument import (
    EventEmitted as EventEmitted,
)
from .instruments.instrument import (
    EventsJoined as EventsJoined,
)
from .instruments.instrument import (
    Instrument as Instrument,
)
from .instruments.instrument import (
    RunFinished as RunFinished,
)
from .instruments.instrument import (
    RunStarted as RunStarted,
)
from .instruments.instrument import (
    StepFinished as StepFinished,
)
from .instruments.instrument import (
    StepStarted as StepStarted,
)
from .instruments.tracing import (
    ATTR_ATTEMPT as ATTR_ATTEMPT,
)
from .instruments.tracing import (
    ATTR_ERROR_TYPE as ATTR_ERROR_TYPE,
)
from .instruments.tracing import (
    ATTR_EXECUTION as ATTR_EXECUTION,
)
from .instruments.tracing import (
    ATTR_INPUT as ATTR_INPUT,
)
from .instruments.tracing import (
    ATTR_LINK_KIND as ATTR_LINK_KIND,
)
from .instruments.tracing import (
    ATTR_OPERATION as ATTR_OPERATION,
)
from .instruments.tracing import (
    ATTR_OUTPUT as ATTR_OUTPUT,
)
from .instruments.tracing import (
    ATTR_PAUSED as ATTR_PAUSED,
)
from .instruments.tracing import (
    ATTR_RESUMED as ATTR_RESUMED,
)
from .instruments.tracing import (
    ATTR_RUN_ID as ATTR_RUN_ID,
)
from .instruments.tracing import (
    ATTR_RUN_STATUS as ATTR_RUN_STATUS,
)
from .instruments.tracing import (
    ATTR_SENT as ATTR_SENT,
)
from .instruments.tracing import (
    ATTR_STEP as ATTR_STEP,
)
from .instruments.tracing import (
    ATTR_WILL_RETRY as ATTR_WILL_RETRY,
)
from .instruments.tracing import (
    ATTR_WORKFLOW as ATTR_WORKFLOW,
)
from .instruments.tracing import (
    TRACER_NAME as TRACER_NAME,
)
from .instruments.tracing import (
    GlobalProviderInstrument as GlobalProviderInstrument,
)
from .instruments.tracing import (
    OpenTelemetryInstrument as OpenTelemetryInstrument,
)
from .instruments.tracing import __all__ as __all__
from .instruments.tracing import (
    current_tracer as current_tracer,
)
from .instruments.tracing import (
    tool_span as tool_span,
)
