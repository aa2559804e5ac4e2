"""A child run's spans sit under the span of the parent's step that ran it (``ctx.run_child``),
in the parent's trace, for an in-process child and a durable one."""

from __future__ import annotations

import pytest
from batonflow.core import Context, StartEvent, StopEvent, Workflow
from batonflow.core.checkpoints import WorkflowCheckpointer
from batonflow.core.step import step
from batonflow.core.stores import open_store
from batonflow.core.tracing import OpenTelemetryInstrument
from otel_testing import Spans


class Leaf(Workflow):
    @step
    async def leaf(self, ev: StartEvent) -> StopEvent:
        return StopEvent(result=ev.x + 1)


class Trunk(Workflow):
    def __init__(self, child: Leaf, **kw) -> None:
        super().__init__(**kw)
        self.child = child

    @step
    async def branch(self, ctx: Context, ev: StartEvent) -> StopEvent:
        return StopEvent(result=await ctx.run_child(self.child, x=ev.x))


@pytest.mark.parametrize("durable", [False, True], ids=["in-process", "durable"])
async def test_a_child_runs_spans_nest_under_its_parents_step(spans: Spans, tmp_path, durable):
    """invoke_workflow Trunk > step branch > invoke_workflow Leaf > step leaf, one trace."""
    traced = [OpenTelemetryInstrument(tracer_provider=spans.provider)]
    flow = Trunk(Leaf(instruments=traced), instruments=traced)
    if durable:
        store = open_store(tmp_path / "runs.db")
        assert await WorkflowCheckpointer(flow, store=store).run(x=1) == 2
        store.close()
    else:
        assert await flow.run(x=1) == 2
    assert spans.tree() == (
        "invoke_workflow Trunk\n  step branch\n    invoke_workflow Leaf\n      step leaf"
    )
    assert len({s.context.trace_id for s in spans.finished}) == 1
