"""``AgentWorkflow``: one or several agents, handing the conversation to each other, as steps.

The loop (each arrow an event; tool calls of one turn run concurrently)::

    AgentWorkflowStartEvent ──init_run──▶ AgentInput ──setup_agent──▶ AgentSetup
        ──run_agent_step (the agent's LLM call)──▶ AgentOutput ──parse_agent_output──▶
            StopEvent (the answer, with the structured output when asked for)
            AgentInput (the output did not parse: the LLM is told why)
            ToolCall × N (send_event) ──call_tool──▶ ToolCallResult × N
                ──aggregate_tool_results (collect_events)──▶ AgentInput | StopEvent

What a run keeps in ``ctx.store`` (so ``ctx.to_dict()`` resumes it elsewhere):

* ``memory`` — the conversation: the ``memory=`` given to ``run()`` (any llama-index
  ``BaseMemory``: ``Memory``, ``ChatMemoryBuffer``), else a
  :class:`~batonflow.agents.ChatMemory` with a token limit (llama-index's default: 3/4 of the
  root agent's LLM context window), so long conversations are trimmed from the oldest message;
* ``state`` — the shared state (``initial_state=``), shown to the agent with the user's message;
* ``current_agent_name``, ``scratchpad`` (the current agent's in-progress messages),
  ``num_iterations`` / ``max_iterations``, ``current_tool_calls``.

A handoff is a tool (``handoff(to_agent, reason)``) offered to every agent that may hand off
(``can_handoff_to=``; ``None`` means to any other agent). The agent's messages go to memory
before the next agent starts, so the conversation and its tool results are kept across it.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

from batonflow.core import Context, StopEvent, Workflow, WorkflowHandler, step
from batonflow.core.tracing import tool_span
from llama_index.core.base.llms.types import ChatMessage, MessageRole, TextBlock
from llama_index.core.memory import BaseMemory
from llama_index.core.tools import ToolSelection
from llama_index.core.tools.types import AsyncBaseTool
from pydantic import BaseModel

from .chat_memory import run_memory
from .errors import AgentConfigurationError, AgentInputError, MaxIterationsError
from .events import (
    AgentInput,
    AgentOutput,
    AgentSetup,
    AgentWorkflowStartEvent,
    ToolCall,
    ToolCallResult,
    history_messages,
    messages_event,
)
from .handoff import HANDOFF_TOOL, check_template, handoff_tool, refused_handoff
from .journaled import journaled_tool
from .members import (
    DEFAULT_AGENT_DESCRIPTION,
    DEFAULT_AGENT_NAME,
    REASONING,
    SCRATCHPAD,
    AgentMember,
    check_output_options,
)
from .prompts import HANDOFF_OUTPUT_PROMPT, HANDOFF_PROMPT, STATE_PROMPT
from .run_args import agent_run_kwargs
from .structured import RUN_OUTPUT_CLS, run_output_cls_path, structured_response
from .tools import ToolOutcome, call_tool
from .tracing import agent_span, ensure_llm_spans, record_handoff, record_tool_outcome

DEFAULT_MAX_ITERATIONS = 20


class AgentWorkflow(Workflow):
    """Agents that answer together, handing the conversation to each other (see module docs).

    ::

        researcher = FunctionAgent(name="researcher", description="Finds facts.",
                                   tools=[search], llm=llm, can_handoff_to=["writer"])
        writer = FunctionAgent(name="writer", description="Writes the answer.", llm=llm)
        workflow = AgentWorkflow(agents=[researcher, writer], root_agent="researcher")
        output = await workflow.run(user_msg="Write a note on the Moon's distance.")
        output.response.content, output.current_agent_name

    ``await workflow.run(user_msg=...)`` returns the final
    :class:`~batonflow.agents.AgentOutput`; the run streams ``AgentInput``, ``AgentStream``,
    ``AgentOutput``, ``ToolCall``, ``ToolCallResult`` (and ``AgentStreamStructuredOutput``)
    events, each carrying ``current_agent_name``.

    Args:
        agents: The agents: ``FunctionAgent``, ``ReActAgent``, ``CodeActAgent`` (or
            ``FunctionCallingAgent``) objects, each with a unique ``name`` and, when there are
            several, a ``description``.
        initial_state: The shared state a run starts with (``ctx.store["state"]``).
        root_agent: The agent that gets the user's message (needed with several agents).
        handoff_prompt: The handoff tool's description, with ``{agent_info}``.
        handoff_output_prompt: What a handoff returns to the LLM, with ``{to_agent}`` and
            ``{reason}``.
        state_prompt: How the state is shown with the user's message, with ``{state}`` and
            ``{msg}``.
        timeout: The run timeout in seconds (``None``: no limit).
        output_cls: A pydantic model: the answer is also given as ``structured_response``.
        structured_output_fn: A function (sync or async) from the final messages to a dict,
            instead of ``output_cls``.
        early_stopping_method: What happens at ``max_iterations``: ``"force"`` or
            ``"generate"`` (see :class:`AgentWorkflowStartEvent`).
        **workflow_kwargs: Passed to :class:`~batonflow.core.Workflow`.

    Raises:
        AgentConfigurationError: no agents, repeated or missing names or descriptions, an
            unknown ``root_agent`` or ``can_handoff_to`` name, or a prompt missing its
            placeholders.
    """

    def __init__(
        self,
        agents: Sequence[AgentMember],
        initial_state: dict[str, Any] | None = None,
        root_agent: str | None = None,
        handoff_prompt: str | None = None,
        handoff_output_prompt: str | None = None,
        state_prompt: str | None = None,
        timeout: float | None = None,
        output_cls: type[BaseModel] | None = None,
        structured_output_fn: Callable[[list[ChatMessage]], Any] | None = None,
        early_stopping_method: str = "force",
        **workflow_kwargs: Any,
    ) -> None:
        super().__init__(timeout=timeout, **workflow_kwargs)
        owner = type(self).__name__
        members = list(agents)
        if not members:
            raise AgentConfigurationError(
                f"{owner}(agents=[...]) needs at least one agent, e.g. "
                "agents=[FunctionAgent(name='assistant', tools=[...], llm=llm)]."
            )
        for agent in members:
            if not isinstance(agent, AgentMember):
                raise AgentConfigurationError(
                    f"{owner}(agents=...) holds {agent!r:.60}, which is not an agent; pass "
                    "FunctionAgent, ReActAgent or CodeActAgent objects."
                )
        self.agents: dict[str, AgentMember] = {}
        for agent in members:
            if agent.name in self.agents:
                raise AgentConfigurationError(
                    f"Two agents are named {agent.name!r}; agent names must be unique. Give "
                    "each a name=..."
                )
            self.agents[agent.name] = agent
        if len(members) > 1:
            for agent in members:
                if agent.name == DEFAULT_AGENT_NAME or agent.name == "agent":
                    raise AgentConfigurationError(
                        f"{owner} with several agents needs a name on each; one has the default "
                        f"name {agent.name!r}. Pass name='...' to every agent."
                    )
                if not agent.description or agent.description == DEFAULT_AGENT_DESCRIPTION:
                    raise AgentConfigurationError(
                        f"Agent {agent.name!r} has no description; with several agents each "
                        "needs description='...' (the others read it to choose a handoff)."
                    )
                for target in agent.can_handoff_to or ():
                    if target not in {m.name for m in members}:
                        raise AgentConfigurationError(
                            f"Agent {agent.name!r} may hand off to {target!r}, which is not one "
                            f"of the agents ({', '.join(self.agents)}); fix can_handoff_to=."
                        )
        if root_agent is None:
            if len(members) > 1:
                raise AgentConfigurationError(
                    f"Exactly one root agent must be provided: {owner} with several agents "
                    "needs root_agent=..., the name of the agent that gets the user's message "
                    f"(one of {', '.join(self.agents)})."
                )
            root_agent = members[0].name
        if root_agent not in self.agents:
            raise AgentConfigurationError(
                f"root_agent={root_agent!r} is not one of the agents ({', '.join(self.agents)}); "
                "pass the name of one of them."
            )
        if early_stopping_method not in ("force", "generate"):
            raise AgentConfigurationError(
                f"early_stopping_method={early_stopping_method!r} is not known; use 'force' or "
                "'generate'."
            )
        self.root_agent = root_agent
        self.initial_state = dict(initial_state or {})
        self.handoff_prompt = check_template(
            handoff_prompt or HANDOFF_PROMPT, "handoff_prompt", ("{agent_info}",)
        )
        self.handoff_output_prompt = check_template(
            handoff_output_prompt or HANDOFF_OUTPUT_PROMPT,
            "handoff_output_prompt",
            ("{to_agent}", "{reason}"),
        )
        self.state_prompt = check_template(
            state_prompt or STATE_PROMPT, "state_prompt", ("{state}", "{msg}")
        )
        check_output_options(output_cls, structured_output_fn, owner)
        self.output_cls = output_cls
        self.structured_output_fn = structured_output_fn if output_cls is None else None
        self.early_stopping_method = early_stopping_method

    @classmethod
    def from_tools_or_functions(
        cls,
        tools_or_functions: Sequence[Any],
        llm: Any = None,
        system_prompt: str | None = None,
        initial_state: dict[str, Any] | None = None,
        output_cls: type[BaseModel] | None = None,
        timeout: float | None = None,
        **workflow_kwargs: Any,
    ) -> AgentWorkflow:
        """One agent over these tools: a FunctionAgent when the LLM has native tool calls,
        else a ReActAgent."""
        from .function_agent import FunctionAgent
        from .react import ReActAgent

        native = llm is not None and getattr(llm.metadata, "is_function_calling_model", False)
        agent: AgentMember
        if native:
            agent = FunctionAgent(
                tools=list(tools_or_functions), llm=llm, system_prompt=system_prompt
            )
        else:
            agent = ReActAgent(
                tools=list(tools_or_functions),
                llm=llm,
                system_prompt=system_prompt,
                name=DEFAULT_AGENT_NAME,
            )
        return cls(
            agents=[agent],
            initial_state=initial_state,
            output_cls=output_cls,
            timeout=timeout,
            **workflow_kwargs,
        )

    # -- tools ---------------------------------------------------------------------------

    def handoff_targets(self, agent: AgentMember) -> dict[str, str]:
        """The agents ``agent`` may hand off to: name -> description."""
        if len(self.agents) == 1:
            return {}
        allowed = agent.can_handoff_to
        return {
            name: other.description
            for name, other in self.agents.items()
            if name != agent.name and (allowed is None or name in allowed)
        }

    def get_tools(self, agent: AgentMember) -> list[AsyncBaseTool]:
        """The tools offered to ``agent``: its own, and the handoff tool when it may hand off."""
        tools = list(agent.tools.values())
        targets = self.handoff_targets(agent)
        if targets:
            # The agents as llama-index shows them: a {name: description} dict's text.
            description = self.handoff_prompt.format(agent_info=str(targets))
            tools.append(handoff_tool(description))
        return tools

    # -- the run -------------------------------------------------------------------------

    def run(self, *args: Any, **kwargs: Any) -> WorkflowHandler:
        """Start a run: ``run(user_msg="...")`` (or ``input=``), with optional ``memory=``,
        ``chat_history=``, ``max_iterations=``, ``output_cls=``, ``tool_choice=``, ``ctx=``.

        Positional arguments are llama-index's: ``run(user_msg, chat_history, memory, ctx)``,
        or ``run(ctx, start_event)``.

        Returns:
            The run's handler; ``await`` it for the final :class:`AgentOutput`.
        """
        kwargs = agent_run_kwargs(type(self).__name__, args, kwargs)
        if "input" in kwargs and "user_msg" not in kwargs:
            kwargs["user_msg"] = kwargs.pop("input")
        return super().run(**kwargs)

    @step
    async def init_run(self, ctx: Context, ev: AgentWorkflowStartEvent) -> AgentInput:
        """Set up the run: memory, state, the user's message, the run's options."""
        owner = type(self).__name__
        ensure_llm_spans()
        root = self.agents[self.root_agent]
        memory = await run_memory(ctx, ev.memory, owner, root.get_llm)
        if await ctx.store.get("state", default=None) is None:
            await ctx.store.set("state", copy.deepcopy(self.initial_state))
        if not await ctx.store.get("current_agent_name", default=None):
            await ctx.store.set("current_agent_name", self.root_agent)
        limit = ev.max_iterations if ev.max_iterations is not None else DEFAULT_MAX_ITERATIONS
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise AgentInputError(
                f"{owner}.run(max_iterations=...) must be a positive int, got {limit!r}."
            )
        stopping = ev.early_stopping_method or self.early_stopping_method
        if stopping not in ("force", "generate"):
            raise AgentInputError(
                f"{owner}.run(early_stopping_method={stopping!r}) is not known; use 'force' "
                "or 'generate'."
            )
        output_cls = run_output_cls_path(ev.output_cls, owner)
        self.agents[await ctx.store.get("current_agent_name")].check_tool_choice(
            ev.tool_choice, owner
        )
        await ctx.store.set("max_iterations", limit)
        await ctx.store.set("early_stopping_method", stopping)
        await ctx.store.set("num_iterations", 0)
        await ctx.store.set("current_tool_calls", [])
        await ctx.store.set(RUN_OUTPUT_CLS, output_cls)
        await ctx.store.set(REASONING, [])
        await ctx.store.set("tool_choice", ev.tool_choice)
        await ctx.store.set(SCRATCHPAD, [])
        if ev.chat_history is not None:
            await memory.aset(history_messages(ev.chat_history, owner))
        user_msg = ev.user_msg
        if isinstance(user_msg, str):
            if not user_msg.strip():
                user_msg = None
            else:
                user_msg = ChatMessage(role=MessageRole.USER, content=user_msg)
        if user_msg is not None:
            await memory.aput(user_msg)
            await ctx.store.set("user_msg_str", user_msg.content or "")
        elif ev.chat_history:
            last = (await memory.aget())[-1:]
            await ctx.store.set("user_msg_str", last[0].content if last else "")
        else:
            raise AgentInputError(
                f"{owner}.run() needs the user's message: call run(user_msg='...') (or give "
                "chat_history=[...])."
            )
        await ctx.store.set("memory", memory)  # changed in place: tell the store
        name = await ctx.store.get("current_agent_name")
        return messages_event(AgentInput, await memory.aget(), name)

    @step
    async def setup_agent(self, ctx: Context, ev: AgentInput) -> AgentSetup:
        """Put the agent's system prompt first, and the shared state with the user's message."""
        agent = self.agents[ev.current_agent_name]
        messages = list(ev.input) if isinstance(ev.input, list) else []
        if agent.system_prompt:
            messages.insert(0, ChatMessage(role=MessageRole.SYSTEM, content=agent.system_prompt))
        state = await ctx.store.get("state", default=None)
        if state and messages and messages[-1].role == MessageRole.USER:
            # Shown with the user's message on each call; the memory keeps the plain message.
            last = messages[-1].model_copy(deep=True)
            for block in reversed(last.blocks):
                if isinstance(block, TextBlock):
                    block.text = self.state_prompt.format(state=state, msg=block.text)
                    break
            messages[-1] = last
        return messages_event(AgentSetup, messages, agent.name)

    @step
    async def run_agent_step(self, ctx: Context, ev: AgentSetup) -> AgentOutput:
        """The agent's turn: one LLM call (traced as ``invoke_agent {name}``)."""
        agent = self.agents[ev.current_agent_name]
        iterations = int(await ctx.store.get("num_iterations", default=0))
        tool_choice = await ctx.store.get("tool_choice", default=None) if iterations == 0 else None
        memory: BaseMemory | None = await ctx.store.get("memory", default=None)
        # llama-index's call, take_step(ctx, llm_input, tools, memory); the tool choice only
        # for agents that have one (a custom agent written for llama-index takes no more).
        options = {"tool_choice": tool_choice} if agent.native_tool_calls and tool_choice else {}
        with agent_span(agent.name, agent.description):
            output = await agent.take_step(ctx, ev.input, self.get_tools(agent), memory, **options)
        output.is_final = not output.tool_calls and not output.retry_messages
        ctx.write_event_to_stream(output)
        return output

    @step
    async def parse_agent_output(
        self, ctx: Context, ev: AgentOutput
    ) -> StopEvent | AgentInput | ToolCall | None:
        """Stop with the answer, retry a bad output, or run the tool calls it asked for."""
        iterations = int(await ctx.store.get("num_iterations", default=0)) + 1
        await ctx.store.set("num_iterations", iterations)
        memory: BaseMemory = await ctx.store.get("memory")
        limit = int(await ctx.store.get("max_iterations", default=DEFAULT_MAX_ITERATIONS))
        if iterations >= limit and (ev.tool_calls or ev.retry_messages):
            if await ctx.store.get("early_stopping_method", default="force") == "generate":
                return await self._early_answer(ctx, ev, limit)
            raise MaxIterationsError(
                f"Max iterations of {limit} reached! {type(self).__name__}: agent "
                f"{ev.current_agent_name!r} made {iterations} LLM calls (max_iterations={limit}) "
                "without a final answer. Either something went wrong (check the tools and the "
                "prompt), or pass a larger run(max_iterations=...), or "
                "run(early_stopping_method='generate') to get an answer from what was found so "
                "far."
            )
        if ev.retry_messages:
            return messages_event(AgentInput, await memory.aget(), ev.current_agent_name)
        if not ev.tool_calls:
            agent = self.agents[ev.current_agent_name]
            output = await agent.finalize(ctx, ev, memory)
            return await self._stop(ctx, output, agent, memory)
        await ctx.store.set("num_tool_calls", len(ev.tool_calls))
        # Results are joined in the order the LLM asked for them, whatever order they finish in.
        await ctx.store.set("tool_call_order", [c.tool_id for c in ev.tool_calls])
        for call in ev.tool_calls:
            ctx.send_event(
                ToolCall(
                    tool_name=call.tool_name,
                    tool_kwargs=call.tool_kwargs,
                    tool_id=call.tool_id,
                    current_agent_name=ev.current_agent_name,
                )
            )
        return None

    @step(num_workers=8)
    async def call_tool(self, ctx: Context, ev: ToolCall) -> ToolCallResult:
        """Run one tool call (the calls of a turn run concurrently); errors go to the LLM."""
        ctx.write_event_to_stream(ev)
        name: str = await ctx.store.get("current_agent_name")
        agent = self.agents[name]
        tools = {t.metadata.get_name(): t for t in self.get_tools(agent)}
        tool = tools.get(ev.tool_name)
        description = tool.metadata.description if tool is not None else None
        with tool_span(
            ev.tool_name, call_id=ev.tool_id, description=description, arguments=ev.tool_kwargs
        ) as span:
            if ev.tool_name == HANDOFF_TOOL and tool is not None:
                outcome = await self._handoff(ctx, agent, ev.tool_kwargs, span)
            else:
                outcome = await journaled_tool(
                    ctx,
                    ev.tool_name,
                    ev.tool_kwargs,
                    lambda: call_tool(tools, ev.tool_name, ev.tool_kwargs, ctx),
                )
            record_tool_outcome(span, outcome, agent.name, ev.tool_kwargs)
        result = ToolCallResult(
            tool_name=ev.tool_name,
            tool_kwargs=ev.tool_kwargs,
            tool_id=ev.tool_id,
            tool_output=outcome.as_tool_output(ev.tool_name, ev.tool_kwargs),
            is_error=outcome.is_error,
            return_direct=bool(tool is not None and tool.metadata.return_direct),
            current_agent_name=agent.name,
        )
        ctx.write_event_to_stream(result)
        return result

    @step
    async def aggregate_tool_results(
        self, ctx: Context, ev: ToolCallResult
    ) -> AgentInput | StopEvent | None:
        """Join a turn's tool results; hand off, stop on a return_direct tool, or go on."""
        expected = int(await ctx.store.get("num_tool_calls", default=1))
        collected = ctx.collect_events(ev, [ToolCallResult] * expected)
        if collected is None:
            return None
        order = {
            tool_id: i
            for i, tool_id in enumerate(await ctx.store.get("tool_call_order", default=[]))
        }
        results = sorted(
            (r for r in collected if isinstance(r, ToolCallResult)),
            key=lambda r: order.get(r.tool_id, len(order)),
        )
        memory: BaseMemory = await ctx.store.get("memory")
        name: str = await ctx.store.get("current_agent_name")
        agent = self.agents[name]
        done: list[ToolCallResult] = await ctx.store.get("current_tool_calls", default=[])
        done.extend(results)
        await ctx.store.set("current_tool_calls", done)
        await agent.handle_tool_call_results(ctx, results, memory)
        direct = next((r for r in results if r.return_direct and not r.is_error), None)
        if direct is not None:
            output = AgentOutput(
                response=ChatMessage(
                    role=MessageRole.ASSISTANT, content=direct.tool_output.content
                ),
                tool_calls=[_selection(r) for r in done],
                raw=direct.tool_output.raw_output,
                current_agent_name=agent.name,
                is_final=direct.tool_name != HANDOFF_TOOL,
            )
            # The turn is over either way: its messages go to memory, for the next agent too.
            output = await agent.finalize(ctx, output, memory)
            if direct.tool_name != HANDOFF_TOOL:
                ctx.write_event_to_stream(output)
                return await self._stop(ctx, output, agent, memory)
        next_agent = await ctx.store.get("next_agent", default=None)
        if next_agent:
            await ctx.store.set("current_agent_name", next_agent)
            await ctx.store.set("next_agent", None)
            name = next_agent
        return messages_event(AgentInput, await memory.aget(), name)

    # -- helpers -------------------------------------------------------------------------

    async def _handoff(
        self, ctx: Context, agent: AgentMember, kwargs: dict[str, Any], span: Any
    ) -> ToolOutcome:
        to_agent = str(kwargs.get("to_agent", ""))
        targets = self.handoff_targets(agent)
        accepted = to_agent in targets
        record_handoff(span, agent.name, to_agent, accepted=accepted)
        if not accepted:
            return refused_handoff(agent.name, to_agent, targets)
        await ctx.store.set("next_agent", to_agent)
        reason = str(kwargs.get("reason", ""))
        text = self.handoff_output_prompt.format(to_agent=to_agent, reason=reason)
        return ToolOutcome(text, False)

    async def _stop(
        self, ctx: Context, output: AgentOutput, agent: AgentMember, memory: BaseMemory
    ) -> StopEvent:
        done: list[ToolCallResult] = await ctx.store.get("current_tool_calls", default=[])
        # The run's result is a copy: the AgentOutput already streamed keeps this turn's own
        # tool calls (none, on a turn that answers), as llama-index's stream shows it.
        output = output.model_copy()
        if not output.tool_calls:
            # llama-index's result lists the run's calls as their ToolCallResults.
            output.tool_calls = list(done)
        await ctx.store.set("current_tool_calls", [])
        output.is_final = True
        output.structured_response = await structured_response(ctx, memory, agent, self, agent)
        return StopEvent(result=output)

    async def _early_answer(self, ctx: Context, ev: AgentOutput, limit: int) -> StopEvent:
        agent = self.agents[ev.current_agent_name]
        memory: BaseMemory = await ctx.store.get("memory")
        output = await agent.early_answer(ctx, memory, limit)
        ctx.write_event_to_stream(output)
        return await self._stop(ctx, output, agent, memory)


def _selection(result: ToolCallResult) -> ToolSelection:
    return ToolSelection(
        tool_id=result.tool_id, tool_name=result.tool_name, tool_kwargs=result.tool_kwargs
    )


def _resuming(ctx: Any) -> bool:
    return ctx is not None and bool(getattr(ctx, "is_running", False))


__all__ = ["DEFAULT_MAX_ITERATIONS", "AgentWorkflow", "AgentWorkflowStartEvent"]
