"""Answers to child runs over HTTP: which run an event posted to a run is for, and how a
parent shows the question its waiting child asked.

The rule is the core's (``core/durable/_child_answers.py``): an event posted to a run that
waits for nothing itself, of a type no step of it takes from outside, goes to the one child
run (at any depth) that waits for that type; several such children get a ``409`` naming them;
the child's own run id (``POST /runs/{child_run_id}/events``) always works. The event is
checked against what the child waits for and committed to the child's inbox, through the
checkpointer of the served workflow at the top of the child's family, which delivers it to
the child when it runs in this process (else the process that runs it takes it in).

While a child waits, ``GET /runs/{parent}`` says the parent is ``waiting`` too, with the
child's ``question`` and ``waiting_for`` (each naming ``child_run_id``), so the console's
answer form and ``client.answer(parent, ...)`` work on the parent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from batonflow.core.durable._child_answers import WaitingChild, ambiguous, waiting_children

from ._answers import waiting_info
from ._introspect import external_events
from .run_store import RunRow


class NotRoutable(Exception):
    """An event posted to a run that no served workflow here can check: ``status``, text."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


@dataclass(frozen=True, slots=True)
class Target:
    """The run an event posted to a run is for.

    Attributes:
        run_id: Its id (the posted run's, or a waiting child's).
        row: Its row.
        workflow: Its workflow instance (``None``: not served here, and not running here).
        live: Its handler when it runs in this process, else ``None``.
        via: The served workflow whose checkpointer commits and delivers the event.
    """

    run_id: str
    row: RunRow
    workflow: Any
    live: Any
    via: str


def target(manager: Any, run_id: str, row: RunRow, body: dict[str, Any]) -> Target:
    """The run that ``body``, posted to run ``run_id`` (in ``row``), is for.

    Raises:
        NotRoutable: Several child runs wait for it (409), or it is for a child run whose
            workflow this server neither serves nor runs (409).
    """
    workflows = manager.workflows
    if row.parent_kind != "child":
        parent = workflows.get(row.workflow)
        type_name = body.get("type")
        if (
            row.status != "running"
            or parent is None
            or not isinstance(type_name, str)
            or type_name in external_events(parent)
        ):
            return _plain(manager, run_id, row)
        data = body.get("data")
        takers = [
            c for c in waiting_children(manager.records, run_id) if c.takes_type(type_name, data)
        ]
        if len(takers) > 1:
            raise NotRoutable(409, str(ambiguous(run_id, type_name, takers)))
        if not takers:
            return _plain(manager, run_id, row)
        run_id = takers[0].record.run_id
        found = manager.store.get(run_id)
        if found is None:
            return _plain(manager, row.run_id, row)
        row = found
    return _child(manager, run_id, row)


def _plain(manager: Any, run_id: str, row: RunRow) -> Target:
    live = manager.live.get(run_id)
    return Target(
        run_id,
        row,
        manager.workflows.get(row.workflow),
        live.handler if live else None,
        row.workflow,
    )


def _child(manager: Any, run_id: str, row: RunRow) -> Target:
    """The target of an event for child run ``run_id``: its family's served workflow."""
    root = row
    while root.parent_kind == "child" and root.parent_run_id is not None:
        up = manager.store.get(root.parent_run_id)
        if up is None:
            break
        root = up
    via = root.workflow
    checkpointer = manager.checkpointers.get(via)
    child = None if checkpointer is None else checkpointer._child_inbox(run_id)
    live = None if child is None else child._live.get(run_id)
    workflow = manager.workflows.get(row.workflow)
    if workflow is None and child is not None:
        workflow = child.workflow
    if workflow is None:
        workflow = _declared(manager.workflows, row.workflow)
    if checkpointer is None or workflow is None:
        raise NotRoutable(
            409,
            f"Run {run_id!r} is a child run of workflow {row.workflow!r} (its parent family "
            f"starts at run {root.run_id!r}, workflow {via!r}), which this server does not "
            "serve; send the event to a server that serves its parent's workflow.",
        )
    return Target(run_id, row, workflow, live, via)


def _declared(workflows: dict[str, Any], name: str) -> Any:
    """A workflow named ``name`` that a served workflow declares as a child, at any depth
    (``@step(children=[...])``), built with no arguments; else ``None``."""
    todo = [cls for w in workflows.values() for cls in _children_of(w._graph())]
    seen: set[type] = set()
    while todo:
        cls = todo.pop(0)
        if cls in seen:
            continue
        seen.add(cls)
        if cls.__name__ == name:
            try:
                return cls()
            except Exception:  # it needs arguments: not usable to check an event
                return None
        todo.extend(_children_of(cls._class_graph()))
    return None


def _children_of(graph: Any) -> list[type]:
    return [cls for spec in graph.order for cls in getattr(spec, "children", ()) or ()]


def deliver(manager: Any, run_id: str, seq: int) -> bool:
    """Deliver the inbox of child run ``run_id`` (up to ``seq``) when it runs here."""
    for checkpointer in manager.checkpointers.values():
        taken = checkpointer.taken_in(run_id)
        if taken is None:
            continue
        if taken < seq:
            checkpointer.deliver(run_id)
        return True
    return False


def waiting_parent(manager: Any, run_store: Any, row: RunRow) -> dict[str, Any]:
    """What ``GET /runs/{id}`` adds to a running parent whose child runs wait for an answer:
    ``status: waiting`` (for input), the first child's ``question`` and ``waiting_for`` (each naming its
    ``child_run_id``), and ``waiting_children``; ``{}`` when none waits."""
    if row.status != "running" or row.parent_kind == "child":
        return {}
    waiting = waiting_children(manager.records, row.run_id)
    if not waiting:
        return {}
    waits: list[dict[str, Any]] = []
    question: dict[str, Any] | None = None
    for child in waiting:
        info = _child_waits(manager, run_store, child)
        if question is None and info.get("question") is not None:
            question = {**info["question"], "child_run_id": child.record.run_id}
        for wait in info.get("waiting_for") or []:
            waits.append({**wait, "child_run_id": child.record.run_id})
    return {
        "status": "waiting",
        "waiting_for_input": True,
        "waiting_reason": "input",
        "question": question,
        "waiting_for": waits,
        "waiting_children": [c.record.run_id for c in waiting],
    }


def _child_waits(manager: Any, run_store: Any, child: WaitingChild) -> dict[str, Any]:
    row = run_store.get(child.record.run_id)
    if row is None:
        return {}
    try:
        found = _child(manager, row.run_id, row)
    except NotRoutable:
        return {}
    return waiting_info(run_store, row, found.workflow, found.live)


@dataclass(frozen=True, slots=True)
class Asker:
    """The run in this process that asked a question seen in a stream (the run itself or a
    child run of it), for the CLI's answers: its ``workflow``, ``handler`` and ``prompt``."""

    workflow: Any
    handler: Any
    prompt: str


def asking(workflow: Any, handler: Any, event: Any) -> Asker | None:
    """Who asks with ``event``, streamed by ``handler``'s run: the run itself (a question), a
    child run of it (a ``ChildRunEvent`` carrying its question), or ``None`` (no question).

    Answer with ``handler.ctx.send_event`` on the run that streamed it: an answer for a child
    goes to it (``engine/_children.py``).
    """
    from batonflow.core import ChildRunEvent
    from batonflow.core.engine._children import followed

    from ._answers import is_question

    if not isinstance(event, ChildRunEvent):
        if is_question(handler, event):
            return Asker(workflow, handler, str(event.get("prefix", "") or "> "))
        return None
    child = followed(handler._run).get(event.child_run_id)
    if child is None:
        return None
    return asking(child._run.workflow, child, event.event)


def child_answers(
    workflow: Any, store: Any, row: RunRow, pending: list[str], ask: Any
) -> list[tuple[str, Any]]:
    """The answers for the child runs of the stopped run ``row`` that wait (``batonflow runs
    resume --answer``): ``(child run id, event)``, each from ``pending`` (popped) or
    ``ask(prompt)``, built from what the child's stored question waits for.

    Raises:
        BadParameterError: An answer does not fit what its child waits for.
    """
    from ._answers import answer_from_text, expected, question
    from .registry import BadParameterError

    found: list[tuple[str, Any]] = []
    for child in waiting_children(store.backend, row.run_id):
        child_row = store.get(child.record.run_id)
        if child_row is None:
            continue
        flow = _declared({"": workflow}, child_row.workflow) or workflow
        asked = question(store, child_row) or {}
        value = asked.get("value")
        prompt = str((value if isinstance(value, dict) else {}).get("prefix") or "> ")
        text = pending.pop(0) if pending else ask(prompt)
        try:
            found.append((child_row.run_id, answer_from_text(expected(flow, asked), text)))
        except ValueError as exc:
            raise BadParameterError(f"Child run {child_row.run_id}: {exc}") from None
    return found


def remote_question(event_type: str, value: Any) -> str | None:
    """The prompt of a child run's question in a parent's SSE ``ChildRunEvent`` entry
    (``type``, ``value``), or ``None`` when it carries none."""
    while event_type == "ChildRunEvent" and isinstance(value, dict):
        event_type = str(value.get("event_type", ""))
        value = value.get("event")
        if event_type == "InputRequiredEvent" and isinstance(value, dict):
            return str(value.get("prefix") or "> ")
    return None


__all__ = [
    "Asker",
    "NotRoutable",
    "Target",
    "asking",
    "child_answers",
    "deliver",
    "remote_question",
    "target",
    "waiting_parent",
]
