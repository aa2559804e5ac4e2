"""What the client returns: :class:`Run` (a run's record) and :class:`RunEvent` (one SSE message).

Both are frozen records built from the server's JSON; fields the server adds later stay
reachable through ``raw``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

#: Statuses after which a run never changes again.
FINISHED_STATUSES = frozenset({"completed", "failed", "cancelled", "timed_out", "interrupted"})


@dataclass(frozen=True, slots=True)
class Run:
    """A run as the server reports it (``GET /runs/{id}``).

    Attributes:
        run_id: The run's id.
        status: ``running``, ``waiting`` (it asked for input), ``completed``, ``failed``,
            ``cancelled``, ``timed_out`` or ``interrupted``.
        workflow: The name the workflow is served under (empty when the server did not say).
        start: The start event's fields.
        result: The run's result once ``completed``.
        error: Why it failed, was cancelled or was interrupted.
        waiting_for_input: Whether it waits for an answer.
        created_at: When it started (an aware datetime in UTC), when known.
        updated_at: When it last changed, when known.
        question: While it waits (``get``): the question's event (``seq``, ``type``,
            ``value`` with its ``prefix``).
        waiting_for: While it waits (``get``): what answers it, one dict per awaited event:
            ``type``, ``requirements`` (values the answer must have), ``schema`` (its
            fields), ``example`` (a body for :meth:`~batonflow.client.Client.send_event`).
            A parent whose child run asks shows the child's (each naming ``child_run_id``).
        waiting_children: While child runs of it wait for answers (``get``, ``list``): their
            run ids (an answer sent to this run goes to the one that waits for it).
        schedule: The schedule firing that started it (``{"name", "fire_at"}``), if any.
        usage: What its LLM calls used (``prompt_tokens``, ``completion_tokens``,
            ``total_tokens``, ``cost`` in US dollars or ``None`` when unknown, ``calls``).
        budget: Its budget (``tokens``, ``cost``, ``on_exceed``), if it has one.
        waiting_reason: While it waits: ``"input"`` (a question) or ``"budget"`` (an LLM
            call would pass its budget: :meth:`~batonflow.client.Client.raise_budget`).
        queue: While ``queued``: ``{"position", "waiting_on"}`` (its place in the run queue,
            from 1, and the limit it waits on).
        raw: The whole JSON object the server sent.
    """

    run_id: str
    status: str
    workflow: str = ""
    start: dict[str, Any] = field(default_factory=dict)
    result: Any = None
    error: str | None = None
    waiting_for_input: bool = False
    created_at: datetime | None = None
    updated_at: datetime | None = None
    question: dict[str, Any] | None = None
    waiting_for: list[dict[str, Any]] = field(default_factory=list)
    waiting_children: list[str] = field(default_factory=list)
    schedule: dict[str, Any] | None = None
    usage: dict[str, Any] | None = None
    budget: dict[str, Any] | None = None
    waiting_reason: str | None = None
    queue: dict[str, Any] | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def done(self) -> bool:
        """Whether the run has ended (its status never changes again)."""
        return self.status in FINISHED_STATUSES

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Run:
        """Build a run from the server's JSON object."""
        return cls(
            run_id=str(data["run_id"]),
            status=str(data.get("status", "")),
            workflow=str(data.get("workflow") or ""),
            start=dict(data.get("start") or {}),
            result=data.get("result"),
            error=data.get("error"),
            waiting_for_input=bool(data.get("waiting_for_input", data.get("status") == "waiting")),
            created_at=_instant(data.get("created_at")),
            updated_at=_instant(data.get("updated_at")),
            question=data.get("question") if isinstance(data.get("question"), dict) else None,
            waiting_for=[w for w in data.get("waiting_for") or [] if isinstance(w, dict)],
            waiting_children=[str(c) for c in data.get("waiting_children") or []],
            schedule=data.get("schedule"),
            usage=data.get("usage") if isinstance(data.get("usage"), dict) else None,
            budget=data.get("budget") if isinstance(data.get("budget"), dict) else None,
            waiting_reason=data.get("waiting_reason"),
            queue=data.get("queue") if isinstance(data.get("queue"), dict) else None,
            raw=data,
        )


def _instant(value: Any) -> datetime | None:
    """A server's time: RFC 3339 text, or Unix seconds (what servers sent before)."""
    if isinstance(value, str):
        return datetime.fromisoformat(value)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return datetime.fromtimestamp(value, UTC)
    return None


@dataclass(frozen=True, slots=True)
class RunEvent:
    """One message of a run's event stream.

    Attributes:
        seq: Its sequence number (the SSE ``id``): 1, 2, 3, ... for each run.
        kind: ``"event"`` for an event the run streamed, ``"end"`` for the last message.
        data: The message's JSON: ``{"seq", "type", "qualified_name", "value"}`` for an
            event (with ``"step"`` and ``"execution"`` when a step execution of a durable run
            wrote it), ``{"seq", "status", "result", "error"}`` for the end.
    """

    seq: int
    kind: str
    data: dict[str, Any]

    @property
    def type(self) -> str | None:
        """The event's class name (``"InputRequiredEvent"``), ``None`` for the end."""
        value = self.data.get("type")
        return value if isinstance(value, str) else None

    @property
    def value(self) -> dict[str, Any]:
        """The event's fields (empty for the end)."""
        value = self.data.get("value")
        return value if isinstance(value, dict) else {}

    @property
    def step(self) -> str | None:
        """The step that wrote the event (a durable run's), ``None`` when not known."""
        value = self.data.get("step")
        return value if isinstance(value, str) else None

    @property
    def execution(self) -> int | None:
        """The id of the step execution that wrote it (with :attr:`step`), else ``None``."""
        value = self.data.get("execution")
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    @property
    def is_restart(self) -> bool:
        """Whether this is a ``StepRestarted``: a step interrupted by a crash runs again."""
        return self.kind == "event" and self.type == "StepRestarted"

    def supersedes(self, earlier: RunEvent) -> bool:
        """Whether ``earlier`` is output of the interrupted attempt this ``StepRestarted``
        announces (written again by the re-run): drop it from what you show.

        It is when it came before this one, from the same step execution, at or after the
        interrupted attempt's first event; a question (``waiting_for``) never is.
        """
        first = self.value.get("first_event_id")
        return (
            self.is_restart
            and isinstance(first, int)
            and first <= earlier.seq < self.seq
            and earlier.kind == "event"
            and earlier.step == self.step
            and earlier.execution == self.execution
            and "waiting_for" not in earlier.data
        )

    @property
    def is_end(self) -> bool:
        """Whether this is the stream's last message, carrying the final status."""
        return self.kind == "end"

    @property
    def status(self) -> str | None:
        """The final status, on the end message."""
        return self.data.get("status") if self.is_end else None


__all__ = ["FINISHED_STATUSES", "Run", "RunEvent"]
