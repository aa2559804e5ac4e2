"""Events: the baton that steps pass to each other.

An :class:`Event` is a pydantic model. Subclass it with typed fields for the events of your
workflow. Every event also accepts extra keyword fields, read back as attributes, with
``ev["key"]`` or with ``ev.get("key", default)``; that is how :class:`StartEvent` carries the
keyword arguments given to ``Workflow.run(**kwargs)``.
"""

from __future__ import annotations

import ast
import contextlib
import sys
from collections.abc import Callable, ItemsView, Iterator, KeysView, ValuesView
from datetime import datetime
from enum import Enum
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

from pydantic import (
    BaseModel,
    ConfigDict,
    PlainSerializer,
    PlainValidator,
    SerializerFunctionWrapHandler,
    model_serializer,
)

from .._public import publish

_MISSING: Any = object()


class Event(BaseModel):
    """Base class of every workflow event.

    Declared fields are validated by pydantic as usual. Extra keyword fields are kept too (in
    ``ev._data``, as LlamaIndex keeps them) and read like declared ones, so an event doubles as
    a small dict of its extra fields::

        class JokeEvent(Event):
            joke: str

        ev = JokeEvent(joke="...", rating=3)
        ev.joke, ev.rating, ev["rating"], ev.get("missing", 0)
        dict(ev) == ev.to_dict() == {"rating": 3}  # len, iteration, keys/values/items too

    Arbitrary (non-pydantic) types are allowed as field values. Subclasses may declare
    private attributes with ``pydantic.PrivateAttr``; they can be given as keyword arguments
    (``MyEvent(_token=t)``) and are never part of the event's fields.
    """

    # The engine's own events build their pydantic schema when first used, not when
    # `import batonflow.core` defines them (see _build_now: every other subclass builds at once).
    model_config = ConfigDict(extra="allow", arbitrary_types_allowed=True, defer_build=True)

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        if not cls.__module__.startswith(_DEFERRED_MODULES):
            _build_now(cls)
        if cls.__private_attributes__ and not hasattr(cls.model_post_init, _MOVES_PRIVATE):
            _move_private_keywords(cls)

    if TYPE_CHECKING:
        # Type checkers read an extra field (``ev.topic``) as Any, as LlamaIndex's events do.
        def __getattr__(self, name: str) -> Any: ...

    else:

        def __getattr__(self, name: str) -> Any:
            if name[:1] != "_":
                # An extra field (``ev.topic`` on a StartEvent), read here rather than by
                # pydantic's __getattr__, which looks for a private attribute first: their
                # names start with "_". A read costs ~0.87 µs instead of ~1.3 (a fan-out loop
                # reads ``ev.n`` per item); most of what is left is CPython 3.11 raising the
                # AttributeError that sends the read here.
                extra = self.__pydantic_extra__
                if extra is not None and name in extra:
                    return extra[name]
            elif name == "_data":
                # LlamaIndex keeps extra fields in a private dict `_data`; ours live in
                # pydantic's extra dict, which `_data` names (the same object, so writes
                # show through).
                return self.__pydantic_extra__
            return super().__getattr__(name)

    def get(self, key: str, default: Any = None) -> Any:
        """Return the field ``key`` (extra or declared), or ``default`` when it is absent."""
        extra = self.__pydantic_extra__
        if extra is not None and key in extra:
            return extra[key]
        if key in type(self).model_fields:
            return getattr(self, key)
        return default

    def __getitem__(self, key: str) -> Any:
        value = self.get(key, _MISSING)
        if value is _MISSING:
            raise KeyError(key)
        return value

    def __setitem__(self, key: str, value: Any) -> None:
        setattr(self, key, value)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key, _MISSING) is not _MISSING

    def _extra(self) -> dict[str, Any]:
        extra = self.__pydantic_extra__
        if extra is None:  # only when a subclass sets extra="forbid"/"ignore"
            return {}
        return extra

    def keys(self) -> KeysView[str]:
        """The names of the event's extra fields (as LlamaIndex's ``Event.keys()``)."""
        return self._extra().keys()

    def values(self) -> ValuesView[Any]:
        """The values of the event's extra fields."""
        return self._extra().values()

    def items(self) -> ItemsView[str, Any]:
        """``(name, value)`` pairs of the event's extra fields."""
        return self._extra().items()

    def __len__(self) -> int:
        return len(self._extra())

    def __iter__(self) -> Iterator[str]:  # type: ignore[override]
        # A mapping iterates its keys (LlamaIndex's events do); pydantic's (name, value) pairs
        # stay available as model_dump().items().
        return iter(self._extra())

    def to_dict(self) -> dict[str, Any]:
        """The event's extra fields as a new plain dict (declared fields: ``model_dump()``)."""
        return dict(self._extra())

    def __bool__(self) -> bool:
        # An event with no fields is still a real event: `if not ev` must not be True for it.
        return True

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        # Declared fields only, as LlamaIndex prints its events (its extra fields are private
        # data): repr(Event(a=1)) is "Event()", str() of it is "".
        fields = type(self).__pydantic_fields__
        for name, value in self.__dict__.items():
            info = fields.get(name)
            if info is not None and info.repr:
                yield name, value
        for name, computed in type(self).__pydantic_computed_fields__.items():
            if computed.repr:
                yield name, getattr(self, name)


#: Marks a ``model_post_init`` that already moves private keywords (see below).
_MOVES_PRIVATE = "_batonflow_moves_private"


#: Modules whose Event subclasses build their schema on first use: the engine's own events.
_DEFERRED_MODULES = ("batonflow.core.",)


def _build_now(cls: type[Event]) -> None:
    """Build ``cls``'s schema now, as pydantic does for a class without ``defer_build``.

    Only the engine's own events defer it (``import batonflow.core`` builds none). Any other
    subclass, a user's event above all, is built when its class statement runs, as before: a
    field type pydantic cannot handle raises there, a forward reference not yet defined waits
    for first use, and its own subclasses inherit ``defer_build=False``.
    """
    cls.model_config = {**cls.model_config, "defer_build": False}
    # The namespace pydantic resolves names in is the one it kept at class creation.
    cls.model_rebuild(raise_errors=False, _parent_namespace_depth=0)


def _move_private_keywords(cls: type[Event]) -> None:
    """Let ``cls(_token=...)`` set the private attribute ``_token``, as LlamaIndex's events do.

    pydantic keeps such a keyword as an extra field. Only classes that declare private
    attributes get this post-init step (pydantic runs one for them anyway), so creating any
    other event costs nothing more than pydantic's own validation.
    """
    original = cls.model_post_init

    def model_post_init(self: BaseModel, context: Any, /) -> None:
        original(self, context)
        extra = self.__pydantic_extra__
        if extra:
            private = type(self).__private_attributes__
            for name in [key for key in extra if key in private]:
                setattr(self, name, extra.pop(name))

    setattr(model_post_init, _MOVES_PRIVATE, True)
    cls.model_post_init = model_post_init  # type: ignore[method-assign]


class StartEvent(Event):
    """The event a run starts with.

    ``Workflow.run(topic="pirates")`` builds ``StartEvent(topic="pirates")``; steps read it as
    ``ev.topic`` (``AttributeError`` when not given) or ``ev.get("topic", default)``. Subclass
    it with typed fields to give a workflow a typed entry point.
    """


class StopEvent(Event):
    """The event that ends a run.

    ``StopEvent(result=value)``: ``await handler`` returns ``value``. A subclass with typed
    fields is returned whole, as the run's result. For a subclass that declares exactly one
    field of its own, a single positional argument fills that field
    (``MyStopEvent(response)``); for ``StopEvent`` itself it fills ``result``.
    """

    result: Any = None

    #: The one field a positional argument fills (computed per subclass).
    _positional_field: ClassVar[str | None] = "result"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        own = [name for name in cls.model_fields if name != "result"]
        cls._positional_field = own[0] if len(own) == 1 else ("result" if not own else None)

    def __init__(self, *args: Any, **data: Any) -> None:
        if args:
            field = type(self)._positional_field
            if len(args) > 1 or field is None:
                raise TypeError(
                    f"{type(self).__name__}() takes at most one positional argument, and only "
                    "when it declares at most one field of its own; pass the fields by keyword."
                )
            if field in data:
                raise TypeError(f"{type(self).__name__}() got two values for {field!r}.")
            data[field] = args[0]
        super().__init__(**data)

    @model_serializer(mode="wrap")
    def _dump_without_empty_result(self, handler: SerializerFunctionWrapHandler) -> Any:
        # As LlamaIndex: `result` is part of the dump only when set, so a typed StopEvent
        # subclass (or WorkflowCancelledEvent) dumps just its own fields.
        data = handler(self)
        if isinstance(data, dict) and data.get("result", _MISSING) is None:
            del data["result"]
        return data

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        # Extra fields first, then the declared ones, `result` only when set (LlamaIndex's
        # order: "StopEvent(foo='foo', result=42)").
        extra = self.__pydantic_extra__
        if extra:
            yield from extra.items()
        values = self.__dict__
        for name, info in type(self).model_fields.items():
            value = values.get(name)
            if info.repr and not (name == "result" and value is None):
                yield name, value

    def __str__(self) -> str:
        return str(self.result)


class InputRequiredEvent(Event):
    """Asks a human for input; written to the event stream automatically when a step returns it.

    ``InputRequiredEvent(prefix="Enter a number: ")``; extra fields are allowed.
    """

    prefix: Any = ""


class ChildRunEvent(Event):
    """A stream event of a child run (``ctx.run_child``), written to its parent's stream.

    Attributes:
        child_run_id: The child run that wrote it.
        workflow_name: The child's workflow.
        event_type: The class name of ``event`` (what a consumer of the JSON form reads it by).
        event: The event the child wrote (itself a ``ChildRunEvent`` for a grandchild's).
    """

    child_run_id: str
    workflow_name: str
    event_type: str
    event: Event


class HumanResponseEvent(Event):
    """A human's answer, sent into the run with ``handler.ctx.send_event(...)``.

    ``HumanResponseEvent(response="42")``; extra fields are allowed.
    """

    response: Any = ""


class WorkflowTimedOutEvent(StopEvent):
    """Written to the stream when the run passes its timeout, before the error is raised.

    Attributes:
        timeout: The workflow's timeout in seconds.
        active_steps: The steps that were still running.
    """

    timeout: float
    active_steps: list[str]


class WorkflowCancelledEvent(StopEvent):
    """Written to the stream when the run is cancelled, before the error is raised."""


#: An exception field dumped as ``{"exception_type", "exception_message"}`` in every dump mode
#: (LlamaIndex's WorkflowFailedEvent shape), rebuilt on load. The functions are defined below.
_DumpedException = Annotated[
    BaseException,
    PlainValidator(lambda data: exception_from_data(data)),
    PlainSerializer(lambda exc: exception_to_data(exc)),
]


class WorkflowFailedEvent(StopEvent):
    """Written to the stream when a step failed for good, before the error is raised.

    Attributes:
        step_name: The step that failed.
        exception: Its exception (the one ``await handler`` raises).
        attempts: How many attempts were made, when a step attempt failed.
        elapsed_seconds: Seconds from the first attempt to the final failure, if known.
    """

    step_name: str
    exception: _DumpedException
    attempts: int | None = None
    elapsed_seconds: float | None = None


class StepFailedEvent(Event):
    """Delivered to a ``@catch_error`` step when a step gives up (after its retries).

    Attributes:
        step_name: The step that failed.
        input_event: The event it failed on.
        exception: Its last exception.
        attempts: How many attempts were made.
        elapsed_seconds: Seconds from the first attempt to the final failure.
        failed_at: When it failed (timezone-aware UTC).
    """

    step_name: str
    input_event: Any
    exception: Any
    attempts: int
    elapsed_seconds: float
    failed_at: datetime


class StepRestarted(Event):
    """Written to a durable run's stream when a step interrupted by a crash runs again.

    A resumed run re-runs the steps that were running when its process died, and they write
    their stream events again (at least once). Before the re-run's first event, the stream
    carries this event, so a reader can drop what the interrupted attempt wrote: the log
    entries of that step execution from ``first_event_id`` on (each entry names the step and
    execution that wrote it). A run that never crashes has none.

    Attributes:
        step_name: The step that runs again.
        attempt: Which run of the step this is: 2 after the first crash, 3 after a second.
        first_event_id: The event-log ``seq`` (the SSE id) of the first stream event the
            interrupted attempt wrote, or ``None`` when it wrote none.
    """

    step_name: str
    attempt: int
    first_event_id: int | None = None


class JoinedEvents(Event):
    """The input of a step with several event parameters: one event for each parameter.

    A step ``async def both(self, a: AEvent, b: BEvent)`` runs once per full set; instruments
    and snapshots see this event as its input.

    Attributes:
        events: The joined events by parameter name.
    """

    events: dict[str, Any]


class CollectedEvents(Event):
    """The input of a step with a ``list[E]`` collection parameter: the collected events.

    Attributes:
        events: The events, in branch order.
    """

    events: list[Any]


#: LlamaIndex's name for :class:`CollectedEvents` (the trigger of a collect step).
CollectionReleaseEvent = CollectedEvents


class IdleReleasedEvent(StopEvent):
    """LlamaIndex's sentinel result of a run released while idle.

    batonflow never releases idle runs (a waiting run stays in memory, or is saved with
    ``ctx.to_dict()`` or a checkpoint store), so it never produces this event; the class exists
    so code that imports or checks for it keeps working.
    """


class UnreconstructedException(Exception):
    """Stands in for a serialized exception whose class could not be rebuilt.

    Restoring an exception from a snapshot only has its class name and message. When the class
    is not loaded in this process (batonflow never imports modules named by data), is not an
    exception, or cannot be built from the message alone, this is restored instead.

    Attributes:
        original_type: ``module.QualName`` of the exception that was serialized.
    """

    def __init__(self, message: str, original_type: str | None = None) -> None:
        super().__init__(message)
        self.original_type = original_type


def exception_to_data(exc: BaseException) -> dict[str, str]:
    """``{"exception_type": "module.QualName", "exception_message": str(exc)}``."""
    cls = type(exc)
    original = getattr(exc, "original_type", None)
    name = original if isinstance(exc, UnreconstructedException) and original else None
    return {
        "exception_type": name or f"{cls.__module__}.{cls.__qualname__}",
        "exception_message": str(exc),
    }


def exception_from_data(data: Any) -> BaseException:
    """Rebuild an exception written by :func:`exception_to_data` (or pass one through).

    Only classes already loaded in this process are used (builtins, or a module in
    ``sys.modules``); otherwise an :class:`UnreconstructedException` keeps the message and the
    original type name.
    """
    if isinstance(data, BaseException):
        return data
    if not isinstance(data, dict) or not isinstance(data.get("exception_type"), str):
        raise ValueError(
            "an exception is written as {'exception_type': 'module.Name', "
            f"'exception_message': '...'}}, got {data!r}"
        )
    name = data["exception_type"]
    message = str(data.get("exception_message", ""))
    cls = loaded_class(name)
    if isinstance(cls, type) and issubclass(cls, BaseException):
        candidates: list[Any] = [message]
        if issubclass(cls, KeyError):
            # str(KeyError("k")) is "'k'": the argument is the literal inside.
            with contextlib.suppress(ValueError, SyntaxError, MemoryError, RecursionError):
                candidates.append(ast.literal_eval(message))
        for arg in candidates:
            try:
                exc = cls(arg)
            except Exception:
                continue
            if str(exc) == message:
                return exc
    return UnreconstructedException(message, original_type=name)


def loaded_class(name: str) -> Any:
    """The class (or object) named ``module.QualName`` if its module is loaded, else None."""
    module_name, _, qualname = name.rpartition(".")
    # Nested classes: try each split of "pkg.mod.Outer.Inner" into module and qualname.
    while module_name:
        module = sys.modules.get(module_name)
        if module is not None:
            found: Any = module
            for part in qualname.split("."):
                found = getattr(found, part, None)
            return found
        module_name, _, head = module_name.rpartition(".")
        qualname = f"{head}.{qualname}"
    return None


def or_none(convert: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``convert``, passing ``None`` through: the codec of an optional field."""

    def converted(value: Any) -> Any:
        return None if value is None else convert(value)

    return converted


#: A pydantic field type for an exception that dumps to JSON as its type name and message and
#: is rebuilt on load (see :func:`exception_from_data`).
SerializableException = Annotated[
    Exception,
    PlainValidator(exception_from_data),
    PlainSerializer(exception_to_data, when_used="json"),
]
#: :data:`SerializableException` or ``None``.
SerializableOptionalException = Annotated[
    Exception | None,
    PlainValidator(or_none(exception_from_data)),
    PlainSerializer(or_none(exception_to_data), when_used="json"),
]


class InternalDispatchEvent(Event):
    """Base class of the engine's own events, streamed with ``stream_events(expose_internal=True)``."""


class StepState(Enum):
    """Where one step execution stands (in :class:`StepStateChanged`)."""

    PREPARING = "preparing"  # queued, waiting for a free worker
    RUNNING = "running"  # executing now
    NOT_RUNNING = "not_running"  # finished (or failed)


class StepStateChanged(InternalDispatchEvent):
    """A step execution changed state.

    Attributes:
        name: The step.
        step_state: Its new state.
        worker_id: The execution's id within the run (as a string).
        input_event_name: Class name of the input event.
        output_event_name: Class name of the event it returned, when it finished with one.
    """

    name: str
    step_state: StepState
    worker_id: str
    input_event_name: str
    output_event_name: str | None = None


class UnhandledEvent(InternalDispatchEvent):
    """An event reached no step and no waiter (it was dropped).

    Attributes:
        event_type: Class name of the event.
        qualified_name: ``module.QualName`` of the event class.
        step_name: The step it was sent to with ``send_event(step=...)``, if any.
        idle: Whether the run is idle afterwards.
    """

    event_type: str
    qualified_name: str
    step_name: str | None = None
    idle: bool = False


class WorkflowIdleEvent(InternalDispatchEvent):
    """The run is idle: nothing queued, nothing running, and a step waits for outside input."""


__all__ = [
    "ChildRunEvent",
    "CollectedEvents",
    "CollectionReleaseEvent",
    "Event",
    "HumanResponseEvent",
    "IdleReleasedEvent",
    "InputRequiredEvent",
    "InternalDispatchEvent",
    "JoinedEvents",
    "SerializableException",
    "SerializableOptionalException",
    "StartEvent",
    "StepFailedEvent",
    "StepRestarted",
    "StepState",
    "StepStateChanged",
    "StopEvent",
    "UnhandledEvent",
    "UnreconstructedException",
    "WorkflowCancelledEvent",
    "WorkflowFailedEvent",
    "WorkflowIdleEvent",
    "WorkflowTimedOutEvent",
    "exception_from_data",
    "exception_to_data",
]

# Stored runs and pickles name these classes by their public path.
publish(__name__, globals())
