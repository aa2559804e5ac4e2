"""The public path of :mod:`batonflow.core.diagram.representation` (its code moved into the ``diagram`` room).

Everything public there is importable from here under the same names, and its classes and
functions say ``__module__ == "batonflow.core.representation"``: stored runs and pickles name them so.
"""

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
    StopEvent as StopEvent,
)
from .diagram.representation import (
    EXTERNAL_ID as EXTERNAL_ID,
)
from .diagram.representation import (
    EventRole as EventRole,
)
from .diagram.representation import (
    StepView as StepView,
)
from .diagram.representation import (
    WorkflowEventNode as WorkflowEventNode,
)
from .diagram.representation import (
    WorkflowExternalNode as WorkflowExternalNode,
)
from .diagram.representation import (
    WorkflowGenericNode as WorkflowGenericNode,
)
from .diagram.representation import (
    WorkflowGraph as WorkflowGraph,
)
from .diagram.representation import (
    WorkflowGraphEdge as WorkflowGraphEdge,
)
from .diagram.representation import (
    WorkflowGraphNode as WorkflowGraphNode,
)
from .diagram.representation import (
    WorkflowResourceConfigNode as WorkflowResourceConfigNode,
)
from .diagram.representation import (
    WorkflowResourceNode as WorkflowResourceNode,
)
from .diagram.representation import (
    WorkflowStepNode as WorkflowStepNode,
)
from .diagram.representation import __all__ as __all__
from .diagram.representation import (
    build_graph as build_graph,
)
from .diagram.representation import (
    get_workflow_representation as get_workflow_representation,
)
from .diagram.representation import (
    read_steps as read_steps,
)
from .diagram.representation import (
    without_child_workflows as without_child_workflows,
)
from .engine.resource import (
    Resource as Resource,
)
from .engine.resource import (
    ResourceConfig as ResourceConfig,
)
