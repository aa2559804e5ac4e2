"""The function-calling agent: the LLM's native tool calls, run in parallel, in a loop.

The loop is five workflow steps::

    AgentStart ──receive_input──▶ PrepareEvent ──prepare_prompt──▶ LLMInputEvent
        ──call_llm (achat_with_tools)──▶ StopEvent (no tool call: the answer)
                   └─▶ RunToolEvent × N (send_event) ──run_tool──▶ ToolResultEvent × N
                           ──gather_tool_results (collect_events)──▶ PrepareEvent

The whole exchange (assistant messages with tool calls, tool results) is kept in the chat
history, as the provider expects; an unknown tool, bad arguments and a tool that raises come
back to the LLM as an error result.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from batonflow.core import Context, StopEvent, step
from batonflow.core.retry import RetryPolicy
from llama_index.core.base.llms.types import MessageRole
from llama_index.core.llms import LLM
from llama_index.core.llms.function_calling import FunctionCallingLLM

from ._agent import HISTORY, ITERATIONS, TOOL_CHOICE, ToolAgentBase
from .events import (
    AgentOutput,
    AgentStart,
    LLMInputEvent,
    PrepareEvent,
    RunToolEvent,
    ToolResultEvent,
)
from .llm import chat, check_function_calling
from .members import FunctionCallingMember
from .memory import message_to_dict
from .tools import ToolLike

DEFAULT_SYSTEM_PROMPT = (
    "You are a helpful assistant. Use the tools when they help; call several at once when "
    "the calls do not depend on each other. Answer in the language of the user's question."
)


class FunctionCallingAgent(FunctionCallingMember, ToolAgentBase):
    """An agent that uses the LLM's native tool calling (OpenAI tools, ...).

    Same contract as :class:`~batonflow.agents.ReActAgent`::

        agent = FunctionCallingAgent(tools=[get_weather], llm=OpenAI(model="gpt-4o-mini"))
        result = await agent.run(input="Weather in Paris and in Rome?")

    The tool calls of one LLM turn run in parallel. The LLM must support tool calling (a
    llama-index ``FunctionCallingLLM`` whose metadata says so).

    Args:
        tools: llama-index tools or plain callables (sync or async).
        llm: A function-calling llama-index LLM; default OpenAI ``gpt-4o-mini``.
        system_prompt: The system message (default: :data:`DEFAULT_SYSTEM_PROMPT`).
        max_iterations: The most LLM calls in one run before it stops with
            :class:`~batonflow.agents.MaxIterationsError`.
        streaming: Stream the LLM's tokens as ``AgentStream`` events.
        retry_policy: Retry failed LLM calls with this RetryPolicy.
        name: The agent's name, carried by its stream events.
        timeout: The run timeout in seconds (``None``: no limit).
        **workflow_kwargs: Passed to :class:`~batonflow.core.Workflow`.

    Raises:
        AgentConfigurationError: a tool is not usable, tool names repeat, or ``llm=`` is not a
            function-calling llama-index LLM.
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
        if self._llm is not None:
            check_function_calling(self._llm, type(self).__name__)

    def get_function_calling_llm(self) -> FunctionCallingLLM:
        """The agent's LLM, checked for native tool calling."""
        return check_function_calling(self.get_llm(), type(self).__name__)

    @step
    async def receive_input(self, ctx: Context, ev: AgentStart) -> PrepareEvent:
        """Add the user's message to the chat history."""
        await self.start_run(ctx, ev)
        return PrepareEvent()

    @step
    async def prepare_prompt(self, ctx: Context, ev: PrepareEvent) -> LLMInputEvent:
        """Build the messages: the system prompt and the conversation so far.

        Stops the run with MaxIterationsError when ``max_iterations`` LLM calls were made.
        """
        await self.check_iterations(ctx)
        history = await ctx.store.get(HISTORY, default=[])
        system = self.system_message(self.system_prompt or DEFAULT_SYSTEM_PROMPT)
        return self.llm_input([system, *history])

    @step
    async def call_llm(self, ctx: Context, ev: LLMInputEvent) -> RunToolEvent | StopEvent | None:
        """Call the LLM with the tools; answer, or run the tool calls it asked for."""
        llm = self.get_function_calling_llm()
        first = int(await ctx.store.get(ITERATIONS, default=0)) == 0
        choice = await ctx.store.get(TOOL_CHOICE, default=None) if first else None
        response = await chat(
            llm,
            self.message_cache.messages(ev.messages),
            tools=list(self.tools.values()),
            on_delta=self.delta_writer(ctx),
            retry_policy=self.retry_policy,
            options={"tool_choice": choice} if choice else None,
        )
        # Nothing is written to the state before the call succeeds (safe to retry the step).
        await self.count_iteration(ctx)
        selections = llm.get_tool_calls_from_response(response, error_on_no_tool_call=False)
        text = response.message.content or ""
        if not selections:
            ctx.write_event_to_stream(
                AgentOutput(response=text, is_final=True, current_agent_name=self.agent_name)
            )
            return await self.finish(ctx, text)
        history = list(await ctx.store.get(HISTORY, default=[]))
        history.append(message_to_dict(response.message))
        await ctx.store.set(HISTORY, history)
        await self.add_reasoning(ctx, text)
        calls = [
            RunToolEvent(
                tool_name=sel.tool_name,
                tool_kwargs=dict(sel.tool_kwargs),
                tool_id=sel.tool_id,
                index=i,
            )
            for i, sel in enumerate(selections)
        ]
        await self.dispatch_tools(ctx, text, calls)
        return None

    @step
    async def gather_tool_results(
        self, ctx: Context, ev: ToolResultEvent
    ) -> PrepareEvent | StopEvent | None:
        """Wait for every tool result of the turn, then add them to the conversation.

        A ``return_direct`` tool's output ends the run as the answer (no more LLM calls).
        """
        results = await self.collect_tool_results(ctx, ev)
        if results is None:
            return None
        history = list(await ctx.store.get(HISTORY, default=[]))
        history.extend(
            {
                "role": MessageRole.TOOL.value,
                "content": r.output,
                "additional_kwargs": {"tool_call_id": r.tool_id, "name": r.tool_name},
            }
            for r in results
        )
        await ctx.store.set(HISTORY, history)
        direct = await self.direct_answer(ctx, results)
        return direct if direct is not None else PrepareEvent()


__all__ = ["DEFAULT_SYSTEM_PROMPT", "FunctionCallingAgent"]
