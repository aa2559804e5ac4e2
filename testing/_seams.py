"""Where a cassette listens: the call methods of every llama-index LLM and tool class.

While a cassette is open, each LLM class that defines one of ``chat``, ``achat``,
``stream_chat``, ``astream_chat``, ``complete``, ``acomplete``, ``stream_complete`` and
``astream_complete`` (the methods every llama-index LLM implements, whatever its provider),
and each tool class that defines ``call`` or ``acall``, has that method wrapped. The wrapper
hands the call to the cassette of the current context (a ``ContextVar``, so tasks and threads
started inside the ``with`` block see it, and other code never does); a call made while
another is being answered (a subclass calling ``super().chat``, a structured LLM asking its
inner LLM) goes straight through. The wrappers are removed when the last cassette closes.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from llama_index.core.base.llms.base import BaseLLM
from llama_index.core.tools.types import BaseTool

if TYPE_CHECKING:
    from ._session import CassetteSession

#: The open cassette of this context.
ACTIVE: ContextVar[CassetteSession | None] = ContextVar("batonflow_cassette", default=None)
#: True while a call is being answered: calls it makes go straight to the original method.
_INSIDE: ContextVar[bool] = ContextVar("batonflow_cassette_inside", default=False)

#: LLM methods: name -> (call, streamed, asynchronous).
LLM_METHODS = {
    "chat": ("chat", False, False),
    "achat": ("chat", False, True),
    "stream_chat": ("chat", True, False),
    "astream_chat": ("chat", True, True),
    "complete": ("complete", False, False),
    "acomplete": ("complete", False, True),
    "stream_complete": ("complete", True, False),
    "astream_complete": ("complete", True, True),
}
TOOL_METHODS = {"call": False, "acall": True}

_lock = threading.Lock()
_open = 0
_saved: list[tuple[type, str, Any]] = []


def _subclasses(base: type) -> list[type]:
    found, todo = [], [base]
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return found


def _session() -> CassetteSession | None:
    return None if _INSIDE.get() else ACTIVE.get()


def _bound(original: Any, self: Any) -> Any:
    """``original`` bound to ``self``, as attribute access binds it: llama-index's
    ``dispatcher.span`` is a wrapt decorator that finds the instance through that binding (called
    unbound, its span handlers see no instance, and the GenAI span of the call loses the LLM's
    settings)."""
    return original.__get__(self, type(self))


def _inside(fn: Callable[[], Any]) -> Any:
    token = _INSIDE.set(True)
    try:
        return fn()
    finally:
        _INSIDE.reset(token)


async def _ainside(fn: Callable[[], Any]) -> Any:
    token = _INSIDE.set(True)
    try:
        return await fn()
    finally:
        _INSIDE.reset(token)


def _iterate(gen: Iterator[Any]) -> Iterator[Any]:
    while True:
        token = _INSIDE.set(True)
        try:
            item = next(gen)
        except StopIteration:
            return
        finally:
            _INSIDE.reset(token)
        yield item


async def _aiterate(gen: AsyncIterator[Any]) -> AsyncIterator[Any]:
    while True:
        token = _INSIDE.set(True)
        try:
            item = await gen.__anext__()
        except StopAsyncIteration:
            return
        finally:
            _INSIDE.reset(token)
        yield item


def _wrap_llm(original: Any, call: str, stream: bool, is_async: bool) -> Any:
    if not is_async:

        @functools.wraps(original)
        def sync_method(self: Any, *args: Any, **kwargs: Any) -> Any:
            session = _session()
            if session is None:
                return _bound(original, self)(*args, **kwargs)

            def real() -> Any:
                result = _inside(lambda: _bound(original, self)(*args, **kwargs))
                return _iterate(result) if stream else result

            return session.llm_call(self, call, stream, args, kwargs, real)

        return sync_method

    @functools.wraps(original)
    async def async_method(self: Any, *args: Any, **kwargs: Any) -> Any:
        session = _session()
        if session is None:
            return await _bound(original, self)(*args, **kwargs)

        async def real() -> Any:
            result = await _ainside(lambda: _bound(original, self)(*args, **kwargs))
            return _aiterate(result) if stream else result

        return await session.allm_call(self, call, stream, args, kwargs, real)

    return async_method


def _wrap_tool(original: Any, is_async: bool) -> Any:
    if not is_async:

        @functools.wraps(original)
        def sync_method(self: Any, *args: Any, **kwargs: Any) -> Any:
            session = _session()
            if session is None:
                return _bound(original, self)(*args, **kwargs)
            return session.tool_call(
                self, args, kwargs, lambda: _inside(lambda: _bound(original, self)(*args, **kwargs))
            )

        return sync_method

    @functools.wraps(original)
    async def async_method(self: Any, *args: Any, **kwargs: Any) -> Any:
        session = _session()
        if session is None:
            return await _bound(original, self)(*args, **kwargs)
        return await session.atool_call(
            self, args, kwargs, lambda: _ainside(lambda: _bound(original, self)(*args, **kwargs))
        )

    return async_method


def _install() -> None:
    for cls in _subclasses(BaseLLM):
        for name, (call, stream, is_async) in LLM_METHODS.items():
            fn = cls.__dict__.get(name)
            if fn is None or getattr(fn, "__isabstractmethod__", False):
                continue
            _saved.append((cls, name, fn))
            setattr(cls, name, _wrap_llm(fn, call, stream, is_async))
    for cls in _subclasses(BaseTool):
        for name, is_async in TOOL_METHODS.items():
            fn = cls.__dict__.get(name)
            if fn is None or getattr(fn, "__isabstractmethod__", False):
                continue
            _saved.append((cls, name, fn))
            setattr(cls, name, _wrap_tool(fn, is_async))


def open_seams() -> None:
    """Wrap the call methods of every LLM and tool class loaded now (once for all cassettes)."""
    global _open
    with _lock:
        if _open == 0:
            _install()
        _open += 1


def close_seams() -> None:
    """Put the original methods back once the last open cassette closes."""
    global _open
    with _lock:
        _open -= 1
        if _open == 0:
            for cls, name, fn in reversed(_saved):
                setattr(cls, name, fn)
            _saved.clear()
