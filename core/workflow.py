"""The public path of :mod:`batonflow.core.engine.workflow` (its code moved into the ``engine`` room).

Everything public there is importable from here under the same names, and its classes and
functions say ``__module__ == "batonflow.core.workflow"``: stored runs and pickles name them so.
"""

from .data.events import (
    Event as Event,
)
from .data.events import (
    StartEvent as StartEvent,
)
from .data.events import (
    StopEvent as StopEvent,
)
from .engine._calls import (
    make_call as make_call,
)
from .engine._runtime import (
    Run as Run,
)
from .engine._runtime import (
    RunStatus as RunStatus,
)
from .engine._runtime import (
    current_execution as current_execution,
)
from .engine._start_event import (
    build_start_event as build_start_event,
)
from .engine._validate_resources import (
    resource_problems as resource_problems,
)
from .engine.context import (
    Context as Context,
)
from .engine.graph import (
    Graph as Graph,
)
from .engine.graph import (
    check_entry_and_exit as check_entry_and_exit,
)
from .engine.graph import (
    compile_graph as compile_graph,
)
from .engine.handler import (
    WorkflowHandler as WorkflowHandler,
)
from .engine.hooks import (
    StepBoundary as StepBoundary,
)
from .engine.hooks import (
    StepListener as StepListener,
)
from .engine.resource import (
    ResourceManager as ResourceManager,
)
from .engine.step import (
    STEP_ATTR as STEP_ATTR,
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
from .engine.step import (
    build_spec as build_spec,
)
from .engine.step import (
    check_graph_check_names as check_graph_check_names,
)
from .engine.step import (
    is_step as is_step,
)
from .engine.workflow import (
    Workflow as Workflow,
)
from .engine.workflow import __all__ as __all__
from .errors import (
    ContextStateError as ContextStateError,
)
from .errors import (
    StartEventError as StartEventError,
)
from .errors import (
    WorkflowConfigurationError as WorkflowConfigurationError,
)
from .errors import (
    WorkflowRuntimeError as WorkflowRuntimeError,
)
from .errors import (
    WorkflowValidationError as WorkflowValidationError,
)
from .instruments.instrument import (
    Instrument as Instrument,
)
from .instruments.instrument import (
    InstrumentSet as InstrumentSet,
)
from .instruments.instrument import (
    PrintingInstrument as PrintingInstrument,
)
from .instruments.instrument import (
    global_instruments as global_instruments,
)
