"""The classes a serializer may rebuild by name: registered, met while encoding, or built in.

On decode no module is ever imported because the data names it (see
:mod:`batonflow.core.serialization`): a model class is found here by its ``"module:QualName"``,
or the serializer's ``allowed_types`` names an already imported one. The engine registers the
events and state types of the workflows in play, and the models their fields name.
"""

from __future__ import annotations

import typing
import weakref
from typing import Any

from pydantic import BaseModel

from .events import Event, HumanResponseEvent, InputRequiredEvent, StartEvent, StopEvent

#: Classes met while encoding or registered explicitly, by "module:qualname".
KNOWN: weakref.WeakValueDictionary[str, type[BaseModel]] = weakref.WeakValueDictionary()
#: Classes given to :func:`register_type` (directly or by :func:`register_models`).
REGISTERED: weakref.WeakSet[type] = weakref.WeakSet()
#: The engine's own events, trusted everywhere.
BUILTIN_EVENTS: tuple[type[BaseModel], ...] = (
    Event,
    StartEvent,
    StopEvent,
    InputRequiredEvent,
    HumanResponseEvent,
)


def qualified_name(cls: type) -> str:
    """``"module:QualName"``: the name a class is written under."""
    return f"{cls.__module__}:{cls.__qualname__}"


def register_models(*types: type[BaseModel]) -> None:
    """Register ``types`` and every pydantic model their fields name (``list[Item]``...)."""
    seen: set[type] = set()
    todo: list[Any] = list(types)
    while todo:
        cls = todo.pop()
        if isinstance(cls, type) and issubclass(cls, BaseModel):
            if cls in seen:
                continue
            seen.add(cls)
            register_type(cls)
            for info in cls.model_fields.values():
                todo.append(info.annotation)
        else:
            todo.extend(a for a in typing.get_args(cls) if a is not None)


def register_type(*types: type[BaseModel]) -> None:
    """Make pydantic classes decodable by name in this process without importing them.

    The engine registers every event and state type of a workflow, so a snapshot taken in one
    process restores in another that defines the same workflow, even in ``__main__``.

    Args:
        types: pydantic model classes.

    Raises:
        TypeError: A type that is not a pydantic model class.
    """
    for cls in types:
        if cls in REGISTERED:
            continue  # the engine registers a workflow's types at every snapshot: keep it cheap
        if not (isinstance(cls, type) and issubclass(cls, BaseModel)):
            raise TypeError(f"register_type() takes pydantic model classes, got {cls!r}.")
        KNOWN[qualified_name(cls)] = cls
        REGISTERED.add(cls)


def dotted(name: str) -> str:
    """``"module:QualName"`` as ``"module.QualName"`` (how ``allowed_types`` names a class)."""
    return name.replace(":", ".")


for _cls in BUILTIN_EVENTS:
    register_type(_cls)
