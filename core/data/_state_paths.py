"""Dotted paths into the state (``"user.name"``, ``"items.0"``) and the store's error texts.

A path walks dicts (by key), lists and tuples (by index), pydantic models (by field, or extra
field) and, last, plain objects (by public attribute).
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any

from pydantic import BaseModel, ValidationError

from ..errors import StateKeyError, StateValidationError


class Missing(Exception):
    """A path segment that is not there (internal: turned into StateKeyError)."""

    def __init__(self, segment: str, parent: Any) -> None:
        self.segment = segment
        self.parent = parent


def step_into(obj: Any, segment: str) -> Any:
    """The value one path segment below ``obj``; raises :class:`Missing`."""
    if isinstance(obj, Mapping):
        try:
            return obj[segment]
        except KeyError:
            raise Missing(segment, obj) from None
    if isinstance(obj, list | tuple):
        try:
            return obj[int(segment)]
        except (ValueError, IndexError):
            raise Missing(segment, obj) from None
    if isinstance(obj, BaseModel):
        if segment in type(obj).model_fields:
            return getattr(obj, segment)
        extra = obj.__pydantic_extra__
        if extra is not None and segment in extra:
            return extra[segment]
        raise Missing(segment, obj)
    if segment.startswith("_") or not hasattr(obj, segment):
        raise Missing(segment, obj)
    return getattr(obj, segment)


def walk(obj: Any, segments: list[str]) -> Any:
    """The value at ``segments`` below ``obj``; raises :class:`Missing`."""
    for segment in segments:
        obj = step_into(obj, segment)
    return obj


def assign(parent: Any, segment: str, value: Any, path: str) -> None:
    """Set ``segment`` of ``parent`` (the last step of ``path``), validating models."""
    if isinstance(parent, MutableMapping):
        parent[segment] = value
    elif isinstance(parent, list):
        try:
            parent[int(segment)] = value
        except (ValueError, IndexError):
            raise StateKeyError(
                f"Cannot set {path!r}: {segment!r} is not an index of a list of "
                f"{len(parent)} item(s); append to the list instead."
            ) from None
    elif isinstance(parent, BaseModel):
        model = type(parent)
        if segment not in model.model_fields and model.model_config.get("extra") != "allow":
            raise StateValidationError(
                f"Cannot set {path!r}: {model.__qualname__} has no field {segment!r}; add the "
                "field to the model or use one of: "
                f"{', '.join(model.model_fields) or '(no fields)'}."
            )
        try:
            model.__pydantic_validator__.validate_assignment(parent, segment, value)
        except ValidationError as exc:
            raise validation_error(model, repr(path), exc) from exc
    elif isinstance(parent, tuple | str | int | float | bool | type(None)):
        raise StateValidationError(
            f"Cannot set {path!r}: it goes through a {type(parent).__qualname__}, which cannot "
            "be changed in place; set the enclosing value instead."
        )
    else:
        setattr(parent, segment, value)


def missing_message(path: str, segment: str, parent: Any) -> str:
    if segment == path:
        return f"Key {path!r} is not in the state store; pass default=... to get a fallback."
    return (
        f"Path {path!r} is not in the state store (no {segment!r} in "
        f"{describe(parent)}); pass default=... to get a fallback."
    )


def describe(obj: Any) -> str:
    if isinstance(obj, BaseModel):
        return f"the {type(obj).__qualname__} model"
    if isinstance(obj, list | tuple):
        return f"a {type(obj).__name__} of {len(obj)} item(s)"
    if isinstance(obj, Mapping):
        return "the mapping"
    return f"a {type(obj).__qualname__}"


def display(path: str) -> str:
    return "state" + "".join(f"[{part!r}]" for part in path.split("."))


def validation_error(
    model: type[BaseModel], what: str, exc: ValidationError
) -> StateValidationError:
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err.get("loc", ()))
    where = f" at {loc!r}" if loc else ""
    return StateValidationError(
        f"Invalid value for {what} of {model.__qualname__}{where}: {err.get('msg', '')} "
        f"(got {err.get('input')!r}); pass a value of the field's type. The state is unchanged."
    )
