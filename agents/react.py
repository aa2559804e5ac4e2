"""The ReAct agent: a Thought / Action / Observation loop over tools, with any LLM.

The loop is five workflow steps::

    AgentStart ──receive_input──▶ PrepareEvent ──prepare_prompt──▶ LLMInputEvent
        ──call_llm──▶ StopEvent (answer)
                   ├─▶ PrepareEvent (output could not be parsed: the LLM is told why)
                   └─▶ RunToolEvent × N (send_event) ──run_tool──▶ ToolResultEvent × N
                           ──gather_tool_results (collect_events)──▶ PrepareEvent

The LLM writes text in the ReAct format (:mod:`.react_parser`); several actions in one turn
run concurrently. An unknown tool, bad arguments, a tool that raises, and output that does not
parse all come back to the LLM as an ``Observation`` so it can correct itself; the run stops
with :class:`~batonflow.agents.MaxIterationsError` after ``max_iterations`` LLM calls.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from batonflow.core import Context, StopEvent, step
from batonflow.core.retry import RetryPolicy
from llama_index.core.base.llms.types import MessageRole
from llama_index.core.llms import LLM

from ._agent import HISTORY, ToolAgentBase
from .events import (
    AgentOutput,
    AgentStart,
    LLMInputEvent,
    PrepareEvent,
    RunToolEvent,
    ToolResultEvent,
)
from .llm import chat
from .members import ReActMember
from .prompts import REACT_SYSTEM_PROMPT, observation_message, react_system_prompt
from .react_parser import FORMAT_REMINDER, ReActParseError, parse_react_output
from .tools import ToolLike

#: State key of the current run's ReAct transcript (LLM outputs and observations).
SCRATCHPAD = "scratchpad"


class ReActAgent(ReActMember, ToolAgentBase):
    """An agent that reasons in text (Thought / Action / Observation) and calls tools.

    Works with any llama-index LLM, with or without native tool calling::

        agent = ReActAgent(tools=[add, multiply], llm=llm)
        result = await agent.run(input="What is (2 + 3) * 4?")
        result.response, result.tool_calls, result.reasoning

    ``await agent.run(input=...)`` returns an :class:`~batonflow.agents.AgentResult`; the run
    streams ``AgentInput``, ``AgentStream`` (token deltas, when ``streaming``), ``ToolCall``,
    ``ToolCallResult`` and ``AgentOutput`` events. Pass ``ctx=`` to continue a conversation:
    the chat history is kept in ``ctx.store`` under ``"chat_history"``.

    Args:
        tools: llama-index tools or plain callables (sync or async).
        llm: Any llama-index ``LLM``; default OpenAI ``gpt-4o-mini`` (needs ``OPENAI_API_KEY``).
        system_prompt: Extra instructions put before the ReAct instructions.
        max_iterations: The most LLM calls in one run before it stops with
            :class:`~batonflow.agents.MaxIterationsError`.
        streaming: Stream the LLM's tokens as ``AgentStream`` events (``astream_chat``).
        retry_policy: Retry failed LLM calls (e.g. HTTP 429/500) with this
            :class:`~batonflow.core.retry.RetryPolicy`.
        react_prompt: The ReAct instructions, with ``{tool_descriptions}`` and
            ``{tool_names}`` placeholders (default :data:`~.prompts.REACT_SYSTEM_PROMPT`).
        name: The agent's name, carried by its stream events.
        timeout: The run timeout in seconds (``None``: no limit).
        **workflow_kwargs: Passed to :class:`~batonflow.core.Workflow` (``verbose=``, ...).

    Raises:
        AgentConfigurationError: a tool is not usable, tool names repeat, ``llm=`` is not a
            llama-index LLM, or an option is out of range.
    """

    def __init__(
        self,
        tools: Iterable[ToolLike] | None = None,
        llm: LLM | None = None,
        system_prompt: str | None = None,
        max_iterations: int = 10,
        *,
        streaming: bool = True,
        retry_policy: RetryPolicy | None = None,
        react_prompt: str = REACT_SYSTEM_PROMPT,
        name: str = "agent",
        timeout: float | None = None,
        **workflow_kwargs: Any,
    ) -> None:
        super().__init__(
            tools,
            llm,
            system_prompt=system_prompt,
            max_iterations=max_iterations,
            streaming=streaming,
            retry_policy=retry_policy,
            name=name,
            timeout=timeout,
            **workflow_kwargs,
        )
        self.react_prompt = react_prompt

    @step
    async def receive_input(self, ctx: Context, ev: AgentStart) -> PrepareEvent:
        """Add the user's message to the chat history and start a fresh transcript."""
        await self.start_run(ctx, ev)
        await ctx.store.set(SCRATCHPAD, [])
        return PrepareEvent()

    @step
    async def prepare_prompt(self, ctx: Context, ev: PrepareEvent) -> LLMInputEvent:
        """Build the messages: ReAct instructions, the conversation, this run's transcript.

        Stops the run with MaxIterationsError when ``max_iterations`` LLM calls were made.
        """
        await self.check_iterations(ctx)
        system = react_system_prompt(
            self.tools, template=self.react_prompt, system_prompt=self.system_prompt
        )
        history = await ctx.store.get(HISTORY, default=[])
        scratchpad = await ctx.store.get(SCRATCHPAD, default=[])
        return self.llm_input([self.system_message(system), *history, *scratchpad])

    @step
    async def call_llm(
        self, ctx: Context, ev: LLMInputEvent
    ) -> RunToolEvent | PrepareEvent | StopEvent | None:
        """Call the LLM and act on its output: answer, run tools, or ask it to fix the format."""
        response = await chat(
            self.get_llm(),
            self.message_cache.messages(ev.messages),
            on_delta=self.delta_writer(ctx),
            retry_policy=self.retry_policy,
        )
        # Nothing is written to the state before the call succeeds, so a step-level retry
        # policy can simply run this step again.
        iteration = await self.count_iteration(ctx)
        text = response.message.content or ""
        scratchpad = list(await ctx.store.get(SCRATCHPAD, default=[]))
        scratchpad.append({"role": MessageRole.ASSISTANT.value, "content": text})
        try:
            parsed = parse_react_output(text)
        except ReActParseError as err:
            scratchpad.append(
                {
                    "role": MessageRole.USER.value,
                    "content": f"Observation: Error: your output could not be parsed: {err}. "
                    f"{FORMAT_REMINDER}",
                }
            )
            await ctx.store.set(SCRATCHPAD, scratchpad)
            ctx.write_event_to_stream(
                AgentOutput(response=text, current_agent_name=self.agent_name)
            )
            return PrepareEvent()
        await ctx.store.set(SCRATCHPAD, scratchpad)
        await self.add_reasoning(ctx, parsed.thought)
        if parsed.answer is not None:
            ctx.write_event_to_stream(
                AgentOutput(
                    response=parsed.answer, is_final=True, current_agent_name=self.agent_name
                )
            )
            return await self.finish(ctx, parsed.answer)
        calls = [
            RunToolEvent(
                tool_name=action.tool_name,
                tool_kwargs=action.tool_kwargs,
                tool_id=f"react_{iteration}_{i}",
                index=i,
            )
            for i, action in enumerate(parsed.actions)
        ]
        await self.dispatch_tools(ctx, text, calls)
        return None

    @step
    async def gather_tool_results(
        self, ctx: Context, ev: ToolResultEvent
    ) -> PrepareEvent | StopEvent | None:
        """Wait for every tool result of the turn, then show them to the LLM as Observations.

        A ``return_direct`` tool's output ends the run as the answer (no more LLM calls).
        """
        results = await self.collect_tool_results(ctx, ev)
        if results is None:
            return None
        scratchpad = list(await ctx.store.get(SCRATCHPAD, default=[]))
        scratchpad.append(
            {
                "role": MessageRole.USER.value,
                "content": observation_message([(r.tool_name, r.output) for r in results]),
            }
        )
        await ctx.store.set(SCRATCHPAD, scratchpad)
        direct = await self.direct_answer(ctx, results)
        return direct if direct is not None else PrepareEvent()


__all__ = ["SCRATCHPAD", "ReActAgent"]
