"""The public path of :mod:`batonflow.core.engine.graph` (its code moved into the ``engine`` room).

Everything public there is importable from here under the same names, and its classes and
functions say ``__module__ == "batonflow.core.graph"``: stored runs and pickles name them so.
"""

from .data._state_types import (
    most_derived_state_type as most_derived_state_type,
)
from .data.events import (
    Event as Event,
)
from .data.events import (
    HumanResponseEvent as HumanResponseEvent,
)
from .data.events import (
    InputRequiredEvent as InputRequiredEvent,
)
from .data.events import (
    StartEvent as StartEvent,
)
from .data.events import (
    StepFailedEvent as StepFailedEvent,
)
from .data.events import (
    StopEvent as StopEvent,
)
from .engine.graph import (
    CALLER_EVENTS as CALLER_EVENTS,
)
from .engine.graph import (
    EXTERNAL_EVENTS as EXTERNAL_EVENTS,
)
from .engine.graph import (
    Graph as Graph,
)
from .engine.graph import (
    StepShape as StepShape,
)
from .engine.graph import __all__ as __all__
from .engine.graph import (
    catch_error_problems as catch_error_problems,
)
from .engine.graph import (
    check_entry_and_exit as check_entry_and_exit,
)
from .engine.graph import (
    compile_graph as compile_graph,
)
from .engine.graph import (
    workflow_graph as workflow_graph,
)
from .engine.step import (
    ParamKind as ParamKind,
)
from .engine.step import (
    StepParam as StepParam,
)
from .engine.step import (
    StepSpec as StepSpec,
)
from .errors import (
    StateTypeError as StateTypeError,
)
from .errors import (
    WorkflowConfigurationError as WorkflowConfigurationError,
)
from .errors import (
    WorkflowValidationError as WorkflowValidationError,
)
