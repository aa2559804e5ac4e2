"""What a waiting run waits for, and the check of an event sent to a run before it is taken.

A run asks with a question (an ``InputRequiredEvent``: returned by a step, or the
``waiter_event`` of ``ctx.wait_for_event``). The run store logs the question with what the
run's waiting steps wait for then (its ``waiting_for``: the event type and ``requirements``
of each ``wait_for_event``); the steps that accept an event from outside wait for it too. An
event sent over HTTP is checked against both before it is committed, by any server on the
store (also a replica that does not run the run): one the run would not take gets a 422 that
says what the run waits for, and the run keeps waiting with its question.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field
from typing import Any

from ._introspect import external_events
from .run_store import RunRow, RunStore

_MISSING: Any = object()


class Refused(Exception):
    """An event sent to a run that it would not take: ``status`` and the JSON ``body``."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        super().__init__(body["detail"])
        self.status = status
        self.body = body


@dataclass(frozen=True, slots=True)
class Expected:
    """One event a run waits for: a step in ``wait_for_event``, or a step that takes it.

    Attributes:
        type_name: The event class's name (what ``{"type": ...}`` names).
        qualified_name: ``module.QualName`` of the class.
        cls: The class, or ``None`` when this process has not loaded it.
        steps: The waiting (or accepting) steps.
        waiter_id: The ``wait_for_event``'s id (``None`` for a step that accepts it).
        requirements: Field values the event must have.
    """

    type_name: str
    qualified_name: str
    cls: Any
    steps: tuple[str, ...]
    waiter_id: str | None = None
    requirements: dict[str, Any] = field(default_factory=dict)

    def takes(self, event: Any) -> bool:
        """Whether ``event`` is of this type and has the required values."""
        if self.cls is None or not isinstance(event, self.cls):
            return False
        return all(_same(event.get(k, _MISSING), v) for k, v in self.requirements.items())

    def example(self) -> dict[str, Any]:
        """A request body that answers it (``"..."`` where a value is the sender's)."""
        data: dict[str, Any] = {}
        if self.cls is not None:
            for name, info in self.cls.model_fields.items():
                if info.is_required() or name == "response":
                    # A value of the field's type where it has a plain one, else "...".
                    data[name] = {int: 0, float: 0.0, bool: False}.get(info.annotation, "...")
        data.update(self.requirements)
        return {"type": self.type_name, "data": data}

    def text_field(self) -> str:
        """The field a text answer goes in: ``response``, or else the one required field
        the requirements leave open."""
        fields = self.cls.model_fields if self.cls is not None else {}
        if "response" in fields:
            return "response"
        free = [
            n for n, info in fields.items() if info.is_required() and n not in self.requirements
        ]
        return free[0] if len(free) == 1 else "response"

    def describe(self) -> str:
        """``HumanResponseEvent with tool='transfer' (step call_tool)``."""
        text = self.type_name
        if self.requirements:
            text += " with " + ", ".join(f"{k}={v!r}" for k, v in self.requirements.items())
        where = "step" if len(self.steps) == 1 else "steps"
        return f"{text} ({where} {', '.join(self.steps)})" if self.steps else text

    def public(self) -> dict[str, Any]:
        """As ``GET /runs/{id}`` shows it: the type, requirements, schema and an example."""
        return {
            "type": self.type_name,
            "qualified_name": self.qualified_name,
            "steps": list(self.steps),
            "waiter_id": self.waiter_id,
            "requirements": self.requirements,
            "schema": self.schema(),
            "example": self.example(),
        }

    def schema(self) -> dict[str, Any]:
        """The JSON schema of the event's fields; a required value is its one choice."""
        schema: dict[str, Any] = {"type": "object", "title": self.type_name, "properties": {}}
        if self.cls is not None:
            with contextlib.suppress(Exception):  # a field type without a JSON schema
                schema = self.cls.model_json_schema()
        props = schema.setdefault("properties", {})
        for key, value in self.requirements.items():
            props[key] = {
                "title": key,
                "enum": [value],
                "default": value,
                "description": "The value the waiting step requires.",
            }
            if key not in schema.setdefault("required", []):
                schema["required"].append(key)
        from batonflow.core import HumanResponseEvent

        answers = self.cls is HumanResponseEvent  # the server requires its response
        if answers and "response" in props and "response" not in schema.setdefault("required", []):
            schema["required"].insert(0, "response")
        return schema


def _same(value: Any, wanted: Any) -> bool:
    """Whether an event's field ``value`` equals a required value as stored (JSON)."""
    if value is _MISSING:
        return False
    if value == wanted:
        return True
    from ._wire import jsonable

    try:
        return bool(jsonable(value) == wanted)
    except (ValueError, RecursionError):
        return False


def question(store: RunStore, row: RunRow) -> dict[str, Any] | None:
    """The body of the question a waiting run asked last (its event-log entry), or ``None``."""
    if row.status != "waiting" or row.waiting_seq is None:
        return None
    for entry in store.events(row.run_id, row.waiting_seq - 1):
        if entry.seq == row.waiting_seq:
            return entry.body
        break
    return None


def is_question(handler: Any, event: Any) -> bool:
    """Whether a streamed ``event`` asks for input: an ``InputRequiredEvent``, or the
    ``waiter_event`` a step waiting in ``ctx.wait_for_event`` asked with (the run store
    records the same as questions)."""
    from batonflow.core import InputRequiredEvent

    if isinstance(event, InputRequiredEvent):
        return True
    run = getattr(handler, "_run", None)
    waiters = getattr(run, "waiters", None) or {}
    return any(getattr(w, "question", None) is event for w in waiters.values())


def asked_in(ctx: Any) -> dict[str, Any]:
    """A question's body as the store logs it, from a run in this process (its waits)."""
    return {
        "waiting_for": [
            {
                "step": w.step,
                "type": w.type_name.rpartition(".")[2],
                "qualified_name": w.type_name,
                "waiter_id": w.waiter_id,
                "requirements": w.requirements,
            }
            for w in ctx.waiting_for()
        ]
    }


def expected(workflow: Any, asked: dict[str, Any] | None, live: Any = None) -> list[Expected]:
    """What a run of ``workflow`` that asked ``asked`` (a question's body) waits for.

    ``live`` is the run's handler when it runs in this process: the classes of its waits
    are taken from it, and a wait that has ended there (it timed out) is left out.
    """
    from batonflow.core import HumanResponseEvent
    from batonflow.core.data.events import Event, loaded_class
    from batonflow.core.graph import workflow_graph

    classes: dict[str, Any] | None = None
    if live is not None:
        classes = {w.waiter_id: w.event_type for w in live.ctx.waiting_for()}
    found: list[Expected] = []
    for wait in (asked or {}).get("waiting_for") or []:
        if not isinstance(wait, dict):
            continue
        if classes is not None and wait.get("waiter_id") not in classes:
            continue  # its wait has ended
        name = str(wait.get("qualified_name", ""))
        cls = (classes or {}).get(wait.get("waiter_id")) or loaded_class(name)
        if not (isinstance(cls, type) and issubclass(cls, Event)):
            cls = None
        requirements = wait.get("requirements")
        found.append(
            Expected(
                str(wait.get("type") or name.rpartition(".")[2]),
                name,
                cls,
                (str(wait.get("step")),),
                str(wait.get("waiter_id")),
                requirements if isinstance(requirements, dict) else {},
            )
        )
    shapes = list(workflow_graph(workflow).values())
    for type_name, cls in sorted(external_events(workflow).items()):
        steps = tuple(s.name for s in shapes if any(issubclass(cls, a) for a in s.accepts))
        found.append(Expected(type_name, f"{cls.__module__}.{cls.__qualname__}", cls, steps or ()))
    if asked is not None and "waiting_for" not in asked and not found:
        # A question logged before questions recorded their waits: answer as before.
        cls = HumanResponseEvent
        found.append(Expected(cls.__name__, f"{cls.__module__}.{cls.__qualname__}", cls, ()))
    return found


def answer_from_text(expects: list[Expected], text: str) -> Any:
    """The event that answers with ``text`` (the CLI's ``--answer``) what a run waits for.

    ``text`` is the ``response`` of the first awaited event, whose required values are filled
    in; a JSON object gives the event's fields instead.

    Raises:
        ValueError: Nothing that waits can be answered so (the message says what waits).
    """
    from pydantic import ValidationError

    usable = [e for e in expects if e.cls is not None]
    if not usable:
        raise ValueError(
            "The run asks for input but waits for no event this process can build; answer it "
            "where it runs (the console, POST /runs/{id}/events)."
        )
    first = usable[0]
    given: Any = None
    if text.lstrip().startswith("{"):
        try:
            given = json.loads(text)
        except ValueError:
            given = None
    data = given if isinstance(given, dict) else {first.text_field(): text}
    try:
        return first.cls.model_validate({**first.requirements, **data})
    except ValidationError as exc:
        problem = _validation_detail(exc, ())["detail"]
        raise ValueError(
            f"The run waits for {first.describe()}; the answer {text!r} does not fit it "
            f"({problem}); give its fields as a JSON object, e.g. "
            f"--answer '{json.dumps(first.example()['data'], ensure_ascii=False)}'."
        ) from None


def waiting_info(store: RunStore, row: RunRow, workflow: Any, live: Any = None) -> dict[str, Any]:
    """``question`` and ``waiting_for`` of a run, as ``GET /runs/{id}`` adds them."""
    asked = question(store, row)
    if asked is None or workflow is None:
        return {"question": None, "waiting_for": None}
    return {
        "question": {
            "seq": asked.get("seq"),
            "type": asked.get("type"),
            "value": asked.get("value"),
        },
        "waiting_for": [e.public() for e in expected(workflow, asked, live)],
    }


def check_event(
    run_id: str, row: RunRow, workflow: Any, body: dict[str, Any], store: RunStore, live: Any
) -> tuple[Any, bool]:
    """The event that ``body`` (``{"type", "data"}``) sends to the run, and whether it is
    the answer to the run's question.

    Raises:
        Refused: The run would not take it (422: a type, field or value it does not wait
            for; 409: an answer to a run that waits for none now). Nothing was committed.
    """
    from batonflow.core import HumanResponseEvent

    asked = question(store, row)
    expects = expected(workflow, asked, live)
    waiting = asked is not None
    if waiting and not expects:
        raise Refused(
            409,
            {
                "detail": f"Run {run_id!r} asked a question, but no step waits for its answer "
                "any more (the wait ended: it timed out) and the run goes on without it; "
                "send nothing, or answer its next question."
            },
        )
    type_name = body.get("type")
    if not isinstance(type_name, str) or not type_name:
        raise Refused(
            422,
            _problem(
                "Field 'type' is missing: name the event type"
                + (f"; run {run_id!r} {_waits_for(expects)}" if waiting else _one_of(expects)),
                ["body", "type"],
                "Field required",
                "missing",
                expects if waiting else None,
            ),
        )
    candidates = [e for e in expects if e.type_name == type_name]
    cls = next((e.cls for e in candidates if e.cls is not None), None)
    if cls is None:
        raise _unknown_type(run_id, row, type_name, expects, candidates, waiting)
    data = body.get("data", {})
    if not isinstance(data, dict):
        raise Refused(
            422,
            _problem(
                "Field 'data' must be a JSON object of the event's fields.",
                ["body", "data"],
                "Input should be an object",
                "dict_type",
            ),
        )
    allowed = {key for e in candidates for key in e.requirements}
    problem = _fields_problem(cls, data, allowed)
    if problem is not None:
        raise Refused(422, problem)
    from pydantic import ValidationError

    try:
        event = cls.model_validate(data)
    except ValidationError as exc:
        raise Refused(422, _validation_detail(exc, ("body", "data"))) from None
    if not any(e.takes(event) for e in candidates):
        raise Refused(422, _mismatch(run_id, event, candidates, expects))
    return event, waiting or isinstance(event, HumanResponseEvent)


def _waits_for(expects: list[Expected]) -> str:
    """``waits for A (step s): send {...}.``"""
    if len(expects) == 1:
        (only,) = expects
        return (
            f"waits for {only.describe()}: send {json.dumps(only.example(), ensure_ascii=False)}."
        )
    listed = "; ".join(e.describe() for e in expects)
    return (
        f"waits for one of: {listed}. Send one, e.g. "
        f"{json.dumps(expects[0].example(), ensure_ascii=False)} "
        "(GET /runs/{id} shows each one's fields)."
    )


def _one_of(expects: list[Expected]) -> str:
    names = sorted({e.type_name for e in expects})
    return f", one of {', '.join(names) or 'none'}."


def _unknown_type(
    run_id: str,
    row: RunRow,
    type_name: str,
    expects: list[Expected],
    candidates: list[Expected],
    waiting: bool,
) -> Refused:
    if candidates:  # it waits for that type, but this server has not loaded its class
        (first, *_) = candidates
        return Refused(
            422,
            _problem(
                f"Run {run_id!r} waits for {first.describe()}, whose class "
                f"{first.qualified_name} this server has not loaded; send the answer to the "
                "server that runs it, or serve the workflow from the module that defines "
                "that class.",
                ["body", "type"],
                "Unknown event type",
                "value_error",
                expects,
            ),
        )
    if waiting:
        detail = (
            f"Run {run_id!r} accepts no event named {type_name!r} now: it {_waits_for(expects)}"
        )
        return Refused(
            422, _problem(detail, ["body", "type"], "Unknown event type", "value_error", expects)
        )
    from batonflow.core import HumanResponseEvent

    if type_name == HumanResponseEvent.__name__:
        return Refused(
            409,
            {
                "detail": f"Run {run_id!r} is {row.status} and waits for no answer now; answer "
                "when its status is 'waiting' (GET /runs/{id} then shows what it waits for)."
            },
        )
    return Refused(
        422,
        _problem(
            f"Workflow {row.workflow!r} accepts no event named {type_name!r} from outside; "
            f"send one of: {', '.join(sorted({e.type_name for e in expects})) or 'none'}.",
            ["body", "type"],
            "Unknown event type",
            "value_error",
        ),
    )


def _mismatch(
    run_id: str, event: Any, candidates: list[Expected], expects: list[Expected]
) -> dict[str, Any]:
    """The 422 of an event of an awaited type without the values its waiting step requires."""
    wrong = []
    for e in candidates:
        for key, value in e.requirements.items():
            got = event.get(key, _MISSING)
            if not _same(got, value):
                wrong.append((key, value, got))
    has = "; ".join(
        f"it has no {key!r}" if got is _MISSING else f"its {key} is {got!r}, not {value!r}"
        for key, value, got in wrong
    )
    detail = (
        f"This {type(event).__name__} answers no waiting step of run {run_id!r} ({has}); "
        f"the run {_waits_for(candidates)}"
    )
    errors = [
        {
            "loc": ["body", "data", key],
            "msg": f"The waiting step requires {value!r}",
            "type": "value_error",
        }
        for key, value, _ in wrong
    ]
    return {"detail": detail, "errors": errors, "waiting_for": [e.public() for e in expects]}


def _problem(
    detail: str,
    loc: list[str],
    msg: str,
    kind: str,
    expects: list[Expected] | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {"detail": detail, "errors": [{"loc": loc, "msg": msg, "type": kind}]}
    if expects is not None:
        body["waiting_for"] = [e.public() for e in expects]
    return body


def _validation_detail(exc: Any, prefix: tuple[str, ...]) -> dict[str, Any]:
    """A 422 body naming every bad field, from a pydantic ``ValidationError``."""
    errors = []
    for err in exc.errors(include_url=False, include_context=False, include_input=False):
        loc = [*prefix, *(str(part) for part in err["loc"])]
        errors.append({"loc": loc, "msg": err["msg"], "type": err["type"]})
    first = errors[0] if errors else {"loc": list(prefix), "msg": "invalid"}
    name = ".".join(first["loc"][len(prefix) :]) or "body"
    return {"detail": f"Invalid field {name!r}: {first['msg']}.", "errors": errors}


def _fields_problem(cls: Any, data: dict[str, Any], allowed: set[str]) -> dict[str, Any] | None:
    """A 422 body when ``data`` does not fit the declared fields of the event class ``cls``.

    Events take extra fields in Python, but over HTTP a field the event does not declare is
    a typo (unless a waiting step requires it), and a ``HumanResponseEvent`` without its
    ``response`` would answer with "".
    """
    from batonflow.core import HumanResponseEvent

    known = [*cls.model_fields, *sorted(allowed - set(cls.model_fields))]
    example = ", ".join(f'"{name}": ...' for name in known) or "..."
    unknown = [key for key in data if key not in known]
    if cls.model_fields and unknown:
        return {
            "detail": f"{cls.__name__} has no field {unknown[0]!r}; its fields are "
            f'{", ".join(known)}: send {{"type": "{cls.__name__}", "data": '
            f"{{{example}}}}}.",
            "errors": [
                {
                    "loc": ["body", "data", key],
                    "msg": "Extra inputs are not permitted",
                    "type": "extra_forbidden",
                }
                for key in unknown
            ],
        }
    if cls is HumanResponseEvent and "response" not in data:
        return {
            "detail": "HumanResponseEvent needs 'response', the human's answer: send "
            '{"type": "HumanResponseEvent", "data": {"response": "..."}}.',
            "errors": [
                {"loc": ["body", "data", "response"], "msg": "Field required", "type": "missing"}
            ],
        }
    return None


__all__ = [
    "Expected",
    "Refused",
    "answer_from_text",
    "asked_in",
    "check_event",
    "expected",
    "is_question",
    "question",
    "waiting_info",
]
