"""The agents' LLM and tool calls through ``ctx.journal``: a crash never pays for them twice.

In a durable run (one a ``WorkflowCheckpointer`` records: ``batonflow serve``, ``batonflow run
--durable``, ``Workflow(checkpoint_store=...)``) each LLM call and each tool call an agent makes
is journaled: its response (or outcome) is committed to the run store when it returns, and the
agent's step re-run after a crash gets it back without asking the LLM again or calling the
tool again. A replayed LLM call streams no deltas (its tokens were streamed before the crash);
a replayed tool call returns its recorded output, its ``raw_output`` as JSON (or its text when
JSON cannot hold it). Outside a durable run the calls are made as they are.

Next to each result the journal keeps the call as a cassette holds it (the LLM request: messages,
tools offered, model and settings; a tool's arguments), secrets redacted, so that
``batonflow runs export RUN --cassette FILE`` can write the run as a cassette
(:mod:`batonflow.testing`). An LLM call is recorded as ``{"response", "cassette"}``; one
journaled before requests were kept (the response alone) still replays. No request is kept
while a cassette is open around the run: that cassette records or answers the calls itself.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import batonflow.budgets  # noqa: F401  (a durable run counts its LLM calls: usage per step)
from batonflow.core import Context
from batonflow.testing._export import CASSETTE_KEY, capture
from llama_index.core.base.llms.types import ChatResponse
from llama_index.core.tools import ToolOutput
from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from .tools import ToolOutcome


def _plain(value: Any) -> Any:
    """``value`` as JSON values (its text where JSON cannot hold it)."""
    return to_jsonable_python(value, fallback=str, serialize_unknown=True)


async def journaled_chat(ctx: Context, call: Callable[[], Awaitable[ChatResponse]]) -> ChatResponse:
    """``await call()`` (one LLM call), journaled as ``"llm"``.

    The response is recorded as JSON values (its ``raw`` too: a provider's response object is
    not a class a run may rebuild by name) and rebuilt with ``ChatResponse.model_validate``;
    this run gets the response as the LLM gave it.
    """
    made: list[ChatResponse] = []

    # Only a durable run keeps the request (for `runs export`): capturing wraps the LLM classes.
    keep = capture() if ctx.journaled else contextlib.nullcontext()

    async def ask() -> dict[str, Any]:
        with keep as session:
            response = await call()
        made.append(response)
        raw = response.raw
        plain = raw.model_dump() if isinstance(raw, BaseModel) else raw
        recorded: dict[str, Any] = _plain(response.model_copy(update={"raw": _plain(plain)}))
        if session is None:
            return recorded
        return {"response": recorded, CASSETTE_KEY: session.interactions}

    recorded: dict[str, Any] = await ctx.journal("llm", ask)
    if made:
        return made[0]
    # A journal written before requests were kept holds the response alone.
    return ChatResponse.model_validate(recorded.get("response", recorded))


async def journaled_tool(
    ctx: Context,
    name: str,
    kwargs: Mapping[str, Any],
    call: Callable[[], Awaitable[ToolOutcome]],
) -> ToolOutcome:
    """``await call()`` (one tool call), journaled as ``"tool:<name>"``."""
    made: list[ToolOutcome] = []

    keep = capture() if ctx.journaled else contextlib.nullcontext()

    async def run() -> dict[str, Any]:
        with keep as session:
            outcome = await call()
        made.append(outcome)
        raw = outcome.tool_output.raw_output if outcome.tool_output is not None else None
        result = {"output": outcome.output, "is_error": outcome.is_error, "raw_output": _plain(raw)}
        if session is not None:
            result[CASSETTE_KEY] = session.interactions
        return result

    recorded: dict[str, Any] = await ctx.journal(f"tool:{name}", run)
    if made:
        return made[0]
    output, is_error = str(recorded["output"]), bool(recorded["is_error"])
    tool_output = ToolOutput(
        content=output,
        tool_name=name,
        raw_input=dict(kwargs),
        raw_output=recorded["raw_output"],
        is_error=is_error,
    )
    return ToolOutcome(output, is_error, tool_output)


__all__ = ["journaled_chat", "journaled_tool"]
