"""What the two tool-using agents share: options, per-run state, tool running, results.

The steps themselves are written out in each agent (``react.py``, ``function_calling.py``) so
that a reader sees the whole loop in one class; they call the helpers of :class:`ToolAgentBase`.

State keys (in ``ctx.store``; plain data, so the context serializes):

* ``chat_history`` — the conversation, kept across runs that share a context.
* ``iterations`` — LLM calls made in the current run.
* ``max_iterations`` — the current run's bound on them.
* ``tool_calls`` — :class:`~batonflow.agents.ToolCallRecord` dicts of the current run.
* ``reasoning`` — the agent's reasoning per LLM turn in the current run.
* ``pending_tools`` — how many tool results the current turn waits for.
* ``tool_choice`` — the run's ``tool_choice=`` for its first LLM call (function calling).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from batonflow.core import Context, StartEvent, StopEvent, Workflow, step
from batonflow.core.retry import RetryPolicy
from batonflow.core.tracing import tool_span
from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.llms import LLM
from llama_index.core.tools import ToolSelection
from llama_index.core.tools.types import AsyncBaseTool
from pydantic import BaseModel

from .errors import AgentConfigurationError, AgentInputError, MaxIterationsError
from .events import (
    AgentInput,
    AgentOutput,
    AgentStream,
    LLMInputEvent,
    RunToolEvent,
    ToolCall,
    ToolCallResult,
    ToolResultEvent,
)
from .llm import DeltaCallback, check_llm, default_llm
from .members import DEFAULT_AGENT_DESCRIPTION, AgentMember
from .memory import MessageCache, coerce_history, message_to_dict
from .results import AgentResult, ToolCallRecord
from .tools import ToolLike, call_tool, to_tools
from .tracing import ensure_llm_spans, record_tool_outcome

HISTORY = "chat_history"
ITERATIONS = "iterations"
MAX_ITERATIONS = "max_iterations"
TOOL_CALLS = "tool_calls"
REASONING = "reasoning"
PENDING = "pending_tools"
TOOL_CHOICE = "tool_choice"


class ToolAgentBase(AgentMember, Workflow):
    """Options and helpers shared by :class:`ReActAgent` and :class:`FunctionCallingAgent`.

    Each is a workflow of its own (returning an :class:`AgentResult`) and, with ``name=``
    and ``description=``, an agent of an :class:`~batonflow.agents.AgentWorkflow`.
    """

    def __init__(
        self,
        tools: Iterable[ToolLike] | None = None,
        llm: LLM | None = None,
        *,
        system_prompt: str | None = None,
        max_iterations: int = 10,
        streaming: bool = True,
        retry_policy: RetryPolicy | None = None,
        name: str = "agent",
        timeout: float | None = None,
        description: str = DEFAULT_AGENT_DESCRIPTION,
        can_handoff_to: list[str] | None = None,
        output_cls: type[BaseModel] | None = None,
        structured_output_fn: Callable[[list[ChatMessage]], Any] | None = None,
        **workflow_kwargs: Any,
    ) -> None:
        owner = type(self).__name__
        if isinstance(max_iterations, bool) or not isinstance(max_iterations, int):
            raise AgentConfigurationError(
                f"{owner}(max_iterations=...) must be a positive int, got {max_iterations!r}."
            )
        if max_iterations < 1:
            raise AgentConfigurationError(
                f"{owner}(max_iterations={max_iterations}) must be at least 1."
            )
        if retry_policy is not None and not callable(getattr(retry_policy, "next", None)):
            raise AgentConfigurationError(
                f"{owner}(retry_policy=...) got {retry_policy!r}, which has no next() method; "
                "pass a RetryPolicy such as batonflow.core.retry_policy(stop=stop_after_attempt(3))."
            )
        super().__init__(timeout=timeout, **workflow_kwargs)
        #: The agent's tools by name.
        self.tools: dict[str, AsyncBaseTool] = to_tools(tools)
        self._llm: LLM | None = check_llm(llm, owner)
        self.system_prompt = system_prompt
        self.max_iterations = max_iterations
        self.streaming = streaming
        self.retry_policy = retry_policy
        self.agent_name = name
        self.message_cache = MessageCache()
        # The settings an AgentWorkflow reads when this agent is one of its agents.
        self.configure_member(
            name=name,
            description=description,
            can_handoff_to=can_handoff_to,
            output_cls=output_cls,
            structured_output_fn=structured_output_fn,
        )

    # -- the LLM ---------------------------------------------------------------------------

    def get_llm(self) -> LLM:
        """The agent's LLM; builds the default (OpenAI gpt-4o-mini) on first use.

        Raises:
            LLMConfigurationError: no ``llm=`` was given and ``OPENAI_API_KEY`` is not set.
        """
        if self._llm is None:
            self._llm = default_llm()
        return self._llm

    def delta_writer(self, ctx: Context) -> DeltaCallback | None:
        """The callback that streams LLM deltas as :class:`AgentStream` (None: no streaming)."""
        if not self.streaming:
            return None

        async def write(delta: str, text: str) -> None:
            ctx.write_event_to_stream(
                AgentStream(delta=delta, response=text, current_agent_name=self.agent_name)
            )

        return write

    def system_message(self, content: str) -> dict[str, Any]:
        """A system message dict."""
        return {"role": MessageRole.SYSTEM.value, "content": content}

    def llm_input(self, messages: list[dict[str, Any]]) -> LLMInputEvent:
        """The LLM call's event, over the history dicts as they are (no copy, no revalidation).

        Validating the event would copy every dict, so the message cache would never hit and
        each call would cost in proportion to the history.
        """
        return LLMInputEvent.model_construct(messages=messages)

    # -- run state -------------------------------------------------------------------------

    async def start_run(self, ctx: Context, ev: StartEvent) -> str:
        """Record the user's message, reset the per-run state, stream :class:`AgentInput`.

        Reads ``input=`` (or ``user_msg=``, a str or ChatMessage), and the optional
        ``chat_history=`` (replaces the remembered conversation) and ``max_iterations=`` (this
        run's bound, instead of the agent's) from the start event.

        Returns:
            The user's message text.

        Raises:
            AgentInputError: there is no user message.
        """
        owner = type(self).__name__
        ensure_llm_spans()
        raw = ev.get("input")
        if raw is None:
            raw = ev.get("user_msg")
        if isinstance(raw, ChatMessage):
            message = message_to_dict(raw)
            text = raw.content or ""
        elif isinstance(raw, str) and raw.strip():
            message = {"role": MessageRole.USER.value, "content": raw}
            text = raw
        else:
            raise AgentInputError(
                f"{owner}.run() needs the user's message: call "
                f"{owner.lower()}.run(input='...') (or user_msg='...'); got {raw!r:.60}."
            )
        given = ev.get("chat_history")
        history = (
            coerce_history(given, owner)
            if given is not None
            else list(await ctx.store.get(HISTORY, default=[]))
        )
        history.append(message)
        await ctx.store.set(HISTORY, history)
        limit = ev.get("max_iterations")
        if limit is None:
            limit = self.max_iterations
        elif isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise AgentInputError(
                f"{owner}.run(max_iterations=...) must be a positive int, got {limit!r}."
            )
        await ctx.store.set(ITERATIONS, 0)
        await ctx.store.set(MAX_ITERATIONS, limit)
        await ctx.store.set(TOOL_CALLS, [])
        await ctx.store.set(REASONING, [])
        await ctx.store.set(PENDING, 0)
        await ctx.store.set(TOOL_CHOICE, ev.get("tool_choice"))
        ctx.write_event_to_stream(AgentInput(input=text, current_agent_name=self.agent_name))
        return text

    async def check_iterations(self, ctx: Context) -> None:
        """Stop the run if it already made ``max_iterations`` LLM calls.

        Raises:
            MaxIterationsError: the bound is reached; ``.result`` holds the work done so far.
        """
        iterations = int(await ctx.store.get(ITERATIONS, default=0))
        limit = int(await ctx.store.get(MAX_ITERATIONS, default=self.max_iterations))
        if iterations >= limit:
            partial = await self.result(ctx, "")
            raise MaxIterationsError(
                f"{type(self).__name__} {self.agent_name!r} made {iterations} LLM calls "
                f"(max_iterations={limit}) without reaching a final answer. Raise "
                "max_iterations=... (on the agent or per run), or check the tools and the "
                "prompt; the tool calls "
                "made so far are in the error's .result.",
                result=partial,
            )

    async def count_iteration(self, ctx: Context) -> int:
        """Count one successful LLM call of the run; returns the new count."""
        iterations = int(await ctx.store.get(ITERATIONS, default=0)) + 1
        await ctx.store.set(ITERATIONS, iterations)
        return iterations

    async def add_reasoning(self, ctx: Context, text: str) -> None:
        """Append one turn's reasoning to the run's record."""
        if text.strip():
            reasoning = list(await ctx.store.get(REASONING, default=[]))
            reasoning.append(text.strip())
            await ctx.store.set(REASONING, reasoning)

    async def result(self, ctx: Context, response: str) -> AgentResult:
        """The run's :class:`AgentResult` with ``response`` as the answer."""
        records = await ctx.store.get(TOOL_CALLS, default=[])
        reasoning = await ctx.store.get(REASONING, default=[])
        return AgentResult(
            response=response,
            tool_calls=[ToolCallRecord.model_validate(r) for r in records],
            reasoning=list(reasoning),
        )

    async def finish(self, ctx: Context, answer: str) -> StopEvent:
        """End the run with ``answer``: remember it in the chat history, build the result."""
        history = list(await ctx.store.get(HISTORY, default=[]))
        history.append({"role": MessageRole.ASSISTANT.value, "content": answer})
        await ctx.store.set(HISTORY, history)
        return StopEvent(result=await self.result(ctx, answer))

    # -- tools -----------------------------------------------------------------------------

    async def execute_tool(
        self, ctx: Context, name: str, kwargs: dict[str, Any], tool_id: str, index: int
    ) -> ToolResultEvent:
        """Run one tool call, streaming :class:`ToolCall` before and :class:`ToolCallResult` after."""
        ctx.write_event_to_stream(
            ToolCall(
                tool_name=name,
                tool_kwargs=kwargs,
                tool_id=tool_id,
                current_agent_name=self.agent_name,
            )
        )
        tool = self.tools.get(name)
        description = tool.metadata.description if tool is not None else None
        with tool_span(name, call_id=tool_id, description=description, arguments=kwargs) as span:
            outcome = await call_tool(self.tools, name, kwargs, ctx)
            record_tool_outcome(span, outcome)
        ctx.write_event_to_stream(
            ToolCallResult(
                tool_name=name,
                tool_kwargs=kwargs,
                tool_id=tool_id,
                tool_output=outcome.as_tool_output(name, kwargs),
                is_error=outcome.is_error,
                return_direct=bool(tool is not None and tool.metadata.return_direct),
                current_agent_name=self.agent_name,
            )
        )
        return ToolResultEvent(
            tool_name=name,
            tool_kwargs=kwargs,
            tool_id=tool_id,
            index=index,
            output=outcome.output,
            is_error=outcome.is_error,
        )

    async def collect_tool_results(
        self, ctx: Context, ev: ToolResultEvent
    ) -> list[ToolResultEvent] | None:
        """Join the tool results of one turn (``collect_events``); record them once all are in.

        Returns:
            The results in the order the LLM asked for them, or ``None`` while some are missing.
        """
        expected = int(await ctx.store.get(PENDING, default=1))
        collected = ctx.collect_events(ev, [ToolResultEvent] * expected)
        if collected is None:
            return None
        results = sorted(
            (r for r in collected if isinstance(r, ToolResultEvent)), key=lambda r: r.index
        )
        records = list(await ctx.store.get(TOOL_CALLS, default=[]))
        records.extend(
            ToolCallRecord(
                tool_name=r.tool_name,
                tool_kwargs=r.tool_kwargs,
                tool_id=r.tool_id,
                output=r.output,
                is_error=r.is_error,
            ).model_dump(mode="json")
            for r in results
        )
        await ctx.store.set(TOOL_CALLS, records)
        await ctx.store.set(PENDING, 0)
        return results

    async def direct_answer(self, ctx: Context, results: list[ToolResultEvent]) -> StopEvent | None:
        """End the run with the output of a ``return_direct`` tool, if one of the turn's ran.

        A tool built with ``FunctionTool.from_defaults(fn, return_direct=True)`` answers
        itself: its output is the run's answer, with no further LLM call. A failed call does
        not count (the LLM sees the error instead).
        """
        for r in results:
            tool = self.tools.get(r.tool_name)
            if tool is not None and tool.metadata.return_direct and not r.is_error:
                ctx.write_event_to_stream(
                    AgentOutput(
                        response=r.output, is_final=True, current_agent_name=self.agent_name
                    )
                )
                return await self.finish(ctx, r.output)
        return None

    @step(num_workers=8)
    async def run_tool(self, ctx: Context, ev: RunToolEvent) -> ToolResultEvent:
        """Run one tool call (the calls of one turn run concurrently, up to 8 at once)."""
        return await self.execute_tool(ctx, ev.tool_name, ev.tool_kwargs, ev.tool_id, ev.index)

    async def dispatch_tools(self, ctx: Context, text: str, calls: list[RunToolEvent]) -> None:
        """Announce this turn's tool calls on the stream, then send one event per call.

        The calls run concurrently in ``run_tool``; ``gather_tool_results`` joins them.

        Args:
            ctx: The run's context.
            text: What the LLM said along with the calls (streamed in :class:`AgentOutput`).
            calls: The calls of this turn.
        """
        ctx.write_event_to_stream(
            AgentOutput(
                response=text,
                tool_calls=[
                    ToolSelection(
                        tool_name=c.tool_name, tool_kwargs=c.tool_kwargs, tool_id=c.tool_id
                    )
                    for c in calls
                ],
                current_agent_name=self.agent_name,
            )
        )
        await ctx.store.set(PENDING, len(calls))
        for call in calls:
            ctx.send_event(call)


__all__ = ["ToolAgentBase"]
