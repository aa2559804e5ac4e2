"""What the server and the CLI read from a workflow: start event, outside events, graph."""

from __future__ import annotations

from typing import Any


def _shapes(workflow: Any) -> list[Any]:
    from batonflow.core.graph import workflow_graph

    return list(workflow_graph(workflow).values())


def start_event_class(workflow: Any) -> Any:
    """The StartEvent (sub)class the workflow's entry step accepts."""
    from batonflow.core import StartEvent

    cls = getattr(workflow, "start_event_class", None)
    if isinstance(cls, type) and issubclass(cls, StartEvent):
        return cls
    for shape in _shapes(workflow):
        for ev in shape.accepts:
            if issubclass(ev, StartEvent):
                return ev
    return StartEvent


def start_schema(workflow: Any) -> dict[str, Any]:
    """The JSON schema of the start event's fields (``{"type": "object"}`` when free-form)."""
    from batonflow.core import StartEvent

    cls = start_event_class(workflow)
    try:
        schema: dict[str, Any] = cls.model_json_schema()
    except Exception:  # arbitrary field types have no JSON schema
        schema = {"type": "object", "title": cls.__name__}
    if cls is StartEvent:
        schema.pop("description", None)  # the base class's docstring says nothing of this flow
    schema.setdefault("additionalProperties", True)
    return schema


def external_events(workflow: Any) -> dict[str, Any]:
    """Event types that may be sent into a run from outside, by class name.

    These are the events a step accepts but no step emits (besides the start event). A
    workflow that asks for input (emits ``InputRequiredEvent``) but accepts no outside event
    waits with ``ctx.wait_for_event``, for a ``HumanResponseEvent``: that one is accepted then.
    Only these names are ever turned into classes: nothing is imported from a request.
    """
    from batonflow.core import HumanResponseEvent, InputRequiredEvent, StartEvent

    shapes = _shapes(workflow)
    emitted = {ev for shape in shapes for ev in shape.emits}
    found: dict[str, Any] = {}
    asks = False
    for shape in shapes:
        asks = asks or any(issubclass(ev, InputRequiredEvent) for ev in shape.emits)
        for ev in shape.accepts:
            if issubclass(ev, StartEvent) or ev in emitted:
                continue
            found[ev.__name__] = ev
    if asks and not found:
        found[HumanResponseEvent.__name__] = HumanResponseEvent
    return found


def drawing() -> Any:
    """The engine's drawing functions (``draw_all_possible_flows`` and friends)."""
    import batonflow.core as core

    if hasattr(core, "draw_all_possible_flows_mermaid"):
        return core
    from batonflow.core import drawing as module

    return module


def mermaid_graph(workflow: Any) -> str:
    """Mermaid text of all possible flows (the engine's drawing when it has one)."""
    try:
        draw = drawing().draw_all_possible_flows_mermaid
    except (ImportError, AttributeError):
        return _own_mermaid(workflow)
    text: str = draw(workflow)
    return text


def _own_mermaid(workflow: Any) -> str:
    lines = ["flowchart TD"]
    events: dict[str, None] = {}
    for shape in _shapes(workflow):
        lines.append(f'    step_{shape.name}["{shape.name}"]')
        for ev in shape.accepts:
            events[ev.__name__] = None
            lines.append(f"    event_{ev.__name__} --> step_{shape.name}")
        for ev in shape.emits:
            events[ev.__name__] = None
            lines.append(f"    step_{shape.name} --> event_{ev.__name__}")
    lines[1:1] = [f'    event_{name}(["{name}"])' for name in events]
    return "\n".join(lines) + "\n"
