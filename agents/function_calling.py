"""The function-calling agent: the LLM's native tool calls, run in parallel, in a loop.

The loop is five workflow steps (written once, in :mod:`._agent`)::

    AgentStart ──receive_input──▶ PrepareEvent ──prepare_prompt──▶ LLMInputEvent
        ──call_llm (achat_with_tools)──▶ StopEvent (no tool call: the answer)
                   └─▶ RunToolEvent × N (send_event) ──run_tool──▶ ToolResultEvent × N
                           ──gather_tool_results (collect_events)──▶ PrepareEvent

The turn is :class:`~batonflow.agents.members.FunctionCallingMember`'s, the one
``FunctionAgent`` takes: the whole exchange (assistant messages with tool calls, tool results)
goes back to the LLM as the provider expects, and to the run's memory when it answers; an
unknown tool, bad arguments and a tool that raises come back to the LLM as an error result.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.llms.function_calling import FunctionCallingLLM

from ._agent import ToolAgentBase
from .llm import check_function_calling
from .members import FunctionCallingMember

DEFAULT_SYSTEM_PROMPT = (
    "You are a helpful assistant. Use the tools when they help; call several at once when "
    "the calls do not depend on each other. Answer in the language of the user's question."
)


class FunctionCallingAgent(FunctionCallingMember, ToolAgentBase):
    """An agent that uses the LLM's native tool calling (OpenAI tools, ...).

    Same contract and arguments as :class:`~batonflow.agents.ReActAgent` (the loop is one,
    in :class:`~batonflow.agents._agent.ToolAgentBase`)::

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
        description: What the agent does (read by the others in an ``AgentWorkflow``).
        can_handoff_to: The agents it may hand off to in an ``AgentWorkflow``.
        output_cls: A pydantic model: the answer is also given as
            ``AgentResult.structured_response`` (a dict), made by one more LLM call.
        structured_output_fn: A function (sync or async) from the final messages to a dict,
            instead of ``output_cls``.
        initial_tool_choice: The tool choice of a run's first LLM call (``"required"``, a
            tool's name, ...); ``run(tool_choice=...)`` sets it for one run.
        allow_parallel_tool_calls: Let the LLM ask for several tool calls at once.
        **workflow_kwargs: Passed to :class:`~batonflow.core.Workflow`.

    Raises:
        AgentConfigurationError: a tool is not usable, tool names repeat, ``llm=`` is not a
            function-calling llama-index LLM, or ``output_cls`` is not a pydantic model.
    """

    default_system_prompt = DEFAULT_SYSTEM_PROMPT

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self._llm is not None:
            check_function_calling(self._llm, type(self).__name__)

    def get_function_calling_llm(self) -> FunctionCallingLLM:
        """The agent's LLM, checked for native tool calling."""
        return check_function_calling(self.get_llm(), type(self).__name__)


__all__ = ["DEFAULT_SYSTEM_PROMPT", "FunctionCallingAgent"]
