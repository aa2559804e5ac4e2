"""The state store: the notebook every step of a run reads and writes (``ctx.store``).

Untyped state is a :class:`DictState` (a dict that also allows ``state.key``); typed state is a
pydantic model whose fields all have defaults, declared with ``Context[MyState]``. Values are
reached by dotted paths (``"user.name"``, ``"items.0"``) through dicts, lists and models.

Reads and writes are plain in-memory operations (no copies, no validation of untyped values).
Writes wait while another task is inside :meth:`InMemoryStateStore.edit_state`, which makes a
read-modify-write atomic against every other step of the run; reads never wait and see the
last committed state.

State is what gets serialized when a run is snapshotted, so keep it to data: clients and other
heavy objects belong in resources.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator, ItemsView, Mapping, MutableMapping, ValuesView
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Final, Generic, Protocol, TypeVar, cast, runtime_checkable

from pydantic import BaseModel, ValidationError

from .errors import (
    ContextSerdeError,
    SerializationError,
    StateKeyError,
    StateValidationError,
    WorkflowConfigurationError,
)
from .serialization import (
    BaseSerializer,
    JsonSerializer,
    qualified_name,
    register_type,
    serialize_at,
)


class _Unset:
    __slots__ = ()

    def __repr__(self) -> str:
        return "UNSET"


#: "No default given" (``None`` is a valid default).
UNSET: Final[Any] = _Unset()

FORMAT_VERSION = 1

S = TypeVar("S", bound=BaseModel)


class DictState(dict[str, Any]):
    """The untyped state: a ``dict`` whose keys are also readable as attributes.

    ``state["count"]``, ``state.get("count", 0)``, ``state.count``, ``"count" in state``,
    ``state.keys()`` / ``items()`` all work; ``state.count = 1`` sets the key.
    """

    __slots__ = ()

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

    def to_dict(self) -> dict[str, Any]:
        """A plain ``dict`` copy (shallow) of the state."""
        return dict(self)

    def model_dump(self) -> dict[str, Any]:
        """Same as :meth:`to_dict`, for code written against pydantic states."""
        return dict(self)


class _EditingState(DictState):
    """The working copy ``edit_state()`` yields for untyped state.

    A value is deep-copied the first time the block reads it, so a block pays for the keys it
    touches, not for the whole state (a long chat history stays uncopied when the block only
    bumps a counter), and rolling back is just dropping this object.
    """

    __slots__ = ("_copied", "_memo")

    def __init__(self, base: Mapping[str, Any]) -> None:
        dict.__init__(self, base)
        object.__setattr__(self, "_copied", set())
        object.__setattr__(self, "_memo", None)

    def __getitem__(self, key: str) -> Any:
        value = dict.__getitem__(self, key)
        if type(value) in _ATOMIC:
            return value  # immutable: nothing to copy or to remember
        copied: set[str] = self._copied
        if key in copied:
            return value
        memo = self._memo
        if memo is None:
            memo = {}
            object.__setattr__(self, "_memo", memo)
        value = _copy_value(value, memo)
        dict.__setitem__(self, key, value)
        copied.add(key)
        return value

    def __setitem__(self, key: str, value: Any) -> None:
        dict.__setitem__(self, key, value)
        self._copied.add(key)

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        try:
            return self[key]
        except KeyError:
            return default

    def setdefault(self, key: str, default: Any = None) -> Any:
        if key not in self:
            self[key] = default
        return self[key]

    def pop(self, key: str, *default: Any) -> Any:  # type: ignore[override]
        if key not in self:
            if default:
                return default[0]
            raise KeyError(key)
        value = self[key]
        dict.__delitem__(self, key)
        return value

    def values(self) -> ValuesView[Any]:  # type: ignore[override]
        return ValuesView(self)

    def items(self) -> ItemsView[str, Any]:  # type: ignore[override]
        return ItemsView(self)

    def update(self, *args: Any, **kwargs: Any) -> None:
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def to_dict(self) -> dict[str, Any]:
        return {key: self[key] for key in self}

    model_dump = to_dict


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


@runtime_checkable
class StateStore(Protocol):
    """What ``ctx.store`` offers; :class:`InMemoryStateStore` is the implementation."""

    async def get(self, path: str, default: Any = UNSET) -> Any:
        """The value at a dotted path; ``StateKeyError`` when missing without default."""
        ...

    async def set(self, path: str, value: Any) -> None:
        """Set the value at a dotted path."""
        ...

    async def get_state(self) -> Any:
        """A copy of the whole state."""
        ...

    async def set_state(self, state: Any) -> None:
        """Replace the whole state."""
        ...

    async def clear(self) -> None:
        """Reset the state to its defaults."""
        ...

    def edit_state(self) -> AbstractAsyncContextManager[Any]:
        """Lock the state for an atomic read-modify-write."""
        ...

    def to_dict(self, serializer: BaseSerializer | None = None) -> dict[str, Any]:
        """Snapshot the state as a JSON-compatible dict."""
        ...


class InMemoryStateStore(Generic[S]):
    """The state of one run (and of later runs that reuse its Context), kept in memory.

    Args:
        state_type: A pydantic model with defaults for every field (typed state), or ``None``
            / :class:`DictState` for untyped state.
        initial: The starting state: an instance of ``state_type`` or a mapping of its fields
            (typed), or a mapping (untyped). Default: the model's defaults / an empty state.
        strict: Serialize every value on ``set`` (with ``serializer``), so a value that cannot
            be snapshotted fails at once instead of at ``to_dict``.
        serializer: The serializer ``strict`` uses (default :class:`JsonSerializer`).

    Raises:
        WorkflowConfigurationError: A bad ``state_type``.
        StateValidationError: ``initial`` does not fit ``state_type``.
    """

    __slots__ = (
        "_committed",
        "_dirty",
        "_fields",
        "_lock",
        "_owner",
        "_serializer",
        "_state",
        "_strict",
        "_typed",
        "_validator",
    )

    def __init__(
        self,
        state_type: type[Any] | None = None,
        initial: BaseModel | Mapping[str, Any] | None = None,
        *,
        strict: bool = False,
        serializer: BaseSerializer | None = None,
    ) -> None:
        if state_type is DictState:
            state_type = None
        if state_type is not None:
            check_state_type(state_type)
            register_type(state_type)
        self._typed: type[BaseModel] | None = state_type
        # Prepared once: the typed fast paths are a dict lookup and one field validation.
        self._fields: Mapping[str, Any] = state_type.model_fields if state_type else {}
        self._validator: Any = state_type.__pydantic_validator__ if state_type else None
        self._state: Any = self._initial(initial)
        self._committed: Any = None
        self._lock = asyncio.Lock()
        self._owner: asyncio.Task[Any] | None = None
        self._strict = strict
        self._serializer = serializer or JsonSerializer()
        # Top-level keys written since the last take_changes() (None: everything), so a
        # durable checkpoint encodes what a step changed, not the whole state.
        self._dirty: set[str] | None = None

    def _initial(self, initial: Any) -> Any:
        typed = self._typed
        if typed is None:
            if initial is None:
                return DictState()
            if not isinstance(initial, Mapping):
                raise StateValidationError(
                    f"Untyped state must start from a mapping, got {type(initial).__qualname__}; "
                    "pass a dict, or declare the model type with Context[MyState]."
                )
            return DictState(initial)
        if initial is None:
            return typed()
        if isinstance(initial, typed):
            return initial
        if isinstance(initial, BaseModel):
            initial = initial.model_dump()
        try:
            return typed.model_validate(initial)
        except ValidationError as exc:
            raise _validation_error(typed, "initial state", exc) from exc

    # -- properties ---------------------------------------------------------------------------

    @property
    def state_type(self) -> type[BaseModel] | None:
        """The typed state's model class, or ``None`` for untyped state."""
        return self._typed

    @property
    def strict(self) -> bool:
        """Whether ``set`` serializes each value to fail early."""
        return self._strict

    # -- reads --------------------------------------------------------------------------------

    async def get(self, path: str, default: Any = UNSET) -> Any:
        """The value at ``path`` (dotted: ``"user.name"``, ``"items.0"``).

        The live value is returned (no copy): mutate it only inside :meth:`edit_state`.

        Args:
            path: Key, field name, or dotted path through dicts, lists (by index) and models.
            default: Returned when the path is missing.

        Returns:
            The value, or ``default``.

        Raises:
            StateKeyError: The path is missing and no default was given (also a ``KeyError``).
        """
        state = self._state
        if self._owner is not None and self._owner is not asyncio.current_task():
            state = self._committed  # not our edit: read the last committed state
        if "." not in path:
            if self._typed is None:
                try:
                    return state[path]
                except KeyError:
                    if default is UNSET:
                        raise StateKeyError(_missing(path, path, state)) from None
                    return default
            if path in self._fields:
                return getattr(state, path)
        try:
            return _walk(state, path.split("."))
        except _Missing as miss:
            if default is UNSET:
                raise StateKeyError(_missing(path, miss.segment, miss.parent)) from None
            return default

    async def get_state(self) -> Any:
        """A copy of the whole state: the model (typed) or a :class:`DictState` (untyped).

        Changing the copy does not change the store; write it back with :meth:`set_state`.
        """
        state = self._state
        if self._owner is not None and self._owner is not asyncio.current_task():
            state = self._committed
        return _copy_state(state)

    # -- writes -------------------------------------------------------------------------------

    async def set(self, path: str, value: Any) -> None:
        """Set the value at ``path``.

        Untyped state creates missing intermediate dicts (``set("a.b", 1)`` on an empty state
        gives ``{"a": {"b": 1}}``). Typed state validates the value against the model field
        being set (pydantic validators run); a value that does not fit raises and leaves the
        state unchanged.

        Raises:
            StateValidationError: The value does not fit the typed field, or the path names a
                field the model does not have, or goes through an immutable value.
            StateKeyError: An intermediate of the path is missing in typed state.
            SerializationError: ``strict`` is on and the value cannot be serialized.
        """
        if self._owner is not None and self._owner is not asyncio.current_task():
            async with self._write_turn():
                self._set(path, value)
            return
        self._set(path, value)

    def _set(self, path: str, value: Any) -> None:
        dirty = self._dirty
        if dirty is not None:
            dirty.add(path.partition(".")[0])
        if self._strict:
            serialize_at(self._serializer, value, _display(path))
        state = self._state
        if "." not in path:
            if self._typed is None:
                state[path] = value
                return
            if path in self._fields:
                try:
                    self._validator.validate_assignment(state, path, value)
                except ValidationError as exc:
                    raise _validation_error(self._typed, repr(path), exc) from exc
                return
        segments = path.split(".")
        parent: Any = state
        for i, segment in enumerate(segments[:-1]):
            try:
                parent = _step(parent, segment)
            except _Missing:
                if not isinstance(parent, MutableMapping) or (self._typed is not None and i == 0):
                    raise StateKeyError(
                        _missing(path, segment, parent).replace(
                            "pass default=... to get a fallback", "set it first"
                        )
                    ) from None
                child: dict[str, Any] = {}
                parent[segment] = child
                parent = child
        _assign(parent, segments[-1], value, path)

    async def set_state(self, state: Any) -> None:
        """Replace the whole state.

        Args:
            state: Typed: an instance of the state model (or a mapping of its fields).
                Untyped: a mapping (a :class:`DictState` or ``dict``).

        Raises:
            StateValidationError: The value does not fit the state type.
        """
        typed = self._typed
        if typed is not None:
            if isinstance(state, BaseModel) and not isinstance(state, typed):
                raise StateValidationError(
                    f"set_state() got a {type(state).__qualname__}, but the state is a "
                    f"{typed.__qualname__}; pass a {typed.__qualname__}."
                )
            new = self._initial(state)
        else:
            if isinstance(state, BaseModel):
                state = state.model_dump()
            new = self._initial(state)
        if self._strict:
            serialize_at(self._serializer, new, "state")
        self._dirty = None
        if self._owner is not None and self._owner is not asyncio.current_task():
            async with self._write_turn():
                self._state = new
            return
        self._state = new

    async def clear(self) -> None:
        """Reset the state: the model's defaults (typed) or an empty state (untyped)."""
        self._dirty = None
        if self._owner is not None and self._owner is not asyncio.current_task():
            async with self._write_turn():
                self._state = self._initial(None)
            return
        self._state = self._initial(None)

    def edit_state(self) -> AbstractAsyncContextManager[Any]:
        """Lock the state for an atomic read-modify-write; yields the model or DictState.

        ::

            async with ctx.store.edit_state() as state:
                state["count"] = state.get("count", 0) + 1

        Other steps' writes wait until the block ends; their reads see the state as it was
        before the block. If the block raises, the state is left as it was before the block.
        Typed state is validated when the block ends (a bad value raises
        ``StateValidationError`` and nothing is kept). Keep the block short: do slow LLM or
        network calls outside it.
        """
        return _StateEdit(self)

    @asynccontextmanager
    async def _write_turn(self) -> AsyncIterator[None]:
        async with self._lock:
            yield

    def _checked(self, state: Any) -> Any:
        typed = self._typed
        if typed is None:
            if type(state) is not DictState:
                state = DictState(state)  # also drops the editing wrapper (values stay)
            return state
        if not isinstance(state, typed):
            raise StateValidationError(
                f"The state must stay a {typed.__qualname__}; do not rebind it inside "
                "edit_state(), change its fields instead."
            )
        try:
            # Re-validate the fields (assignments inside the block were not checked).
            fields = {name: getattr(state, name) for name in type(state).model_fields}
            if state.__pydantic_extra__:
                fields.update(state.__pydantic_extra__)
            checked = typed.model_validate(fields)
        except ValidationError as exc:
            raise _validation_error(typed, "state after edit_state()", exc) from exc
        for name, value in (state.__pydantic_private__ or {}).items():
            setattr(checked, name, value)
        return checked

    # -- serialization ------------------------------------------------------------------------

    def take_changes(
        self, serializer: BaseSerializer | None = None
    ) -> tuple[bool, dict[str, str | None]] | None:
        """The untyped state's keys changed since the last call, encoded, and start over.

        Durable checkpoints use it to write what a step changed. Returns ``(False, all
        keys)`` the first time and after ``set_state``/``clear`` (or an ``edit_state`` block
        whose changes it cannot tell), else ``(True, changed keys)`` with ``None`` for a
        deleted key; ``None`` for typed state (checkpoints then hold the whole model).

        Raises:
            SerializationError: A changed value cannot be encoded.
        """
        if self._typed is not None:
            return None
        serializer = serializer or JsonSerializer()
        state = self._committed if self._owner is not None else self._state
        dirty = self._dirty
        if dirty is None:
            data: dict[str, str | None] = {
                k: serialize_at(serializer, v, _display(k)) for k, v in state.items()
            }
            self._dirty = set()
            return False, data
        data = {
            k: serialize_at(serializer, state[k], _display(k)) if k in state else None
            for k in dirty
        }
        dirty.clear()
        return True, data

    def changes_lost(self) -> None:
        """The last :meth:`take_changes` was not saved: the next one gives the whole state."""
        self._dirty = None

    def _note_edit(self, working: Any, committed: Any) -> None:
        """Mark what an ``edit_state`` block touched as changed (everything if unsure)."""
        dirty = self._dirty
        if dirty is None:
            return
        if isinstance(working, _EditingState) and isinstance(committed, Mapping):
            touched: set[str] = working._copied
            added = sum(1 for k in touched if k not in committed)
            if len(working) == len(committed) + added:  # no key was deleted unseen
                dirty.update(touched)
                return
        self._dirty = None

    def to_dict(self, serializer: BaseSerializer | None = None) -> dict[str, Any]:
        """Snapshot the state as a JSON-compatible dict (what ``ctx.to_dict`` embeds).

        Args:
            serializer: How to encode values (default :class:`JsonSerializer`).

        Returns:
            ``{"version", "state_type", "state_data"}``; ``state_data`` holds one encoded
            string per key (untyped) or the encoded model (typed).

        Raises:
            SerializationError: A value cannot be encoded; the message names its key path,
                e.g. ``state['client']``.
        """
        serializer = serializer or JsonSerializer()
        state = self._committed if self._owner is not None else self._state
        if self._typed is None:
            data: Any = {k: serialize_at(serializer, v, _display(k)) for k, v in state.items()}
            return {"version": FORMAT_VERSION, "state_type": None, "state_data": data}
        try:
            encoded = serialize_at(serializer, state, "state")
        except SerializationError:
            raise
        return {
            "version": FORMAT_VERSION,
            "state_type": qualified_name(self._typed),
            "state_data": encoded,
        }

    @classmethod
    def from_dict(
        cls,
        data: Mapping[str, Any],
        serializer: BaseSerializer | None = None,
        state_type: type[Any] | None = None,
        *,
        strict: bool = False,
    ) -> InMemoryStateStore[Any]:
        """Rebuild a store from :meth:`to_dict` output.

        Args:
            data: What :meth:`to_dict` returned (possibly through ``json.dumps``/``loads``).
            serializer: The serializer the data was written with.
            state_type: The typed state model expected (default: the one recorded in the data).
            strict: As in the constructor.

        Raises:
            ContextSerdeError: Corrupt or foreign data, a newer format, or state that does not
                fit ``state_type``; no half-restored store is returned.
        """
        serializer = serializer or JsonSerializer()
        if not isinstance(data, Mapping) or "state_data" not in data:
            raise ContextSerdeError(
                "State data must be the dict written by InMemoryStateStore.to_dict() (with a "
                "'state_data' key); pass ctx.to_dict() output unchanged."
            )
        version = data.get("version", FORMAT_VERSION)
        if version != FORMAT_VERSION:
            raise ContextSerdeError(
                f"State data has format version {version!r}, this batonflow reads version "
                f"{FORMAT_VERSION}; restore it with the batonflow version that wrote it."
            )
        raw = data["state_data"]
        try:
            if isinstance(raw, Mapping):
                values: Any = {str(k): serializer.deserialize(v) for k, v in raw.items()}
            elif isinstance(raw, str):
                values = serializer.deserialize(raw)
            else:
                raise TypeError(f"state_data is a {type(raw).__qualname__}")
        except ContextSerdeError:
            raise
        except Exception as exc:
            raise ContextSerdeError(
                f"Cannot restore the state ({type(exc).__name__}: {exc}); the data is corrupt "
                "or was written with another serializer: pass the one used for to_dict()."
            ) from exc
        if state_type is DictState:
            state_type = None
        if state_type is None and isinstance(values, BaseModel):
            state_type = type(values)
        try:
            store: InMemoryStateStore[Any] = cls(
                state_type, values, strict=strict, serializer=serializer
            )
        except (StateValidationError, WorkflowConfigurationError) as exc:
            raise ContextSerdeError(
                f"The saved state does not fit {getattr(state_type, '__qualname__', state_type)}: "
                f"{exc}"
            ) from exc
        return store

    def __repr__(self) -> str:
        kind = self._typed.__qualname__ if self._typed else "DictState"
        return f"<InMemoryStateStore {kind}>"


# -- path helpers ---------------------------------------------------------------------------


class _Missing(Exception):
    def __init__(self, segment: str, parent: Any) -> None:
        self.segment = segment
        self.parent = parent


def _step(obj: Any, segment: str) -> Any:
    if isinstance(obj, Mapping):
        try:
            return obj[segment]
        except KeyError:
            raise _Missing(segment, obj) from None
    if isinstance(obj, list | tuple):
        try:
            return obj[int(segment)]
        except (ValueError, IndexError):
            raise _Missing(segment, obj) from None
    if isinstance(obj, BaseModel):
        if segment in type(obj).model_fields:
            return getattr(obj, segment)
        extra = obj.__pydantic_extra__
        if extra is not None and segment in extra:
            return extra[segment]
        raise _Missing(segment, obj)
    if segment.startswith("_") or not hasattr(obj, segment):
        raise _Missing(segment, obj)
    return getattr(obj, segment)


def _walk(obj: Any, segments: list[str]) -> Any:
    for segment in segments:
        obj = _step(obj, segment)
    return obj


def _assign(parent: Any, segment: str, value: Any, path: str) -> None:
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
            raise _validation_error(model, repr(path), exc) from exc
    elif isinstance(parent, tuple | str | int | float | bool | type(None)):
        raise StateValidationError(
            f"Cannot set {path!r}: it goes through a {type(parent).__qualname__}, which cannot "
            "be changed in place; set the enclosing value instead."
        )
    else:
        setattr(parent, segment, value)


def _missing(path: str, segment: str, parent: Any) -> str:
    if segment == path:
        return f"Key {path!r} is not in the state store; pass default=... to get a fallback."
    return (
        f"Path {path!r} is not in the state store (no {segment!r} in "
        f"{_describe(parent)}); pass default=... to get a fallback."
    )


def _describe(obj: Any) -> str:
    if isinstance(obj, BaseModel):
        return f"the {type(obj).__qualname__} model"
    if isinstance(obj, list | tuple):
        return f"a {type(obj).__name__} of {len(obj)} item(s)"
    if isinstance(obj, Mapping):
        return "the mapping"
    return f"a {type(obj).__qualname__}"


def _display(path: str) -> str:
    return "state" + "".join(f"[{part!r}]" for part in path.split("."))


def _validation_error(
    model: type[BaseModel], what: str, exc: ValidationError
) -> StateValidationError:
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err.get("loc", ()))
    where = f" at {loc!r}" if loc else ""
    return StateValidationError(
        f"Invalid value for {what} of {model.__qualname__}{where}: {err.get('msg', '')} "
        f"(got {err.get('input')!r}); pass a value of the field's type. The state is unchanged."
    )


class _StateEdit:
    """The context manager behind ``edit_state()``.

    A plain class rather than an ``@asynccontextmanager`` generator: the generator machinery
    alone cost more than the lock and the copy together on the ``state`` benchmark.
    """

    __slots__ = ("_committed", "_nested", "_store")

    def __init__(self, store: InMemoryStateStore[Any]) -> None:
        self._store = store
        self._nested = False
        self._committed: Any = None

    async def __aenter__(self) -> Any:
        store = self._store
        task = asyncio.current_task()
        if store._owner is not None and store._owner is task:
            self._nested = True  # nested edit in the same task: part of the outer one
            return store._state
        await store._lock.acquire()
        store._owner = task
        committed = self._committed = store._committed = store._state
        if isinstance(committed, DictState):
            for value in committed.values():
                if type(value) not in _ATOMIC:
                    # Copy mutable values lazily, the first time the block reads them.
                    working: Any = _EditingState(committed)
                    break
            else:
                working = DictState(committed)  # only immutable values: a dict copy isolates
        else:
            working = _copy_state(committed)
        store._state = working
        return working

    async def __aexit__(self, exc_type: type[BaseException] | None, *_: object) -> bool:
        if self._nested:
            return False
        store = self._store
        working = store._state
        try:
            store._state = store._checked(working) if exc_type is None else self._committed
            if exc_type is None:
                store._note_edit(working, self._committed)
        except BaseException:
            store._state = self._committed
            raise
        finally:
            store._owner = None
            store._committed = None
            store._lock.release()
        return False


def _copy_state(state: Any) -> Any:
    """A deep copy for editing; values that refuse to be copied are shared."""
    memo: dict[int, Any] = {}
    if isinstance(state, DictState):
        return DictState({k: _copy_value(v, memo) for k, v in state.items()})
    try:
        return copy.deepcopy(state, memo)
    except Exception:
        # One field refuses deepcopy (a lock, a client): copy the others field by field.
        model = cast(BaseModel, state)
        copied = model.model_copy()
        for name in type(model).model_fields:
            copied.__dict__[name] = _copy_value(model.__dict__[name], memo)
        if copied.__pydantic_extra__:
            for name, value in copied.__pydantic_extra__.items():
                copied.__pydantic_extra__[name] = _copy_value(value, memo)
        return copied


#: Value types that cannot be mutated in place: an edit never needs to copy them.
_ATOMIC: Final = frozenset((str, int, float, bool, type(None), bytes, complex))


def _copy_value(value: Any, memo: dict[int, Any]) -> Any:
    if type(value) in _ATOMIC:
        return value
    try:
        return copy.deepcopy(value, memo)
    except Exception:
        return value


__all__ = [
    "UNSET",
    "DictState",
    "InMemoryStateStore",
    "StateStore",
    "check_state_type",
]
