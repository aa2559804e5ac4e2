"""Whether a run in flight can continue with the code at hand, checked before anything runs.

A run records the version of the workflow that started it (``Workflow.version``). When the
code at hand has another version, the run's latest checkpoint is read against it (or its
start event, for a run that died before its first checkpoint), and each thing the new code
cannot continue is a reason:

* a step the checkpoint has in progress, events queued or buffered for, or waiting in
  ``wait_for_event``, that the workflow no longer has (renamed or removed);
* an event it holds whose class is gone, or whose data no longer fits the class (a required
  field added, a field's type changed), or that its step no longer accepts;
* a state that no longer fits the state type (a field's type changed).

A new step, a new optional field, a step whose body changed with the same shape: the data
still fits, and the run continues. The check decodes the run's own data, so it says whether
this run can continue, not whether some run could.

These functions are used by :class:`~batonflow.core.checkpoints.WorkflowCheckpointer`
(``check``, ``check_runs``, and before a resume, ``run_from`` or a fork).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ..data.events import Event, StartEvent
from ..data.serialization import BaseSerializer
from ..data.state import InMemoryStateStore
from ..errors import BatonflowError, CheckpointError, IncompatibleRunError
from ._records import Checkpoint, RunRecord

if TYPE_CHECKING:
    from ..engine.graph import Graph
    from ..engine.workflow import Workflow
    from .checkpoints import WorkflowCheckpointer

#: The statuses of a run that is still to go on: what ``check_runs`` looks at.
IN_FLIGHT = ("running", "waiting", "interrupted")


@dataclass(frozen=True, slots=True)
class RunCheck:
    """What checking one run against the code at hand found.

    Attributes:
        run_id: The run.
        workflow_name: The workflow name it was recorded under.
        status: Its status in the store.
        recorded_version: The version that started it (``None``: recorded before versions).
        version: The version of the code at hand.
        reasons: Why the code at hand cannot continue it, one sentence each; empty when it can.
    """

    run_id: str
    workflow_name: str
    status: str
    recorded_version: str | None
    version: str
    reasons: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """Whether the code at hand can continue the run."""
        return not self.reasons

    def line(self) -> str:
        """One line for people: the run, its versions, and why it cannot continue."""
        was = self.recorded_version or "unrecorded"
        verdict = "; ".join(self.reasons) if self.reasons else "can continue"
        return f"{self.run_id} {self.workflow_name} ({self.status}, version {was} -> {self.version}): {verdict}"

    def message(self) -> str:
        """The error text of a refused resume: the run, the reasons, and what to do."""
        return (
            f"Run {self.run_id!r} of {self.workflow_name} cannot continue with this code "
            f"(version {self.recorded_version or 'unrecorded'} -> {self.version}): "
            f"{'; '.join(self.reasons)}. Resume it with the code that started it (drain it "
            "before deploying), or migrate it: see 'Versions' in docs/durability.md."
        )

    def to_dict(self) -> dict[str, Any]:
        """The check as JSON-compatible data (``batonflow runs check --json``)."""
        return {
            "run_id": self.run_id,
            "workflow": self.workflow_name,
            "status": self.status,
            "recorded_version": self.recorded_version,
            "version": self.version,
            "ok": self.ok,
            "reasons": list(self.reasons),
        }


def check_record(
    workflow: Workflow,
    serializer: BaseSerializer,
    record: RunRecord,
    latest: Checkpoint | None,
    data: Mapping[str, Any] | None = None,
) -> RunCheck:
    """Check the run of ``record`` (latest checkpoint ``latest``) against ``workflow``.

    Args:
        data: The snapshot to check instead of ``latest``'s (a fork's, changed).
    """
    version = workflow.version
    reasons: list[str] = []
    if record.workflow_version != version:
        if data is None and latest is not None:
            data = latest.ctx_data
        if data is not None:
            reasons = checkpoint_problems(workflow, serializer, data)
        elif record.start_event is not None:
            reasons = start_problems(workflow, serializer, record.start_event)
    return RunCheck(
        record.run_id,
        record.workflow_name,
        record.status,
        record.workflow_version,
        version,
        tuple(dict.fromkeys(reasons)),  # each reason once, in order
    )


def start_problems(workflow: Workflow, serializer: BaseSerializer, text: str) -> list[str]:
    """Why ``workflow`` cannot start from the recorded start event ``text``."""
    graph = workflow._graph()
    found = _decode(serializer, text, "the start event")
    if isinstance(found, str):
        return [found]
    if not isinstance(found, StartEvent) or not isinstance(found, graph.start_event_class):
        return [
            f"its start event {type(found).__name__} is not a "
            f"{graph.start_event_class.__name__} (what {graph.name} starts with now)"
        ]
    return []


def checkpoint_problems(
    workflow: Workflow, serializer: BaseSerializer, data: Mapping[str, Any]
) -> list[str]:
    """Why ``workflow`` cannot continue from the snapshot ``data`` (a checkpoint's)."""
    graph = workflow._graph()
    reasons: list[str] = []
    parts = (
        ("in_progress", "in progress"),
        ("queue", "with events queued"),
        ("buffers", "collecting events"),
        ("joins", "joining events"),
    )
    for part, doing in parts:
        for item in _items(data.get(part)):
            step = item.get("step")
            external = bool(item.get("external"))
            if not (external and not step) and step not in graph.steps:
                reasons.append(f"step {step!r} ({doing}) was renamed or removed")
            texts = item.get("events") if part in ("buffers", "joins") else [item.get("event")]
            for text in texts if isinstance(texts, list) else []:
                reasons.extend(_event_problems(serializer, graph, text, step or None, doing))
    for item in _items(data.get("waiters")):
        step = item.get("step")
        if step not in graph.steps:
            reasons.append(f"step {step!r} (waiting for an answer) was renamed or removed")
    for stream in _items(data.get("streams")):
        for name in (*stream.get("collectors", ()), *stream.get("items", {})):
            if name not in graph.steps:
                reasons.append(f"step {name!r} (collecting a fan-out) was renamed or removed")
    answers = data.get("waiter_results")
    for text in answers.values() if isinstance(answers, Mapping) else ():
        reasons.extend(_event_problems(serializer, graph, text, None, "an answer"))
    reasons.extend(_state_problems(workflow, serializer, graph, data.get("state")))
    return reasons


def _items(value: Any) -> Iterable[Mapping[str, Any]]:
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def _event_problems(
    serializer: BaseSerializer, graph: Graph, text: Any, step: str | None, doing: str
) -> list[str]:
    where = f"for step {step!r}" if step else doing
    found = _decode(serializer, text, f"the event {where}")
    if isinstance(found, str):
        return [found]
    spec = graph.steps.get(step) if step else None
    if spec is not None and spec.accepted and not isinstance(found, spec.accepted):
        return [f"step {step!r} no longer accepts its pending {type(found).__name__}"]
    return []


def _decode(serializer: BaseSerializer, text: Any, what: str) -> Any:
    """The decoded value of ``text``, or the reason it cannot be decoded (a ``str``)."""
    if not isinstance(text, str):
        return f"{what} is not an encoded event"
    try:
        value = serializer.deserialize(text)
    except (BatonflowError, ValueError, TypeError, AttributeError, ImportError) as exc:
        return _decode_reason(text, what, exc)
    if not isinstance(value, Event):
        return f"{what} decoded to {type(value).__name__}, not an event"
    return value


def _decode_reason(text: str, what: str, exc: BaseException) -> str:
    name = _type_name(text)
    label = f"{what}, {name.rpartition(':')[2].rpartition('.')[2]}," if name else what
    cause = exc.__cause__ if isinstance(exc.__cause__, ValidationError) else exc
    if isinstance(cause, ValidationError):
        return f"{label} no longer fits its class: {_fields_text(cause)}"
    if name and name in str(exc):
        return f"{label} has a class this code does not define ({name}: renamed or removed)"
    return f"{what} cannot be decoded ({exc})"


def _fields_text(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors():
        loc = ".".join(str(p) for p in error.get("loc", ())) or "the value"
        if error.get("type") == "missing":
            parts.append(f"field {loc!r} is required now")
        else:
            parts.append(f"field {loc!r}: {error.get('msg', 'does not validate')}")
    return ", ".join(parts)


def _type_name(text: str) -> str | None:
    """The ``module:Class`` an encoded value names (JSON serializer's layout), if any."""
    try:
        tree = json.loads(text)
    except (TypeError, ValueError):
        return None
    name = tree.get("type") if isinstance(tree, dict) else None
    return name if isinstance(name, str) else None


def _state_problems(
    workflow: Workflow, serializer: BaseSerializer, graph: Graph, state: Any
) -> list[str]:
    if not isinstance(state, Mapping):
        return []
    try:
        InMemoryStateStore.from_dict(
            state, serializer, graph.state_type, strict=workflow._strict_state
        )
    except (BatonflowError, ValueError, TypeError) as exc:
        cause = exc.__cause__
        while cause is not None and not isinstance(cause, ValidationError):
            cause = cause.__cause__
        if isinstance(cause, ValidationError):
            return [f"its state no longer fits the state type: {_fields_text(cause)}"]
        return [f"its state cannot be restored ({exc})"]
    return []


def check(cptr: WorkflowCheckpointer, record: RunRecord) -> RunCheck:
    """``cptr.check`` of a run whose record is ``record``."""
    return check_record(cptr.workflow, cptr.serializer, record, cptr.store.latest(record.run_id))


def check_run(self: WorkflowCheckpointer, run_id: str) -> RunCheck:
    """Whether this checkpointer's workflow can continue run ``run_id``, without running it.

    A run recorded by the same version (``Workflow.version``) can; another's latest
    checkpoint (or start event) is read against this code: a step it has in progress or
    events for that is gone, an event or state that no longer fits its class, are reasons
    it cannot. Nothing is written.

    Raises:
        CheckpointError: The store has no record of that run.
    """
    record = self.store.run(run_id)
    if record is None:
        raise CheckpointError(
            f"No run {run_id!r} in {self.store!r}; check a run recorded in this store."
        )
    return check(self, record)


def check_runs(
    self: WorkflowCheckpointer, workflow_names: Iterable[str] | None = None
) -> list[RunCheck]:
    """``check`` every run in flight (running, waiting or interrupted), oldest first.

    Args:
        workflow_names: The names its runs were recorded under (default: the workflow's
            ``workflow_name``; a server records the name it serves it under).
    """
    names = {self.workflow.workflow_name} if workflow_names is None else set(workflow_names)
    records = sorted(
        (
            record
            for status in IN_FLIGHT
            for record in self.store.runs(status=status)
            if record.workflow_name in names
        ),
        key=lambda r: (r.created_at, r.run_id),
    )
    return [check(self, record) for record in records]


def refuse(cptr: WorkflowCheckpointer, found: RunCheck) -> IncompatibleRunError:
    """Record the refused run as ``interrupted`` with the reason, and return the error.

    The run is taken first (``RunBusyError`` when another live process runs it: then it is
    left as it is), then let go, so the code that can continue it may resume it.
    """
    error = IncompatibleRunError(found.message(), found.reasons)
    cptr._acquire(found.run_id, found.status)
    try:
        cptr.store.set_status(found.run_id, "interrupted", error=f"{type(error).__name__}: {error}")
    finally:
        let_go = getattr(cptr.store, "let_go", None)
        if let_go is not None:
            let_go(found.run_id)
    return error


__all__ = [
    "IN_FLIGHT",
    "RunCheck",
    "check",
    "check_record",
    "check_run",
    "check_runs",
    "checkpoint_problems",
    "refuse",
    "start_problems",
]
