"""What an agent is inside an :class:`~batonflow.agents.AgentWorkflow`: its settings and its turn.

:class:`AgentMember` holds the settings llama-index users know from
``llama_index.core.agent.workflow`` (``name``, ``description``, ``system_prompt``, ``tools``,
``can_handoff_to``, ``output_cls``, ``structured_output_fn``, ...) and three hooks the
workflow calls:

* :meth:`AgentMember.take_step` makes one LLM call and returns an
  :class:`~batonflow.agents.AgentOutput` (its ``tool_calls`` say which tools to run);
* :meth:`AgentMember.handle_tool_call_results` records the tool results for the next call;
* :meth:`AgentMember.finalize` moves the turn's messages into the run's memory.

The messages of the agent's current turn live in ``ctx.store["scratchpad"]`` as
``ChatMessage`` objects: each LLM call appends to it, none rebuilds it, so the work per call
does not grow with the length of the history beyond building the list that is sent.

:class:`FunctionCallingMember` uses the LLM's native tool calls (``FunctionAgent``);
:class:`ReActMember` writes Thought / Action / Answer text (``ReActAgent``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar

from batonflow.core import Context
from llama_index.core.base.llms.types import ChatMessage, ChatResponse, MessageRole
from llama_index.core.llms import LLM
from llama_index.core.memory import BaseMemory
from llama_index.core.prompts import BasePromptTemplate, PromptTemplate
from llama_index.core.tools import ToolSelection
from llama_index.core.tools.types import AsyncBaseTool
from pydantic import BaseModel

from .errors import AgentConfigurationError, AgentInputError
from .events import AgentInput, AgentOutput, AgentStream, ToolCallResult, messages_event
from .journaled import journaled_chat
from .llm import chat, check_function_calling, check_llm, default_llm
from .prompts import (
    EARLY_STOPPING_PROMPT,
    REACT_SYSTEM_PROMPT,
    observation_message,
    react_system_prompt,
)
from .react_parser import FORMAT_REMINDER, ReActParseError, parse_react_output
from .tools import ToolLike, to_tools
from .tracing import agent_span

#: The state key of the current agent's in-progress messages.
SCRATCHPAD = "scratchpad"
#: The state key of the run's reasoning, one entry per LLM turn that had some (ReAct thoughts,
#: the text a function-calling LLM wrote with its tool calls); llama-index keeps its ReAct
#: reasoning in the state the same way.
REASONING = "reasoning"
DEFAULT_AGENT_NAME = "Agent"
DEFAULT_AGENT_DESCRIPTION = "An agent that can perform a task"


def check_output_options(output_cls: Any, structured_output_fn: Any, owner: str) -> None:
    """Check the ``output_cls=`` and ``structured_output_fn=`` of an agent or a workflow.

    Raises:
        AgentConfigurationError: ``output_cls`` is not a pydantic model class, or
            ``structured_output_fn`` is not callable.
    """
    if output_cls is not None and not (
        isinstance(output_cls, type) and issubclass(output_cls, BaseModel)
    ):
        raise AgentConfigurationError(
            f"{owner}(output_cls=...) must be a pydantic BaseModel subclass, got "
            f"{output_cls!r:.80}; define class Answer(BaseModel): ... and pass output_cls=Answer."
        )
    if structured_output_fn is not None and not callable(structured_output_fn):
        raise AgentConfigurationError(
            f"{owner}(structured_output_fn=...) must be a function from the final messages to a "
            f"dict, got {structured_output_fn!r:.80}; pass e.g. "
            "structured_output_fn=lambda messages: {'answer': messages[-1].content}."
        )


class AgentMember:
    """The settings and turn hooks every agent of an AgentWorkflow has (see the module docs).

    Subclasses call :meth:`configure_member` from ``__init__`` and implement
    :meth:`take_step`; they also set ``tools`` (name -> tool), ``system_prompt``,
    ``streaming``, ``retry_policy`` and ``_llm`` (the ``llm=`` given, or ``None``).
    """

    name: str
    description: str
    system_prompt: str | None
    tools: dict[str, AsyncBaseTool]
    streaming: bool
    can_handoff_to: list[str] | None
    output_cls: type[BaseModel] | None
    structured_output_fn: Callable[[list[ChatMessage]], Any] | None
    initial_tool_choice: str | None
    allow_parallel_tool_calls: bool
    retry_policy: Any
    #: The ``llm=`` given (``None``: the default is built on first use, by :meth:`get_llm`).
    _llm: LLM | None
    #: Whether the agent's turn uses the LLM's native tool calls (so ``tool_choice`` applies).
    native_tool_calls: bool = False
    #: The agent's prompts, llama-index's name to the attribute holding the template text.
    prompt_attributes: ClassVar[dict[str, str]] = {}

    def get_prompts(self) -> dict[str, PromptTemplate]:
        """The agent's prompts by llama-index's names, as ``PromptTemplate`` objects.

        ``{"react_header": ...}`` on a ReAct agent (batonflow's ReAct instructions), ``{}``
        on the others, as llama-index's ``get_prompts()``.
        """
        return {
            key: PromptTemplate(getattr(self, attr)) for key, attr in self.prompt_attributes.items()
        }

    def update_prompts(self, prompts: Mapping[str, str | BasePromptTemplate]) -> None:
        """Replace prompts by name (a ``str`` or a llama-index prompt template).

        Raises:
            AgentConfigurationError: the agent has no prompt of that name.
        """
        owner = type(self).__name__
        for key, value in prompts.items():
            attr = self.prompt_attributes.get(key)
            if attr is None:
                names = ", ".join(self.prompt_attributes) or "none"
                raise AgentConfigurationError(
                    f"{owner} has no prompt named {key!r} (its prompts: {names}); pass the names "
                    "that get_prompts() lists."
                )
            setattr(self, attr, value if isinstance(value, str) else value.get_template())

    def configure_member(
        self,
        *,
        name: str,
        description: str,
        tools: Iterable[ToolLike] | None = None,
        llm: LLM | None = None,
        system_prompt: str | None = None,
        streaming: bool = True,
        retry_policy: Any = None,
        can_handoff_to: Sequence[str] | None = None,
        output_cls: type[BaseModel] | None = None,
        structured_output_fn: Callable[[list[ChatMessage]], Any] | None = None,
        initial_tool_choice: str | None = None,
        allow_parallel_tool_calls: bool = True,
    ) -> None:
        """Check and keep the agent's settings (every agent class calls this from ``__init__``).

        Raises:
            AgentConfigurationError: an option has the wrong type, a tool is not usable, tool
                names repeat, or ``llm=`` is not a llama-index LLM.
        """
        owner = type(self).__name__
        if retry_policy is not None and not callable(getattr(retry_policy, "next", None)):
            raise AgentConfigurationError(
                f"{owner}(retry_policy=...) got {retry_policy!r}, which has no next() method; "
                "pass a RetryPolicy such as batonflow.core.retry_policy(stop=stop_after_attempt(3))."
            )
        #: The agent's tools by name.
        self.tools = to_tools(tools)
        self._llm = check_llm(llm, owner)
        self.system_prompt = system_prompt
        self.streaming = streaming
        self.retry_policy = retry_policy
        if not isinstance(name, str) or not name.strip():
            raise AgentConfigurationError(
                f"{owner}(name=...) must be a non-empty str, got {name!r}; give each agent a "
                "name such as name='researcher'."
            )
        if can_handoff_to is not None and (
            isinstance(can_handoff_to, str) or not all(isinstance(n, str) for n in can_handoff_to)
        ):
            raise AgentConfigurationError(
                f"{owner}(can_handoff_to=...) takes a list of agent names, got "
                f"{can_handoff_to!r}; write can_handoff_to=['writer']."
            )
        check_output_options(output_cls, structured_output_fn, owner)
        self.name = name
        self.description = description
        self.can_handoff_to = list(can_handoff_to) if can_handoff_to is not None else None
        self.output_cls = output_cls
        # As in llama-index, output_cls wins over structured_output_fn when both are given.
        self.structured_output_fn = structured_output_fn if output_cls is None else None
        self.initial_tool_choice = initial_tool_choice
        self.allow_parallel_tool_calls = allow_parallel_tool_calls

    def check_tool_choice(self, tool_choice: Any, owner: str) -> None:
        """Refuse a run's ``tool_choice=`` when this agent (making the first call) cannot use it.

        Raises:
            AgentInputError: the agent picks its tools in text (ReAct, CodeAct), or the value
                is not a string.
        """
        if tool_choice is None:
            return
        if not isinstance(tool_choice, str):
            raise AgentInputError(
                f"{owner}.run(tool_choice=...) takes 'auto', 'required', 'none' or a tool's "
                f"name, got {tool_choice!r:.60}."
            )
        if not self.native_tool_calls:
            raise AgentInputError(
                f"{owner}.run(tool_choice={tool_choice!r}): agent {self.name!r} is a "
                f"{type(self).__name__}, which picks its tools in text, not with the LLM's "
                "native tool calls, so a tool choice cannot be forced; leave tool_choice out, "
                "or use FunctionAgent / FunctionCallingAgent."
            )

    def get_llm(self) -> LLM:
        """The agent's LLM; builds the default (OpenAI gpt-4o-mini) on first use.

        Raises:
            LLMConfigurationError: no ``llm=`` was given and ``OPENAI_API_KEY`` is not set.
        """
        if self._llm is None:
            self._llm = default_llm()
        return self._llm

    # -- the turn ------------------------------------------------------------------------

    async def take_step(
        self,
        ctx: Context,
        llm_input: list[ChatMessage],
        tools: Sequence[AsyncBaseTool],
        memory: BaseMemory | None = None,
        *,
        tool_choice: str | None = None,
    ) -> AgentOutput:
        """Make one LLM call with ``llm_input`` and the scratchpad; say what to do next.

        llama-index's signature, ``take_step(ctx, llm_input, tools, memory)``: the workflow
        passes the run's memory (the built-in agents read the conversation from
        ``llm_input``); ``tool_choice=`` is batonflow's, given only to agents with native tool
        calls. :meth:`handle_tool_call_results` and :meth:`finalize` get the memory too, so
        a subclass of :class:`~batonflow.agents.BaseWorkflowAgent` written for llama-index
        runs as it is.
        """
        raise NotImplementedError  # pragma: no cover

    async def handle_tool_call_results(
        self, ctx: Context, results: list[ToolCallResult], memory: BaseMemory | None = None
    ) -> None:
        """Add one turn's tool results to the scratchpad, for the next LLM call."""
        raise NotImplementedError  # pragma: no cover

    async def finalize(self, ctx: Context, output: AgentOutput, memory: BaseMemory) -> AgentOutput:
        """Move the scratchpad into ``memory`` (the agent's turn is over, or it handed off)."""
        scratchpad: list[ChatMessage] = await ctx.store.get(SCRATCHPAD, default=[])
        await memory.aput_messages(scratchpad)
        await ctx.store.set("memory", memory)  # changed in place: tell the store
        await ctx.store.set(SCRATCHPAD, [])
        return output

    async def early_answer(self, ctx: Context, memory: BaseMemory, limit: int) -> AgentOutput:
        """The answer when ``max_iterations`` is reached (``early_stopping_method="generate"``).

        The turn's messages go to ``memory``, except a last reply whose tool calls will not
        run (a provider refuses a tool call without its result); then one LLM call without
        tools answers from what was found so far, and its reply goes to memory too.
        """
        scratchpad: list[ChatMessage] = await ctx.store.get(SCRATCHPAD, default=[])
        if scratchpad and scratchpad[-1].role == MessageRole.ASSISTANT:
            scratchpad = scratchpad[:-1]
        await memory.aput_messages(scratchpad)
        await ctx.store.set(SCRATCHPAD, [])
        messages = await memory.aget()
        if self.system_prompt:
            messages = [ChatMessage(role=MessageRole.SYSTEM, content=self.system_prompt), *messages]
        messages.append(
            ChatMessage(
                role=MessageRole.SYSTEM, content=EARLY_STOPPING_PROMPT.format(max_iterations=limit)
            )
        )
        with agent_span(self.name, self.description):
            response = await journaled_chat(
                ctx, lambda: chat(self.get_llm(), messages, retry_policy=self.retry_policy)
            )
        await memory.aput(response.message)
        await ctx.store.set("memory", memory)  # changed in place: tell the store
        return AgentOutput(
            response=response.message, raw=_raw(response), current_agent_name=self.name
        )

    # -- helpers -------------------------------------------------------------------------

    async def note_reasoning(self, ctx: Context, text: str) -> None:
        """Append one turn's reasoning to ``ctx.store["reasoning"]`` (blank text is skipped)."""
        if text.strip():
            reasoning = list(await ctx.store.get(REASONING, default=[]))
            reasoning.append(text.strip())
            await ctx.store.set(REASONING, reasoning)

    async def text_turn(
        self, ctx: Context, header: str, llm_input: list[ChatMessage]
    ) -> tuple[ChatResponse, list[ChatMessage]]:
        """One LLM call of an agent that acts in text (ReAct, CodeAct), no native tools.

        ``header`` (the agent's instructions, its system prompt inside) replaces the system
        message the workflow put first; the turn's scratchpad follows the conversation. The
        messages are streamed as :class:`AgentInput` first.

        Returns:
            The LLM's response and the scratchpad (not yet changed: the caller appends).
        """
        body = llm_input[1:] if llm_input and llm_input[0].role == MessageRole.SYSTEM else llm_input
        scratchpad = await self._scratchpad(ctx)
        messages = [ChatMessage(role=MessageRole.SYSTEM, content=header), *body, *scratchpad]
        ctx.write_event_to_stream(messages_event(AgentInput, messages, self.name))
        response = await journaled_chat(
            ctx,
            lambda: chat(
                self.get_llm(),
                messages,
                on_chunk=self._stream_writer(ctx, native_tools=False),
                retry_policy=self.retry_policy,
            ),
        )
        return response, scratchpad

    async def _scratchpad(self, ctx: Context) -> list[ChatMessage]:
        pad: list[ChatMessage] | None = await ctx.store.get(SCRATCHPAD, default=None)
        if pad is None:
            pad = []
            await ctx.store.set(SCRATCHPAD, pad)
        return pad

    def _stream_writer(self, ctx: Context, native_tools: bool) -> Any:
        if not self.streaming:
            return None
        llm = self.get_llm()

        async def write(chunk: ChatResponse) -> None:
            calls: list[ToolSelection] = []
            if native_tools:
                calls = check_function_calling(
                    llm, type(self).__name__
                ).get_tool_calls_from_response(chunk, error_on_no_tool_call=False)
            raw = chunk.raw.model_dump() if isinstance(chunk.raw, BaseModel) else chunk.raw
            ctx.write_event_to_stream(
                AgentStream(
                    delta=chunk.delta or "",
                    response=chunk.message.content or "",
                    tool_calls=calls,
                    raw=raw,
                    current_agent_name=self.name,
                    thinking_delta=chunk.additional_kwargs.get("thinking_delta"),
                )
            )

        return write


def turn_number(scratchpad: list[ChatMessage]) -> int:
    """The number of the current turn: the LLM replies in the scratchpad (for tool call ids)."""
    return sum(1 for m in scratchpad if m.role == MessageRole.ASSISTANT)


def _answers(result: ToolCallResult) -> bool:
    """Whether a tool result is the run's answer (a ``return_direct`` tool that worked)."""
    return result.return_direct and result.tool_name != "handoff" and not result.is_error


def _raw(response: ChatResponse) -> Any:
    return response.raw.model_dump() if isinstance(response.raw, BaseModel) else response.raw


class FunctionCallingMember(AgentMember):
    """An agent turn with the LLM's native tool calls (``FunctionAgent``)."""

    native_tool_calls = True

    async def take_step(
        self,
        ctx: Context,
        llm_input: list[ChatMessage],
        tools: Sequence[AsyncBaseTool],
        memory: BaseMemory | None = None,
        *,
        tool_choice: str | None = None,
    ) -> AgentOutput:
        """Call the LLM with the tools; its tool calls (if any) are the output's ``tool_calls``."""
        llm = check_function_calling(self.get_llm(), type(self).__name__)
        scratchpad = await self._scratchpad(ctx)
        messages = [*llm_input, *scratchpad]
        ctx.write_event_to_stream(messages_event(AgentInput, messages, self.name))
        choice = tool_choice
        if choice is None and self.initial_tool_choice and messages[-1].role == MessageRole.USER:
            choice = self.initial_tool_choice
        response = await journaled_chat(
            ctx,
            lambda: chat(
                llm,
                messages,
                tools=list(tools),
                on_chunk=self._stream_writer(ctx, native_tools=True),
                retry_policy=self.retry_policy,
                options={"tool_choice": choice} if choice else None,
                allow_parallel_tool_calls=self.allow_parallel_tool_calls,
            ),
        )
        calls = llm.get_tool_calls_from_response(response, error_on_no_tool_call=False)
        scratchpad.append(response.message)
        await ctx.store.set(SCRATCHPAD, scratchpad)
        if calls:
            await self.note_reasoning(ctx, response.message.content or "")
        return AgentOutput(
            response=response.message,
            tool_calls=list(calls),
            raw=_raw(response),
            current_agent_name=self.name,
        )

    async def handle_tool_call_results(
        self, ctx: Context, results: list[ToolCallResult], memory: BaseMemory | None = None
    ) -> None:
        """One ``tool`` message per result (its blocks, the call's id), as llama-index sends it."""
        scratchpad = await self._scratchpad(ctx)
        for result in results:
            scratchpad.append(
                ChatMessage(
                    role=MessageRole.TOOL,
                    blocks=list(result.tool_output.blocks),
                    additional_kwargs={"tool_call_id": result.tool_id},
                )
            )
            if _answers(result):
                # The tool's output is the answer: keep it in the history as the reply.
                scratchpad.append(
                    ChatMessage(
                        role=MessageRole.ASSISTANT,
                        content=str(result.tool_output.content),
                        additional_kwargs={"tool_call_id": result.tool_id},
                    )
                )
                break
        await ctx.store.set(SCRATCHPAD, scratchpad)


class ReActMember(AgentMember):
    """An agent turn in the ReAct text format, with any LLM (``ReActAgent``)."""

    react_prompt: str = REACT_SYSTEM_PROMPT
    prompt_attributes: ClassVar[dict[str, str]] = {"react_header": "react_prompt"}

    async def take_step(
        self,
        ctx: Context,
        llm_input: list[ChatMessage],
        tools: Sequence[AsyncBaseTool],
        memory: BaseMemory | None = None,
        *,
        tool_choice: str | None = None,
    ) -> AgentOutput:
        """Call the LLM with the ReAct instructions; parse its actions or answer."""
        by_name = {t.metadata.get_name(): t for t in tools}
        header = react_system_prompt(
            by_name, template=self.react_prompt, system_prompt=self.system_prompt
        )
        response, scratchpad = await self.text_turn(ctx, header, llm_input)
        text = response.message.content or ""
        try:
            parsed = parse_react_output(text)
        except ReActParseError as err:
            retry = [
                ChatMessage(role=MessageRole.ASSISTANT, content=text),
                ChatMessage(
                    role=MessageRole.USER,
                    content=f"Observation: Error while parsing the output: {err}. "
                    f"{FORMAT_REMINDER}",
                ),
            ]
            scratchpad.extend(retry)
            await ctx.store.set(SCRATCHPAD, scratchpad)
            return AgentOutput(
                response=response.message,
                raw=_raw(response),
                current_agent_name=self.name,
                retry_messages=retry,
            )
        scratchpad.append(ChatMessage(role=MessageRole.ASSISTANT, content=text))
        await ctx.store.set(SCRATCHPAD, scratchpad)
        await self.note_reasoning(ctx, parsed.thought)
        if parsed.answer is not None:
            return AgentOutput(
                response=ChatMessage(role=MessageRole.ASSISTANT, content=parsed.answer),
                raw=_raw(response),
                current_agent_name=self.name,
            )
        turn = turn_number(scratchpad)
        calls = [
            ToolSelection(
                tool_id=f"react_{turn}_{i}", tool_name=a.tool_name, tool_kwargs=a.tool_kwargs
            )
            for i, a in enumerate(parsed.actions)
        ]
        return AgentOutput(
            response=ChatMessage(role=MessageRole.ASSISTANT, content=parsed.thought),
            tool_calls=calls,
            raw=_raw(response),
            current_agent_name=self.name,
        )

    async def handle_tool_call_results(
        self, ctx: Context, results: list[ToolCallResult], memory: BaseMemory | None = None
    ) -> None:
        """The results go back as one ``Observation`` message, in the order asked for."""
        scratchpad = await self._scratchpad(ctx)
        scratchpad.append(
            ChatMessage(
                role=MessageRole.USER,
                content=observation_message(
                    [(r.tool_name, r.tool_output.content) for r in results]
                ),
            )
        )
        direct = next((r for r in results if _answers(r)), None)
        if direct is not None:
            # The tool's output is the answer: keep it in the history as the reply.
            scratchpad.append(
                ChatMessage(role=MessageRole.ASSISTANT, content=direct.tool_output.content)
            )
        await ctx.store.set(SCRATCHPAD, scratchpad)

    async def finalize(self, ctx: Context, output: AgentOutput, memory: BaseMemory) -> AgentOutput:
        """Keep the reasoning and the answer in memory (the answer as a plain message)."""
        scratchpad: list[ChatMessage] = await ctx.store.get(SCRATCHPAD, default=[])
        if not output.tool_calls and scratchpad and not output.retry_messages:
            # The last message is the raw "Thought: ... Answer: ..." text: keep the answer.
            scratchpad = [*scratchpad[:-1], output.response]
        await memory.aput_messages(scratchpad)
        await ctx.store.set("memory", memory)
        await ctx.store.set(SCRATCHPAD, [])
        return output


__all__ = [
    "DEFAULT_AGENT_DESCRIPTION",
    "DEFAULT_AGENT_NAME",
    "REASONING",
    "SCRATCHPAD",
    "AgentMember",
    "FunctionCallingMember",
    "ReActMember",
    "check_output_options",
    "turn_number",
]
