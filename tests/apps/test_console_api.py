"""The typed OpenAPI schema and the console's routes, over real HTTP (uvicorn on 127.0.0.1)."""

from __future__ import annotations

import re

import httpx
import pytest
from batonflow.apps.run_console import RunSteps
from batonflow.apps.run_store import RunStore
from batonflow.apps.server import BackgroundServer, create_app
from batonflow.core import Context, Event, StartEvent, StopEvent, Workflow, step
from openapi_spec_validator import validate

from . import flows
from .conftest import served_flows
from .sse import read_sse, wait_status


def schema_of(client: httpx.Client) -> dict:
    response = client.get("/openapi.json")
    assert response.status_code == 200, response.text
    return response.json()


def resolve(spec: dict, node: dict) -> dict:
    while "$ref" in node:
        node = spec["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
    return node


@pytest.mark.parametrize("token", [None, "s3cret"], ids=["open", "token"])
def test_schema_is_valid_openapi(start_server, token):
    """/openapi.json passes openapi-spec-validator, with and without a token."""
    _, client = start_server(token=token)
    if token:
        client.headers["Authorization"] = f"Bearer {token}"
    spec = schema_of(client)
    validate(spec)
    assert spec["openapi"].startswith("3.")


def test_every_workflow_has_a_start_path_typed_by_its_start_event(client):
    """POST /workflows/<name>/runs exists per workflow, its body the start event's schema."""
    spec = schema_of(client)
    for name in served_flows():
        assert f"/workflows/{name}/runs" in spec["paths"], name
    typed = spec["paths"]["/workflows/typed/runs"]["post"]
    assert not [p for p in typed.get("parameters", []) if p["name"] == "name"]
    body = resolve(spec, typed["requestBody"]["content"]["application/json"]["schema"])
    assert body["title"] == "Numbers"
    assert body["required"] == ["n"]
    assert body["properties"]["n"]["type"] == "integer"
    assert body["additionalProperties"] is False
    echo = spec["paths"]["/workflows/echo/runs"]["post"]
    open_body = resolve(spec, echo["requestBody"]["content"]["application/json"]["schema"])
    assert open_body["additionalProperties"] is True
    # The responses are typed: 202 the run just started, 200 (wait=true) the run as it ended.
    accepted = resolve(spec, typed["responses"]["202"]["content"]["application/json"]["schema"])
    assert {"run_id", "status", "workflow", "start", "created_at", "created"} <= set(
        accepted["required"]
    )
    assert accepted["properties"]["created_at"]["format"] == "date-time"
    assert accepted["properties"]["created"]["type"] == "number"
    finished = resolve(spec, typed["responses"]["200"]["content"]["application/json"]["schema"])
    assert {"result", "error", "waiting_for_input"} <= set(finished["properties"])


def test_send_event_body_is_one_of_the_accepted_events(client):
    """POST /runs/{id}/events takes one of the outside events, with its fields' schema."""
    spec = schema_of(client)
    body = spec["paths"]["/runs/{run_id}/events"]["post"]["requestBody"]
    choices = body["content"]["application/json"]["schema"]["oneOf"]
    names = sorted(c["$ref"].rsplit("/", 1)[1] for c in choices)
    assert names == ["SendGuess", "SendHumanResponseEvent"]
    guess = spec["components"]["schemas"]["SendGuess"]
    assert guess["properties"]["type"] == {"const": "Guess"}
    data = resolve(spec, guess["properties"]["data"])
    assert data["properties"]["value"]["type"] == "integer"
    stream = spec["paths"]["/runs/{run_id}/events"]["get"]["responses"]["200"]["content"]
    assert list(stream) == ["text/event-stream"]
    assert {"StreamedEvent", "StreamEnd"} <= set(spec["components"]["schemas"])


def test_bearer_scheme_is_required_on_every_route_but_health(start_server):
    """With a token every operation but /health needs bearerAuth; 401 is documented there."""
    _, client = start_server(token="s3cret")
    client.headers["Authorization"] = "Bearer s3cret"
    spec = schema_of(client)
    assert spec["components"]["securitySchemes"]["bearerAuth"] == {
        "type": "http",
        "scheme": "bearer",
        "description": spec["components"]["securitySchemes"]["bearerAuth"]["description"],
    }
    for path, item in spec["paths"].items():
        for method, operation in item.items():
            if path == "/health":
                assert "security" not in operation and "401" not in operation["responses"]
            else:
                assert operation["security"] == [{"bearerAuth": []}], (method, path)
                assert "401" in operation["responses"], (method, path)


def test_without_a_token_no_security_and_no_401_is_documented(client):
    """A server without a token documents no 401 and requires no scheme, but its Host checks."""
    spec = schema_of(client)
    for item in spec["paths"].values():
        for operation in item.values():
            assert "security" not in operation
            assert "401" not in operation["responses"]
            assert {"400", "403"} <= set(operation["responses"])


def test_without_a_token_the_host_origin_and_json_answers_are_documented(start_server):
    """Without a token, a foreign Host (400), Origin (403) and a text body (415) are documented."""
    base, client = start_server()
    spec = schema_of(client)
    requests = [
        ("get", "/runs", {"host": "evil.example"}, None, 400),
        ("post", "/workflows/echo/runs", {"origin": "http://evil.example"}, "{}", 403),
        ("post", "/workflows/echo/runs", {"content-type": "text/plain"}, "{}", 415),
        ("post", "/runs/nope/cancel", {"content-type": "text/plain"}, "{}", 415),
    ]
    for method, url, headers, body, expected in requests:
        response = httpx.request(method, base + url, headers=headers, content=body)
        assert response.status_code == expected, (url, headers, response.text)
        assert str(expected) in _operation(spec, method, url)["responses"], (url, expected)
    token_spec = start_server(token="t")[1].get(
        "/openapi.json", headers={"Authorization": "Bearer t"}
    )
    for item in token_spec.json()["paths"].values():
        for operation in item.values():
            assert not {"400", "403", "415"} & set(operation["responses"])


def _operation(spec: dict, method: str, url: str) -> dict:
    """The operation a request reaches: a concrete path first, else the templated one."""
    path = url.split("?", 1)[0]
    if path in spec["paths"] and method in spec["paths"][path]:
        return spec["paths"][path][method]
    for template, item in spec["paths"].items():
        pattern = "^" + re.sub(r"\{[^}]+\}", "[^/]+", template) + "$"
        if re.match(pattern, path) and method in item:
            return item[method]
    raise AssertionError(f"{method.upper()} {path} is not in the schema")


def test_every_status_the_server_answers_is_documented(start_server):
    """Each answer's status code, for a table of real requests, is in its operation's responses."""
    base, client = start_server(token="s3cret", max_body_bytes=2000)
    auth = {"Authorization": "Bearer s3cret"}
    client.headers.update(auth)
    spec = schema_of(client)
    done = client.post("/workflows/echo/runs?wait=true", json={"a": 1}).json()["run_id"]
    waiting = client.post("/workflows/approval/runs", json={}).json()["run_id"]
    wait_status(client, waiting, {"waiting"})
    sleepy = client.post("/workflows/sleepy/runs", json={"seconds": 60}).json()["run_id"]
    answer = {"type": "HumanResponseEvent", "data": {"response": "ok"}}
    requests = [
        ("get", "/health", None, 200),
        ("get", "/workflows", None, 200),
        ("get", "/workflows/echo/graph", None, 200),
        ("get", "/workflows/echo/graph?format=bogus", None, 422),
        ("get", "/workflows/nope/graph", None, 404),
        ("post", "/workflows/echo/runs", {}, 202),
        ("post", "/workflows/echo/runs?wait=true", {}, 200),
        ("post", "/workflows/nope/runs", {}, 404),
        ("post", "/workflows/typed/runs", {"n": "x"}, 422),
        ("post", "/workflows/echo/runs", {"x": "y" * 3000}, 413),
        ("get", "/runs", None, 200),
        ("get", "/runs?status=bogus", None, 422),
        ("get", f"/runs/{done}", None, 200),
        ("get", "/runs/nope", None, 404),
        ("get", "/runs/nope/events", None, 404),
        ("get", f"/runs/{done}/events?after=-1", None, 422),
        ("get", f"/runs/{done}/events", None, 200),
        ("post", f"/runs/{waiting}/events", {"type": "nope"}, 422),
        ("post", f"/runs/{waiting}/events", answer, 202),
        ("post", f"/runs/{done}/events", answer, 409),
        ("post", "/runs/nope/events", answer, 404),
        ("post", f"/runs/{sleepy}/cancel", None, 200),
        ("post", f"/runs/{done}/cancel", None, 409),
        ("post", "/runs/nope/cancel", None, 404),
        ("get", "/workflows/echo/drawing", None, 200),
        ("get", "/workflows/nope/drawing", None, 404),
        ("get", f"/runs/{done}/drawing", None, 200),
        ("get", f"/runs/{done}/drawing?format=svg", None, 422),
        ("get", f"/runs/{done}/steps", None, 200),
        ("get", f"/runs/{done}/state", None, 200),
        ("get", "/runs/nope/state", None, 404),
    ]
    for method, url, body, expected in requests:
        response = client.request(method, url, json=body)
        assert response.status_code == expected, (method, url, response.text)
        documented = _operation(spec, method, url)["responses"]
        assert str(expected) in documented, (method, url, expected, sorted(documented))
    unauthorized = httpx.get(f"{base}/runs")
    assert unauthorized.status_code == 401
    assert "401" in _operation(spec, "get", "/runs")["responses"]


def test_pages_and_assets_need_no_token_but_the_api_does(start_server):
    """/, /docs, /redoc and /assets/* answer without a token; the schema and data do not."""
    url, _ = start_server(token="s3cret")
    for path in ["/", "/docs", "/redoc", "/assets/console.js", "/assets/swagger-ui-bundle.js"]:
        response = httpx.get(url + path)
        assert response.status_code == 200, path
    page = httpx.get(url + "/")
    assert 'data-token="required"' in page.text
    assert "default-src 'self'" in page.headers["content-security-policy"]
    for path in ["/openapi.json", "/runs", "/workflows/echo/drawing"]:
        assert httpx.get(url + path).status_code == 401, path


@pytest.mark.parametrize("name", ["nope.js", "console.py", "__init__.py", "index.html"])
def test_only_the_pages_files_are_served_as_assets(client, name):
    """An asset name that is not one of the pages' files is a 404 naming the ones there are."""
    response = client.get(f"/assets/{name}")
    assert response.status_code == 404
    assert "console.js" in response.json()["detail"]


def test_asset_paths_cannot_leave_the_assets(client):
    """A path that climbs out of /assets/ reaches no file."""
    for path in [
        "/assets/..%2F__init__.py",
        "/assets/../run_console.py",
        "/assets/%2e%2e/server.py",
    ]:
        response = client.get(path)
        assert response.status_code == 404, path
        assert "import" not in response.text


def test_pages_load_nothing_from_elsewhere(client):
    """The pages and their files name no other host (ReDoc's CDN logo is replaced)."""
    for path in ["/", "/docs", "/redoc"]:
        page = client.get(path).text
        assert not re.search(r"(src|href)=\"(https?:)?//", page), path
    redoc = client.get("/assets/redoc.standalone.js").text
    assert "cdn.redoc.ly" not in redoc
    assert "fonts.googleapis" not in client.get("/redoc").text


def test_run_drawing_steps_and_state_show_what_ran(client):
    """A finished run's drawing highlights its steps; steps have times; state is its store."""
    run_id = client.post("/workflows/approval/runs", json={"topic": "the plan"}).json()["run_id"]
    wait_status(client, run_id, {"waiting"})
    waiting_steps = client.get(f"/runs/{run_id}/steps").json()["steps"]
    assert [s["step"] for s in waiting_steps] == ["ask"]
    client.post(
        f"/runs/{run_id}/events", json={"type": "HumanResponseEvent", "data": {"response": "yes"}}
    )
    wait_status(client, run_id, {"completed"})
    steps = client.get(f"/runs/{run_id}/steps").json()
    assert [(s["step"], s["input_event"], s["output_events"]) for s in steps["steps"]] == [
        ("ask", "StartEvent", ["InputRequiredEvent"]),
        ("decide", "HumanResponseEvent", ["StopEvent"]),
    ]
    assert all(s["duration"] >= 0 and s["finished_at"] >= s["started_at"] for s in steps["steps"])
    page = client.get(f"/runs/{run_id}/drawing")
    assert page.headers["content-type"].startswith("text/html")
    assert "<svg" in page.text and "Recorded run" in page.text
    mermaid = client.get(f"/runs/{run_id}/drawing", params={"format": "mermaid"}).text
    assert mermaid.startswith("flowchart")
    assert "#1" in mermaid and "#2" in mermaid  # both steps numbered in order
    assert client.get(f"/runs/{run_id}/state").json() == {
        "run_id": run_id,
        "state": {"topic": "the plan"},
    }


def test_steps_of_a_run_from_before_a_restart_are_a_404_that_says_so(tmp_path):
    """After a restart the run is readable but its steps are not recorded: a clear 404."""
    store_path = tmp_path / "runs.db"
    with BackgroundServer(create_app(served_flows(), store=RunStore(store_path))) as first:
        run_id = httpx.post(f"{first.url}/workflows/echo/runs?wait=true", json={}).json()["run_id"]
    with BackgroundServer(create_app(served_flows(), store=RunStore(store_path))) as second:
        assert httpx.get(f"{second.url}/runs/{run_id}").json()["status"] == "completed"
        for route in ("drawing", "steps", "state"):
            response = httpx.get(f"{second.url}/runs/{run_id}/{route}")
            assert response.status_code == 404
            assert "no record of the steps" in response.json()["detail"]
        assert len(read_sse(httpx.Client(base_url=second.url), f"/runs/{run_id}/events")) == 2


class Bump(Event):
    n: int


class CountFlow(Workflow):
    """Bumps a counter ``times`` times through a loop of steps."""

    @step
    async def begin(self, ctx: Context, ev: StartEvent) -> Bump:
        await ctx.store.set("times", ev.get("times", 3))
        return Bump(n=0)

    @step
    async def bump(self, ctx: Context, ev: Bump) -> Bump | StopEvent:
        if ev.n + 1 >= await ctx.store.get("times"):
            return StopEvent(result=ev.n + 1)
        return Bump(n=ev.n + 1)


async def test_recorded_runs_and_steps_are_bounded():
    """RunSteps forgets the oldest runs past kept_runs and counts the steps past kept_steps."""
    steps = RunSteps(kept_runs=2, kept_steps=4)
    workflow = CountFlow()
    steps.watch(workflow)
    handlers = []
    for times in (2, 3, 10):
        handlers.append(workflow.run(times=times))
        await handlers[-1]
    first, second, third = (str(h.run_id) for h in handlers)
    assert steps.get(first) is None
    kept = steps.get(second)
    assert kept is not None and [s.step for s in kept.steps] == ["begin", "bump", "bump", "bump"]
    long = steps.get(third)
    assert long is not None and len(long.steps) == 4 and long.dropped == 7


def test_steps_of_a_resumed_waiting_run_are_recorded_from_the_resume(tmp_path):
    """A waiting run restored after a restart records the steps it takes from then on."""
    store_path = tmp_path / "runs.db"
    with BackgroundServer(create_app(served_flows(), store=RunStore(store_path))) as first:
        http = httpx.Client(base_url=first.url)
        run_id = http.post("/workflows/approval/runs", json={"topic": "t"}).json()["run_id"]
        wait_status(http, run_id, {"waiting"})
    with BackgroundServer(create_app(served_flows(), store=RunStore(store_path))) as second:
        http = httpx.Client(base_url=second.url)
        answer = {"type": "HumanResponseEvent", "data": {"response": "ok"}}
        assert http.post(f"/runs/{run_id}/events", json=answer).status_code == 202
        wait_status(http, run_id, {"completed"})
        assert [s["step"] for s in http.get(f"/runs/{run_id}/steps").json()["steps"]] == ["decide"]


def test_flows_module_is_served_unchanged():
    """The console adds one step listener per served workflow and no other change (the
    other listener is the run store's checkpointer, which records every served run)."""
    workflow = flows.EchoFlow()
    create_app({"echo": workflow})
    # The run store's checkpointer listens too (it records each run); the console adds one.
    console = [f for f in workflow._listeners if "RunSteps" in getattr(f, "__qualname__", "")]
    assert len(console) == 1
