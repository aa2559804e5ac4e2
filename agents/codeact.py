"""``CodeActAgent``: an agent that acts by writing Python code, run by *your* executor.

The LLM answers in text; when it wants to act it writes code in ``<execute>...</execute>``
(a fenced ```` ```python ```` block is read too). The code goes to ``code_execute_fn`` — a
function you supply, sync or async, that takes the code and returns its output — and the
output comes back to the LLM as the next message. The agent's tools are described to the LLM
as Python functions it may call from the code; making them callable there is the executor's
job (put them in its namespace).

batonflow never runs model-written code by itself: ``CodeActAgent`` without
``code_execute_fn=`` refuses to be built. Run the code in a sandbox you trust (a container,
a subprocess with limits, a remote interpreter); ``exec`` in your own process is for tests.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Sequence
from typing import Any

from batonflow.core import Context
from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.memory import BaseMemory
from llama_index.core.tools import FunctionTool, ToolSelection
from llama_index.core.tools.types import AsyncBaseTool

from .errors import AgentConfigurationError
from .events import AgentOutput, ToolCallResult
from .function_agent import WorkflowAgent
from .members import SCRATCHPAD, AgentMember, _raw, turn_number

#: The name of the tool call that runs the LLM's code.
EXECUTE_TOOL = "execute"
#: What precedes the executor's output in the message the LLM is sent (llama-index's text).
CODE_RESULT_PREFIX = "Result of executing the code given:\n\n"

CODEACT_SYSTEM_PROMPT = """\
You solve the user's task by writing Python code that is run for you.

To run code, write it between <execute> and </execute>. You see its output in the next
message. Variables and imports stay defined from one run to the next. You may call these
functions from your code:

{tool_descriptions}

Write one code block per message, then stop and wait for its output. When you have the
answer, reply with plain text and no <execute> block.
"""

_EXECUTE = re.compile(r"<execute>(.*?)</execute>", re.DOTALL)
_FENCE = re.compile(r"```(?:python|py)\s*\n(.*?)```", re.DOTALL)


def extract_code(text: str) -> str | None:
    """The code the LLM asked to run: its ``<execute>`` block (or ```python fence), else None."""
    found = _EXECUTE.search(text) or _FENCE.search(text)
    if found is None:
        return None
    code = found.group(1).strip("\n")
    return code if code.strip() else None


def _signature(tool: AsyncBaseTool) -> str:
    fn = getattr(tool, "real_fn", None)
    name = tool.metadata.get_name()
    doc = " ".join(tool.metadata.description.split())
    if fn is not None:
        try:
            return f'def {name}{inspect.signature(fn, eval_str=True)}:\n    """{doc}"""'
        except (NameError, TypeError, ValueError):
            pass  # an unresolvable annotation: describe it by name only
    return f'def {name}(**kwargs):\n    """{doc}"""'


class CodeActMember(AgentMember):
    """An agent turn that reads code out of the LLM's reply and runs it with the executor."""

    code_act_system_prompt: str = CODEACT_SYSTEM_PROMPT

    async def take_step(
        self,
        ctx: Context,
        llm_input: list[ChatMessage],
        tools: Sequence[AsyncBaseTool],
        memory: BaseMemory | None = None,
        *,
        tool_choice: str | None = None,
    ) -> AgentOutput:
        """Call the LLM; code in its reply becomes an ``execute`` tool call."""
        described = [t for t in tools if t.metadata.get_name() != EXECUTE_TOOL]
        header = self.code_act_system_prompt.format(
            tool_descriptions="\n\n".join(_signature(t) for t in described) or "(none)"
        )
        if self.system_prompt:
            header = f"{self.system_prompt.strip()}\n\n{header}"
        response, scratchpad = await self.text_turn(ctx, header, llm_input)
        text = response.message.content or ""
        scratchpad.append(ChatMessage(role=MessageRole.ASSISTANT, content=text))
        await ctx.store.set(SCRATCHPAD, scratchpad)
        code = extract_code(text)
        calls = []
        if code is not None:
            turn = turn_number(scratchpad)
            calls.append(
                ToolSelection(
                    tool_id=f"code_{turn}", tool_name=EXECUTE_TOOL, tool_kwargs={"code": code}
                )
            )
        return AgentOutput(
            response=response.message,
            tool_calls=calls,
            raw=_raw(response),
            current_agent_name=self.name,
        )

    async def handle_tool_call_results(
        self, ctx: Context, results: list[ToolCallResult], memory: BaseMemory | None = None
    ) -> None:
        """The executor's output goes back to the LLM as a user message, in llama-index's words."""
        scratchpad = await self._scratchpad(ctx)
        for result in results:
            scratchpad.append(
                ChatMessage(
                    role=MessageRole.USER,
                    content=f"{CODE_RESULT_PREFIX}{result.tool_output.content}",
                )
            )
        await ctx.store.set(SCRATCHPAD, scratchpad)


class CodeActAgent(CodeActMember, WorkflowAgent):
    """An agent that writes Python code and has your executor run it (see the module docs).

    ::

        agent = CodeActAgent(code_execute_fn=my_sandbox.run, tools=[add], llm=llm)
        output = await agent.run(user_msg="What is 2 + 3, times 4?")

    Takes the :class:`~batonflow.agents.WorkflowAgent` arguments, and:

    Args:
        code_execute_fn: Runs one code block and returns its output (anything; shown to the
            LLM as text). Sync or async. Required: batonflow has no executor of its own.
        code_act_system_prompt: The instructions, with ``{tool_descriptions}``.

    Raises:
        AgentConfigurationError: ``code_execute_fn`` is missing or not callable.
    """

    def __init__(
        self,
        *,
        code_execute_fn: Callable[[str], Any] | None = None,
        code_act_system_prompt: str = CODEACT_SYSTEM_PROMPT,
        **kwargs: Any,
    ) -> None:
        if code_execute_fn is None or not callable(code_execute_fn):
            raise AgentConfigurationError(
                "CodeActAgent runs the code the LLM writes, and batonflow does not run "
                "model-written code by itself: pass code_execute_fn=..., a function (sync or "
                "async) that runs one code block in a sandbox you trust and returns its output."
            )
        if "{tool_descriptions}" not in code_act_system_prompt:
            raise AgentConfigurationError(
                "code_act_system_prompt= must contain {tool_descriptions}; add it where the "
                "tools should be listed."
            )
        self.code_act_system_prompt = code_act_system_prompt
        super().__init__(**kwargs)
        self.code_execute_fn = code_execute_fn
        self.tools[EXECUTE_TOOL] = _execute_tool(code_execute_fn)


def _execute_tool(fn: Callable[[str], Any]) -> FunctionTool:
    description = "Run a block of Python code and return its output."
    if inspect.iscoroutinefunction(fn):

        async def execute_async(code: str) -> str:
            return str(await fn(code))

        return FunctionTool.from_defaults(
            async_fn=execute_async, name=EXECUTE_TOOL, description=description
        )

    def execute(code: str) -> str:
        return str(fn(code))

    return FunctionTool.from_defaults(execute, name=EXECUTE_TOOL, description=description)


__all__ = [
    "CODEACT_SYSTEM_PROMPT",
    "CODE_RESULT_PREFIX",
    "EXECUTE_TOOL",
    "CodeActAgent",
    "extract_code",
]
