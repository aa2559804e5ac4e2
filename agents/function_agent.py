"""``FunctionAgent``: llama-index's function-calling agent, on the batonflow engine.

An agent is both a member of an :class:`~batonflow.agents.AgentWorkflow` and a workflow of
its own (a one-agent ``AgentWorkflow``)::

    agent = FunctionAgent(tools=[get_weather], llm=OpenAI(model="gpt-4o-mini"),
                          system_prompt="You answer weather questions.")
    output = await agent.run(user_msg="Weather in Paris?")
    print(output)                      # the answer's text
    output.response                    # a ChatMessage
    output.tool_calls                  # the run's tool calls

:class:`WorkflowAgent` holds what ``FunctionAgent`` and ``CodeActAgent`` share.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from batonflow.core.retry import RetryPolicy
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.llms import LLM
from pydantic import BaseModel

from .llm import check_function_calling
from .members import (
    DEFAULT_AGENT_DESCRIPTION,
    DEFAULT_AGENT_NAME,
    AgentMember,
    FunctionCallingMember,
)
from .tools import ToolLike
from .workflow import AgentWorkflow


class WorkflowAgent(AgentWorkflow):
    """An agent that is also a one-agent :class:`AgentWorkflow` (``FunctionAgent``, ...).

    Args:
        name: The agent's name (``current_agent_name`` on its events; the handoff target).
        description: What the agent does (other agents read it to choose a handoff).
        system_prompt: The agent's system message.
        tools: llama-index tools (``FunctionTool``, ``QueryEngineTool``, ...) or plain
            functions, sync or async.
        llm: A llama-index LLM; default OpenAI ``gpt-4o-mini`` (needs ``OPENAI_API_KEY``).
        can_handoff_to: The agents it may hand off to (``None``: any other agent).
        output_cls: A pydantic model for the structured output of its answers.
        structured_output_fn: A function from the final messages to a dict, instead.
        streaming: Stream the LLM's tokens as ``AgentStream`` events.
        retry_policy: Retry failed LLM calls (HTTP 429/500) with this RetryPolicy.
        initial_state: The shared state a run starts with (when run on its own).
        state_prompt: How the state is shown with the user's message.
        timeout: The run timeout in seconds (``None``: no limit).
        **workflow_kwargs: Passed to :class:`AgentWorkflow` / :class:`~batonflow.core.Workflow`.

    Raises:
        AgentConfigurationError: a tool is not usable, tool names repeat, or an option has the
            wrong type.
    """

    def __init__(
        self,
        *,
        name: str = DEFAULT_AGENT_NAME,
        description: str = DEFAULT_AGENT_DESCRIPTION,
        system_prompt: str | None = None,
        tools: Iterable[ToolLike] | None = None,
        llm: LLM | None = None,
        can_handoff_to: list[str] | None = None,
        output_cls: type[BaseModel] | None = None,
        structured_output_fn: Callable[[list[ChatMessage]], Any] | None = None,
        streaming: bool = True,
        retry_policy: RetryPolicy | None = None,
        initial_tool_choice: str | None = None,
        allow_parallel_tool_calls: bool = True,
        initial_state: dict[str, Any] | None = None,
        state_prompt: str | None = None,
        timeout: float | None = None,
        **workflow_kwargs: Any,
    ) -> None:
        self.configure_member(  # type: ignore[attr-defined]
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
        super().__init__(
            agents=[self],  # type: ignore[list-item]
            initial_state=initial_state,
            state_prompt=state_prompt,
            timeout=timeout,
            # The agent is its own one-agent workflow: the same settings on both levels.
            output_cls=output_cls,
            structured_output_fn=structured_output_fn,
            **workflow_kwargs,
        )


class FunctionAgent(FunctionCallingMember, WorkflowAgent):
    """An agent that calls tools with the LLM's native tool calling (OpenAI tools, ...).

    Takes the :class:`WorkflowAgent` arguments, and:

    Args:
        initial_tool_choice: The tool choice of a run's first LLM call (``"required"``, a
            tool's name, ...); ``run(tool_choice=...)`` sets it for one run.
        allow_parallel_tool_calls: Let the LLM ask for several tool calls at once (they run
            concurrently).

    Raises:
        AgentConfigurationError: as :class:`WorkflowAgent`, or ``llm=`` has no native tool
            calling (use :class:`~batonflow.agents.ReActAgent` with such an LLM).
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if self._llm is not None:
            check_function_calling(self._llm, type(self).__name__)


class BaseWorkflowAgent(AgentMember, WorkflowAgent):
    """llama-index's base class of a custom agent: subclass it and write the turn.

    Takes the :class:`WorkflowAgent` arguments. A subclass writes llama-index's three methods,
    with llama-index's signatures::

        class EchoAgent(BaseWorkflowAgent):
            async def take_step(self, ctx, llm_input, tools, memory) -> AgentOutput:
                return AgentOutput(response=llm_input[-1], current_agent_name=self.name)

            async def handle_tool_call_results(self, ctx, results, memory) -> None: ...

            async def finalize(self, ctx, output, memory) -> AgentOutput:
                return output

    ``take_step`` answers (no ``tool_calls``) or asks for tools; ``handle_tool_call_results``
    keeps the results for the next turn; ``finalize`` (by default: the turn's scratchpad goes
    to memory) ends the agent's turn. The agent runs alone or in an :class:`AgentWorkflow`.
    """


__all__ = ["BaseWorkflowAgent", "FunctionAgent", "WorkflowAgent"]
