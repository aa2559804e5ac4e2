"""Calling a step: argument layout prepared once per step, sync steps sent to a thread."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

from ..data.events import Event
from .step import ParamKind, StepSpec


async def run_sync(fn: Callable[..., Any], *args: Any) -> Any:
    """Run a sync callable in a worker thread (context variables propagate)."""
    return await asyncio.to_thread(fn, *args)


def call_in_scopes(
    call: Callable[..., Any],
    ctx: Any,
    event: Event,
    resources: dict[str, Any] | None,
    scopes: list[contextlib.AbstractContextManager[Any]] | None,
) -> Any:
    if not scopes:
        return call(ctx, event, resources)
    with contextlib.ExitStack() as stack:
        for scope in scopes:
            stack.enter_context(scope)
        return call(ctx, event, resources)


def make_call(spec: StepSpec, func: Callable[..., Any]) -> Callable[..., Any]:
    """A ``call(ctx, event, resources)`` for ``func`` (already bound to its workflow)."""
    kinds = tuple(p.kind for p in spec.params)
    if all(p.positional for p in spec.params):
        if kinds == (ParamKind.EVENT,):
            return lambda ctx, ev, res: func(ev)
        if kinds == (ParamKind.CONTEXT, ParamKind.EVENT):
            return lambda ctx, ev, res: func(ctx, ev)
        if kinds == (ParamKind.EVENT, ParamKind.CONTEXT):
            return lambda ctx, ev, res: func(ev, ctx)
    params = spec.params
    join = bool(spec.join)

    def call(ctx: Any, ev: Event, res: dict[str, Any] | None) -> Any:
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        for p in params:
            if p.kind is ParamKind.EVENT:
                value: Any = ev.events[p.name] if join else ev  # type: ignore[attr-defined]
            elif p.kind is ParamKind.CONTEXT:
                value = ctx
            elif p.kind is ParamKind.COLLECTION:
                value = list(ev.events)  # type: ignore[attr-defined]
            else:
                value = res[p.name] if res is not None else None
            if p.positional:
                args.append(value)
            else:
                kwargs[p.name] = value
        return func(*args, **kwargs)

    return call
