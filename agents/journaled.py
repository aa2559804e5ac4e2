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
(:mod:`batonflow.testing`). An LLM call is recorded as ``{"response", "cassette", "ref"}``; one
journaled before requests were kept (the response alone) still replays. No request is kept
while a cassette is open around the run: that cassette records or answers the calls itself.

An LLM call's messages repeat the earlier calls' (a conversation sends them all again), so an
LLM call keeps only what is new since an earlier LLM call of the run that this process journaled
(:mod:`batonflow._request_deltas`; the run's last few calls are remembered per context). After a
crash the resumed run remembers none: its first LLM call keeps its whole message list again.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import batonflow.budgets  # noqa: F401  (a durable run counts its LLM calls: usage per step)
from batonflow import _request_deltas as deltas
from batonflow.core import Context
from batonflow.testing._export import CASSETTE_KEY, capture
from llama_index.core.base.llms.types import ChatResponse
from llama_index.core.tools import ToolOutput
from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from .tools import ToolOutcome

#: Per context: its run id and the run's last LLM calls journaled in this process (the bases a
#: later call's messages are stored against; only calls already committed to the journal).
_RECENT: weakref.WeakKeyDictionary[Context, tuple[str | None, list[deltas.Base]]] = (
    weakref.WeakKeyDictionary()
)


def _bases(ctx: Context) -> list[deltas.Base]:
    """The bases remembered for ``ctx``'s run (a context reused for another run starts over)."""
    run_id, bases = _RECENT.get(ctx, (None, []))
    if run_id != ctx.run_id:
        bases = []
        _RECENT[ctx] = (ctx.run_id, bases)
    return bases


def _remember(ctx: Context, ref: str, value: Mapping[str, Any]) -> None:
    """Offer the committed call ``ref`` (``value`` before compaction) as a base to later calls."""
    bases = _bases(ctx)
    bases.extend((ref, i, messages) for i, messages in deltas.interaction_messages(value))
    del bases[: -deltas.RECENT]


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
    full: list[dict[str, Any]] = []

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
        value = {"response": recorded, CASSETTE_KEY: session.interactions}
        full.append(value)
        return deltas.compact_value(value, list(_bases(ctx)))

    recorded: dict[str, Any] = await ctx.journal("llm", ask)
    if made:
        if full:  # committed: later calls may refer to it
            _remember(ctx, recorded[deltas.REF_KEY], full[0])
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
