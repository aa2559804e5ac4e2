"""Serializers: turn state values and events into text and back.

A serializer has two methods, ``serialize(value) -> str`` and ``deserialize(text) -> value``
(:class:`BaseSerializer`). The engine uses one to snapshot a run (``ctx.to_dict``) and to write
checkpoints, so everything it encodes must come back as the same thing in another process.

:class:`JsonSerializer` (the default) writes plain JSON. JSON values (``None``, bools, numbers,
strings, lists, dicts with string keys) are written as they are; other values are written as a
small tagged object ``{"__bf__": kind, ...}``:

* pydantic models and events keep their class (``"module:QualName"``) and come back as
  instances of it; fields with a pydantic ``field_serializer`` (or models with a
  ``model_serializer``) are written by pydantic, so the model's own validators read them back;
* tuples, sets, frozensets, dicts with non-string keys, ``datetime``/``date``/``time``/
  ``timedelta``, ``Decimal``, ``UUID``, paths and bytes keep their type;
* an ``Enum`` member is written as its value (typed fields turn it back into the member).

On decode, no module is ever imported because the data names it: a model is rebuilt only when
its class is trusted, i.e. registered (the engine registers the events and state types of the
workflows in play and the models their fields name; :func:`register_type` adds more; a class
this process has serialized counts too), defined in or imported by name into an already
imported module of a workflow in play (its class's, its steps', its events' and state type's),
or listed in ``allowed_types`` (and already imported). Other imported modules are not searched
(see :mod:`batonflow.core.data._type_registry` for why). Models defined inside functions round-trip
within one process.

Anything else (a client, a lock, an open file) raises :class:`SerializationError` naming where
it sits inside the value, e.g. ``state['client']``. Such objects belong in resources;
:class:`PickleSerializer` pickles them as a last resort, and is unsafe for untrusted input.
"""

from __future__ import annotations

import base64
import enum
import json
import pickle
import sys
from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Annotated, Any, cast

from pydantic import BaseModel, PlainSerializer, PlainValidator, ValidationError

from .._public import publish
from ..errors import ContextSerdeError, SerializationError
from ._json_values import (
    PLANS,
    SCALAR_DECODERS,
    TAG,
    compact_json,
    encode_scalar,
    json_base,
    model_plan,
    stable_order,
)
from ._type_registry import (
    BUILTIN_EVENTS,
    KNOWN,
    TRUSTED_MODULES,
    dotted,
    qualified_name,
    register_type,
    resolve,
)
from .events import (
    Event,
    UnreconstructedException,
    exception_from_data,
    exception_to_data,
    or_none,
)

#: Values ``_encode`` writes as they are (exact types: subclasses take the long way).
_PLAIN = frozenset({str, int, float, bool, type(None)})


class BaseSerializer(ABC):
    """Turns values into text and back; subclass it for a custom format.

    A serializer must round-trip: ``deserialize(serialize(v))`` equals ``v`` (and has its type).
    """

    @abstractmethod
    def serialize(self, value: Any) -> str:
        """Encode ``value`` as text.

        Raises:
            SerializationError: A value that cannot be encoded.
        """

    @abstractmethod
    def deserialize(self, value: str) -> Any:
        """Decode text written by :meth:`serialize`.

        Raises:
            ContextSerdeError: Text that is not valid output of this serializer.
        """


class JsonSerializer(BaseSerializer):
    """JSON with typed pydantic models, events and common Python values (see the module docs).

    Args:
        allowed_types: Restrict which model classes ``deserialize`` may create: classes, or
            their names as ``"module.QualName"`` / ``"module:QualName"``. batonflow's own events
            are always allowed. ``None`` (default): any trusted class (see the module docs).
    """

    def __init__(self, *, allowed_types: Iterable[type | str] | None = None) -> None:
        self._allowed: frozenset[str] | None = None
        if allowed_types is not None:
            # Compared in dotted form, so "pkg.mod.Class" and "pkg.mod:Class" both work
            # without importing anything here.
            names = {dotted(qualified_name(c)) for c in BUILTIN_EVENTS}
            for item in allowed_types:
                if isinstance(item, type):
                    names.add(dotted(qualified_name(item)))
                    if issubclass(item, BaseModel):
                        register_type(item)
                elif isinstance(item, str):
                    names.add(dotted(item))
                else:
                    raise TypeError(
                        f"allowed_types takes classes or 'module.ClassName' strings, got {item!r}."
                    )
            self._allowed = frozenset(names)

    # -- text -------------------------------------------------------------------------------

    def serialize(self, value: Any) -> str:
        """Encode ``value`` as a JSON string.

        Raises:
            SerializationError: ``value`` holds something this serializer cannot encode; the
                message names where (``value['key'][0].field``).
        """
        return compact_json(self.encode(value))

    def deserialize(self, value: str) -> Any:
        """Decode a JSON string written by :meth:`serialize`.

        Raises:
            ContextSerdeError: Not JSON, an unknown or disallowed class, or data that no longer
                validates against its model.
        """
        try:
            tree = json.loads(value)
        except (TypeError, ValueError) as exc:
            raise ContextSerdeError(
                f"Cannot decode serialized data ({exc}); pass the text written by "
                f"{type(self).__name__}.serialize."
            ) from exc
        return self.decode(tree)

    # -- trees (for embedding in a larger JSON document) -----------------------------------

    def encode(self, value: Any, path: str = "value") -> Any:
        """Encode ``value`` as a JSON-compatible tree (what :meth:`serialize` dumps).

        Args:
            value: The value to encode.
            path: How to name ``value`` in error messages (``"state['items']"``).

        Raises:
            SerializationError: As :meth:`serialize`.
        """
        return self._encode(value, path, set())

    def decode(self, tree: Any) -> Any:
        """Decode a tree produced by :meth:`encode`.

        Raises:
            ContextSerdeError: As :meth:`deserialize`.
        """
        return self._decode(tree, "value")

    # -- internals --------------------------------------------------------------------------

    def _encode(self, value: Any, path: str, active: set[int]) -> Any:
        if value is None or type(value) in (str, int, float, bool):
            return value
        if isinstance(value, BaseModel):
            return self._guard(value, path, active, self._encode_model)
        if isinstance(value, dict):
            return self._guard(value, path, active, self._encode_dict)
        if isinstance(value, list):
            return self._guard(
                value,
                path,
                active,
                lambda v, p, a: [self._encode(x, f"{p}[{i}]", a) for i, x in enumerate(v)],
            )
        if isinstance(value, tuple | set | frozenset):
            if isinstance(value, tuple):
                kind, items = "tuple", list(value)
            else:
                kind, items = type(value).__name__, stable_order(value)
                if kind not in ("set", "frozenset"):
                    kind = "set" if isinstance(value, set) else "frozenset"
            return self._guard(
                items,
                path,
                active,
                lambda v, p, a: {
                    TAG: kind,
                    "items": [self._encode(x, f"{p}[{i}]", a) for i, x in enumerate(v)],
                },
            )
        if isinstance(value, enum.Enum):
            return self._encode(value.value, path, active)
        if isinstance(value, bool | int | float | str):  # subclasses of JSON scalars
            return self._encode(json_base(value), path, active)
        scalar = encode_scalar(value)
        if scalar is not None:
            return scalar
        if isinstance(value, BaseException):
            # Type name and message (StepFailedEvent.exception, a failed run's error); rebuilt
            # from classes already loaded, else as UnreconstructedException.
            return {TAG: "exception", **exception_to_data(value)}
        return self._fallback(value, path)

    def _fallback(self, value: Any, path: str) -> Any:
        raise SerializationError(
            f"Cannot serialize {path} (a {type(value).__module__}.{type(value).__qualname__}) "
            f"with {type(self).__name__}: it encodes JSON values, pydantic models, tuples, sets, "
            "dates, UUIDs, Decimals, paths and bytes. Keep objects like clients out of the state "
            "(inject them as a Resource), give the model a pydantic field_serializer, or use "
            "PickleSerializer for trusted data."
        )

    def _guard(self, value: Any, path: str, active: set[int], encode: Any) -> Any:
        key = id(value)
        if key in active:
            raise SerializationError(
                f"Cannot serialize {path}: it contains itself (a circular reference); "
                "break the cycle before serializing."
            )
        active.add(key)
        try:
            return encode(value, path, active)
        finally:
            active.discard(key)

    def _encode_dict(self, value: dict[Any, Any], path: str, active: set[int]) -> Any:
        if all(type(k) is str for k in value) and TAG not in value:
            return {k: self._encode(v, f"{path}[{k!r}]", active) for k, v in value.items()}
        return {
            TAG: "dict",
            "items": [
                [
                    self._encode(k, f"{path} key {k!r}", active),
                    self._encode(v, f"{path}[{k!r}]", active),
                ]
                for k, v in value.items()
            ],
        }

    def _encode_model(self, model: BaseModel, path: str, active: set[int]) -> Any:
        cls = type(model)
        plan = PLANS.get(cls)
        if plan is None:
            plan = PLANS[cls] = model_plan(cls)
        name_of, plain, fields = plan
        if KNOWN.get(name_of) is not cls:
            KNOWN[name_of] = cls
        if plain:
            try:
                dumped = model.model_dump(mode="json")
            except Exception as exc:
                raise SerializationError(
                    f"Cannot serialize {path} ({cls.__qualname__}): its model_serializer failed "
                    f"({exc}); fix the serializer."
                ) from exc
            return {TAG: "model", "type": name_of, "fields": dumped}
        data: dict[str, Any] = {}
        for name, key, by_pydantic in fields:
            if by_pydantic:
                data[key] = self._pydantic_field(model, name, path)
                continue
            value = getattr(model, name)
            # Most fields are plain JSON scalars: skip building their path (only errors use it).
            data[key] = (
                value if type(value) in _PLAIN else self._encode(value, f"{path}.{name}", active)
            )
        for name, value in (model.__pydantic_extra__ or {}).items():
            data[name] = self._encode(value, f"{path}.{name}", active)
        return {TAG: "model", "type": name_of, "fields": data}

    @staticmethod
    def _pydantic_field(model: BaseModel, name: str, path: str) -> Any:
        try:
            return model.model_dump(mode="json", include={name})[name]
        except Exception as exc:
            raise SerializationError(
                f"Cannot serialize {path}.{name}: its pydantic field_serializer failed ({exc}); "
                "fix the serializer."
            ) from exc

    def _decode(self, tree: Any, path: str) -> Any:
        if isinstance(tree, list):
            return [self._decode(x, f"{path}[{i}]") for i, x in enumerate(tree)]
        if not isinstance(tree, dict):
            return tree
        kind = tree.get(TAG)
        if kind is None:
            return {k: self._decode(v, f"{path}[{k!r}]") for k, v in tree.items()}
        try:
            return self._decode_tagged(kind, tree, path)
        except ContextSerdeError:
            raise
        except Exception as exc:
            raise ContextSerdeError(
                f"Cannot decode {path}: malformed {kind!r} entry ({type(exc).__name__}: {exc}); "
                "the data is corrupt or was not written by batonflow."
            ) from exc

    def _decode_tagged(self, kind: str, tree: dict[str, Any], path: str) -> Any:
        if kind == "model":
            cls = self._model_class(tree["type"], path)
            fields = self._decode(tree["fields"], path)
            try:
                return cls.model_validate(fields)
            except ValidationError as exc:
                raise ContextSerdeError(
                    f"Cannot decode {path}: the data no longer fits {cls.__qualname__} "
                    f"({exc.error_count()} error(s), first: {_first_error(exc)}); the model "
                    "changed since the data was written: migrate the data or restore the model."
                ) from exc
        if kind in ("tuple", "set", "frozenset"):
            items = [self._decode(x, f"{path}[{i}]") for i, x in enumerate(tree["items"])]
            return {"tuple": tuple, "set": set, "frozenset": frozenset}[kind](items)
        if kind == "dict":
            return {
                self._decode(k, f"{path} key"): self._decode(v, f"{path}[...]")
                for k, v in tree["items"]
            }
        if kind == "pickle":
            return self._unpickle(tree, path)
        if kind == "exception":
            return self._decode_exception(tree)
        decoder = SCALAR_DECODERS.get(kind)
        if decoder is None:
            raise ContextSerdeError(
                f"Cannot decode {path}: unknown tag {kind!r}; the data was written by a newer "
                "batonflow or another program: upgrade batonflow or re-create the data."
            )
        return decoder(tree["v"])

    def _decode_exception(self, tree: dict[str, Any]) -> BaseException:
        name = tree["exception_type"]
        if (
            self._allowed is not None
            and not name.startswith("builtins.")
            and dotted(name) not in self._allowed
        ):
            return UnreconstructedException(str(tree["exception_message"]), original_type=name)
        return exception_from_data(
            {"exception_type": name, "exception_message": tree["exception_message"]}
        )

    def _unpickle(self, tree: dict[str, Any], path: str) -> Any:
        raise ContextSerdeError(
            f"Cannot decode {path}: it holds pickled data, which {type(self).__name__} refuses "
            "to load; use PickleSerializer (only for data you trust)."
        )

    def _model_class(self, name: str, path: str) -> type[BaseModel]:
        if not isinstance(name, str):
            raise ContextSerdeError(f"Cannot decode {path}: model type {name!r} is not a name.")
        if self._allowed is not None and dotted(name) not in self._allowed:
            raise ContextSerdeError(
                f"Cannot decode {path}: class {name!r} is not in allowed_types; add it to "
                "JsonSerializer(allowed_types=[...]) if you trust it."
            )
        # Never import a module because the data names it: only classes registered (by the
        # workflows in play, register_type, or encoding them in this process), found in the
        # workflows' own modules, or listed in allowed_types, all already imported.
        found = resolve(name, BaseModel)
        if found is None and self._allowed is not None:
            found = _listed(name)
        if found is None:
            raise ContextSerdeError(_untrusted(name, path))
        return cast("type[BaseModel]", found)


def _listed(name: str) -> type[BaseModel] | None:
    """The model an ``allowed_types`` string names, when its module is already imported."""
    module_name, _, qualname = name.partition(":")
    obj: Any = sys.modules.get(module_name)
    if obj is None or "<locals>" in qualname:
        return None
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
    if not (isinstance(obj, type) and issubclass(obj, BaseModel)):
        return None
    KNOWN[name] = obj
    return obj


def _untrusted(name: str, path: str) -> str:
    """Why the class ``name`` is not restored, ending with how to make it restorable."""
    module_name, _, qualname = name.partition(":")
    head = f"Cannot decode {path}: class {name!r} is not a type this process trusts"
    register = f"batonflow.core.serialization.register_type({qualname.rpartition('.')[2]})"
    if "<locals>" in qualname:
        return (
            f"{head}: it was defined inside a function, so it exists only in the process that "
            "made it. Define it at module level, in the workflow's module or in a module that "
            f"calls {register}."
        )
    if module_name == "__main__":
        return (
            f"{head}: it was defined in the script the writing process ran as __main__, and no "
            f"workflow in play here lives in this process's __main__. Move {qualname} to an "
            "importable module (data written from then on names that module); to read this "
            f"data, define it in the script that resumes and call {register} before resuming."
        )
    if module_name not in TRUSTED_MODULES:
        imported = "imported" if module_name in sys.modules else "not imported"
        return (
            f"{head}: classes are restored by name only from the modules of the workflows in "
            "play (the workflow's own module, its steps' modules and those of the events and "
            f"state types they name) and from register_type(), and module {module_name!r} "
            f"({imported}) is none of them. Call {register} in the module that defines it and "
            "import that module before resuming (or pass JsonSerializer(allowed_types=[...]))."
        )
    if module_name not in sys.modules:
        return (
            f"{head}: module {module_name!r} belongs to a workflow in play but is not imported, "
            "and data never makes this process import a module. Import it before resuming."
        )
    return (
        f"{head}: module {module_name!r} has no pydantic model {qualname}; it was renamed or "
        "removed since the data was written. Restore the class, or migrate the data."
    )


class PickleSerializer(JsonSerializer):
    """JSON first, pickle for the values JSON cannot encode (base64 inside the JSON).

    Everything :class:`JsonSerializer` encodes is written the same way; only the rest (a
    client, a custom object) is pickled, where it sits. **Unsafe for untrusted data**: loading
    a pickle can run arbitrary code, so only deserialize text your own process wrote.
    """

    def _fallback(self, value: Any, path: str) -> Any:
        try:
            data = pickle.dumps(value)
        except Exception as exc:
            raise SerializationError(
                f"Cannot serialize {path} (a {type(value).__qualname__}): neither JSON nor "
                f"pickle can encode it ({exc}); inject it as a Resource instead of keeping it "
                "in the state."
            ) from exc
        return {TAG: "pickle", "v": base64.b64encode(data).decode("ascii")}

    def _decode_exception(self, tree: dict[str, Any]) -> BaseException:
        name = tree["exception_type"]
        if (
            self._allowed is not None
            and not name.startswith("builtins.")
            and dotted(name) not in self._allowed
        ):
            return UnreconstructedException(str(tree["exception_message"]), original_type=name)
        return exception_from_data(
            {"exception_type": name, "exception_message": tree["exception_message"]}
        )

    def _unpickle(self, tree: dict[str, Any], path: str) -> Any:
        return pickle.loads(base64.b64decode(tree["v"]))


#: LlamaIndex's name for the pickle-fallback serializer.
JsonPickleSerializer = PickleSerializer


# Events inside events (LlamaIndex's SerializableEvent fields): here, not in events.py,
# because they are written by this module's serializer, which builds on events.py.


def _event_to_data(event: Event) -> Any:
    return JsonSerializer().encode(event)


def _event_from_data(data: Any) -> Event:
    if isinstance(data, Event):
        return data
    event = JsonSerializer().decode(data)
    if not isinstance(event, Event):
        raise ValueError(f"expected a serialized event, got {type(event).__qualname__}")
    return event


#: A pydantic field type for an event that dumps to JSON with its class and loads back as it.
SerializableEvent = Annotated[
    Event,
    PlainValidator(_event_from_data),
    PlainSerializer(_event_to_data, when_used="json"),
]
#: :data:`SerializableEvent` or ``None``.
SerializableOptionalEvent = Annotated[
    Event | None,
    PlainValidator(or_none(_event_from_data)),
    PlainSerializer(or_none(_event_to_data), when_used="json"),
]


def serialize_event(event: Event, serializer: BaseSerializer) -> str:
    """Encode one event with its class, for queues and checkpoints.

    Raises:
        SerializationError: A field of the event cannot be encoded; the message names it.
    """
    if isinstance(serializer, JsonSerializer):
        return compact_json(serializer.encode(event, f"event {type(event).__name__}"))
    return serializer.serialize(event)


def deserialize_event(data: str, serializer: BaseSerializer) -> Event:
    """Decode text written by :func:`serialize_event` and check that it is an event.

    Raises:
        ContextSerdeError: Corrupt text, or a value that is not an ``Event``.
    """
    value = serializer.deserialize(data)
    if not isinstance(value, Event):
        raise ContextSerdeError(
            f"Expected a serialized event, got {type(value).__qualname__}; the data is corrupt "
            "or was not written by serialize_event."
        )
    return value


def serialize_at(serializer: BaseSerializer, value: Any, path: str) -> str:
    """``serializer.serialize(value)``, with errors naming ``path`` (e.g. ``state['client']``).

    Raises:
        SerializationError: ``value`` cannot be encoded; the message names ``path``.
    """
    if isinstance(serializer, JsonSerializer):
        return compact_json(serializer.encode(value, path))
    try:
        return serializer.serialize(value)
    except SerializationError:
        raise
    except Exception as exc:
        raise SerializationError(
            f"Cannot serialize {path} with {type(serializer).__name__}: "
            f"{type(exc).__name__}: {exc}. Inject such objects as a Resource or use a serializer "
            "that handles them."
        ) from exc


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err.get("loc", ())) or "<root>"
    return f"{loc}: {err.get('msg', '')}"


__all__ = [
    "BaseSerializer",
    "JsonPickleSerializer",
    "JsonSerializer",
    "PickleSerializer",
    "deserialize_event",
    "qualified_name",
    "register_type",
    "serialize_at",
    "serialize_event",
]

# Stored runs and pickles name these classes by their public path.
publish(__name__, globals())
