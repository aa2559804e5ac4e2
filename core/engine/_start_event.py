"""The StartEvent of a run, built from ``run()``'s ``start_event=`` or keyword fields."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from ..data.events import StartEvent
from ..errors import StartEventError, llama_named
from .graph import Graph


def build_start_event(
    graph: Graph, start_event: StartEvent | None, kwargs: dict[str, Any]
) -> StartEvent:
    """The start event of a run of ``graph``: ``start_event``, or one built from ``kwargs``.

    Raises:
        StartEventError: ``start_event`` is not the graph's start event class, both were given,
            or the keyword fields do not validate (the message lists the class's fields; then
            it is the subclass named ``WorkflowRuntimeError``, LlamaIndex's class).
    """
    cls = graph.start_event_class
    if start_event is not None:
        if not isinstance(start_event, cls):
            raise StartEventError(
                f"{graph.name} starts with {cls.__name__}, but run() got a "
                f"{type(start_event).__name__}, which no step accepts. Pass "
                f"start_event={cls.__name__}(...) or its fields as keywords: "
                f"run({_field_list(cls)})."
            )
        if kwargs:
            raise StartEventError(
                f"run() got start_event and keyword fields ({', '.join(kwargs)}); put the "
                "fields into the start event instead."
            )
        return start_event
    typed = cls is not StartEvent and bool(set(cls.model_fields) - set(StartEvent.model_fields))
    try:
        if typed:
            unknown = [k for k in kwargs if k not in cls.model_fields]
            if unknown:
                raise ValidationError.from_exception_data(
                    cls.__name__,
                    [
                        {"type": "extra_forbidden", "loc": (key,), "input": kwargs[key]}
                        for key in unknown
                    ],
                )
        return cls(**kwargs)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(event)'}: {err['msg']}"
            for err in exc.errors()
        )
        # LlamaIndex raises WorkflowRuntimeError here: the error carries that name.
        raise llama_named(StartEventError, "WorkflowRuntimeError")(
            f"Failed creating a start event of type '{cls.__name__}' with the keyword "
            f"arguments: {kwargs}. {cls.__name__} rejected the fields given to "
            f"{graph.name}.run(): {problems}. Its fields are: "
            f"{_field_list(cls) or '(none)'}; fix the keyword arguments."
        ) from exc


def _field_list(cls: type[StartEvent]) -> str:
    """``name=..., other=... (optional)`` for a StartEvent class's own fields."""
    parts = []
    for name, info in cls.model_fields.items():
        if name in StartEvent.model_fields:
            continue
        parts.append(f"{name}=..." if info.is_required() else f"{name}=... (optional)")
    return ", ".join(parts)
