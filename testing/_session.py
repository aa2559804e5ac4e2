"""An open cassette: it records the calls made inside it, or answers them from its file."""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextvars import Token
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

from . import _calls, _diff, _redact, _seams
from .errors import CassetteError, CassetteMismatchError

#: How a cassette treats the calls made inside it.
Mode = Literal["record", "replay", "rewrite"]
MODES = ("record", "replay", "rewrite")
#: The format version written in every cassette file.
FORMAT = 1


def load(path: Path) -> list[dict[str, Any]]:
    """The interactions of the cassette at ``path``."""
    if not path.exists():
        raise CassetteError(
            f"There is no cassette at {path}. Record one first: wrap the run in "
            f"`with batonflow.testing.record({str(path)!r}):`."
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise CassetteError(
            f"{path} is not a cassette (not JSON: {exc}). Record it again with "
            "batonflow.testing.record."
        ) from exc
    if not isinstance(data, dict) or data.get("batonflow_cassette") != FORMAT:
        raise CassetteError(
            f"{path} is not a batonflow cassette of format {FORMAT}. Record it again with "
            "batonflow.testing.record."
        )
    interactions: list[dict[str, Any]] = data["interactions"]
    return interactions


def save(path: Path, interactions: Sequence[dict[str, Any]]) -> None:
    """Write ``interactions`` as the cassette at ``path`` (its folder is made if need be)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    body = {"batonflow_cassette": FORMAT, "interactions": list(interactions)}
    path.write_text(json.dumps(body, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def _describe(request: dict[str, Any]) -> str:
    return f"{request.get('llm', 'LLM')}.{request.get('call', 'chat')}"


class CassetteSession:
    """The cassette of a ``with record(...)`` / ``with replay(...)`` block (sync or async).

    Args:
        path: The cassette file.
        mode: ``"record"`` makes every call and writes them all; ``"replay"`` answers every
            call from the file and makes none; ``"rewrite"`` answers the calls the file holds
            unchanged and makes (and writes over) the others.
        redact: The redaction hook (see :mod:`batonflow.testing`).
        write: ``False`` keeps what a ``"record"`` block recorded in :attr:`interactions`
            only, writing no file (a durable run's journal keeps each call's interactions).
    """

    def __init__(
        self,
        path: str | Path,
        mode: Mode,
        redact: _redact.Redactor | None = None,
        *,
        write: bool = True,
    ) -> None:
        if mode not in MODES:
            raise ValueError(
                f"mode={mode!r} is not a cassette mode. Pass one of {', '.join(map(repr, MODES))}."
            )
        self.path = Path(path)
        self.mode: Mode = mode
        self._redact = redact
        self._write = write
        self._lock = threading.Lock()
        recorded = [] if mode == "record" else load(self.path)
        self._llm = [e for e in recorded if e.get("kind") == "llm"]
        self._tools = [e for e in recorded if e.get("kind") == "tool"]
        self._next_llm = 0
        self._tools_used: set[int] = set()
        #: What this run did, in the order the calls started (``None``: a call that raised).
        self._out: list[dict[str, Any] | None] = []
        self._changed = mode == "record"
        self._error: CassetteMismatchError | None = None
        self._token: Token[CassetteSession | None] | None = None

    # -- the context manager, sync and async ---------------------------------------------
    def __enter__(self) -> CassetteSession:
        _seams.open_seams()
        self._token = _seams.ACTIVE.set(self)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._token is not None:
            _seams.ACTIVE.reset(self._token)
            self._token = None
        _seams.close_seams()
        if self._error is not None and exc is not self._error:
            # The run may have wrapped the mismatch (an agent's LLMError): show the diff first.
            raise self._error from exc
        unused = self._next_llm < len(self._llm) or len(self._tools_used) < len(self._tools)
        if exc is None and self.mode == "replay" and unused:
            raise CassetteMismatchError(
                f"The run made {self._next_llm} of the {len(self._llm)} LLM calls and "
                f"{len(self._tools_used)} of the {len(self._tools)} tool calls the cassette "
                f"{self.path} holds: it stopped asking for the rest. Change the code back, or "
                "replay with mode='rewrite' to drop them."
            )
        # A rewrite also drops what this run no longer asks for.
        if self._write and exc is None and (self._changed or (self.mode == "rewrite" and unused)):
            save(self.path, [e for e in self._out if e is not None])

    async def __aenter__(self) -> CassetteSession:
        return self.__enter__()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.__exit__(exc_type, exc, tb)

    # -- what is written -----------------------------------------------------------------
    @property
    def interactions(self) -> list[dict[str, Any]]:
        """The interactions of this run so far, as they are (or would be) written."""
        return [e for e in self._out if e is not None]

    def _clean(self, entry: dict[str, Any], owner: Any) -> dict[str, Any]:
        cleaned: dict[str, Any] = _redact.scrub(entry, _redact.secrets_of(owner))
        return self._redact(cleaned) if self._redact is not None else cleaned

    def _slot(self) -> int:
        with self._lock:
            self._out.append(None)
            return len(self._out) - 1

    def _fail(self, error: CassetteMismatchError) -> CassetteMismatchError:
        if self._error is None:
            self._error = error
        return error

    # -- LLM calls -----------------------------------------------------------------------
    def _begin_llm(
        self, llm: Any, call: str, stream: bool, args: Sequence[Any], kwargs: dict[str, Any]
    ) -> tuple[int, dict[str, Any], dict[str, Any] | None]:
        """Reserve this call's place; return it, the call as written, and the recorded answer
        (``None``: make the call)."""
        request, settings = _calls.llm_request(llm, call, stream, args, kwargs)
        entry = self._clean({"kind": "llm", "request": request, "settings": settings}, llm)
        with self._lock:
            slot = len(self._out)
            self._out.append(None)
            if self.mode == "record":
                return slot, entry, None
            number = self._next_llm
            self._next_llm += 1
        recorded = self._llm[number] if number < len(self._llm) else None
        if recorded is not None and recorded.get("request") == entry["request"]:
            self._out[slot] = recorded
            return slot, entry, recorded
        if self.mode == "rewrite":
            self._changed = True
            return slot, entry, None
        if recorded is None:
            raise self._fail(
                CassetteMismatchError(
                    f"LLM call {number + 1} ({_describe(entry['request'])}) is not in the "
                    f"cassette {self.path}: it holds {len(self._llm)} LLM calls. Record the run "
                    "again, or replay with mode='rewrite' to record the new calls."
                )
            )
        raise self._fail(
            CassetteMismatchError(
                f"LLM call {number + 1} ({_describe(entry['request'])}) sent something else "
                f"than the cassette {self.path} holds:\n"
                f"{_diff.render(recorded['request'], entry['request'])}\n"
                "Change the code back, or replay with mode='rewrite' to record this call again."
            )
        )

    def _finish_llm(self, slot: int, entry: dict[str, Any], llm: Any, response: Any) -> None:
        usage = _calls.usage_of(response)
        done = {**entry, "response": _calls.response_to_json(response)}
        if usage is not None:
            done["usage"] = usage
        self._out[slot] = self._clean(done, llm)

    def _answer(self, call: str, stream: bool, recorded: dict[str, Any]) -> Any:
        data = recorded["response"]
        if call == "chat":
            return _calls.chat_response_from_json(data, stream)
        return _calls.completion_response_from_json(data, stream)

    def llm_call(
        self,
        llm: Any,
        call: str,
        stream: bool,
        args: Sequence[Any],
        kwargs: dict[str, Any],
        real: Callable[[], Any],
    ) -> Any:
        """One synchronous LLM call: answered from the cassette, or made and recorded."""
        slot, entry, recorded = self._begin_llm(llm, call, stream, args, kwargs)
        if recorded is not None:
            answer = self._answer(call, stream, recorded)
            return iter([answer]) if stream else answer
        if not stream:
            response = real()
            self._finish_llm(slot, entry, llm, response)
            return response

        def streamed() -> Iterator[Any]:
            last = None
            for last in real():
                yield last
            self._finish_llm(slot, entry, llm, last or _calls.empty_response(call))

        return streamed()

    async def allm_call(
        self,
        llm: Any,
        call: str,
        stream: bool,
        args: Sequence[Any],
        kwargs: dict[str, Any],
        real: Callable[[], Awaitable[Any]],
    ) -> Any:
        """One asynchronous LLM call: answered from the cassette, or made and recorded."""
        slot, entry, recorded = self._begin_llm(llm, call, stream, args, kwargs)
        if recorded is not None:
            answer = self._answer(call, stream, recorded)
            if not stream:
                return answer

            async def one() -> AsyncIterator[Any]:
                yield answer

            return one()
        if not stream:
            response = await real()
            self._finish_llm(slot, entry, llm, response)
            return response
        gen = await real()

        async def streamed() -> AsyncIterator[Any]:
            last = None
            async for last in gen:
                yield last
            self._finish_llm(slot, entry, llm, last or _calls.empty_response(call))

        return streamed()

    # -- tool calls ----------------------------------------------------------------------
    def _begin_tool(
        self, tool: Any, args: Sequence[Any], kwargs: dict[str, Any]
    ) -> tuple[int, dict[str, Any], dict[str, Any] | None]:
        name = tool.metadata.get_name()
        entry = self._clean(
            {"kind": "tool", "tool": name, "arguments": _calls.tool_arguments(args, kwargs)}, tool
        )
        slot = self._slot()
        if self.mode == "record":
            return slot, entry, None
        with self._lock:
            same_name = [i for i, e in enumerate(self._tools) if e.get("tool") == name]
            for i in same_name:
                if i not in self._tools_used and self._tools[i]["arguments"] == entry["arguments"]:
                    self._tools_used.add(i)
                    self._out[slot] = self._tools[i]
                    return slot, entry, self._tools[i]
        if self.mode == "rewrite":
            self._changed = True
            return slot, entry, None
        unused = [self._tools[i] for i in same_name if i not in self._tools_used]
        detail = (
            f"the first unused recorded {name} call differs:\n"
            f"{_diff.render(unused[0]['arguments'], entry['arguments'])}"
            if unused
            else f"it holds no (more) calls of {name}."
        )
        raise self._fail(
            CassetteMismatchError(
                f"Tool call {name}({json.dumps(entry['arguments'], sort_keys=True)}) is not in "
                f"the cassette {self.path}; {detail}\n"
                "Change the code back, or replay with mode='rewrite' to record this call."
            )
        )

    def _finish_tool(self, slot: int, entry: dict[str, Any], tool: Any, output: Any) -> Any:
        self._out[slot] = self._clean({**entry, "result": _calls.tool_result_to_json(output)}, tool)
        return output

    def tool_call(
        self, tool: Any, args: Sequence[Any], kwargs: dict[str, Any], real: Callable[[], Any]
    ) -> Any:
        """One synchronous tool call: answered from the cassette, or made and recorded."""
        slot, entry, recorded = self._begin_tool(tool, args, kwargs)
        if recorded is not None:
            return _calls.tool_result_from_json(
                entry["tool"], entry["arguments"], recorded["result"]
            )
        return self._finish_tool(slot, entry, tool, real())

    async def atool_call(
        self,
        tool: Any,
        args: Sequence[Any],
        kwargs: dict[str, Any],
        real: Callable[[], Awaitable[Any]],
    ) -> Any:
        """One asynchronous tool call: answered from the cassette, or made and recorded."""
        slot, entry, recorded = self._begin_tool(tool, args, kwargs)
        if recorded is not None:
            return _calls.tool_result_from_json(
                entry["tool"], entry["arguments"], recorded["result"]
            )
        return self._finish_tool(slot, entry, tool, await real())
