"""Snapshots of a run: what ``Context.to_dict`` writes and ``Context.from_dict`` reads.

The dict is JSON-compatible (every event and state value is encoded by the serializer as a
string). ``from_dict`` checks the whole payload before touching the Context, so a corrupt or
foreign dict raises :class:`ContextSerdeError` and never leaves a half-restored context.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..data._type_registry import register_models, trust_modules
from ..data.events import Event
from ..data.serialization import BaseSerializer, JsonSerializer, qualified_name, serialize_event
from ..data.state import InMemoryStateStore
from ..errors import ContextSerdeError, SerializationError
from ._runtime import RunStatus

if TYPE_CHECKING:
    from .context import Context
    from .graph import Graph
    from .workflow import Workflow

FORMAT = "batonflow.context"
VERSION = 1


@dataclass(slots=True)
class QueuedItem:
    """An event waiting for (or being processed by) one step."""

    step: str
    event: Event
    origin: Any
    execution_id: int | None
    tag: tuple[int, int] | None = None


@dataclass(slots=True)
class WaiterRecord:
    """A step waiting in ``wait_for_event``."""

    waiter_id: str
    type_name: str
    requirements: dict[str, Any]
    step: str
    execution_id: int


@dataclass(slots=True)
class RunSnapshot:
    """A run's in-flight part, decoded (the state store is restored separately)."""

    run_id: str
    is_running: bool
    queued: list[QueuedItem] = field(default_factory=list)
    in_progress: list[QueuedItem] = field(default_factory=list)
    buffers: dict[tuple[str, str | None], list[Event]] = field(default_factory=dict)
    waiters: list[WaiterRecord] = field(default_factory=list)
    waiter_results: dict[str, Event] = field(default_factory=dict)
    emitted_waiters: list[str] = field(default_factory=list)
    stream_pending: list[Event] = field(default_factory=list)
    stream_position: int = 0
    next_execution_id: int = 1
    #: Events sent with ``ctx.send_event`` after restoring, before ``run(ctx=...)``.
    external: list[tuple[Event, str | None]] = field(default_factory=list)
    #: Events waiting for their set in steps with several event parameters.
    joins: list[tuple[str, str, list[Event]]] = field(default_factory=list)
    #: Open collection streams (``list[E]`` fan-outs): id, size, collectors, fired, items.
    streams: list[dict[str, Any]] = field(default_factory=list)
    next_stream: int = 1
    #: The StopEvent a step just returned when the snapshot was taken at its boundary.
    stop_event: Event | None = None


def _serializer(ctx: Context[Any], serializer: BaseSerializer | None) -> BaseSerializer:
    if serializer is not None:
        return serializer
    if ctx._serializer is not None:
        return ctx._serializer
    if ctx._workflow.serializer is not None:
        return ctx._workflow.serializer
    return JsonSerializer()


def register_workflow(workflow: Workflow, graph: Graph | None = None) -> None:
    """Make the classes of ``workflow`` decodable by name in this process (once per graph).

    Registers its events and state type and the models their fields name, and trusts its
    modules (see ``_type_registry.trust_modules``): the workflow class's and those of the
    workflow classes it derives from, its steps', and its events' and state type's.
    """
    if graph is None:
        graph = workflow._graph()
    if graph.registered:
        return  # once per graph, not at every checkpoint
    register_models(*graph.events)
    if graph.state_type is not None:
        register_models(graph.state_type)
    # The workflow classes of its MRO but the last, batonflow's Workflow (not imported here:
    # workflow.py imports this module).
    classes = [cls for cls in type(workflow).__mro__ if hasattr(cls, "_class_graph")]
    modules = {cls.__module__ for cls in classes[:-1]}
    for spec in graph.order:
        modules.add(spec.func.__module__)
        modules.update(ev.__module__ for ev in (*spec.accepted, *spec.emitted))
        if spec.state_type is not None:
            modules.add(spec.state_type.__module__)
    trust_modules(*modules)
    graph.registered = True


def _requirements(ser: BaseSerializer, requirements: dict[str, Any]) -> Any:
    # As LlamaIndex, requirements need not be serializable: a waiting step re-runs on resume
    # and passes them again, so ones that cannot be encoded are saved as None.
    try:
        return ser.serialize(requirements)
    except (SerializationError, TypeError, ValueError):
        return None


def dump(
    ctx: Context[Any], serializer: BaseSerializer | None, *, include_state: bool = True
) -> dict[str, Any]:
    """The JSON-compatible snapshot of ``ctx`` (see ``Context.to_dict``)."""
    ser = _serializer(ctx, serializer)
    run = ctx._run
    # A live run holds its graph: no lookup of the workflow's (at every durable step).
    graph = run.graph if run is not None else ctx._workflow._graph()
    if not graph.registered:
        register_workflow(ctx._workflow, graph)

    # One encoding per event object: an event routed to several steps is queued for each.
    encoded: dict[int, str] = {}

    def enc(event: Event, where: str) -> str:
        text = encoded.get(id(event))  # the run holds every event until dump returns
        if text is None:
            try:
                text = encoded[id(event)] = serialize_event(event, ser)
            except SerializationError as exc:
                raise SerializationError(f"{where}: {exc}") from exc
        return text

    data: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "workflow": ctx._workflow.workflow_name,
        "steps": list(graph.steps),
        "serializer": qualified_name(type(ser)),
        "run_id": ctx._run_id,
        "meta": dict(ctx.meta),
        "state": ctx.store.to_dict(ser) if include_state else None,
    }
    snap = ctx._snapshot
    if run is not None:
        cancelled = run.cancelled_view
        if cancelled is not None:
            # LlamaIndex saves a cancelled run as still running, so it can be resumed: what
            # was queued, running and waiting when cancel_run() came.
            (queued, in_progress), waiters, pending = cancelled
            data["is_running"] = True
        else:
            queued, in_progress = run.executions.snapshot_parts()
            waiters = list(run.waiters.values())
            data["is_running"] = run.status is RunStatus.RUNNING
            recorded = run.stream.recorder is not None
            pending = run.stream.pending() if data["is_running"] and not recorded else []
        if run.stream.recorder is not None:
            # A durable run's stream events are in its store's event log, recorded once when
            # written: a checkpoint does not carry (nor copy, nor re-encode) the unread ones.
            pending = []
        data["queue"] = [
            {
                "step": s,
                "event": enc(e, f"queued event for {s}"),
                "origin": o,
                "execution_id": i,
                "tag": t,
            }
            for s, e, o, i, t in queued
        ]
        data["in_progress"] = [
            {
                "step": s,
                "event": enc(e, f"input of running step {s}"),
                "origin": o,
                "execution_id": i,
                "tag": t,
            }
            for s, e, o, i, t in in_progress
        ]
        data["streams"] = [
            {
                **st,
                "items": {
                    name: [[b, enc(e, f"collected event of {name}")] for b, e in items]
                    for name, items in st["items"].items()
                },
            }
            for st in run.branches.parts()
        ]
        data["next_stream"] = run.branches.next_stream
        data["buffers"] = [
            {
                "step": k[0],
                "buffer_id": k[1],
                "events": [enc(e, f"buffer of {k[0]}") for e in buf.held()],
            }
            for k, buf in run.collecting.buffers.items()
            if buf.held()
        ]
        data["waiters"] = [
            {
                "waiter_id": w.waiter_id,
                "type": w.type_name,
                "requirements": _requirements(ser, w.requirements),
                "step": w.step,
                "execution_id": w.execution_id,
            }
            for w in waiters
        ]
        data["waiter_results"] = {k: enc(v, f"answer to {k}") for k, v in run.waits.results.items()}
        data["emitted_waiters"] = sorted(run.waits.emitted)
        data["stream"] = {
            "position": run.stream.position,
            "pending": [enc(e, "stream event") for e in pending],
        }
        data["next_execution_id"] = run.executions.next_id
        data["joins"] = [
            {"step": st, "param": pa, "events": [enc(e, f"join of {st}") for e in evs]}
            for st, pa, evs in run.executions.join_parts()
        ]
        held = run.held_stop
        data["stop_event"] = enc(held, "the final StopEvent") if held is not None else None
    elif snap is not None:
        data["is_running"] = snap.is_running
        data["queue"] = [
            {
                "step": q.step,
                "event": enc(q.event, "queued event"),
                "origin": q.origin,
                "execution_id": q.execution_id,
                "tag": q.tag,
            }
            for q in snap.queued
        ] + [
            {
                "step": s or "",
                "event": enc(e, "sent event"),
                "origin": None,
                "execution_id": None,
                "external": True,
            }
            for e, s in snap.external
        ]
        data["in_progress"] = [
            {
                "step": q.step,
                "event": enc(q.event, "in-progress event"),
                "origin": q.origin,
                "execution_id": q.execution_id,
                "tag": q.tag,
            }
            for q in snap.in_progress
        ]
        data["buffers"] = [
            {"step": k[0], "buffer_id": k[1], "events": [enc(e, "buffer") for e in evs]}
            for k, evs in snap.buffers.items()
        ]
        data["waiters"] = [
            {
                "waiter_id": w.waiter_id,
                "type": w.type_name,
                "requirements": _requirements(ser, w.requirements),
                "step": w.step,
                "execution_id": w.execution_id,
            }
            for w in snap.waiters
        ]
        data["waiter_results"] = {k: enc(v, "answer") for k, v in snap.waiter_results.items()}
        data["emitted_waiters"] = list(snap.emitted_waiters)
        data["stream"] = {
            "position": snap.stream_position,
            "pending": [enc(e, "stream event") for e in snap.stream_pending],
        }
        data["next_execution_id"] = snap.next_execution_id
        data["stop_event"] = (
            enc(snap.stop_event, "the final StopEvent") if snap.stop_event is not None else None
        )
        data["joins"] = [
            {"step": st, "param": pa, "events": [enc(e, "join") for e in evs]}
            for st, pa, evs in snap.joins
        ]
        data["streams"] = [
            {
                **st,
                "items": {
                    name: [[b, enc(e, "collected event")] for b, e in items]
                    for name, items in st["items"].items()
                },
            }
            for st in snap.streams
        ]
        data["next_stream"] = snap.next_stream
    else:
        data.update(
            is_running=False,
            queue=[],
            in_progress=[],
            buffers=[],
            waiters=[],
            waiter_results={},
            emitted_waiters=[],
            stream={"position": 0, "pending": []},
            next_execution_id=1,
            stop_event=None,
            joins=[],
            streams=[],
            next_stream=1,
        )
    return data


def _tag(value: Any) -> tuple[int, int] | None:
    if value is None:
        return None
    sid, branch = value
    return (int(sid), int(branch))


def _bad(message: str) -> ContextSerdeError:
    return ContextSerdeError(
        f"Cannot restore the context: {message}. Pass the dict returned by ctx.to_dict() "
        "(optionally through json.dumps/json.loads) for the same workflow."
    )


def restore_into(ctx: Context[Any], data: Any, serializer: BaseSerializer | None) -> None:
    """Decode ``data`` fully, then install it into ``ctx`` (all or nothing)."""
    if not isinstance(data, Mapping):
        raise _bad(f"expected a dict, got {type(data).__name__}")
    if data.get("format") != FORMAT:
        raise _bad("the dict is not a batonflow context snapshot (no 'format' marker)")
    if data.get("version") != VERSION:
        raise _bad(
            f"snapshot format version {data.get('version')!r} is not supported (this batonflow "
            f"reads version {VERSION})"
        )
    workflow = ctx._workflow
    graph = workflow._graph()
    saved_steps = data.get("steps")
    if saved_steps is not None and not (
        isinstance(saved_steps, list) and all(isinstance(s, str) for s in saved_steps)
    ):
        raise _bad("'steps' is not a list of step names")
    ser = _serializer(ctx, serializer)
    register_workflow(workflow, graph)

    def dec(text: Any, where: str) -> Event:
        if not isinstance(text, str):
            raise _bad(f"{where} is not an encoded event")
        value = ser.deserialize(text)
        if not isinstance(value, Event):
            raise _bad(f"{where} decoded to {type(value).__name__}, not an Event")
        return value

    def step_of(item: Mapping[str, Any], where: str) -> str:
        name = item.get("step")
        if not isinstance(name, str) or name not in graph.steps:
            raise ContextSerdeError(
                f"Cannot restore the context: {where} belongs to step {name!r}, which "
                f"{graph.name} does not have (its steps: {', '.join(graph.steps)}). The "
                "workflow changed since the snapshot; restore it with the workflow that wrote it."
            )
        return name

    try:
        run_id = data["run_id"]
        is_running = bool(data["is_running"])
        snap = RunSnapshot(run_id=str(run_id) if run_id is not None else "", is_running=is_running)
        for item in data["queue"]:
            if item.get("external"):
                snap.external.append((dec(item["event"], "a sent event"), item["step"] or None))
                continue
            snap.queued.append(
                QueuedItem(
                    step_of(item, "a queued event"),
                    dec(item["event"], "a queued event"),
                    item["origin"],
                    item["execution_id"],
                    _tag(item.get("tag")),
                )
            )
        for item in data["in_progress"]:
            snap.in_progress.append(
                QueuedItem(
                    step_of(item, "an in-progress event"),
                    dec(item["event"], "an in-progress event"),
                    item["origin"],
                    int(item["execution_id"]),
                    _tag(item.get("tag")),
                )
            )
        for item in data["buffers"]:
            name = step_of(item, "a collect_events buffer")
            snap.buffers[(name, item["buffer_id"])] = [
                dec(e, "a buffered event") for e in item["events"]
            ]
        for item in data["waiters"]:
            saved = item["requirements"]
            # None: they could not be encoded; the waiting step sets them again when it re-runs.
            requirements = {} if saved is None else ser.deserialize(saved)
            if not isinstance(requirements, dict):
                raise _bad("a waiter's requirements are not a dict")
            snap.waiters.append(
                WaiterRecord(
                    str(item["waiter_id"]),
                    str(item["type"]),
                    requirements,
                    step_of(item, "a waiting step"),
                    int(item["execution_id"]),
                )
            )
        snap.waiter_results = {
            str(k): dec(v, "a waiter's answer") for k, v in data["waiter_results"].items()
        }
        snap.emitted_waiters = [str(x) for x in data["emitted_waiters"]]
        stream = data["stream"]
        snap.stream_position = int(stream["position"])
        snap.stream_pending = [dec(e, "a stream event") for e in stream["pending"]]
        snap.next_execution_id = int(data["next_execution_id"])
        for item in data.get("streams") or []:
            for name in (*item["collectors"], *item["fired"], *item["items"]):
                step_of({"step": name}, "a collection stream")
            snap.streams.append(
                {
                    "id": int(item["id"]),
                    "size": int(item["size"]),
                    "collectors": list(item["collectors"]),
                    "fired": list(item["fired"]),
                    "items": {
                        name: [(int(b), dec(e, "a collected event")) for b, e in pairs]
                        for name, pairs in item["items"].items()
                    },
                }
            )
        snap.next_stream = int(data.get("next_stream", 1))
        for item in data.get("joins") or []:
            name = step_of(item, "a join buffer")
            snap.joins.append(
                (name, str(item["param"]), [dec(e, "a joined event") for e in item["events"]])
            )
        if data.get("stop_event") is not None:
            snap.stop_event = dec(data["stop_event"], "the final StopEvent")
        meta = {str(k): str(v) for k, v in dict(data.get("meta") or {}).items()}
        state = data.get("state")
        store = None
        if state is not None:
            store = InMemoryStateStore.from_dict(
                state, ser, graph.state_type, strict=workflow._strict_state
            )
    except ContextSerdeError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise _bad(f"the snapshot is corrupt ({type(exc).__name__}: {exc})") from exc
    # A step of the snapshot's workflow that is gone is refused above only when the snapshot
    # holds something for it (step_of): one nothing is in flight for can go (see "Versions"
    # in docs/durability.md).
    # Everything decoded: install.
    if store is not None:
        ctx._store = store
    ctx.meta.clear()
    ctx.meta.update(meta)
    ctx._run_id = snap.run_id or None
    ctx._run = None
    ctx._snapshot = snap if is_running else None


class SnapshotDict(dict[str, Any]):
    """The dict ``Context.to_dict()`` returns; ``await``-ing it also works (older examples)."""

    def __await__(self) -> Any:
        if False:  # pragma: no cover - makes this a generator function
            yield
        return self


class FromDict:
    """``Context.from_dict(workflow, data)``; on an instance, ``await ctx.from_dict(data)``.

    Restore a context saved with ``to_dict`` for ``workflow`` and pass it to
    ``workflow.run(ctx=ctx)``: a run that was in progress resumes (steps that were running
    re-run from their start); a finished one starts anew with the state. Older examples call it
    on a fresh instance (``new_ctx = Context(W); await new_ctx.from_dict(data)``), which
    restores into that instance.

    Raises:
        ContextSerdeError: The dict is corrupt, from another workflow, or cannot be decoded.
    """

    def __get__(self, obj: Context[Any] | None, owner: type[Context[Any]]) -> Any:
        if obj is None:

            def from_dict(
                workflow: Workflow,
                data: dict[str, Any],
                serializer: BaseSerializer | None = None,
            ) -> Context[Any]:
                return owner(workflow, previous_context=data, serializer=serializer)

            from_dict.__doc__ = FromDict.__doc__
            return from_dict

        def restore(data: dict[str, Any], serializer: BaseSerializer | None = None) -> Any:
            restore_into(obj, data, serializer)
            return _Done(obj)

        return restore


class _Done:
    """An already-finished awaitable (for ``await ctx.from_dict(data)``)."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __await__(self) -> Any:
        if False:  # pragma: no cover - makes this a generator function
            yield
        return self.value
