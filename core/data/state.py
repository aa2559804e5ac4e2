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

The parts live in their own modules: state types and the subclass rule (``_state_types``),
dotted paths (``_state_paths``), ``edit_state`` (``_state_edit``), the snapshot layout
(``_state_serde``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, MutableMapping
from contextlib import AbstractAsyncContextManager
from typing import Any, Generic, Protocol, runtime_checkable

from pydantic import BaseModel, ValidationError
from typing_extensions import TypeVar

from .._public import publish
from ..errors import (
    ContextSerdeError,
    StateKeyError,
    StateValidationError,
    WorkflowConfigurationError,
)
from ._state_edit import RUNNING_TASKS, StateEdit, TurnLock, copy_state
from ._state_paths import (
    Missing,
    assign,
    display,
    missing_message,
    step_into,
    validation_error,
    walk,
)
from ._state_serde import FORMAT_VERSION, decode_state, encode_typed, encode_untyped
from ._state_types import (
    UNSET,
    DictState,
    check_state_type,
    merge_parent_state,
    most_derived_state_type,
)
from .serialization import BaseSerializer, JsonSerializer, register_type, serialize_at

#: The state's type: a pydantic model (typed state) or, by default, :class:`DictState`. With the
#: default, ``Context`` (no argument) means ``Context[DictState]``, as in LlamaIndex.
S = TypeVar("S", bound=BaseModel | DictState, default=DictState)
S_co = TypeVar("S_co", bound=BaseModel | DictState, default=DictState, covariant=True)


@runtime_checkable
class StateStore(Protocol[S_co]):
    """What ``ctx.store`` offers; :class:`InMemoryStateStore` is the implementation."""

    async def get(self, path: str, default: Any = UNSET) -> Any:
        """The value at a dotted path; ``StateKeyError`` when missing without default."""
        ...

    async def set(self, path: str, value: Any) -> None:
        """Set the value at a dotted path."""
        ...

    async def get_state(self) -> S_co:
        """A copy of the whole state."""
        ...

    async def set_state(self, state: Any) -> None:
        """Replace the whole state."""
        ...

    async def clear(self) -> None:
        """Reset the state to its defaults."""
        ...

    def edit_state(self) -> AbstractAsyncContextManager[S_co]:
        """Lock the state for an atomic read-modify-write."""
        ...

    def to_dict(self, serializer: BaseSerializer | None = None) -> dict[str, Any]:
        """Snapshot the state as a JSON-compatible dict."""
        ...


class InMemoryStateStore(Generic[S]):
    """The state of one run (and of later runs that reuse its Context), kept in memory.

    ``InMemoryStateStore(MyState)`` starts from the model's defaults; as in LlamaIndex, the
    first argument may also be the starting state itself: ``InMemoryStateStore(MyState(n=1))``
    (typed) or ``InMemoryStateStore(DictState())`` / a dict (untyped).

    Args:
        state_type: A pydantic model with defaults for every field (typed state), or ``None``
            / :class:`DictState` for untyped state; or a starting state (a model instance, a
            :class:`DictState` or a mapping), whose type is then the state type.
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
        "_edit",
        "_entered",
        "_entered_state",
        "_false",
        "_fields",
        "_lock",
        "_loop",
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
        if not isinstance(state_type, type) and state_type is not None:
            if initial is not None:
                raise WorkflowConfigurationError(
                    f"InMemoryStateStore got a starting state ({type(state_type).__qualname__}) "
                    "and initial=...; pass the starting state once, either way."
                )
            if isinstance(state_type, BaseModel):
                state_type, initial = type(state_type), state_type
            elif isinstance(state_type, Mapping):
                state_type, initial = None, state_type
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
        self._lock = TurnLock()
        self._owner: asyncio.Task[Any] | None = None
        # edit_state()'s reusable block, the loop it last ran in, and the finished futures
        # its __aenter__ / __aexit__ return (see _state_edit.StateEdit).
        self._edit: StateEdit | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._entered: asyncio.Future[Any] | None = None
        self._entered_state: Any = None
        self._false: asyncio.Future[bool] | None = None
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
            raise validation_error(typed, "initial state", exc) from exc

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
        if self._owner is not None and self._owner is not self._running_task():
            state = self._committed  # not our edit: read the last committed state
        if "." not in path:
            if self._typed is None:
                try:
                    return state[path]
                except KeyError:
                    if default is UNSET:
                        raise StateKeyError(missing_message(path, path, state)) from None
                    return default
            if path in self._fields:
                return getattr(state, path)
        try:
            return walk(state, path.split("."))
        except Missing as miss:
            if default is UNSET:
                raise StateKeyError(missing_message(path, miss.segment, miss.parent)) from None
            return default

    async def get_state(self) -> S:
        """A copy of the whole state: the model (typed) or a :class:`DictState` (untyped).

        Changing the copy does not change the store; write it back with :meth:`set_state`.
        """
        state = self._state
        if self._owner is not None and self._owner is not self._running_task():
            state = self._committed
        copied: S = copy_state(state)
        return copied

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
        if self._owner is not None and self._owner is not self._running_task():
            async with self._lock:
                self._set(path, value)
            return
        self._set(path, value)

    def _set(self, path: str, value: Any) -> None:
        dirty = self._dirty
        if dirty is not None:
            dirty.add(path.partition(".")[0])
        if self._strict:
            serialize_at(self._serializer, value, display(path))
        state = self._state
        if "." not in path:
            if self._typed is None:
                state[path] = value
                return
            if path in self._fields:
                try:
                    self._validator.validate_assignment(state, path, value)
                except ValidationError as exc:
                    raise validation_error(self._typed, repr(path), exc) from exc
                return
        segments = path.split(".")
        parent: Any = state
        for i, segment in enumerate(segments[:-1]):
            try:
                parent = step_into(parent, segment)
            except Missing:
                if not isinstance(parent, MutableMapping) or (self._typed is not None and i == 0):
                    raise StateKeyError(
                        missing_message(path, segment, parent).replace(
                            "pass default=... to get a fallback", "set it first"
                        )
                    ) from None
                child: dict[str, Any] = {}
                parent[segment] = child
                parent = child
        assign(parent, segments[-1], value, path)

    async def set_state(self, state: Any) -> None:
        """Replace the whole state.

        Args:
            state: Typed: an instance of the state model (or a mapping of its fields), or of
                one of its base models, whose fields are merged into the state (the fields
                only the state model has keep their values). Untyped: a mapping (a
                :class:`DictState` or ``dict``).

        Raises:
            StateValidationError: The value does not fit the state type, or is a model that
                is neither the state's model nor a base of it.
        """
        self._dirty = None
        if self._owner is not None and self._owner is not self._running_task():
            async with self._lock:
                self._state = self._replacement(state)
            return
        self._state = self._replacement(state)

    def _replacement(self, state: Any) -> Any:
        typed = self._typed
        if typed is not None:
            if isinstance(state, BaseModel) and not isinstance(state, typed):
                # A parent model (a base workflow's step): merge its fields into the state.
                try:
                    new = merge_parent_state(self._state, state)
                except ValidationError as exc:
                    raise validation_error(typed, "set_state()", exc) from exc
            else:
                new = self._initial(state)
        else:
            if isinstance(state, BaseModel):
                state = state.model_dump()
            new = self._initial(state)
        if self._strict:
            serialize_at(self._serializer, new, "state")
        return new

    async def clear(self) -> None:
        """Reset the state: the model's defaults (typed) or an empty state (untyped)."""
        self._dirty = None
        if self._owner is not None and self._owner is not self._running_task():
            async with self._lock:
                self._state = self._initial(None)
            return
        self._state = self._initial(None)

    def edit_state(self) -> AbstractAsyncContextManager[S]:
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
        edit = self._edit
        if edit is None or edit._out:
            edit = StateEdit(self)  # the store's own one is in use (nested, or another task)
            if self._edit is None:
                self._edit = edit
        else:
            edit._store = self  # dropped when its block ends: no store <-> edit cycle
        edit._out = True
        # StateEdit's __aenter__/__aexit__ return awaitables rather than coroutines, which
        # ``async with`` accepts and the typeshed protocol does not spell (no cast(): it
        # would build the generic alias at every call).
        return edit  # type: ignore[return-value]

    def _running_task(self) -> asyncio.Task[Any] | None:
        """The task running now (``asyncio.current_task()``, made cheap on Python 3.11).

        On 3.11, ``asyncio.current_task()`` is Python code that calls
        ``get_running_loop()``, which makes a ``getpid()`` system call each time (0.3 µs
        here, more than a whole ``get``). The loop seen last is kept instead and the task
        read from asyncio's table of current tasks by loop; a loop that is not running has
        no entry there, so a new loop is noticed and looked up once. (A store serves one
        thread's loop at a time, as it is not thread-safe anyway: were the loop seen last
        running in another thread right then, this would name that thread's task.) From 3.12
        on, ``current_task()`` is C code without the system call and is used as it is.
        """
        if RUNNING_TASKS is None:
            return asyncio.current_task()
        try:
            return RUNNING_TASKS[self._loop]
        except KeyError:
            self._loop = loop = asyncio.get_running_loop()
            self._entered = self._false = None  # made for the loop before
            return asyncio.current_task(loop)

    def _finished(self, value: Any) -> asyncio.Future[Any]:
        """A future that already holds ``value``: ``await`` on it returns at once."""
        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.get_running_loop()
        future = loop.create_future()
        future.set_result(value)
        return future

    def _finished_false(self) -> asyncio.Future[bool]:
        """The finished future ``__aexit__`` returns (``False``: exceptions propagate)."""
        false = self._false
        if false is None:
            false = self._false = self._finished(False)
        return false

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
            raise validation_error(typed, "state after edit_state()", exc) from exc
        for name, value in (state.__pydantic_private__ or {}).items():
            setattr(checked, name, value)
        return checked

    # -- serialization ------------------------------------------------------------------------

    def to_dict(self, serializer: BaseSerializer | None = None) -> dict[str, Any]:
        """Snapshot the state as a JSON-compatible dict (what ``ctx.to_dict`` embeds).

        The layout is LlamaIndex's: ``{"store_type", "state_type", "state_module",
        "state_data", "version"}``; ``state_data`` is ``{"_data": {key: encoded}}`` (untyped)
        or the encoded model (typed).

        Args:
            serializer: How to encode values (default :class:`JsonSerializer`).

        Raises:
            SerializationError: A value cannot be encoded; the message names its key path,
                e.g. ``state['client']``.
        """
        serializer = serializer or JsonSerializer()
        state = self._current()
        if self._typed is None:
            return encode_untyped(state, serializer)
        return encode_typed(state, serializer)

    def take_changes(
        self, serializer: BaseSerializer | None = None
    ) -> tuple[bool, dict[str, str | None]] | None:
        """The untyped state's keys changed since the last call, encoded, and start over.

        Durable checkpoints use it to write what a step changed. Returns ``(False, all
        keys)`` the first time and after ``set_state``/``clear``, else ``(True, changed
        keys)`` with ``None`` for a deleted key; ``None`` for typed state (checkpoints then
        hold the whole model). A key counts as changed when it was set, or written, deleted
        or read as a mutable value inside ``edit_state``.

        Raises:
            SerializationError: A changed value cannot be encoded.
        """
        if self._typed is not None:
            return None
        serializer = serializer or JsonSerializer()
        state = self._current()
        dirty = self._dirty
        if dirty is None:
            self._dirty = set()
            return False, encode_untyped(state, serializer)["state_data"]["_data"]
        if not dirty:
            return True, {}  # the step changed nothing: most steps of most runs
        present = {k: state[k] for k in dirty if k in state}
        data: dict[str, str | None] = encode_untyped(present, serializer)["state_data"]["_data"]
        data.update((k, None) for k in dirty if k not in present)
        dirty.clear()
        return True, data

    def changes_lost(self) -> None:
        """The last :meth:`take_changes` was not saved: the next one gives the whole state."""
        self._dirty = None

    def _mark_changed(self, keys: Iterable[str]) -> None:
        """An ``edit_state`` block touched ``keys`` (its undo log)."""
        if self._dirty is not None:
            self._dirty.update(keys)

    def _current(self) -> Any:
        """The committed state: the one before an open edit block, else the live one."""
        return self._committed if self._owner is not None else self._state

    @classmethod
    def from_dict(
        cls,
        data: Mapping[str, Any],
        serializer: BaseSerializer | None = None,
        state_type: type[Any] | None = None,
        *,
        strict: bool = False,
    ) -> InMemoryStateStore[Any]:
        """Rebuild a store from :meth:`to_dict` output (or LlamaIndex's, same layout).

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
        _, values = decode_state(data, serializer)
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


__all__ = [
    "FORMAT_VERSION",
    "UNSET",
    "DictState",
    "InMemoryStateStore",
    "StateStore",
    "check_state_type",
    "most_derived_state_type",
]

# Stored runs and pickles name these classes by their public path.
publish(__name__, globals())
