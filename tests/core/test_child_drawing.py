"""A step's child runs drawn nested in its workflow's drawing (``@step(children=[...])``)."""

from __future__ import annotations

import pytest
from batonflow.core import Context, StartEvent, StopEvent, Workflow, step
from batonflow.core.drawing import draw_all_possible_flows, draw_all_possible_flows_mermaid
from batonflow.core.errors import WorkflowConfigurationError
from batonflow.core.representation import get_workflow_representation


class Summary(Workflow):
    """Summarises a text."""

    @step
    async def summarise(self, ev: StartEvent) -> StopEvent:
        return StopEvent(result=str(ev.text)[:10])


class Report(Workflow):
    @step(children=[Summary])
    async def gather(self, ctx: Context, ev: StartEvent) -> StopEvent:
        return StopEvent(result=await ctx.run_child(Summary(), text=ev.text))


def test_the_childs_graph_is_nested_under_the_step_that_runs_it() -> None:
    """The child's node, its own nodes under ``child:<Class>/``, linked from the step."""
    graph = get_workflow_representation(Report)
    ids = {n.id for n in graph.nodes}
    assert {"child:Summary", "child:Summary/step:summarise"} <= ids
    assert graph.node("child:Summary").description == "Summarises a text."
    edges = {(e.source, e.target, e.label) for e in graph.edges}
    assert ("step:gather", "child:Summary", "run_child") in edges
    assert ("child:Summary", "child:Summary/event:StartEvent", None) in edges
    assert ("child:Summary/step:summarise", "child:Summary/event:StopEvent", None) in edges


def test_mermaid_draws_the_child_in_a_subgraph(tmp_path) -> None:
    """The Mermaid text holds the child's steps inside a subgraph; the page draws them too."""
    text = draw_all_possible_flows_mermaid(Report, filename=None)
    assert '    subgraph child_Summary_run ["Summary (child run)"]\n' in text
    assert '        child_Summary_step_summarise["summarise"]\n' in text
    assert '    step_gather -->|"run_child"| child_Summary\n' in text
    bare = draw_all_possible_flows_mermaid(Report, filename=None, include_child_workflows=False)
    assert "Summary" not in bare
    page = tmp_path / "report.html"
    draw_all_possible_flows(Report, filename=str(page))
    assert "summarise" in page.read_text()


def test_children_must_be_workflows() -> None:
    """A children entry that is not a workflow names the fix."""
    with pytest.raises(WorkflowConfigurationError, match=r"got 'Summary'; list Workflow"):

        class Wrong(Workflow):
            @step(children=["Summary"])
            async def go(self, ev: StartEvent) -> StopEvent:
                return StopEvent()
