"""A durable run's LLM usage as span attributes: each step span carries its calls' summed
usage (``gen_ai.usage.input_tokens``/``output_tokens``, ``batonflow.usage.*``), the run span
the run's, also for a run without a budget (its calls are counted once batonflow.budgets is
loaded)."""

from __future__ import annotations

import batonflow.budgets  # noqa: F401  (counts the LLM calls of durable runs)
from batonflow.agents.testing import ScriptedLLM, ScriptedResponse
from batonflow.core import Event, StartEvent, StopEvent, Workflow, step
from batonflow.core.checkpoints import SqliteCheckpointStore, WorkflowCheckpointer
from batonflow.core.tracing import OpenTelemetryInstrument
from llama_index.core.llms import ChatMessage
from otel_testing import Spans

LLM = ScriptedLLM([ScriptedResponse(text=f"r{i}", usage=(10 * (i + 1), 2)) for i in range(3)])


class Drafted(Event):
    """A draft."""

    text: str


class Drafting(Workflow):
    """``draft`` asks the LLM twice, ``polish`` once."""

    @step
    async def draft(self, ev: StartEvent) -> Drafted:
        first = await LLM.achat([ChatMessage(content="draft")])
        second = await LLM.achat([ChatMessage(content=str(first.message.content))])
        return Drafted(text=str(second.message.content))

    @step
    async def polish(self, ev: Drafted) -> StopEvent:
        return StopEvent(result=(await LLM.acomplete(ev.text)).text)


async def test_step_and_run_spans_carry_their_usage(spans: Spans, tmp_path) -> None:
    """draft: 10+20 in, 4 out, 2 calls; polish: 30 in, 2 out; the run: the sums."""
    workflow = Drafting(instruments=[OpenTelemetryInstrument(tracer_provider=spans.provider)])
    cptr = WorkflowCheckpointer(workflow, store=SqliteCheckpointStore(tmp_path / "runs.db"))
    assert await cptr.start() == "r2"
    draft = spans.one("step draft").attributes or {}
    assert (draft["gen_ai.usage.input_tokens"], draft["gen_ai.usage.output_tokens"]) == (30, 4)
    assert (draft["batonflow.usage.total_tokens"], draft["batonflow.usage.llm_calls"]) == (34, 2)
    assert "batonflow.usage.cost" not in draft  # the scripted model has no price
    polish = spans.one("step polish").attributes or {}
    assert (polish["gen_ai.usage.input_tokens"], polish["batonflow.usage.llm_calls"]) == (30, 1)
    run = spans.one("invoke_workflow Drafting").attributes or {}
    assert (run["gen_ai.usage.input_tokens"], run["gen_ai.usage.output_tokens"]) == (60, 6)
    assert run["batonflow.usage.llm_calls"] == 3
