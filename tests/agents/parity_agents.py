"""The agents of every class and their scripted replies, for the parity tests."""

from __future__ import annotations

import contextlib
import io
import json
from typing import Any

from batonflow.agents import (
    AgentWorkflow,
    CodeActAgent,
    FunctionAgent,
    FunctionCallingAgent,
    ReActAgent,
)
from batonflow.agents.testing import ScriptedResponse, ScriptedToolCall
from batonflow.core import Event
from pydantic import BaseModel

KINDS = ["function_calling", "react", "function", "workflow", "codeact"]
# The kinds whose tools are called by the agent (CodeAct's are called from the LLM's code).
TOOL_KINDS = ["function_calling", "react", "function", "workflow"]


class Weather(BaseModel):
    city: str
    celsius: int


def run_code(code: str) -> str:
    """The tests' stand-in for a sandbox (exec in a fresh namespace)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(code, {})  # noqa: S102 - test-only executor
    return out.getvalue()


def build(kind: str, llm: Any, tools: list[Any] | None = None, **options: Any) -> Any:
    """An agent of ``kind``; ``options`` go to the agent (to the workflow for "workflow")."""
    tools = tools or []
    if kind == "function_calling":
        return FunctionCallingAgent(tools=tools, llm=llm, name="solo", **options)
    if kind == "react":
        return ReActAgent(tools=tools, llm=llm, name="solo", **options)
    if kind == "function":
        return FunctionAgent(tools=tools, llm=llm, name="solo", **options)
    if kind == "workflow":
        member = FunctionAgent(tools=tools, llm=llm, name="solo")
        return AgentWorkflow(agents=[member], **options)
    return CodeActAgent(code_execute_fn=run_code, tools=tools, llm=llm, name="solo", **options)


def answer(kind: str, text: str) -> str:
    """The LLM reply that is a final answer, in the kind's format."""
    return f"Thought: I can answer.\nAnswer: {text}" if kind == "react" else text


def tool_call(kind: str, name: str, **kwargs: Any) -> Any:
    """The LLM reply that calls one tool, in the kind's format."""
    if kind == "react":
        return f"Thought: use {name}.\nAction: {name}\nAction Input: {json.dumps(kwargs)}"
    return ScriptedResponse(tool_calls=[ScriptedToolCall(name, kwargs)])


def start(kind: str, agent: Any, text: str, **run: Any) -> Any:
    """Start a run the way users of the kind write it."""
    if kind in ("function_calling", "react"):
        return agent.run(input=text, **run)
    return agent.run(user_msg=text, **run)


def weather_reply(**fields: Any) -> ScriptedResponse:
    """The structured-output LLM call's reply: a tool call named after the model."""
    return ScriptedResponse(tool_calls=[ScriptedToolCall("Weather", fields)])


async def events_and_result(handler: Any) -> tuple[list[Event], Any]:
    events = [ev async for ev in handler.stream_events()]
    return events, await handler


def order_status(order_id: int) -> str:
    """The status of an order."""
    return f"order {order_id!r}: shipped"
