"""State types: the untyped :class:`DictState`, and which typed model a workflow's state is.

A workflow's steps may annotate ``Context[Model]`` with different models of one inheritance
chain (a base workflow's steps take ``Context[BaseState]``, a subclass adds steps taking
``Context[ChildState]``); the run's state is then the most derived model, and a step that
writes a whole parent-type state merges its fields into it (:func:`merge_parent_state`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from pydantic import BaseModel

from ..errors import StateTypeError, StateValidationError, WorkflowConfigurationError


class _Unset:
    __slots__ = ()

    def __repr__(self) -> str:
        return "UNSET"


#: "No default given" (``None`` is a valid default).
UNSET: Final[Any] = _Unset()


class DictState(dict[str, Any]):
    """The untyped state: a ``dict`` whose keys are also readable as attributes.

    ``state["count"]``, ``state.get("count", 0)``, ``state.count``, ``"count" in state``,
    ``state.keys()`` / ``items()`` all work; ``state.count = 1`` sets the key. ``DictState()``
    is an empty state, ``DictState(a=1)`` or ``DictState({"a": 1})`` a filled one; LlamaIndex's
    ``DictState(_data={"a": 1})`` spelling is read the same way.
    """

    # The open edit block's undo log, while ``edit_state()`` edits this dict (see _state_edit).
    __slots__ = ("_bf_edit_log",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if not args and len(kwargs) == 1 and isinstance(kwargs.get("_data"), Mapping):
            dict.__init__(self, kwargs["_data"])
            return
        dict.__init__(self, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(
                f"The state has no key {name!r}; use state.get({name!r}, default) to read a "
                "key that may be missing."
            ) from None

    def __setattr__(self, name: str, value: Any) -> None:
        self[name] = value

    def __delattr__(self, name: str) -> None:
        try:
            del self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __reduce__(self) -> tuple[Any, ...]:
        # Copies and pickles are of the keys only: the edit-log slot (which may still name
        # the store's last edit block) is not part of the state.
        return (DictState, (dict(self),))

    def to_dict(self) -> dict[str, Any]:
        """A plain ``dict`` copy (shallow) of the state."""
        return dict(self)

    def model_dump(self) -> dict[str, Any]:
        """Same as :meth:`to_dict`, for code written against pydantic states."""
        return dict(self)


def check_state_type(state_type: type[BaseModel]) -> None:
    """Check that ``state_type`` can be a typed state: a pydantic model with all defaults.

    Raises:
        WorkflowConfigurationError: Not a pydantic model, or a field without a default.
    """
    if not (isinstance(state_type, type) and issubclass(state_type, BaseModel)):
        raise WorkflowConfigurationError(
            f"State type {state_type!r} is not a pydantic model; annotate Context[MyState] with "
            "a BaseModel subclass."
        )
    missing = [name for name, info in state_type.model_fields.items() if info.is_required()]
    if missing:
        raise WorkflowConfigurationError(
            f"{state_type.__qualname__} cannot be a workflow state: field(s) "
            f"{', '.join(repr(m) for m in missing)} have no default; give every field a default "
            f"(e.g. {missing[0]}: int = 0) so the store can create the initial state."
        )


def most_derived_state_type(
    declared: Iterable[tuple[str, type[BaseModel]]], workflow_name: str
) -> type[BaseModel] | None:
    """The state model of a workflow whose steps declare ``declared`` (step name, model).

    Args:
        declared: One ``(step name, Context[Model] model)`` per step with typed state.
        workflow_name: Named in the error.

    Returns:
        The model every other declared model is a base of, or ``None`` when none is declared.

    Raises:
        StateTypeError: Two models where neither derives from the other (unrelated or
            siblings).
    """
    pairs = list(declared)
    types = list(dict.fromkeys(t for _, t in pairs))
    if not types:
        return None
    for candidate in types:
        if all(issubclass(candidate, other) for other in types):
            return candidate
    described = ", ".join(f"{name}: Context[{t.__name__}]" for name, t in pairs)
    raise StateTypeError(
        "Multiple state types are not in a compatible inheritance hierarchy. All state types "
        f"must share a common inheritance chain. Found: {', '.join(t.__name__ for t in types)} "
        f"(in {workflow_name}: {described}). Annotate the steps with one Context[Model], or "
        "make one model derive from the others."
    )


def merge_parent_state(current: BaseModel, incoming: BaseModel) -> BaseModel:
    """``current``'s model with ``incoming``'s fields, ``incoming`` being of a parent type.

    The fields only the child model has keep their current values.

    Raises:
        StateValidationError: ``incoming`` is not of ``current``'s type nor of a base of it.
    """
    target = type(current)
    source = type(incoming)
    if not issubclass(target, source):
        raise StateValidationError(
            f"State must be of type {target.__name__} or a parent type, got {source.__name__}; "
            f"pass a {target.__name__} (or an instance of one of its base models, whose fields "
            "are merged in)."
        )
    fields = {name: getattr(current, name) for name in target.model_fields}
    fields.update(current.__pydantic_extra__ or {})
    fields.update({name: getattr(incoming, name) for name in source.model_fields})
    fields.update(incoming.__pydantic_extra__ or {})
    return target.model_validate(fields)
