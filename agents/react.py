"""The ReAct agent: a Thought / Action / Observation loop over tools, with any LLM.

The loop is five workflow steps (written once, in :mod:`._agent`)::

    AgentStart ──receive_input──▶ PrepareEvent ──prepare_prompt──▶ LLMInputEvent
        ──call_llm──▶ StopEvent (answer)
                   ├─▶ PrepareEvent (output could not be parsed: the LLM is told why)
                   └─▶ RunToolEvent × N (send_event) ──run_tool──▶ ToolResultEvent × N
                           ──gather_tool_results (collect_events)──▶ PrepareEvent

The turn is :class:`~batonflow.agents.members.ReActMember`'s, the one it takes inside an
``AgentWorkflow`` too. The LLM writes text in the ReAct format (:mod:`.react_parser`); several
actions in one turn run concurrently. An unknown tool, bad arguments, a tool that raises, and output that does not
parse all come back to the LLM as an ``Observation`` so it can correct itself; the run stops
with :class:`~batonflow.agents.MaxIterationsError` after ``max_iterations`` LLM calls.
"""

from __future__ import annotations

from typing import Any

from ._agent import ToolAgentBase
from .members import SCRATCHPAD, ReActMember
from .prompts import REACT_SYSTEM_PROMPT


class ReActAgent(ReActMember, ToolAgentBase):
    """An agent that reasons in text (Thought / Action / Observation) and calls tools.

    Works with any llama-index LLM, with or without native tool calling::

        agent = ReActAgent(tools=[add, multiply], llm=llm)
        result = await agent.run(input="What is (2 + 3) * 4?")
        result.response, result.tool_calls, result.reasoning

    ``await agent.run(input=...)`` returns an :class:`~batonflow.agents.AgentResult`; the run
    streams ``AgentInput``, ``AgentStream`` (token deltas, when ``streaming``), ``ToolCall``,
    ``ToolCallResult`` and ``AgentOutput`` events. Pass ``ctx=`` to continue a conversation:
    the conversation is kept in ``ctx.store["memory"]`` (token-limited by default; pass
    ``run(memory=...)`` for a llama-index memory of your own).

    Args:
        tools: llama-index tools or plain callables (sync or async).
        llm: Any llama-index ``LLM``; default OpenAI ``gpt-4o-mini`` (needs ``OPENAI_API_KEY``).
        system_prompt: Extra instructions put before the ReAct instructions.
        max_iterations: The most LLM calls in one run before it stops with
            :class:`~batonflow.agents.MaxIterationsError`.
        streaming: Stream the LLM's tokens as ``AgentStream`` events (``astream_chat``).
        retry_policy: Retry failed LLM calls (e.g. HTTP 429/500) with this
            :class:`~batonflow.core.retry.RetryPolicy`.
        react_prompt: The ReAct instructions, with ``{tool_descriptions}`` (or llama-index's
            ``{tool_desc}``) and ``{tool_names}`` placeholders (default
            :data:`~.prompts.REACT_SYSTEM_PROMPT`); ``get_prompts()`` and
            ``update_prompts({"react_header": ...})`` read and replace it, as in llama-index.
        name: The agent's name, carried by its stream events.
        timeout: The run timeout in seconds (``None``: no limit).
        description: What the agent does (read by the others in an ``AgentWorkflow``).
        can_handoff_to: The agents it may hand off to in an ``AgentWorkflow``.
        output_cls: A pydantic model: the answer is also given as
            ``AgentResult.structured_response`` (a dict), made by one more LLM call.
        structured_output_fn: A function (sync or async) from the final messages to a dict,
            instead of ``output_cls``.
        **workflow_kwargs: Passed to :class:`~batonflow.core.Workflow` (``verbose=``, ...).

    Raises:
        AgentConfigurationError: a tool is not usable, tool names repeat, ``llm=`` is not a
            llama-index LLM, or an option is out of range.
    """

    def __init__(self, *args: Any, react_prompt: str = REACT_SYSTEM_PROMPT, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.react_prompt = react_prompt


__all__ = ["SCRATCHPAD", "ReActAgent"]
