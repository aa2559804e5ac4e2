"""The public path of :mod:`batonflow.core.diagram.drawing` (its code moved into the ``diagram`` room).

Everything public there is importable from here under the same names, and its classes and
functions say ``__module__ == "batonflow.core.drawing"``: stored runs and pickles name them so.
"""

from .diagram._html import (
    StepRun as StepRun,
)
from .diagram._html import (
    kind_of as kind_of,
)
from .diagram._html import (
    render_page as render_page,
)
from .diagram._html import (
    truncate as truncate,
)
from .diagram.drawing import (
    HTML_SUFFIXES as HTML_SUFFIXES,
)
from .diagram.drawing import (
    MERMAID_SUFFIXES as MERMAID_SUFFIXES,
)
from .diagram.drawing import __all__ as __all__
from .diagram.drawing import (
    as_step_runs as as_step_runs,
)
from .diagram.drawing import (
    draw_agent_with_tools as draw_agent_with_tools,
)
from .diagram.drawing import (
    draw_agent_with_tools_mermaid as draw_agent_with_tools_mermaid,
)
from .diagram.drawing import (
    draw_agent_workflow as draw_agent_workflow,
)
from .diagram.drawing import (
    draw_agent_workflow_mermaid as draw_agent_workflow_mermaid,
)
from .diagram.drawing import (
    draw_all_possible_flows as draw_all_possible_flows,
)
from .diagram.drawing import (
    draw_all_possible_flows_mermaid as draw_all_possible_flows_mermaid,
)
from .diagram.drawing import (
    draw_most_recent_execution as draw_most_recent_execution,
)
from .diagram.drawing import (
    draw_most_recent_execution_mermaid as draw_most_recent_execution_mermaid,
)
from .diagram.drawing import (
    draw_recorded_execution as draw_recorded_execution,
)
from .diagram.drawing import (
    recent_execution as recent_execution,
)
from .diagram.drawing import (
    to_mermaid as to_mermaid,
)
from .diagram.representation import (
    EXTERNAL_ID as EXTERNAL_ID,
)
from .diagram.representation import (
    WorkflowGraph as WorkflowGraph,
)
from .diagram.representation import (
    WorkflowGraphNode as WorkflowGraphNode,
)
from .diagram.representation import (
    get_workflow_representation as get_workflow_representation,
)
from .diagram.representation import (
    without_child_workflows as without_child_workflows,
)
