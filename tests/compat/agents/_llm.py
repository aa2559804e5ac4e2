"""The scripted LLM of the ported agent examples, and a printer of what it was sent.

The examples replace OpenAI with :class:`~batonflow.agents.testing.ScriptedLLM` (a
llama-index-core ``FunctionCallingLLM`` that replays a script; it runs under llama-index's
agents and batonflow's alike) and print, with :func:`show_calls`, the roles and texts of every
LLM call, so what the LLM is sent is compared too.
"""

from __future__ import annotations

from typing import Any

from batonflow.agents.testing import ScriptedLLM, ScriptedResponse, ScriptedToolCall


def call(name: str, call_id: str = "", /, **kwargs: Any) -> ScriptedResponse:
    """A reply that calls one tool."""
    return ScriptedResponse(tool_calls=[ScriptedToolCall(name, kwargs, id=call_id or None)])


def show_calls(llm: ScriptedLLM) -> None:
    """Print each LLM call's messages: role, text, and the additional kwargs."""
    for i, messages in enumerate(llm.calls):
        print(f"-- LLM call {i + 1}")
        for m in messages:
            text = (m.content or "").replace("\n", " | ")[:160]
            print(f"   {m.role.value}: {text} {m.additional_kwargs or ''}".rstrip())


__all__ = ["ScriptedLLM", "ScriptedResponse", "ScriptedToolCall", "call", "show_calls"]
