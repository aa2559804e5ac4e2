"""The state store's snapshot layout (what ``store.to_dict()`` writes and ``from_dict`` reads).

The layout is LlamaIndex's, so code that looks inside ``ctx.to_dict()["state"]`` works the
same on both::

    {"store_type": "in_memory", "state_type": "DictState", "state_module": "...",
     "state_data": {"_data": {"count": "3", "user": "{...}"}}, "version": 2}

Untyped state keeps one encoded string per key under ``state_data["_data"]``; typed state is one
string: with :class:`JsonSerializer`, ``{"__is_pydantic": true, "value": {fields...},
"qualified_name": "module.Model", "type": "module:Model"}``, whose ``value`` holds the fields as
the serializer encodes them (nested models keep their classes). Other serializers write the
model as their ``serialize`` does. Version 1 (batonflow before the LlamaIndex layout:
``state_type`` a ``"module:Model"`` name or ``None``, ``state_data`` the key map itself) is still
read.

Both directions are plain loops over the keys with a fast path for JSON scalars, and one
prepared :class:`json.JSONEncoder`: ``json.dumps`` with options builds an encoder per call,
which was most of the cost of a snapshot of many small values.
"""

from __future__ import annotations

import json
import json.encoder
import json.scanner
from collections.abc import Mapping
from typing import Any, Final

from pydantic import BaseModel

from ..errors import ContextSerdeError
from ._json_values import TAG
from ._state_paths import display
from ._state_types import DictState
from .serialization import BaseSerializer, JsonSerializer, serialize_at

FORMAT_VERSION: Final = 2
_READABLE_VERSIONS: Final = (1, 2)

_ENCODE = json.JSONEncoder(separators=(",", ":")).encode
# The C encoder behind json.dumps, built once (json builds one per call): a value already
# checked to be plain JSON is written by it without the Python wrapper.
_C_ENCODE = json.encoder.c_make_encoder(  # type: ignore[attr-defined]
    None, None, json.encoder.encode_basestring_ascii, None, ":", ",", False, False, True
)
_ESCAPE = json.encoder.encode_basestring_ascii
_LITERALS: Final = {True: "true", False: "false", None: "null"}


def _dump_json(value: Any) -> str:
    """The compact JSON text of a plain-JSON ``value`` (what ``_ENCODE`` writes, faster)."""
    kind = type(value)
    if kind is str:
        return _ESCAPE(value)  # type: ignore[no-any-return]
    if kind is int:
        return int.__repr__(value)
    if kind is bool or value is None:
        return _LITERALS[value]
    return "".join(_C_ENCODE(value, 0))


_DECODE = json.loads
_SCALARS: Final = frozenset((str, int, float, bool, type(None)))


def _is_json(value: Any) -> bool:
    """Whether ``value`` is made of JSON types only (so ``json`` encodes it as it is).

    Checking first and handing the whole value to the C encoder is several times faster than
    the serializer's walk, which builds an error path string for every item it visits.
    """
    kind = type(value)
    if kind in _SCALARS:
        return True
    if kind is list:
        return all(_is_json(item) for item in value)
    if kind is dict:
        return (
            TAG not in value
            and all(type(key) is str for key in value)
            and all(_is_json(item) for item in value.values())
        )
    return False


def _untagged(tree: Any) -> bool:
    """Whether a decoded JSON tree holds no tagged value (so it is the value itself)."""
    kind = type(tree)
    if kind is dict:
        if TAG in tree:
            return False
        items: Any = tree.values()
    elif kind is list:
        items = tree
    else:
        return True
    return all(type(item) not in _CONTAINERS or _untagged(item) for item in items)


_CONTAINERS: Final = frozenset((dict, list))
_scan = json.scanner.make_scanner(json.JSONDecoder())  # type: ignore[attr-defined, arg-type]


def _loads(text: str) -> Any:
    """``json.loads`` for the compact text the encoder writes, without its Python wrapper."""
    try:
        value, end = _scan(text, 0)
    except (StopIteration, TypeError):
        return _DECODE(text)  # not JSON at offset 0, or not a str: let json raise its error
    if end != len(text):
        return _DECODE(text)  # whitespace or trailing data: the full parser decides
    return value


def _plain_json(serializer: BaseSerializer) -> bool:
    """Whether ``serializer`` encodes like :class:`JsonSerializer` (so the fast paths apply)."""
    cls = type(serializer)
    return (
        isinstance(serializer, JsonSerializer)
        and cls.serialize is JsonSerializer.serialize
        and cls.deserialize is JsonSerializer.deserialize
    )


def encode_untyped(state: Mapping[str, Any], serializer: BaseSerializer) -> dict[str, Any]:
    """The snapshot of an untyped state (see the module docs).

    Raises:
        SerializationError: A value cannot be encoded; the message names its key.
    """
    data: dict[str, str] = {}
    if _plain_json(serializer):
        assert isinstance(serializer, JsonSerializer)
        encode = serializer.encode
        for key, value in state.items():
            try:
                plain = _is_json(value)
            except RecursionError:  # a value that contains itself: the walk names it
                plain = False
            if plain:
                data[key] = _dump_json(value)
            else:
                data[key] = _ENCODE(encode(value, f"state[{key!r}]"))
    else:
        for key, value in state.items():
            data[key] = serialize_at(serializer, value, display(key))
    return {
        "store_type": "in_memory",
        "state_type": "DictState",
        "state_module": DictState.__module__,
        "state_data": {"_data": data},
        "version": FORMAT_VERSION,
    }


def encode_typed(state: BaseModel, serializer: BaseSerializer) -> dict[str, Any]:
    """The snapshot of a typed state (see the module docs).

    Raises:
        SerializationError: A field cannot be encoded; the message names it.
    """
    cls = type(state)
    if isinstance(serializer, JsonSerializer) and type(serializer).serialize is (
        JsonSerializer.serialize
    ):
        tree = serializer.encode(state, "state")
        encoded = _ENCODE(
            {
                "__is_pydantic": True,
                "value": tree["fields"],
                "qualified_name": f"{cls.__module__}.{cls.__qualname__}",
                "type": tree["type"],
            }
        )
    else:
        encoded = serialize_at(serializer, state, "state")
    return {
        "store_type": "in_memory",
        "state_type": cls.__name__,
        "state_module": cls.__module__,
        "state_data": encoded,
        "version": FORMAT_VERSION,
    }


def decode_state(data: Mapping[str, Any], serializer: BaseSerializer) -> tuple[bool, Any]:
    """Read a snapshot written by :func:`encode_untyped` / :func:`encode_typed` (or version 1).

    Returns:
        ``(typed, value)``: the values by key (untyped) or the decoded model (typed).

    Raises:
        ContextSerdeError: A foreign store type, an unknown version, or corrupt data.
    """
    if not isinstance(data, Mapping) or "state_data" not in data:
        raise ContextSerdeError(
            "State data must be the dict written by InMemoryStateStore.to_dict() (with a "
            "'state_data' key); pass ctx.to_dict() output unchanged."
        )
    store_type = data.get("store_type", "in_memory")
    if store_type != "in_memory":
        raise ContextSerdeError(
            f"Cannot parse store_type {store_type!r} as an in-memory state; restore it with the "
            "from_dict() of the store that wrote it."
        )
    version = data.get("version", FORMAT_VERSION)
    if version not in _READABLE_VERSIONS:
        raise ContextSerdeError(
            f"State data has format version {version!r}, this batonflow reads versions "
            f"{', '.join(map(str, _READABLE_VERSIONS))}; restore it with the batonflow version "
            "that wrote it."
        )
    raw = data["state_data"]
    state_type = data.get("state_type")
    try:
        if isinstance(raw, Mapping):
            if version == 1 or (state_type is None and "_data" not in raw):
                items: Any = raw  # version 1: the key map itself
            else:
                items = raw.get("_data", {})
            if not isinstance(items, Mapping):
                raise TypeError(f"state_data['_data'] is a {type(items).__qualname__}")
            return False, _decode_items(items, serializer)
        if isinstance(raw, str):
            return True, _decode_model(raw, serializer)
        raise TypeError(f"state_data is a {type(raw).__qualname__}")
    except ContextSerdeError:
        raise
    except Exception as exc:
        raise ContextSerdeError(
            f"Cannot restore the state ({type(exc).__name__}: {exc}); the data is corrupt "
            "or was written with another serializer: pass the one used for to_dict()."
        ) from exc


def _decode_items(items: Mapping[str, Any], serializer: BaseSerializer) -> dict[str, Any]:
    values: dict[str, Any] = {}
    if _plain_json(serializer):
        assert isinstance(serializer, JsonSerializer)
        decode = serializer.decode
        for key, text in items.items():
            try:
                tree = _loads(text)
            except (TypeError, ValueError) as exc:
                raise ContextSerdeError(
                    f"Cannot decode state[{key!r}] ({exc}); pass the text written by "
                    f"{type(serializer).__name__}.serialize."
                ) from exc
            values[str(key)] = tree if _untagged(tree) else decode(tree)
        return values
    for key, text in items.items():
        values[str(key)] = serializer.deserialize(text)
    return values


def _decode_model(raw: str, serializer: BaseSerializer) -> Any:
    if not isinstance(serializer, JsonSerializer) or (
        type(serializer).deserialize is not JsonSerializer.deserialize
    ):
        return serializer.deserialize(raw)
    tree = _DECODE(raw)
    if isinstance(tree, dict) and tree.get("__is_pydantic"):
        name = tree.get("type")
        if not isinstance(name, str):
            # Written by LlamaIndex: "module.Model" (a top-level class).
            module, _, cls_name = str(tree["qualified_name"]).rpartition(".")
            name = f"{module}:{cls_name}"
        return serializer.decode({TAG: "model", "type": name, "fields": tree["value"]})
    return serializer.decode(tree)


__all__ = ["FORMAT_VERSION", "decode_state", "encode_typed", "encode_untyped"]
