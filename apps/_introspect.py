"""What the server and the CLI read from a workflow: start event, outside events, graph."""

from __future__ import annotations

import sys
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


class StartFieldsError(ValueError):
    """Start fields that do not fit the workflow's start event.

    Attributes:
        errors: One ``{"loc": [field], "msg", "type"}`` per problem (pydantic's shape).
        field: The first bad field's name.
        reason: What is wrong with it, one sentence.
    """

    def __init__(self, errors: list[dict[str, Any]], field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.errors = errors
        self.field = field
        self.reason = reason


def _own_fields(cls: Any) -> list[str]:
    from batonflow.core import StartEvent

    return [name for name in cls.model_fields if name not in StartEvent.model_fields]


def build_start_event(workflow: Any, fields: dict[str, Any]) -> Any:
    """The workflow's start event made from ``fields``, checked the way ``run(**fields)`` is.

    A start event class that declares fields takes only those (like the engine's ``run()``);
    the plain ``StartEvent`` takes anything.

    Raises:
        StartFieldsError: An unknown field, or a value its field refuses.
    """
    from pydantic import ValidationError

    cls = start_event_class(workflow)
    known = _own_fields(cls)
    if known:
        unknown = [key for key in fields if key not in cls.model_fields]
        if unknown:
            errors = [
                {"loc": [key], "msg": "Extra inputs are not permitted", "type": "extra_forbidden"}
                for key in unknown
            ]
            raise StartFieldsError(
                errors,
                unknown[0],
                f"{cls.__name__} has no field {unknown[0]!r}; its fields are {', '.join(known)}",
            )
    try:
        return cls.model_validate(fields)
    except ValidationError as exc:
        errors = [
            {"loc": [str(part) for part in e["loc"]], "msg": e["msg"], "type": e["type"]}
            for e in exc.errors(include_url=False, include_context=False, include_input=False)
        ]
        first = errors[0]
        name = ".".join(first["loc"]) or "?"
        msg = first["msg"]
        if first["type"] == "value_error":
            msg = msg.removeprefix("Value error, ")
        given = fields.get(first["loc"][0]) if first["loc"] else None
        if first["type"] != "missing" and first["type"] != "value_error":
            msg = f"{msg}, got {given!r:.60}"
        raise StartFieldsError(errors, name, msg.rstrip(".")) from None


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
    # A class with declared fields takes only those (see build_start_event).
    schema["additionalProperties"] = not _own_fields(cls)
    return schema


def chat_fields(workflow: Any) -> dict[str, str] | None:
    """Where an agent takes the user's message and history, ``None`` for other workflows.

    A workflow whose start event is an agent's (``AgentWorkflowStartEvent`` of
    ``FunctionAgent``, ``AgentWorkflow``...; ``AgentStart`` of ``ReActAgent``...) gets a chat
    in the console: ``{"message": "user_msg", "history": "chat_history"}``.
    """
    # An agent's start event exists only once batonflow.agents is imported: other workflows
    # must not pay for importing it (llama-index).
    events = sys.modules.get("batonflow.agents.events")
    if events is None:
        return None
    cls = start_event_class(workflow)
    if not issubclass(cls, (events.AgentWorkflowStartEvent, events.AgentStart)):
        return None
    return {"message": "user_msg", "history": "chat_history"}


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
    text: str = draw(workflow, filename=None)
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
