"""Where an event sent with ``ctx.send_event`` goes, checked before it is routed.

An event no step accepts and no step waits for would never be delivered, a ``step=`` must name
a step that takes it, and an answer from outside must have the values a waiting step requires:
each is refused here with an error that says what would be taken instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..data.events import Event
from ..errors import WorkflowRuntimeError, WorkflowStepDoesNotExistError, llama_named
from ._waiters import type_name
from .graph import CALLER_EVENTS

if TYPE_CHECKING:
    from .workflow import Workflow


def check_target(
    workflow: Workflow,
    message: Event,
    step: str | None,
    waiting: list[tuple[str, Any]],
    *,
    external: bool,
) -> int | None:
    """The index of ``step`` (or None), after checking someone will take ``message``.

    ``waiting`` holds ``(step name, Waiter or awaited type name)`` of the waiting steps.
    """
    graph = workflow._graph()

    def awaited_by(name: str | None) -> bool:
        for waiter_step, waiter in waiting:
            if name is not None and waiter_step != name:
                continue
            if isinstance(waiter, str):
                if any(type_name(c) == waiter for c in type(message).__mro__):
                    return True
            elif waiter.wants_type(message):
                return True
        return False

    kind = type(message).__name__
    if step is None:
        if isinstance(message, CALLER_EVENTS) or graph.targets(type(message)):
            return None
        if awaited_by(None):
            if external:
                check_requirements(message, [w for _, w in waiting])
            return None
        if not external and (
            workflow._disable_validation or "terminal_event" in workflow._skip_graph_checks
        ):
            return None  # the workflow opted out of the checks: unhandled events drop
        takes = ", ".join(
            dict.fromkeys(acc.__name__ for spec in graph.order for acc in spec.accepted)
        )
        raise WorkflowRuntimeError(
            f"No step of {graph.name} accepts {kind} and no step is waiting for it, so it "
            f"would never be delivered. The steps accept: {takes}. Send an event of one of "
            "those types, or add a step that takes "
            f"`ev: {kind}`."
        )
    spec = graph.steps.get(step)
    if spec is None:
        known = ", ".join(graph.steps)
        # Named WorkflowRuntimeError, LlamaIndex's class for it.
        raise llama_named(WorkflowStepDoesNotExistError, "WorkflowRuntimeError")(
            f"Step {step} does not exist. {graph.name} has no step '{step}'; its steps are: "
            f"{known}. Pass one of those names as step=."
        )
    if not isinstance(message, spec.accepted) and not awaited_by(step):
        takers = [s.name for s in graph.order if isinstance(message, s.accepted)]
        alternative = (
            f"send it to a step that accepts {kind} ({', '.join(takers)}) or without step="
            if takers
            else f"no step accepts {kind}"
        )
        raise WorkflowRuntimeError(
            f"Step {step} does not accept event of type {type(message)}: it accepts "
            f"{', '.join(a.__name__ for a in spec.accepted)}. Send it an event of those "
            f"types, or {alternative}."
        )
    return graph.order.index(spec)


def check_requirements(message: Event, waiters: list[Any]) -> None:
    """Refuse an event sent from outside that waiting steps want by type only: none of them
    would take it (their ``requirements`` differ), so it would be dropped unseen."""
    if any(isinstance(w, str) for w in waiters):
        return  # a restored context's waits: checked when their steps wait again
    wanting = [w for w in waiters if w.wants_type(message)]
    if not wanting or any(w.matches(message) for w in wanting):
        return
    kind = type(message).__name__
    waits = "; ".join(
        f"step {w.step} waits for {w.type_name.rpartition('.')[2]} with "
        + ", ".join(f"{k}={v!r}" for k, v in w.requirements.items())
        for w in wanting
    )
    example = wanting[0]
    fields = ", ".join(f"{k}={v!r}" for k, v in example.requirements.items())
    raise WorkflowRuntimeError(
        f"No waiting step takes this {kind}: {waits}, and the event has other values, so it "
        f"would be dropped. Send it with those values, e.g. {kind}(..., {fields})."
    )


__all__ = ["check_requirements", "check_target"]
