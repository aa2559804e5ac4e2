"""The public path of :mod:`batonflow.core.engine.step` (its code moved into the ``engine`` room).

Everything public there is importable from here under the same names, and its classes and
functions say ``__module__ == "batonflow.core.step"``: stored runs and pickles name them so.
"""

from .engine._step_spec import (
    STEP_ATTR as STEP_ATTR,
)
from .engine._step_spec import (
    ParamKind as ParamKind,
)
from .engine._step_spec import (
    StepOptions as StepOptions,
)
from .engine._step_spec import (
    StepParam as StepParam,
)
from .engine._step_spec import (
    StepSpec as StepSpec,
)
from .engine._step_spec import (
    build_spec as build_spec,
)
from .engine._step_spec import (
    check_annotations_present as check_annotations_present,
)
from .engine.step import (
    GRAPH_CHECKS as GRAPH_CHECKS,
)
from .engine.step import (
    F as F,
)
from .engine.step import __all__ as __all__
from .engine.step import (
    catch_error as catch_error,
)
from .engine.step import (
    check_graph_check_names as check_graph_check_names,
)
from .engine.step import (
    is_step as is_step,
)
from .engine.step import (
    step as step,
)
from .errors import (
    WorkflowConfigurationError as WorkflowConfigurationError,
)
from .errors import (
    WorkflowValidationError as WorkflowValidationError,
)
