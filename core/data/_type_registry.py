"""The classes a serializer may rebuild by name: registered, met while encoding, or built in.

On decode no module is ever imported because the data names it (see
:mod:`batonflow.core.serialization`): a model class is found by its ``"module:QualName"``

* here, when it was registered (:func:`register_type`; the engine registers the events and
  state types of the workflows in play and the models their fields name) or met while encoding;
* in a trusted module (:func:`trust_modules`: the engine trusts the modules of the workflows in
  play) that is already imported, as a class it defines or imports by name;
* or, by the serializer, when its ``allowed_types`` names an already imported one.

Other imported modules are not searched: ``sys.modules`` holds whatever any library loaded,
and decoding a model runs its validators, so the data would choose which code runs; and
whether a run resumes would depend on what happened to be imported first.
"""

from __future__ import annotations

import sys
import typing
import weakref
from typing import Any

from pydantic import BaseModel

from .events import Event, HumanResponseEvent, InputRequiredEvent, StartEvent, StopEvent

#: Classes met while encoding, registered explicitly or found in a trusted module, by
#: "module:qualname".
KNOWN: weakref.WeakValueDictionary[str, type] = weakref.WeakValueDictionary()
#: Modules whose classes are restored by name once imported (see :func:`trust_modules`).
TRUSTED_MODULES: set[str] = set()
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
    process restores in another that defines the same workflow, even in ``__main__``, and it
    trusts the workflow's modules. Call this for a model kept in a run's data whose module no
    workflow references, in the module that defines it (which the resuming process imports).

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


def trust_modules(*names: str) -> None:
    """Restore by name the classes that these modules define or import, once imported.

    The engine calls it with the modules of each workflow in play: its class (and the
    workflow classes it derives from), its steps, and the events and state types the steps'
    annotations name. Nothing is imported here or later: a module the process has not
    imported itself is never searched.
    """
    TRUSTED_MODULES.update(names)


def resolve(name: str, kind: type) -> type | None:
    """The trusted subclass of ``kind`` written as ``"module:QualName"``, else ``None``.

    Never imports: a trusted module is searched only when it is in ``sys.modules``.
    """
    found = KNOWN.get(name)
    if found is None:
        found = _in_trusted_module(name)
        if found is None:
            return None
        KNOWN[name] = found
    return found if issubclass(found, kind) else None


def _in_trusted_module(name: str) -> type | None:
    module_name, _, qualname = name.partition(":")
    if not qualname or "<locals>" in qualname:
        return None  # a class made inside a function exists only in the process that made it
    if module_name in TRUSTED_MODULES:
        obj: Any = sys.modules.get(module_name)
        for part in qualname.split("."):
            obj = getattr(obj, part, None)
        if isinstance(obj, type) and qualified_name(obj) == name:
            return obj
    # A class a workflow's module imports by name (``from .models import Item``).
    for trusted in list(TRUSTED_MODULES):
        module = sys.modules.get(trusted)
        if module is None:
            continue
        for obj in list(vars(module).values()):
            if isinstance(obj, type) and qualified_name(obj) == name:
                return obj
    return None


def dotted(name: str) -> str:
    """``"module:QualName"`` as ``"module.QualName"`` (how ``allowed_types`` names a class)."""
    return name.replace(":", ".")


for _cls in BUILTIN_EVENTS:
    register_type(_cls)
