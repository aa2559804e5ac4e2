"""batonflow.client.Client against a real uvicorn server over real HTTP."""

from __future__ import annotations

import datetime as dt
import re
import socket

import httpx
import pytest
from batonflow.client import (
    AuthenticationError,
    Client,
    ConflictError,
    InvalidRequestError,
    NotFoundError,
    RetryPolicy,
    Run,
    ServerUnavailableError,
)

from .proxy import cutting_proxy

#: Retries that come back at once, for tests that break connections on purpose.
QUICK = RetryPolicy(first_delay=0.01)


@pytest.fixture
def server_url(start_server) -> str:
    return start_server()[0]


@pytest.fixture
def api(server_url):
    with Client(server_url, retry=QUICK) as client:
        yield client


def test_start_with_wait_returns_the_finished_run(api):
    """start(wait=True) returns the completed run with its result and start fields."""
    run = api.start("echo", {"a": 1}, b="two", wait=True)
    assert isinstance(run, Run)
    assert (run.status, run.done, run.result) == ("completed", True, {"a": 1, "b": "two"})
    assert run.workflow == "echo" and run.start == {"a": 1, "b": "two"}
    assert api.get(run.run_id).result == {"a": 1, "b": "two"}


def test_list_filters_by_workflow_and_status(api):
    """list() returns runs newest first, filtered by workflow and status."""
    first = api.start("echo", {"n": 1}, wait=True)
    second = api.start("echo", {"n": 2}, wait=True)
    waiting = api.start("approval", {"topic": "x"})
    ids = [r.run_id for r in api.list(workflow="echo")]
    assert ids[:2] == [second.run_id, first.run_id]
    assert waiting.run_id not in ids
    with pytest.raises(InvalidRequestError, match="Unknown status 'bogus'; use one of running"):
        api.list(status="bogus")


def test_events_stream_every_event_once_then_the_end(api):
    """events() yields the run's events in order, numbered from 1, ending with the end message."""
    run = api.start("ticks", {"count": 4, "delay": 0.01})
    events = list(api.events(run.run_id))
    assert [e.seq for e in events] == [1, 2, 3, 4, 5, 6]
    assert [e.value.get("n") for e in events[:4]] == [1, 2, 3, 4]
    assert events[4].type == "StopEvent"
    assert events[-1].is_end and events[-1].status == "completed"
    assert [e.seq for e in api.events(run.run_id, after=4)] == [5, 6]


def test_answer_finishes_a_waiting_run_and_a_late_answer_conflicts(api):
    """answer() sends the human's response; answering an ended run is a ConflictError."""
    run = api.start("approval", {"topic": "release"})
    for event in api.events(run.run_id):
        if event.type == "InputRequiredEvent":
            api.answer(run.run_id, "approved")
    done = api.get(run.run_id)
    assert (done.status, done.result) == ("completed", "release: approved")
    with pytest.raises(ConflictError, match="events can only be sent to a run in progress"):
        api.answer(run.run_id, "again")


def test_send_event_with_typed_fields(api):
    """send_event() posts an outside event type the workflow declares, with its fields."""
    run = api.start("guess")
    for event in api.events(run.run_id):
        if event.type == "InputRequiredEvent":
            with pytest.raises(InvalidRequestError, match="accepts no event named 'Nope'"):
                api.send_event(run.run_id, "Nope", {})
            api.send_event(run.run_id, "Guess", {"value": 7, "response": ""})
    assert api.get(run.run_id).status == "completed"


def test_cancel_a_running_run(api):
    """cancel() ends a run in progress as cancelled; cancelling it again is a conflict."""
    run = api.start("sleepy", {"seconds": 30})
    cancelled = api.cancel(run.run_id)
    assert cancelled.status == "cancelled" and cancelled.done
    with pytest.raises(ConflictError):
        api.cancel(run.run_id)


def test_wait_times_out_on_a_run_that_goes_on(api):
    """wait(timeout=) raises TimeoutError naming the run while it is still in progress."""
    run = api.start("sleepy", {"seconds": 30})
    with pytest.raises(TimeoutError, match=f"Run '{run.run_id}' is still running after 0.1 s"):
        api.wait(run.run_id, timeout=0.1)
    api.cancel(run.run_id)


@pytest.mark.parametrize(
    "call, error, message",
    [
        pytest.param(
            lambda c: c.start("nope"),
            NotFoundError,
            "Workflow 'nope' is not served here",
            id="workflow",
        ),
        pytest.param(lambda c: c.get("nope"), NotFoundError, "Run 'nope' does not exist", id="run"),
        pytest.param(
            lambda c: list(c.events("nope")),
            NotFoundError,
            "Run 'nope' does not exist",
            id="events",
        ),
        pytest.param(
            lambda c: c.start("typed", {"values": "x"}),
            InvalidRequestError,
            "Invalid field 'values'",
            id="start-field",
        ),
    ],
)
def test_server_refusals_are_typed_errors(api, call, error, message):
    """A 4xx becomes the matching APIError subclass carrying the server's detail."""
    with pytest.raises(error, match=message) as caught:
        call(api)
    assert 400 <= caught.value.status_code < 500 and message in caught.value.detail


def test_token(start_server):
    """Without the server's token requests fail with AuthenticationError; with it they work."""
    url, _ = start_server(token="s3cret")
    with (
        Client(url) as anonymous,
        pytest.raises(AuthenticationError, match="401: Missing or wrong bearer token"),
    ):
        anonymous.list()
    with Client(url, token="s3cret") as client:
        assert client.start("echo", {"x": 1}, wait=True).result == {"x": 1}
        assert [e.seq for e in client.events(client.list()[0].run_id)] == [1, 2]


def test_no_server_is_server_unavailable():
    """A port nobody listens on, past the retry budget: ServerUnavailableError says what to do."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with (
        Client(f"http://127.0.0.1:{port}", retry=RetryPolicy(total=0.3, first_delay=0.05)) as c,
        pytest.raises(
            ServerUnavailableError,
            match=rf"No answer from the batonflow server at http://127.0.0.1:{port} to GET "
            r"/health: \d+ attempt\(s\) over 0.\d s failed, the last with ConnectError: .*; the "
            r"retry budget \(total=0.3 s\) is spent. Check the URL and that 'batonflow serve' "
            r"runs there, or give the client a larger budget: "
            r"Client\(\.\.\., retry=RetryPolicy\(total=\.\.\.\)\)\.",
        ),
    ):
        c.health()


def test_no_server_without_retries_fails_at_the_first_refusal():
    """retry=None: a refused connection raises at once, naming the URL and the request."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with (
        Client(f"http://127.0.0.1:{port}", retry=None) as client,
        pytest.raises(
            ServerUnavailableError,
            match=f"No answer from the batonflow server at http://127.0.0.1:{port} to GET "
            "/health \\(ConnectError",
        ),
    ):
        client.health()


def test_bad_base_url():
    """A base URL without http(s) is refused with the fix."""
    with pytest.raises(ValueError, match=r"is not an http\(s\) URL; pass the server's address"):
        Client("127.0.0.1:8000")


def test_events_reconnect_after_the_stream_is_cut(server_url, api):
    """A stream cut mid-message is reopened after the last event: every event once, in order."""
    run = api.start("ticks", {"count": 8, "delay": 0.005}, wait=True)
    whole = [(e.seq, e.data) for e in api.events(run.run_id)]
    with (
        cutting_proxy(server_url, cuts=[420, 350, 600]) as proxy,
        Client(proxy.url, retry=QUICK) as flaky,
    ):
        got = [(e.seq, e.data) for e in flaky.events(run.run_id)]
    assert got == whole
    assert proxy.connections >= 3


def test_events_give_up_after_the_attempts_budget(server_url, api):
    """A stream that keeps breaking ends in ServerUnavailableError saying how to resume."""
    run = api.start("ticks", {"count": 3, "delay": 0}, wait=True)
    with (
        cutting_proxy(server_url, cuts=[250] * 10) as proxy,
        Client(proxy.url, retry=RetryPolicy(attempts=3, first_delay=0.01)) as flaky,
        pytest.raises(
            ServerUnavailableError,
            match=r"could not be reopened: 3 attempt\(s\) over .* the retry budget "
            r"\(attempts=3\) is spent. Resume it later with events\('\w+', after=0\)",
        ),
    ):
        list(flaky.events(run.run_id))
    assert proxy.connections == 3


def test_every_run_returned_is_whole_start_answer_and_send(api):
    """start(), answer() and send_event() return the whole run: its workflow and start fields."""
    started = api.start("approval", {"topic": "x"})
    assert (started.workflow, started.start) == ("approval", {"topic": "x"})
    for event in api.events(started.run_id):
        if event.type == "InputRequiredEvent":
            break
    answered = api.answer(started.run_id, "yes")
    assert (answered.run_id, answered.workflow, answered.start) == (
        started.run_id,
        "approval",
        {"topic": "x"},
    )
    assert answered.raw["sent"] == "HumanResponseEvent"
    assert api.wait(answered.run_id, timeout=30).result == "x: yes"


def test_times_are_aware_datetimes_and_the_wire_has_rfc3339_and_seconds(api, server_url):
    """A run's created_at/updated_at are RFC 3339 on the wire (Unix seconds beside them) and
    aware datetimes in the client."""
    run = api.start("echo", {"a": 1}, wait=True)
    body = httpx.get(f"{server_url}/runs/{run.run_id}").json()
    rfc3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
    assert rfc3339.match(body["created_at"]) and rfc3339.match(body["updated_at"])
    assert isinstance(body["created"], float) and body["updated"] >= body["created"]
    assert run.created_at is not None and run.created_at.tzinfo is not None
    assert abs(run.created_at.timestamp() - body["created"]) < 1e-6
    assert run.created_at <= run.updated_at <= dt.datetime.now(dt.UTC)
