"""The standalone loop of :class:`ReActAgent` and :class:`FunctionCallingAgent`, as steps.

Run alone, each of these agents is a workflow of its own that returns an
:class:`~batonflow.agents.AgentResult`. Its steps (``receive_input``, ``prepare_prompt``,
``call_llm``, ``run_tool``, ``gather_tool_results``) are written once, here; what differs
between the two agents is their turn, the same hooks an
:class:`~batonflow.agents.AgentWorkflow` calls (:mod:`.members`: ``take_step``,
``handle_tool_call_results``, ``finalize``). Memory (``run(memory=...)``, token-limited by
default) and structured output (``output_cls=``, ``structured_output_fn=``) are the
workflow's code too (:mod:`.chat_memory`, :mod:`.structured`), so a feature of one is a feature
of all.

State keys (in ``ctx.store``; they serialize with the default memory):

* ``memory`` — the conversation (a llama-index ``BaseMemory``; default
  :class:`~batonflow.agents.ChatMemory`), kept across runs that share a context.
* ``scratchpad`` — the current turn's messages (tool calls, results, ReAct observations),
  moved into the memory when the run answers.
* ``iterations`` — LLM calls made in the current run.
* ``max_iterations`` — the current run's bound on them.
* ``tool_calls`` — :class:`~batonflow.agents.ToolCallRecord` dicts of the current run.
* ``reasoning`` — the agent's reasoning per LLM turn in the current run.
* ``pending_tools`` — how many tool results the current turn waits for.
* ``tool_choice`` — the run's ``tool_choice=`` for its first LLM call (function calling).
* ``run_output_cls`` — the run's ``output_cls=``, by import path.
* ``early_stopping_method`` — ``"force"`` or ``"generate"``: what ``max_iterations`` does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from batonflow.core import Context, StartEvent, StopEvent, Workflow, WorkflowHandler, step
from batonflow.core.retry import RetryPolicy
from batonflow.core.tracing import tool_span
from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.llms import LLM
from llama_index.core.memory import BaseMemory
from llama_index.core.tools import ToolOutput, ToolSelection
from pydantic import BaseModel

from .chat_memory import MEMORY, run_memory
from .errors import AgentConfigurationError, AgentInputError, MaxIterationsError
from .events import (
    AgentOutput,
    AgentStart,
    LLMInputEvent,
    PrepareEvent,
    RunToolEvent,
    ToolCall,
    ToolCallResult,
    ToolResultEvent,
    history_messages,
)
from .journaled import journaled_tool
from .members import DEFAULT_AGENT_DESCRIPTION, REASONING, SCRATCHPAD, AgentMember
from .results import AgentResult, ToolCallRecord
from .run_args import agent_run_kwargs
from .structured import RUN_OUTPUT_CLS, run_output_cls_path, structured_response
from .tools import ToolLike, call_tool
from .tracing import agent_span, ensure_llm_spans, record_tool_outcome

#: The state key older versions kept the conversation under (as message dicts); a restored
#: context that has it is read into the memory.
LEGACY_HISTORY = "chat_history"
ITERATIONS = "iterations"
MAX_ITERATIONS = "max_iterations"
TOOL_CALLS = "tool_calls"
PENDING = "pending_tools"
TOOL_CHOICE = "tool_choice"
EARLY_STOPPING = "early_stopping_method"


class ToolAgentBase(AgentMember, Workflow):
    """The standalone loop shared by :class:`ReActAgent` and :class:`FunctionCallingAgent`.

    Each is a workflow of its own (returning an :class:`AgentResult`) and, with ``name=``
    and ``description=``, an agent of an :class:`~batonflow.agents.AgentWorkflow`.
    """

    #: The system message when ``system_prompt=`` is not given (``None``: no system message).
    default_system_prompt: str | None = None

    def __init__(
        self,
        tools: Iterable[ToolLike] | None = None,
        llm: LLM | None = None,
        system_prompt: str | None = None,
        max_iterations: int = 10,
        *,
        streaming: bool = True,
        retry_policy: RetryPolicy | None = None,
        name: str = "agent",
        timeout: float | None = None,
        description: str = DEFAULT_AGENT_DESCRIPTION,
        can_handoff_to: list[str] | None = None,
        output_cls: type[BaseModel] | None = None,
        structured_output_fn: Callable[[list[ChatMessage]], Any] | None = None,
        initial_tool_choice: str | None = None,
        allow_parallel_tool_calls: bool = True,
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
        super().__init__(timeout=timeout, **workflow_kwargs)
        self.max_iterations = max_iterations
        # The settings an AgentWorkflow reads when this agent is one of its agents, and the
        # structured output of standalone runs.
        self.configure_member(
            name=name,
            description=description,
            tools=tools,
            llm=llm,
            system_prompt=system_prompt,
            streaming=streaming,
            retry_policy=retry_policy,
            can_handoff_to=can_handoff_to,
            output_cls=output_cls,
            structured_output_fn=structured_output_fn,
            initial_tool_choice=initial_tool_choice,
            allow_parallel_tool_calls=allow_parallel_tool_calls,
        )

    @property
    def agent_name(self) -> str:
        """The agent's ``name`` (carried by its events as ``current_agent_name``)."""
        return self.name

    def run(self, *args: Any, **kwargs: Any) -> WorkflowHandler:
        """Start a run: ``run(input="...")`` (or ``user_msg=``), and the options of
        :class:`~batonflow.agents.events.AgentStart`, ``ctx=`` to continue a conversation.

        Positional arguments are llama-index's: ``run(user_msg, chat_history, memory, ctx)``,
        or ``run(ctx, start_event)``.

        Returns:
            The run's handler; ``await`` it for the :class:`AgentResult`.
        """
        return super().run(**agent_run_kwargs(type(self).__name__, args, kwargs))

    # -- the steps -------------------------------------------------------------------------

    @step
    async def receive_input(self, ctx: Context, ev: AgentStart) -> PrepareEvent:
        """Put the user's message in the run's memory and reset the per-run state."""
        await self.start_run(ctx, ev)
        return PrepareEvent()

    @step
    async def prepare_prompt(self, ctx: Context, ev: PrepareEvent) -> LLMInputEvent | StopEvent:
        """Build the messages: the system prompt and the memory's window of the conversation.

        When ``max_iterations`` LLM calls were made, the run stops with MaxIterationsError, or
        with ``run(early_stopping_method="generate")`` one last call without tools answers.
        The agent's turn (``take_step``) adds the current turn's messages.
        """
        memory: BaseMemory = await ctx.store.get(MEMORY)
        if await self.iterations_left(ctx) == 0:
            if await ctx.store.get(EARLY_STOPPING, default="force") != "generate":
                await self.check_iterations(ctx)
            limit = int(await ctx.store.get(MAX_ITERATIONS, default=self.max_iterations))
            output = await self.early_answer(ctx, memory, limit)
            output.is_final = True
            ctx.write_event_to_stream(output)
            return await self.finish(ctx, output)
        messages = await memory.aget()
        system = self.system_prompt or self.default_system_prompt
        if system:
            messages = [ChatMessage(role=MessageRole.SYSTEM, content=system), *messages]
        # Not revalidated: pydantic would copy every message, at a cost growing with the history.
        return LLMInputEvent.model_construct(messages=messages)

    @step
    async def call_llm(
        self, ctx: Context, ev: LLMInputEvent
    ) -> RunToolEvent | PrepareEvent | StopEvent | None:
        """The agent's turn (one LLM call): answer, run the tools it asked for, or retry.

        Nothing is written to the state before the LLM call succeeds, so a step-level retry
        policy can run this step again.
        """
        first = int(await ctx.store.get(ITERATIONS, default=0)) == 0
        choice = await ctx.store.get(TOOL_CHOICE, default=None) if first else None
        with agent_span(self.name, self.description):
            output = await self.take_step(
                ctx, list(ev.messages), list(self.tools.values()), tool_choice=choice
            )
        await self.count_iteration(ctx)
        output.is_final = not output.tool_calls and not output.retry_messages
        ctx.write_event_to_stream(output)
        if output.retry_messages:
            return PrepareEvent()
        if not output.tool_calls:
            return await self.finish(ctx, output)
        await ctx.store.set(PENDING, len(output.tool_calls))
        for i, call in enumerate(output.tool_calls):
            ctx.send_event(
                RunToolEvent(
                    tool_name=call.tool_name,
                    tool_kwargs=dict(call.tool_kwargs),
                    tool_id=call.tool_id,
                    index=i,
                )
            )
        return None

    @step(num_workers=8)
    async def run_tool(self, ctx: Context, ev: RunToolEvent) -> ToolResultEvent:
        """Run one tool call (the calls of one turn run concurrently, up to 8 at once)."""
        return await self.execute_tool(ctx, ev.tool_name, ev.tool_kwargs, ev.tool_id, ev.index)

    @step
    async def gather_tool_results(
        self, ctx: Context, ev: ToolResultEvent
    ) -> PrepareEvent | StopEvent | None:
        """Wait for every tool result of the turn, then give them to the LLM's next turn.

        A ``return_direct`` tool's output ends the run as the answer (no more LLM calls).
        """
        results = await self.collect_tool_results(ctx, ev)
        if results is None:
            return None
        as_results = [self._call_result(r) for r in results]
        await self.handle_tool_call_results(ctx, as_results)
        for r in as_results:
            if r.return_direct and not r.is_error:
                output = AgentOutput(
                    response=ChatMessage(role=MessageRole.ASSISTANT, content=r.tool_output.content),
                    tool_calls=[
                        ToolSelection(
                            tool_id=x.tool_id, tool_name=x.tool_name, tool_kwargs=x.tool_kwargs
                        )
                        for x in as_results
                    ],
                    is_final=True,
                    current_agent_name=self.name,
                )
                ctx.write_event_to_stream(output)
                return await self.finish(ctx, output)
        return PrepareEvent()

    # -- run state -------------------------------------------------------------------------

    async def start_run(self, ctx: Context, ev: StartEvent) -> str:
        """Put the user's message in the run's memory and reset the per-run state.

        Reads ``input=`` (or ``user_msg=``, a str or ChatMessage), and the optional
        ``chat_history=`` (replaces the remembered conversation), ``memory=`` (a llama-index
        memory for this run), ``max_iterations=`` (this run's bound, instead of the agent's),
        ``tool_choice=``, ``output_cls=`` and ``early_stopping_method=`` from the start event.

        Returns:
            The user's message text.

        Raises:
            AgentInputError: there is no user message, or a run option has the wrong type.
        """
        owner = type(self).__name__
        ensure_llm_spans()
        raw = ev.get("input")
        if raw is None:
            raw = ev.get("user_msg")
        if isinstance(raw, ChatMessage):
            message = raw
        elif isinstance(raw, str) and raw.strip():
            message = ChatMessage(role=MessageRole.USER, content=raw)
        else:
            raise AgentInputError(
                f"{owner}.run() needs the user's message: call "
                f"{owner.lower()}.run(input='...') (or user_msg='...'); got {raw!r:.60}."
            )
        limit = ev.get("max_iterations")
        if limit is None:
            limit = self.max_iterations
        elif isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise AgentInputError(
                f"{owner}.run(max_iterations=...) must be a positive int, got {limit!r}."
            )
        output_cls = run_output_cls_path(ev.get("output_cls"), owner)
        self.check_tool_choice(ev.get("tool_choice"), owner)
        stopping = ev.get("early_stopping_method") or "force"
        if stopping not in ("force", "generate"):
            raise AgentInputError(
                f"{owner}.run(early_stopping_method={stopping!r}) is not known; use 'force' "
                "(fail at max_iterations) or 'generate' (answer from what was found)."
            )
        given = ev.get("chat_history")
        history = history_messages(given, owner) if given is not None else None
        legacy = await ctx.store.get(LEGACY_HISTORY, default=None)
        memory = await run_memory(ctx, ev.get("memory"), owner, self.get_llm)
        if history is None and legacy:
            history = history_messages(legacy, owner)
            await ctx.store.set(LEGACY_HISTORY, None)
        if history is not None:
            await memory.aset(history)
        await memory.aput(message)
        await ctx.store.set(MEMORY, memory)  # changed in place: tell the store
        await ctx.store.set(ITERATIONS, 0)
        await ctx.store.set(MAX_ITERATIONS, limit)
        await ctx.store.set(TOOL_CALLS, [])
        await ctx.store.set(REASONING, [])
        await ctx.store.set(PENDING, 0)
        await ctx.store.set(SCRATCHPAD, [])
        await ctx.store.set(TOOL_CHOICE, ev.get("tool_choice"))
        await ctx.store.set(RUN_OUTPUT_CLS, output_cls)
        await ctx.store.set(EARLY_STOPPING, stopping)
        return message.content or ""

    async def iterations_left(self, ctx: Context) -> int:
        """How many more LLM calls the current run may make."""
        iterations = int(await ctx.store.get(ITERATIONS, default=0))
        limit = int(await ctx.store.get(MAX_ITERATIONS, default=self.max_iterations))
        return max(limit - iterations, 0)

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
                f"Max iterations of {limit} reached! {type(self).__name__} {self.name!r} made "
                f"{iterations} LLM calls (max_iterations={limit}) without reaching a final "
                "answer. Either something went wrong (check the tools and the prompt), or raise "
                "max_iterations=... (on the agent or per run), or pass "
                "run(early_stopping_method='generate') to answer from what was found; the tool "
                "calls made so far are in the error's .result.",
                result=partial,
            )

    async def count_iteration(self, ctx: Context) -> int:
        """Count one successful LLM call of the run; returns the new count."""
        iterations = int(await ctx.store.get(ITERATIONS, default=0)) + 1
        await ctx.store.set(ITERATIONS, iterations)
        return iterations

    async def result(
        self, ctx: Context, response: str, structured: dict[str, Any] | None = None
    ) -> AgentResult:
        """The run's :class:`AgentResult` with ``response`` as the answer."""
        records = await ctx.store.get(TOOL_CALLS, default=[])
        reasoning = await ctx.store.get(REASONING, default=[])
        return AgentResult(
            response=response,
            tool_calls=[ToolCallRecord.model_validate(r) for r in records],
            reasoning=list(reasoning),
            structured_response=structured,
        )

    async def finish(self, ctx: Context, output: AgentOutput) -> StopEvent:
        """End the run with ``output``: its turn goes to memory, then the structured output."""
        memory: BaseMemory = await ctx.store.get(MEMORY)
        await self.finalize(ctx, output, memory)
        structured = await structured_response(ctx, memory, self, self)
        return StopEvent(result=await self.result(ctx, str(output), structured))

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
                current_agent_name=self.name,
            )
        )
        tool = self.tools.get(name)
        description = tool.metadata.description if tool is not None else None
        with tool_span(name, call_id=tool_id, description=description, arguments=kwargs) as span:
            outcome = await journaled_tool(
                ctx, name, kwargs, lambda: call_tool(self.tools, name, kwargs, ctx)
            )
            record_tool_outcome(span, outcome, self.name, kwargs)
        ctx.write_event_to_stream(
            ToolCallResult(
                tool_name=name,
                tool_kwargs=kwargs,
                tool_id=tool_id,
                tool_output=outcome.as_tool_output(name, kwargs),
                is_error=outcome.is_error,
                return_direct=bool(tool is not None and tool.metadata.return_direct),
                current_agent_name=self.name,
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

    def _call_result(self, r: ToolResultEvent) -> ToolCallResult:
        # The flow event (plain text, so a subclass's run_tool can build one) as the turn hooks
        # take it.
        tool = self.tools.get(r.tool_name)
        return ToolCallResult(
            tool_name=r.tool_name,
            tool_kwargs=r.tool_kwargs,
            tool_id=r.tool_id,
            tool_output=ToolOutput(
                content=r.output,
                tool_name=r.tool_name,
                raw_input={"kwargs": r.tool_kwargs},
                raw_output=r.output,
                is_error=r.is_error,
            ),
            is_error=r.is_error,
            return_direct=bool(tool is not None and tool.metadata.return_direct),
            current_agent_name=self.name,
        )


__all__ = ["ToolAgentBase"]
