"""The HTTP API's request and response bodies, as pydantic models (what ``/openapi.json`` shows).

The route functions in :mod:`batonflow.apps.server` build their answers as plain dicts and
``JSONResponse`` objects; these models describe those bodies for the OpenAPI schema, Swagger UI,
ReDoc and generated clients. They are attached with ``responses=`` (see :func:`responses`), not
``response_model=``, so a field another part of the server adds is never silently dropped from
an answer: ``extra="allow"`` says so in the schema too.

Start bodies are not here: each served workflow's start event *is* its body model, put into the
schema per workflow by :mod:`batonflow.apps._openapi`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Body(BaseModel):
    model_config = ConfigDict(extra="allow")


class FieldProblem(BaseModel):
    """One bad field of a request, in pydantic's shape."""

    loc: list[str | int] = Field(description='Where the field is, e.g. ["body", "n"].')
    msg: str = Field(description="What is wrong with it.")
    type: str = Field(description='The kind of problem, e.g. "missing", "int_parsing".')


class Problem(_Body):
    """Every 4xx and 5xx answer: one sentence naming the problem and how to fix it."""

    detail: str = Field(description="The problem, ending with what to do about it.")


class InvalidInput(_Body):
    """A 422: a body, field or parameter that does not validate."""

    detail: str | list[dict[str, Any]] = Field(
        description="One sentence naming the first bad field (query and path parameters "
        "that do not validate give FastAPI's list of problems instead)."
    )
    errors: list[FieldProblem] | None = Field(
        None, description="Every bad field of the body, when the body is at fault."
    )


class InternalError(Problem):
    """A 500: the traceback is in the server log under ``error_id``, never in the answer."""

    error_id: str = Field(description="Look for this id in the server log.")


class Health(_Body):
    """``GET /health``."""

    status: str = Field(description='Always "ok" when the server answers.', examples=["ok"])
    workflows: int = Field(description="How many workflows are served.")


class ChatFields(_Body):
    """The start fields that carry an agent's conversation (the console's chat uses them)."""

    message: str = Field(description="The field of the user's message.", examples=["user_msg"])
    history: str = Field(
        description="The field of the messages before it ({role, content} objects).",
        examples=["chat_history"],
    )


class WorkflowInfo(_Body):
    """One served workflow."""

    name: str = Field(description="The name it is served under (the path's {name}).")
    class_: str = Field(alias="class", description="The workflow's class name.")
    start_event: dict[str, Any] = Field(
        description="JSON schema of the start event's fields: the body of POST "
        "/workflows/{name}/runs."
    )
    accepts: list[str] = Field(
        description="Event types a run of it takes from outside (POST /runs/{id}/events)."
    )
    chat: ChatFields | None = Field(
        None, description="For an agent: the start fields of a chat message; else null."
    )


class WorkflowList(_Body):
    """``GET /workflows``."""

    workflows: list[WorkflowInfo]


class Graph(_Body):
    """``GET /workflows/{name}/graph``: all possible flows as Mermaid text."""

    name: str
    format: str = Field(description='Always "mermaid".', examples=["mermaid"])
    mermaid: str = Field(description="Mermaid flowchart text.")


class Question(_Body):
    """The question a waiting run asked: its event in the run's event stream."""

    seq: int | None = Field(None, description="Its sequence number in the event stream.")
    type: str | None = Field(None, description="Its class name, e.g. InputRequiredEvent.")
    value: dict[str, Any] | None = Field(None, description="Its fields (prefix...).")
    child_run_id: str | None = Field(
        None, description="The child run that asked it, when a child of this run asks."
    )


class Awaited(_Body):
    """One event a waiting run takes: send it as ``{"type", "data"}`` (see ``example``)."""

    type: str = Field(description="The event's class name.", examples=["HumanResponseEvent"])
    qualified_name: str = Field(description="module.Class of the event.")
    steps: list[str] = Field(description="The steps that wait for it (or take it).")
    waiter_id: str | None = Field(None, description="The ctx.wait_for_event's id.")
    child_run_id: str | None = Field(
        None, description="The child run that waits for it, when a child of this run asks."
    )
    requirements: dict[str, Any] = Field(
        description="Field values the answer must have (ctx.wait_for_event requirements=).",
        examples=[{"tool": "transfer"}],
    )
    schema_: dict[str, Any] = Field(
        alias="schema", description="JSON schema of the event's fields, requirements included."
    )
    example: dict[str, Any] = Field(
        description="A request body that answers it.",
        examples=[{"type": "HumanResponseEvent", "data": {"response": "...", "tool": "x"}}],
    )


class Usage(_Body):
    """What a run's (or a step's) LLM calls used, as their providers reported it."""

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    cost: float | None = Field(
        description="US dollars at the price table of batonflow.budgets; null when a call's "
        "model has no known price."
    )
    calls: int = Field(description="How many LLM calls.")


class BudgetLimit(_Body):
    """A run's budget: what its LLM calls may use at most."""

    tokens: int | None = Field(description="Tokens (prompt and completion), or null.")
    cost: float | None = Field(description="US dollars, or null.")
    on_exceed: Literal["wait", "fail"] = Field(
        description="A call that would pass it waits for a raise, or fails the run."
    )


class Run(_Body):
    """One run: ``GET /runs/{id}``, and ``?wait=true`` starts once the run has ended."""

    run_id: str
    workflow: str = Field(description="The workflow's served name.")
    status: str = Field(
        description="queued (it waits for its workflow's limits), running, waiting (it asked a "
        "human), completed, failed (a step raised or the run timed out), cancelled, or "
        "interrupted (stopped from outside; resumable)."
    )
    start: dict[str, Any] = Field(description="The start event's fields it was started with.")
    result: Any = Field(None, description="The StopEvent's result, once completed.")
    error: str | None = Field(None, description="What went wrong, once failed or cancelled.")
    waiting_for_input: bool = Field(description="Whether it waits for an answer now.")
    created_at: datetime = Field(
        description="When it started: RFC 3339, UTC.", examples=["2026-12-02T01:45:02.123456Z"]
    )
    updated_at: datetime = Field(
        description="When its status last changed: RFC 3339, UTC.",
        examples=["2026-12-02T01:45:03.5Z"],
    )
    created: float = Field(description="created_at as Unix time (seconds since the epoch).")
    updated: float = Field(description="updated_at as Unix time (seconds since the epoch).")
    parent_run_id: str | None = Field(
        None, description="The run it was forked from, or started by as a child run, if any."
    )
    parent_seq: int | None = Field(
        None, description="The parent's checkpoint it continues from (a fork's)."
    )
    parent_step: str | None = Field(
        None, description="The parent's step that started it (a child run's)."
    )
    parent_kind: Literal["fork", "child"] | None = Field(
        None, description="How it came from its parent: forked from it, or run as its child."
    )
    workflow_version: str | None = Field(
        None,
        description="The version of the workflow that started it (declared, or the hash of "
        "its steps, events and state); null for runs recorded before versions.",
    )
    question: Question | None = Field(
        None, description="While waiting (GET /runs/{id}): the question the run asked."
    )
    waiting_for: list[Awaited] | None = Field(
        None,
        description="While waiting (GET /runs/{id}): the events that answer it; an answer "
        "that fits none is refused with 422 before it is taken.",
    )
    waiting_children: list[str] | None = Field(
        None,
        description="The child runs of it that wait for answers; it is then 'waiting' (in "
        "GET /runs too, and status=waiting finds it), with their questions in GET /runs/{id}, "
        "and an answer posted to it goes to the one child that waits for it (409 names them "
        "when several do).",
    )

    schedule: ScheduleLink | None = Field(
        None, description="The schedule firing that started it, if a schedule did."
    )
    budget: BudgetLimit | None = Field(None, description="Its budget, if it was given one.")
    usage: Usage | None = Field(
        None, description="What its LLM calls used (in a durable run), if they used any."
    )
    usage_by_step: dict[str, Usage] | None = Field(
        None, description="GET /runs/{id}: the usage of each step's LLM calls, by step name."
    )
    waiting_reason: Literal["input", "budget"] | None = Field(
        None,
        description="While waiting (GET /runs/{id}): 'input' (it asked a question) or "
        "'budget' (an LLM call would pass its budget: POST /runs/{id}/budget raises it).",
    )
    budget_blocked: dict[str, Any] | None = Field(
        None,
        description="While waiting for its budget: the step, the tokens (or dollars) used, "
        "in flight, the refused call's estimate, and the budget.",
    )
    queue: QueuePlace | None = Field(
        None, description="While queued: its place in the run queue and the limit it waits on."
    )


class RunAccepted(Run):
    """A run that was started and goes on in the background (poll or stream it): the whole
    run, as ``GET /runs/{id}`` shows it, with the status it has now (usually running)."""


class QueuePlace(BaseModel):
    """Where a queued run waits."""

    position: int = Field(description="Its place in its workflow's queue, from 1 (next).")
    waiting_on: str = Field(
        description="The limit it waits on: concurrency, key_concurrency, rate, max_running "
        "(every replica's own limit), or position (runs ahead of it take the free slots).",
        examples=["concurrency"],
    )


class ScheduleLink(BaseModel):
    """The schedule firing that started a run."""

    name: str = Field(description="The schedule's name.")
    fire_at: datetime = Field(
        description="The scheduled time it fired for: RFC 3339, UTC.",
        examples=["2026-12-02T03:00:00.000000Z"],
    )
    fire: int = Field(description="fire_at as Unix time (seconds since the epoch).")


class Schedule(_Body):
    """One schedule: ``POST /schedules`` takes it (``created_at`` aside), the others show it."""

    name: str = Field(description="Unique name: letters, digits, '_', '.', '-'.")
    workflow: str = Field(description="The served workflow each firing starts.")
    cron: str = Field(
        description="Five cron fields (minute hour day month weekday), UTC; six with seconds last.",
        examples=["*/5 * * * *"],
    )
    fields: dict[str, Any] = Field({}, description="The start event's fields of each run.")
    missed: str = Field(
        "skip",
        description="Firings missed while no server ran: skip (dropped) or once (the latest "
        "runs once).",
    )
    created_at: datetime | None = Field(None, description="When it was added: RFC 3339, UTC.")
    created: float | None = Field(None, description="created_at as Unix time (seconds).")


class ScheduleList(_Body):
    """``GET /schedules``: by name."""

    schedules: list[Schedule]


class RunList(_Body):
    """``GET /runs``: newest first."""

    runs: list[Run]


class SendEvent(BaseModel):
    """``POST /runs/{id}/events``: an event into a run, e.g. a human's answer."""

    type: str = Field(
        description="The event's class name, one of the workflow's accepts (GET /workflows).",
        examples=["HumanResponseEvent"],
    )
    data: dict[str, Any] = Field(
        default_factory=dict,
        description="The event's fields.",
        examples=[{"response": "yes"}],
    )


class EventSent(Run):
    """The event was taken; the run goes on: the whole run, as ``GET /runs/{id}`` shows it,
    and which event type was sent."""

    sent: str = Field(description="The event type that was sent.")


class Cancelled(_Body):
    """``POST /runs/{id}/cancel``: the run's status once the cancellation took effect."""

    run_id: str
    status: str = Field(examples=["cancelled"])


class StreamedEvent(BaseModel):
    """The ``data:`` of an ``event: event`` message on ``GET /runs/{id}/events``."""

    seq: int = Field(description="The message's sequence number, also its SSE id.")
    type: str = Field(description="The event's class name.")
    qualified_name: str = Field(description="module.Class of the event.")
    value: dict[str, Any] = Field(description="The event's fields.")
    step: str | None = Field(
        None,
        description="The step that wrote it (a durable run's events; absent when not known).",
    )
    execution: int | None = Field(
        None,
        description="The id of the step execution that wrote it; a StepRestarted names the "
        "execution that runs again, whose events from value.first_event_id on it supersedes.",
    )


class StreamEnd(BaseModel):
    """The ``data:`` of the last message, ``event: end``; the server closes the stream after it."""

    seq: int
    status: str
    result: Any = None
    error: str | None = None


#: What each status code means, for every route that can answer it.
STATUS_TEXT: dict[int, tuple[str, type[BaseModel] | None]] = {
    400: (
        "The Host header is not this server's address (only without a token; "
        "--allowed-host adds names).",
        Problem,
    ),
    401: ("Missing or wrong bearer token (only when the server has a token).", Problem),
    403: ("A cross-site request: the Origin is not this server (only without a token).", Problem),
    404: ("The workflow, run or schedule does not exist.", Problem),
    409: (
        "The run's state does not allow this (it has ended, or was answered), or the "
        "schedule's name is taken.",
        Problem,
    ),
    413: ("The request body is larger than the server's limit.", Problem),
    415: (
        "The body is not declared JSON: send Content-Type: application/json (only without "
        "a token).",
        Problem,
    ),
    422: ("A body, field or parameter that does not validate; the detail names it.", InvalidInput),
    429: (
        "The workflow's run queue is full (max_queued): nothing was recorded; start it again "
        "after Retry-After seconds.",
        Problem,
    ),
    500: ("An unexpected error; the server log has it under error_id.", InternalError),
    507: ("The run store is out of space; nothing was started or sent.", Problem),
}


def responses(ok: int, model: type[BaseModel] | None, description: str, *errors: int) -> Any:
    """The ``responses=`` of a route: its success answer and the error codes it can give.

    Args:
        ok: The success status (200 or 202).
        model: The success body's model (``None`` when the route documents it otherwise).
        description: What the success answer means.
        *errors: The error statuses this route can answer besides 401 and 500 (every route
            but ``/health`` may answer those).

    Returns:
        A dict for FastAPI's ``responses=`` argument.
    """
    table: dict[int | str, dict[str, Any]] = {ok: {"description": description}}
    if model is not None:
        table[ok]["model"] = model
    for code in sorted({*errors, 401, 500}):
        text, body = STATUS_TEXT[code]
        table[code] = {"description": text, "model": body}
    return table


__all__ = [
    "STATUS_TEXT",
    "Cancelled",
    "ChatFields",
    "EventSent",
    "FieldProblem",
    "Graph",
    "Health",
    "InternalError",
    "InvalidInput",
    "Problem",
    "Run",
    "RunAccepted",
    "RunList",
    "Schedule",
    "ScheduleLink",
    "ScheduleList",
    "SendEvent",
    "StreamEnd",
    "StreamedEvent",
    "WorkflowInfo",
    "WorkflowList",
    "responses",
]
