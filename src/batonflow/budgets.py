"""Token and cost budgets of durable runs: every llama-index LLM call counted, and stopped
before it would pass the run's budget.

Importing this module lets runs have a budget (``WorkflowCheckpointer(budget=...)``,
``cptr.start(budget=...)``, ``batonflow run --budget``, the ``budget`` of a start request): it
wraps the call methods of every llama-index LLM class (``chat``, ``achat``, ``stream_chat``,
``astream_chat``, ``complete``, ``acomplete``, ``stream_complete``, ``astream_complete``, the
methods every provider implements) when a run with a budget starts. A call made in a step of
such a run (an agent's, a RAG query's, a step's own ``await llm.achat(...)``) first asks the
run's budget; a call made anywhere else goes straight through.

**The estimate** of a call, checked before it is made: its prompt (the text of its messages, or
its prompt, and of the tool definitions sent with it, in characters, divided by 4 and rounded
up) plus its ``max_tokens`` (given to the call, else the LLM's ``max_tokens``; none: 0). The
call waits (or fails) when the tokens the run used, plus the estimates of its calls in flight,
plus this estimate, are more than the budget.

**The usage** of a call, counted when it returns: the tokens the provider reported
(``prompt_tokens``/``completion_tokens`` in the response's ``additional_kwargs``, as llama-index's
OpenAI LLM gives them, or a ``usage`` in its ``raw`` response, OpenAI's or Anthropic's names);
a call that reports none is counted at its prompt estimate plus its text's characters / 4.

**The cost** of a call: its tokens times the model's price in :data:`PRICES` (US dollars per
million tokens, prompt and completion), matched by the longest name the model's name starts
with; a model not there has no known cost, and a cost budget refuses its calls. The table holds
a few OpenAI models' list prices as OpenAI published them in 2025: they change, so check them
and give yours with :func:`set_price`.
"""

from __future__ import annotations

import functools
import json
import math
import threading
import weakref
from collections.abc import AsyncIterator, Iterator
from contextvars import ContextVar
from typing import Any

from batonflow.core.durable import _budget
from batonflow.core.durable._budget import Budget, BudgetState, Estimate, Usage, parse_budget
from batonflow.core.instruments.tracing import usage_attributes
from llama_index.core.base.llms.base import BaseLLM
from opentelemetry import trace

#: US dollars per million tokens: model name (or the start of one) -> (prompt, completion).
#: OpenAI's list prices as published in 2025; not a promise: check them, and add or replace
#: entries with :func:`set_price`.
PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o": (2.50, 10.00),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-3.5-turbo": (0.50, 1.50),
}

#: The LLM methods counted: name -> (asynchronous, streamed).
METHODS = {
    "chat": (False, False),
    "achat": (True, False),
    "stream_chat": (False, True),
    "astream_chat": (True, True),
    "complete": (False, False),
    "acomplete": (True, False),
    "stream_complete": (False, True),
    "astream_complete": (True, True),
}

#: True while a counted call runs: the calls it makes itself (a subclass's ``super().chat``,
#: ``chat_with_tools`` calling ``chat``) are part of it.
_INSIDE: ContextVar[bool] = ContextVar("batonflow_budget_inside", default=False)
_lock = threading.Lock()
#: The methods wrapped already: (class, name).
_wrapped: set[tuple[type, str]] = set()


def set_price(model: str, *, prompt: float, completion: float) -> None:
    """Price ``model`` (and the models whose names start with it) at ``prompt`` and
    ``completion`` US dollars per million tokens.

    Raises:
        ValueError: A negative or non-finite price, or an empty model name.
    """
    for name, value in (("prompt", prompt), ("completion", completion)):
        if not (isinstance(value, int | float) and math.isfinite(value) and value >= 0):
            raise ValueError(
                f"set_price({model!r}): {name}={value!r} is not a price; pass US dollars per "
                "million tokens, 0 or more (e.g. prompt=0.15, completion=0.60)."
            )
    if not model:
        raise ValueError("set_price needs a model name, e.g. set_price('gpt-4o-mini', ...).")
    PRICES[model] = (float(prompt), float(completion))


def price(model: str | None) -> tuple[float, float] | None:
    """The price of ``model`` in :data:`PRICES` (the longest name it starts with), or ``None``."""
    if not model:
        return None
    found = [name for name in PRICES if model.startswith(name)]
    return PRICES[max(found, key=len)] if found else None


def cost(model: str | None, prompt_tokens: int, completion_tokens: int) -> float | None:
    """US dollars for these tokens of ``model``, or ``None`` when its price is not known."""
    rates = price(model)
    if rates is None:
        return None
    return (prompt_tokens * rates[0] + completion_tokens * rates[1]) / 1_000_000


def _model(llm: Any) -> str | None:
    try:
        name = llm.metadata.model_name
    except Exception:  # a metadata property that needs what this LLM lacks
        name = None
    return str(name or getattr(llm, "model", None) or "") or None


def _chars(value: Any) -> int:
    if value is None:
        return 0
    if isinstance(value, str):
        return len(value)
    if isinstance(value, list | tuple):
        return sum(_chars(v) for v in value)
    content = getattr(value, "content", None)
    if content is not None or hasattr(value, "role"):
        return len(str(content or ""))
    return len(json.dumps(value, default=str))


def prompt_estimate(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    """The prompt tokens a call is reckoned at: characters / 4, rounded up."""
    key = "messages" if "chat" in name else "prompt"
    sent = args[0] if args else kwargs.get(key)
    chars = _chars(sent) + _chars(kwargs.get("tools"))
    return math.ceil(chars / 4)


def estimate(llm: Any, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Estimate:
    """What a call may use at most, as the budget reckons it (see the module's docs)."""
    prompt = prompt_estimate(name, args, kwargs)
    limit = kwargs.get("max_tokens", getattr(llm, "max_tokens", None))
    completion = int(limit) if isinstance(limit, int) and limit > 0 else 0
    return Estimate(prompt + completion, cost(_model(llm), prompt, completion))


def _get(source: Any, key: str) -> Any:
    if isinstance(source, dict):
        return source.get(key)
    return getattr(source, key, None)


def reported(response: Any) -> tuple[int, int] | None:
    """``(prompt_tokens, completion_tokens)`` a response reports, or ``None``."""
    for source in (getattr(response, "additional_kwargs", None), None):
        if source is None:
            raw = getattr(response, "raw", None)
            source = _get(raw, "usage") if raw is not None else None
        if not source:
            continue
        prompt = _get(source, "prompt_tokens")
        prompt = _get(source, "input_tokens") if prompt is None else prompt
        completion = _get(source, "completion_tokens")
        completion = _get(source, "output_tokens") if completion is None else completion
        if isinstance(prompt, int) or isinstance(completion, int):
            return int(prompt or 0), int(completion or 0)
    return None


def usage_of(llm: Any, response: Any, prompt: int) -> Usage:
    """One call's usage, from what ``response`` reports (else the estimate, see the docs)."""
    found = None if response is None else reported(response)
    if found is None:
        text = getattr(response, "text", None)
        if text is None:
            message = getattr(response, "message", None)
            text = getattr(message, "content", None)
        found = (prompt, math.ceil(len(str(text or "")) / 4))
    p, c = found
    return Usage(p, c, p + c, cost(_model(llm), p, c), 1)


def _wrap(original: Any, name: str) -> Any:
    is_async, streamed = METHODS[name]

    def guard() -> tuple[_budget.RunBudget, str] | None:
        return None if _INSIDE.get() else _budget.current()

    if is_async and not streamed:

        @functools.wraps(original)
        async def async_call(self: Any, *args: Any, **kwargs: Any) -> Any:
            found = guard()
            if found is None:
                return await original.__get__(self, type(self))(*args, **kwargs)
            budget, step = found
            need = estimate(self, name, args, kwargs)
            await budget.before(step, need)
            response = None
            token = _INSIDE.set(True)
            try:
                response = await original.__get__(self, type(self))(*args, **kwargs)
            finally:
                _INSIDE.reset(token)
                await _acounted(budget, step, need, _used(self, response, name, args, kwargs))
            return response

        return async_call

    if is_async:

        @functools.wraps(original)
        async def async_stream(self: Any, *args: Any, **kwargs: Any) -> Any:
            found = guard()
            if found is None:
                return await original.__get__(self, type(self))(*args, **kwargs)
            budget, step = found
            need = estimate(self, name, args, kwargs)
            await budget.before(step, need)
            token = _INSIDE.set(True)
            try:
                gen = await original.__get__(self, type(self))(*args, **kwargs)
            except BaseException:
                await _acounted(budget, step, need, _used(self, None, name, args, kwargs))
                raise
            finally:
                _INSIDE.reset(token)

            async def counted() -> AsyncIterator[Any]:
                last = None
                try:
                    async for item in gen:
                        last = item
                        yield item
                finally:
                    await _acounted(budget, step, need, _used(self, last, name, args, kwargs))

            return counted()

        return async_stream

    if not streamed:

        @functools.wraps(original)
        def call(self: Any, *args: Any, **kwargs: Any) -> Any:
            found = guard()
            if found is None:
                return original.__get__(self, type(self))(*args, **kwargs)
            budget, step = found
            need = estimate(self, name, args, kwargs)
            budget.before_sync(step, need)
            response = None
            token = _INSIDE.set(True)
            try:
                response = original.__get__(self, type(self))(*args, **kwargs)
            finally:
                _INSIDE.reset(token)
                _counted(budget, step, need, _used(self, response, name, args, kwargs))
            return response

        return call

    @functools.wraps(original)
    def stream(self: Any, *args: Any, **kwargs: Any) -> Any:
        found = guard()
        if found is None:
            return original.__get__(self, type(self))(*args, **kwargs)
        budget, step = found
        need = estimate(self, name, args, kwargs)
        budget.before_sync(step, need)
        token = _INSIDE.set(True)
        try:
            gen = original.__get__(self, type(self))(*args, **kwargs)
        except BaseException:
            _counted(budget, step, need, _used(self, None, name, args, kwargs))
            raise
        finally:
            _INSIDE.reset(token)

        def counted() -> Iterator[Any]:
            last = None
            try:
                for item in gen:
                    last = item
                    yield item
            finally:
                _counted(budget, step, need, _used(self, last, name, args, kwargs))

        return counted()

    return stream


def _used(llm: Any, response: Any, name: str, args: tuple[Any, ...], kwargs: Any) -> Usage:
    if response is None:
        # The call raised: it is counted at its prompt (a provider may bill a failed call).
        prompt = prompt_estimate(name, args, kwargs)
        return Usage(prompt, 0, prompt, cost(_model(llm), prompt, 0), 1)
    return usage_of(llm, response, prompt_estimate(name, args, kwargs))


#: What each step span's calls used so far (a step attempt's span: the current span while a
#: step runs), to set its usage attributes as sums.
_BY_SPAN: weakref.WeakKeyDictionary[Any, Usage] = weakref.WeakKeyDictionary()


def _counted(budget: _budget.RunBudget, step: str, need: Estimate, used: Usage) -> None:
    """Record a call's usage, and add it to the current (step) span's usage attributes."""
    budget.after(step, need, used)
    _add_to_span(used)


async def _acounted(budget: _budget.RunBudget, step: str, need: Estimate, used: Usage) -> None:
    """:func:`_counted` for an async call (the store written off the loop where it is remote)."""
    await budget.aafter(step, need, used)
    _add_to_span(used)


def _add_to_span(used: Usage) -> None:
    span = trace.get_current_span()
    if not span.is_recording():
        return
    try:
        summed = _BY_SPAN.get(span, Usage()) + used
        _BY_SPAN[span] = summed
    except TypeError:  # a span class that takes no weak reference: no sums kept
        summed = used
    span.set_attributes(usage_attributes(summed))


def _subclasses(base: type) -> list[type]:
    found, todo = [], [base]
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return found


def install() -> None:
    """Count the calls of every llama-index LLM class defined now (called when a run with a
    budget starts; classes defined later are wrapped at the next such start)."""
    from batonflow.testing import _seams

    with _seams._lock, _lock:
        # A cassette open now has wrapped some methods, keeping the originals to put back
        # when it closes: wrap those originals, and let it put back the counted ones.
        saved = {(cls, name): i for i, (cls, name, _) in enumerate(_seams._saved)}
        for cls in _subclasses(BaseLLM):
            for name in METHODS:
                if name not in cls.__dict__ or (cls, name) in _wrapped:
                    continue
                _wrapped.add((cls, name))
                at = saved.get((cls, name))
                if at is None:
                    setattr(cls, name, _wrap(cls.__dict__[name], name))
                else:
                    _, _, original = _seams._saved[at]
                    _seams._saved[at] = (cls, name, _wrap(original, name))


def raise_budget(checkpointer: Any, run_id: str, amount: str) -> BudgetState:
    """Raise run ``run_id``'s budget by ``amount`` (``"5000"``, ``"$0.50"``, both with ``,``).

    Raises:
        ValueError: An amount that is not one.
    """
    tokens, dollars = _budget.parse_amount(amount, "raise")
    result: BudgetState = checkpointer.raise_budget(run_id, tokens=tokens, cost=dollars)
    return result


if install not in _budget.SEAM:
    _budget.SEAM.append(install)

__all__ = [
    "METHODS",
    "PRICES",
    "Budget",
    "BudgetState",
    "Usage",
    "cost",
    "estimate",
    "install",
    "parse_budget",
    "price",
    "prompt_estimate",
    "raise_budget",
    "reported",
    "set_price",
    "usage_of",
]
