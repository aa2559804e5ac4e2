"""Tool adaptation and tool calls: schemas from signatures, and errors the LLM can read."""

from __future__ import annotations

import functools
import re

import pytest
from batonflow.agents import AgentConfigurationError, FunctionCallingAgent
from batonflow.agents.testing import ScriptedLLM, ScriptedResponse, ScriptedToolCall
from batonflow.agents.tools import call_tool, describe_tools, to_tool, to_tools
from batonflow.core import Context
from llama_index.core.tools import FunctionTool


def add(a: int, b: int = 1) -> int:
    """Add two numbers.

    Args:
        a: The first number.
        b: The second number.
    """
    return a + b


async def shout(text: str) -> str:
    """Upper-case a text."""
    return text.upper()


def divide(a: float, b: float) -> float:
    """Divide a by b."""
    return a / b


class AsyncCallable:
    __name__ = "echo"

    async def __call__(self, word: str) -> str:
        return word * 2


def test_sync_callable_schema_comes_from_signature_and_docstring() -> None:
    """A plain function becomes a tool named after it, with its arguments and docstring."""
    tool = to_tool(add)
    assert tool.metadata.name == "add"
    assert "Add two numbers." in tool.metadata.description
    params = tool.metadata.get_parameters_dict()
    assert params["properties"]["a"]["type"] == "integer"
    assert params["properties"]["a"]["description"] == "The first number."
    assert params["required"] == ["a"]


async def test_sync_and_async_callables_run() -> None:
    """Sync functions, async functions and async callable objects all run."""
    tools = to_tools([add, shout, AsyncCallable()])
    assert list(tools) == ["add", "shout", "echo"]
    assert (await call_tool(tools, "add", {"a": 2, "b": 3})).output == "5"
    assert (await call_tool(tools, "shout", {"text": "hi"})).output == "HI"
    assert (await call_tool(tools, "echo", {"word": "ab"})).output == "abab"


async def test_llama_index_function_tool_is_used_as_is() -> None:
    """A FunctionTool keeps its own name and description."""
    tool = FunctionTool.from_defaults(add, name="plus", description="Adds.")
    tools = to_tools([tool])
    assert list(tools) == ["plus"]
    assert (await call_tool(tools, "plus", {"a": 1})).output == "2"


async def test_arguments_are_coerced_to_the_schema() -> None:
    """A numeric string the LLM wrote for an int argument reaches the tool as an int."""
    out = await call_tool(to_tools([add]), "add", {"a": "4", "b": 1})
    assert (out.output, out.is_error) == ("5", False)


@pytest.mark.parametrize(
    ("name", "kwargs", "match"),
    [
        pytest.param(
            "nope", {}, r"no tool named 'nope'. Available tools: add, divide", id="unknown"
        ),
        pytest.param(
            "add", {"b": 2}, r"bad arguments for tool 'add': a: Field required", id="missing"
        ),
        pytest.param("add", {"a": "x"}, r"a: Input should be a valid integer", id="wrong-type"),
        pytest.param(
            "add", {"a": 1, "c": 2}, r"tool 'add' has no argument\(s\) 'c'", id="unknown-arg"
        ),
        pytest.param(
            "divide",
            {"a": 1, "b": 0},
            r"tool 'divide' raised ZeroDivisionError: division by zero",
            id="raises",
        ),
    ],
)
async def test_bad_calls_become_error_outputs(name: str, kwargs: dict, match: str) -> None:
    """Unknown tool, bad arguments and a raising tool give an error text, not an exception."""
    out = await call_tool(to_tools([add, divide]), name, kwargs)
    assert out.is_error
    assert out.output.startswith("Error: ")
    assert re.search(match, out.output), out.output


def test_duplicate_tool_names_are_refused() -> None:
    """Two tools with one name raise a clear configuration error."""
    with pytest.raises(
        AgentConfigurationError, match="Two tools are named 'add'; .*name='other_name'"
    ):
        to_tools([add, FunctionTool.from_defaults(divide, name="add")])


@pytest.mark.parametrize(
    ("obj", "match"),
    [
        pytest.param(42, r"neither a llama-index tool nor callable", id="not-callable"),
        pytest.param(
            lambda x: x, r"Cannot name the tool .*FunctionTool.from_defaults", id="lambda"
        ),
        pytest.param(functools.partial(add, 1), r"Cannot name the tool", id="partial"),
    ],
)
def test_unusable_tools_are_refused(obj: object, match: str) -> None:
    """Objects that cannot be tools get an error naming the fix."""
    with pytest.raises(AgentConfigurationError, match=match):
        to_tools([obj])  # type: ignore[list-item]


def test_single_tool_not_in_a_list_is_refused() -> None:
    """tools=fn instead of tools=[fn] is caught."""
    with pytest.raises(AgentConfigurationError, match=r"wrap the single tool in a list"):
        to_tools(add)  # type: ignore[arg-type]


def test_describe_tools_lists_names_descriptions_and_schemas() -> None:
    """The ReAct prompt's tool list shows each tool's description and argument schema."""
    text = describe_tools(to_tools([add, shout]))
    assert text.splitlines()[0].startswith("- add: add(a: int, b: int = 1) -> int Add two numbers.")
    assert '"text": {"title": "Text", "type": "string"}' in text


async def remember(ctx: Context, fact: str) -> str:
    """Remember a fact in the run's state.

    Args:
        fact: The fact.
    """
    facts = await ctx.store.get("facts", default=[])
    await ctx.store.set("facts", [*facts, fact])
    return f"remembered {fact}"


async def test_context_parameter_is_hidden_from_the_llm_and_injected() -> None:
    """A tool parameter annotated Context is not in the schema and receives the run's context."""
    tool = to_tool(remember)
    assert list(tool.metadata.get_parameters_dict()["properties"]) == ["fact"]
    assert tool.metadata.description.startswith("remember(fact: str) -> str")
    llm = ScriptedLLM(
        [ScriptedResponse(tool_calls=[ScriptedToolCall("remember", {"fact": "sky is blue"})]), "ok"]
    )
    handler = FunctionCallingAgent(tools=[remember], llm=llm).run(input="remember that")
    result = await handler
    assert result.tool_calls[0].output == "remembered sky is blue"
    assert await handler.ctx.store.get("facts") == ["sky is blue"]
