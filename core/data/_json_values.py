"""How single values are written as JSON, below the serializers.

The compact C encoder every snapshot and checkpoint goes through, the tagged forms of the
non-JSON scalars (dates, decimals, UUIDs, paths, bytes), and the encoding plan of each
pydantic model class, made once per class.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import uuid
import weakref
from collections.abc import Callable, Iterable
from decimal import Decimal
from json import encoder
from pathlib import Path, PurePath
from typing import Any

from pydantic import BaseModel

from ._type_registry import qualified_name

#: The key of a tagged value: ``{"__bf__": kind, ...}``.
TAG = "__bf__"


def _not_json(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _compact_encoder() -> Callable[[Any], str]:
    """``json.dumps(value, separators=(",", ":"))`` on one C encoder made once.

    ``JSONEncoder.encode`` makes a new C encoder (and a dict of the containers met, to find
    cycles) at every call; a durable step encodes its queued events and its checkpoint, so
    this holds one without that dict. A value that contains itself raises ``RecursionError``
    instead of ``ValueError``: what is encoded here is a serializer's tree (``encode`` finds
    cycles itself) or a snapshot, whose callers catch both.
    """
    make = getattr(encoder, "c_make_encoder", None)  # not in typeshed: CPython's _json
    if make is None:  # pragma: no cover - a Python built without the _json accelerator
        return json.JSONEncoder(separators=(",", ":")).encode
    held = make(
        None, _not_json, encoder.encode_basestring_ascii, None, ":", ",", False, False, True
    )

    def compact_json(value: Any) -> str:
        return "".join(held(value, 0))

    return compact_json


#: ``json.dumps(value, separators=(",", ":"))``, ASCII only: see :func:`_compact_encoder`.
compact_json = _compact_encoder()


def encode_scalar(value: Any) -> dict[str, Any] | None:
    """The tagged form of a date, time, duration, decimal, UUID, path or bytes; else ``None``."""
    if isinstance(value, dt.datetime):
        return {TAG: "datetime", "v": value.isoformat()}
    if isinstance(value, dt.date):
        return {TAG: "date", "v": value.isoformat()}
    if isinstance(value, dt.time):
        return {TAG: "time", "v": value.isoformat()}
    if isinstance(value, dt.timedelta):
        return {TAG: "timedelta", "v": [value.days, value.seconds, value.microseconds]}
    if isinstance(value, Decimal):
        return {TAG: "decimal", "v": str(value)}
    if isinstance(value, uuid.UUID):
        return {TAG: "uuid", "v": str(value)}
    if isinstance(value, PurePath):
        return {TAG: "path", "v": str(value)}
    if isinstance(value, bytes | bytearray):
        return {TAG: "bytes", "v": base64.b64encode(bytes(value)).decode("ascii")}
    return None


#: Tag -> what turns a tagged scalar's ``"v"`` back into its value (``encode_scalar``'s inverse).
SCALAR_DECODERS: dict[str, Any] = {
    "datetime": dt.datetime.fromisoformat,
    "date": dt.date.fromisoformat,
    "time": dt.time.fromisoformat,
    "timedelta": lambda v: dt.timedelta(days=v[0], seconds=v[1], microseconds=v[2]),
    "decimal": Decimal,
    "uuid": uuid.UUID,
    "path": Path,
    "bytes": lambda v: base64.b64decode(v),
}


def json_base(value: Any) -> Any:
    """A subclass of a JSON scalar (an ``IntEnum``, a ``str`` subclass) as the plain scalar."""
    for base in (bool, int, float, str):
        if isinstance(value, base):
            return base(value)
    return value  # pragma: no cover - callers only pass JSON scalar subclasses


def stable_order(items: Iterable[Any]) -> list[Any]:
    """A set's items sorted when they can be (the same set writes the same text), else as is."""
    values = list(items)
    try:
        return sorted(values)
    except TypeError:
        return values


Plan = tuple[str, bool, tuple[tuple[str, str, bool], ...]]
#: How ``JsonSerializer`` encodes each model class (see ``model_plan``), made once per class.
PLANS: weakref.WeakKeyDictionary[type[BaseModel], Plan] = weakref.WeakKeyDictionary()


def model_plan(cls: type[BaseModel]) -> Plan:
    """``(qualified name, plain, fields)`` of a model class for ``JsonSerializer``.

    ``plain``: a "plain" ``model_serializer`` replaces the model's shape, so pydantic writes it;
    a "wrap" one (llama-index's ``BaseComponent`` adds ``class_name``) only decorates the
    default dump, so the fields are walked as usual and nested models keep their classes.
    ``fields``: ``(attribute, key, by_pydantic)`` for every field not excluded, the key being
    the name ``model_validate`` reads back (the alias, when there is one), ``by_pydantic`` when
    a ``field_serializer`` writes it.
    """
    decorators = cls.__pydantic_decorators__
    plain = any(d.info.mode == "plain" for d in decorators.model_serializers.values())
    by_pydantic = {
        name for info in decorators.field_serializers.values() for name in info.info.fields
    }
    fields = tuple(
        (name, _input_name(name, info), name in by_pydantic)
        for name, info in cls.model_fields.items()
        if not info.exclude
    )
    return qualified_name(cls), plain, fields


def _input_name(name: str, info: Any) -> str:
    alias = info.validation_alias if isinstance(info.validation_alias, str) else info.alias
    return alias if isinstance(alias, str) else name
