"""The server's OpenAPI schema, typed per served workflow.

FastAPI builds the schema from the routes and their ``responses=`` (see
:mod:`batonflow.apps.api_models`). What it cannot know is added here, once, on first request:

- ``POST /workflows/{name}/runs`` reads its body itself, because the body depends on ``name``.
  Each served workflow gets its own path, ``POST /workflows/<name>/runs``, whose body is that
  workflow's start event schema (a concrete path wins over the templated one in OpenAPI, and both
  reach the same route here). The templated path stays for clients that build the name.
- ``POST /runs/{run_id}/events`` takes ``{"type", "data"}``: its body is one of the events the
  served workflows accept from outside, each with its fields' schema.
- ``GET /runs/{run_id}/events`` is ``text/event-stream``; the two message bodies are schemas of
  their own (``StreamedEvent``, ``StreamEnd``).
- A bearer security scheme, required on every route but ``/health`` when the server has a
  token (and no 401 answers documented when it has none). Without a token the server checks
  Host, Origin and Content-Type instead (400, 403, 415, see ``_security``); those answers are
  documented only then.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from ._introspect import external_events, start_event_class, start_schema
from .api_models import STATUS_TEXT, Graph, InvalidInput, StreamedEvent, StreamEnd

START_PATH = "/workflows/{name}/runs"
EVENTS_PATH = "/runs/{run_id}/events"
SCHEME = "bearerAuth"


def install_openapi(app: Any, workflows: dict[str, Any], token: str | None) -> None:
    """Make ``app.openapi()`` return the schema typed for ``workflows`` (built once, cached)."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            from fastapi.openapi.utils import get_openapi

            schema = get_openapi(
                title=app.title,
                version=app.version,
                description=app.description,
                routes=app.routes,
            )
            _type_schema(schema, workflows, token)
            app.openapi_schema = schema
        return dict(app.openapi_schema)

    app.openapi = openapi


#: Summaries of the server's own routes (FastAPI would title them after the functions).
SUMMARIES = {
    ("get", "/health"): "Liveness (never needs a token)",
    ("get", "/workflows"): "The served workflows, with their start-event schemas",
    ("get", "/workflows/{name}/graph"): "All possible flows as Mermaid text",
    ("post", START_PATH): "Start a run of any served workflow",
    ("get", "/runs"): "Runs, newest first, by workflow and status",
    ("get", "/runs/{run_id}"): "A run's status, result or error",
    ("get", EVENTS_PATH): "Follow a run's events (Server-Sent Events)",
    ("post", EVENTS_PATH): "Send an event into a run (answer a human request)",
    ("post", "/runs/{run_id}/cancel"): "Cancel a run",
}


def _type_schema(schema: dict[str, Any], workflows: dict[str, Any], token: str | None) -> None:
    for (method, path), summary in SUMMARIES.items():
        operation = schema["paths"].get(path, {}).get(method)
        if operation is not None:
            operation["summary"] = summary
    components = schema.setdefault("components", {})
    models = components.setdefault("schemas", {})
    paths = schema["paths"]
    if START_PATH in paths:
        _start_paths(paths, models, workflows)
    if EVENTS_PATH in paths:
        _event_bodies(paths[EVENTS_PATH], models, workflows)
    graph = paths.get("/workflows/{name}/graph", {}).get("get")
    if graph is not None:
        graph["responses"]["200"]["content"] = {
            "application/json": {"schema": _component(models, Graph)},
            "text/vnd.mermaid": {"schema": {"type": "string"}},
        }
    invalid_ref = _component(models, InvalidInput)
    models.pop("HTTPValidationError", None)
    models.pop("ValidationError", None)
    components["securitySchemes"] = {
        SCHEME: {
            "type": "http",
            "scheme": "bearer",
            "description": "The token the server was started with (--token, "
            "BATONFLOW_API_TOKEN); only needed when it has one.",
        }
    }
    for path, item in paths.items():
        for operation in item.values():
            invalid = operation["responses"].get("422")
            if invalid is not None:  # FastAPI's own 422 model: ours covers its shape too
                invalid["description"] = STATUS_TEXT[422][0]
                invalid["content"] = {"application/json": {"schema": invalid_ref}}
            answers = operation["responses"]
            if token:
                # With a token the token is the guard: no Host/Origin/Content-Type checks.
                answers.pop("415", None)
                if path != "/health":
                    operation["security"] = [{SCHEME: []}]
                else:
                    answers.pop("401", None)
            else:
                answers.pop("401", None)
                for code in (400, 403):  # HostGuard answers these on every route
                    text, model = STATUS_TEXT[code]
                    answers[str(code)] = {
                        "description": text,
                        "content": {"application/json": {"schema": _component(models, model)}},
                    }
            operation["responses"] = dict(sorted(answers.items()))


def _start_paths(paths: dict[str, Any], models: dict[str, Any], workflows: dict[str, Any]) -> None:
    generic = paths[START_PATH]["post"]
    generic["requestBody"] = {
        "required": False,
        "content": {
            "application/json": {
                "schema": {
                    "type": "object",
                    "additionalProperties": True,
                    "description": "The start event's fields. Each served workflow's own path, "
                    "POST /workflows/<name>/runs, has the schema of its start event.",
                }
            }
        },
    }
    for name in sorted(workflows):
        workflow = workflows[name]
        operation = copy.deepcopy(generic)
        operation["parameters"] = [
            p for p in operation.get("parameters", []) if p.get("name") != "name"
        ]
        operation["operationId"] = f"start_{_slug(name)}_run"
        operation["summary"] = f"Start a run of {name}"
        operation["description"] = (
            f"Start a run of {name} ({type(workflow).__name__}). The body is its start event's "
            "fields; 202 with the run id, or with ?wait=true 200 with the finished run."
        )
        ref = _hoist(models, start_schema(workflow), start_event_class(workflow).__name__, name)
        operation["requestBody"] = {
            "required": False,
            "content": {"application/json": {"schema": ref}},
        }
        paths[f"/workflows/{name}/runs"] = {"post": operation}


def _event_bodies(item: dict[str, Any], models: dict[str, Any], workflows: dict[str, Any]) -> None:
    from batonflow.core import HumanResponseEvent

    classes: dict[str, Any] = {HumanResponseEvent.__name__: HumanResponseEvent}
    for workflow in workflows.values():
        classes.update(external_events(workflow))
    choices = []
    for type_name, cls in sorted(classes.items()):
        data = _hoist(models, _event_schema(cls), type_name, "event")
        envelope = {
            "type": "object",
            "title": f"Send{type_name}",
            "properties": {"type": {"const": type_name}, "data": data},
            "required": ["type", "data"],
            "additionalProperties": False,
        }
        models[f"Send{type_name}"] = envelope
        choices.append({"$ref": f"#/components/schemas/Send{type_name}"})
    item["post"]["requestBody"] = {
        "required": True,
        "content": {
            "application/json": {
                "schema": {"oneOf": choices} if choices else {"type": "object"},
                "example": {"type": "HumanResponseEvent", "data": {"response": "yes"}},
            }
        },
    }
    stream = item["get"]["responses"]["200"]
    stream["description"] = (
        "Server-Sent Events: one `event: event` message per streamed event (data: "
        "StreamedEvent), then one `event: end` (data: StreamEnd); each message's `id:` is its "
        "sequence number, and Last-Event-ID or ?after=N resumes after it."
    )
    stream["content"] = {
        "text/event-stream": {
            "schema": {"type": "string"},
            "example": 'id: 1\nevent: event\ndata: {"seq": 1, "type": "Tick", ...}\n\n',
        }
    }
    _component(models, StreamedEvent)
    _component(models, StreamEnd)


def _event_schema(cls: Any) -> dict[str, Any]:
    try:
        schema: dict[str, Any] = cls.model_json_schema()
    except Exception:  # a field type without a JSON schema: say it is an object
        schema = {"type": "object", "title": cls.__name__}
    return schema


def _component(models: dict[str, Any], model: Any) -> dict[str, Any]:
    schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
    for name, sub in schema.pop("$defs", {}).items():
        models.setdefault(name, sub)
    models.setdefault(model.__name__, schema)
    return {"$ref": f"#/components/schemas/{model.__name__}"}


def _hoist(models: dict[str, Any], schema: dict[str, Any], name: str, owner: str) -> dict[str, Any]:
    """Put a pydantic JSON schema into ``components/schemas`` and return a ``$ref`` to it.

    Its ``$defs`` go beside it and ``#/$defs/X`` references are rewritten. When a name is taken
    by a different schema (two workflows' classes of one name), the owner (the workflow's
    name) is added to this schema's names.
    """
    schema = copy.deepcopy(schema)
    defs: dict[str, Any] = schema.pop("$defs", {})
    parts = {**defs, name: schema}
    renames = {part: _slug(part) for part in parts}
    if any(
        renames[part] in models and models[renames[part]] != _rewrite(sub, renames)
        for part, sub in parts.items()
    ):
        renames = {part: f"{_slug(part)}_{_slug(owner)}" for part in parts}
    for part, sub in parts.items():
        models[renames[part]] = _rewrite(sub, renames)
    return {"$ref": f"#/components/schemas/{renames[name]}"}


def _rewrite(node: Any, renames: dict[str, str]) -> Any:
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str) and value.startswith("#/$defs/"):
                target = value.removeprefix("#/$defs/")
                value = f"#/components/schemas/{renames.get(target, target)}"
            out[key] = _rewrite(value, renames)
        return out
    if isinstance(node, list):
        return [_rewrite(item, renames) for item in node]
    return node


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


__all__ = ["install_openapi"]
