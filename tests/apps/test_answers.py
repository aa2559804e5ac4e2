"""Answering a waiting run over HTTP: taken by the waiting step, or refused before it is taken.

Every way of waiting (``wait_for_event`` with and without requirements, a question written
before the wait, an ``InputRequiredEvent`` returned by a step, the workflow's own event
classes) is served by a real uvicorn server on a SQLite store with checkpoints, as
``batonflow serve`` does, and answered through HTTP, :class:`batonflow.client.Client` and
``batonflow run --server``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from batonflow.apps.cli import app
from batonflow.apps.run_store import RunStore
from batonflow.apps.server import BackgroundServer, create_app
from batonflow.client import Client, ConflictError, InvalidRequestError
from batonflow.core.checkpoints import SqliteCheckpointStore
from typer.testing import CliRunner

from .sse import wait_status
from .waiting_flows import waiting_flows

pytestmark = pytest.mark.slow


@pytest.fixture
def server(tmp_path) -> Iterator[BackgroundServer]:
    db = tmp_path / "runs.db"
    app_ = create_app(waiting_flows(), store=RunStore(db), checkpoints=SqliteCheckpointStore(db))
    running = BackgroundServer(app_).start()
    yield running
    running.stop()


@pytest.fixture
def http(server) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=20) as client:
        yield client


def ask(http: httpx.Client, flow: str, **fields: Any) -> dict[str, Any]:
    """Start ``flow`` and return its record once it waits."""
    run_id = http.post(f"/workflows/{flow}/runs", json=fields).json()["run_id"]
    return wait_status(http, run_id, {"waiting"})


def test_an_answer_without_the_required_value_is_refused_and_the_question_stays(http):
    """The agent tool's wait: 422 naming the awaited type and value; the run keeps its question."""
    run = ask(http, "agent", user_msg="send 30 to Ada")
    assert run["question"]["value"] == {"prefix": "Transfer 30 EUR to Ada? ", "tool": "transfer"}
    (awaited,) = run["waiting_for"]
    assert awaited["type"] == "HumanResponseEvent"
    assert awaited["requirements"] == {"tool": "transfer"}
    assert awaited["steps"] == ["call_tool"]
    assert awaited["example"] == {
        "type": "HumanResponseEvent",
        "data": {"response": "...", "tool": "transfer"},
    }
    refused = http.post(
        f"/runs/{run['run_id']}/events",
        json={"type": "HumanResponseEvent", "data": {"response": "yes"}},
    )
    assert refused.status_code == 422
    detail = refused.json()["detail"]
    assert "answers no waiting step" in detail and "it has no 'tool'" in detail
    assert "HumanResponseEvent with tool='transfer' (step call_tool)" in detail
    assert refused.json()["errors"][0]["loc"] == ["body", "data", "tool"]
    wrong = http.post(
        f"/runs/{run['run_id']}/events",
        json={"type": "HumanResponseEvent", "data": {"response": "yes", "tool": "other"}},
    )
    assert wrong.status_code == 422
    assert "its tool is 'other', not 'transfer'" in wrong.json()["detail"]
    again = http.get(f"/runs/{run['run_id']}").json()
    assert again["status"] == "waiting"
    assert again["question"] == run["question"]
    taken = http.post(
        f"/runs/{run['run_id']}/events",
        json={"type": "HumanResponseEvent", "data": {"response": "yes", "tool": "transfer"}},
    )
    assert taken.status_code == 202
    done = wait_status(http, run["run_id"], {"completed", "failed"})
    assert done["result"]["response"]["blocks"][0]["text"] == "Done: Transferred 30 EUR to Ada."
    again = http.post(f"/runs/{run['run_id']}/events", json=awaited["example"])
    assert again.status_code == 409


@pytest.mark.parametrize(
    "flow, awaited, answer, result",
    [
        pytest.param(
            "waiter",
            ("HumanResponseEvent", {}),
            {"response": "Ada"},
            "hello Ada",
            id="wait_for_event",
        ),
        pytest.param(
            "written",
            ("HumanResponseEvent", {}),
            {"response": "Ada"},
            "hello Ada",
            id="written-then-waited",
        ),
        pytest.param(
            "returned",
            ("HumanResponseEvent", {}),
            {"response": "yes"},
            "?: yes",
            id="InputRequiredEvent-returned",
        ),
        pytest.param(
            "guess", ("Guess", {}), {"response": "", "value": 21}, 42, id="own-answer-class"
        ),
        pytest.param(
            "plain", ("Decision", {}), {"choice": "a"}, "a", id="plain-question-and-answer"
        ),
    ],
)
def test_every_way_of_waiting_says_what_it_waits_for_and_takes_its_answer(
    http, flow, awaited, answer, result
):
    """The run record names the awaited type; a wrong type is refused; the right one ends it."""
    run = ask(http, flow)
    assert [(w["type"], w["requirements"]) for w in run["waiting_for"]] == [awaited]
    wrong_type = "Guess" if awaited[0] != "Guess" else "HumanResponseEvent"
    refused = http.post(
        f"/runs/{run['run_id']}/events", json={"type": wrong_type, "data": {"response": "x"}}
    )
    assert refused.status_code == 422
    assert f"waits for {awaited[0]}" in refused.json()["detail"]
    assert http.get(f"/runs/{run['run_id']}").json()["status"] == "waiting"
    taken = http.post(f"/runs/{run['run_id']}/events", json={"type": awaited[0], "data": answer})
    assert taken.status_code == 202, taken.text
    assert wait_status(http, run["run_id"], {"completed"})["result"] == result


def test_own_question_and_answer_classes_ask_twice(http):
    """An InputRequiredEvent subclass asks for an Approval (ticket 7), then a plain event asks
    for a plain Decision."""
    run = ask(http, "custom")
    assert run["question"]["type"] == "ApprovalRequest"
    (awaited,) = run["waiting_for"]
    assert (awaited["type"], awaited["requirements"]) == ("Approval", {"ticket": 7})
    assert awaited["schema"]["properties"]["approved"]["type"] == "boolean"
    assert awaited["example"] == {
        "type": "Approval",
        "data": {"response": "...", "ticket": 7, "approved": False},
    }
    url = f"/runs/{run['run_id']}/events"
    other = {"type": "Approval", "data": {"response": "", "ticket": 8, "approved": True}}
    assert http.post(url, json=other).status_code == 422
    missing = http.post(url, json={"type": "Approval", "data": {"ticket": 7}})
    assert missing.status_code == 422 and "approved" in missing.json()["detail"]
    ok = {"type": "Approval", "data": {"response": "", "ticket": 7, "approved": True}}
    assert http.post(url, json=ok).status_code == 202
    second = wait_status(http, run["run_id"], {"waiting"})
    while second["question"]["seq"] == run["question"]["seq"]:  # the first question's record
        second = wait_status(http, run["run_id"], {"waiting"})
    assert [w["type"] for w in second["waiting_for"]] == ["Decision"]
    assert second["question"] == {
        "seq": second["question"]["seq"],
        "type": "Pick",
        "value": {"prefix": "Which one?", "options": ["a", "b"]},
    }
    assert http.post(url, json={"type": "Decision", "data": {"choice": "b"}}).status_code == 202
    assert wait_status(http, run["run_id"], {"completed"})["result"] == "True b"


def test_a_run_with_two_open_questions_waits_again_after_the_first_answer(http):
    """Two tool calls ask at once: after one answer the run asks the other question again."""
    run = ask(http, "pair", user_msg="pay both")
    url = f"/runs/{run['run_id']}/events"
    body = {"type": "HumanResponseEvent", "data": {"response": "yes", "tool": "transfer"}}
    assert http.post(url, json=body).status_code == 202
    seen = {run["question"]["seq"]}
    again = wait_status(http, run["run_id"], {"waiting", "completed"})
    while again["status"] == "waiting" and len(again["waiting_for"]) != 1:
        seen.add(again["question"]["seq"])  # the second tool's question, asked before the answer
        again = wait_status(http, run["run_id"], {"waiting", "completed"})
    assert again["status"] == "waiting"
    assert again["question"]["seq"] not in seen  # asked again, after the answer
    assert again["question"]["value"]["tool"] == "transfer"
    assert http.post(url, json=body).status_code == 202
    done = wait_status(http, run["run_id"], {"completed"})
    text = done["result"]["response"]["blocks"][0]["text"]
    assert text == "Done: Transferred 30 EUR to Ada. / Transferred 30 EUR to Bob."


def test_an_answer_to_a_run_that_waits_for_none_is_a_conflict(http):
    """Before its question (or after its answer), an answer is a 409 that says to wait."""
    busy = http.post("/workflows/sleepy/runs", json={}).json()["run_id"]
    early = http.post(
        f"/runs/{busy}/events", json={"type": "HumanResponseEvent", "data": {"response": "x"}}
    )
    assert early.status_code == 409
    assert "is running and waits for no answer now" in early.json()["detail"]
    http.post(f"/runs/{busy}/cancel")
    run_id = http.post("/workflows/returned/runs", json={}).json()["run_id"]
    wait_status(http, run_id, {"waiting"})
    body = {"type": "HumanResponseEvent", "data": {"response": "yes"}}
    assert http.post(f"/runs/{run_id}/events", json=body).status_code == 202
    wait_status(http, run_id, {"completed"})
    assert http.post(f"/runs/{run_id}/events", json=body).status_code == 409


def test_an_answer_after_the_wait_timed_out_is_refused_not_dropped(server):
    """The step's wait ended (timeout) while the run goes on: an answer is a 409, not a 202
    that nothing takes."""
    with Client(server.url) as client:
        run = client.start("impatient", {"wait": 0.3})
        for event in client.events(run.run_id):
            if event.type == "GaveUp":
                break
        # The run is running again (its record too: any server of the store says so).
        deadline = time.monotonic() + 10
        while (shown := client.get(run.run_id)).status != "running":
            assert time.monotonic() < deadline, shown.status
            time.sleep(0.02)
        assert shown.question is None and not shown.waiting_for
        with pytest.raises(ConflictError, match="waits for no answer now"):
            client.answer(run.run_id, "yes")
        client.cancel(run.run_id)


def test_the_client_builds_the_answer_from_what_the_run_waits_for(server):
    """Client.answer(run_id, "yes") fills in the required value; a misfit raises before it is sent."""
    with Client(server.url) as client:
        run = client.start("agent", {"user_msg": "send 30 to Ada"})
        for event in client.events(run.run_id):
            if "waiting_for" in event.data:
                break
        waiting = client.get(run.run_id)
        assert waiting.status == "waiting"
        assert waiting.waiting_for[0]["requirements"] == {"tool": "transfer"}
        assert waiting.question is not None and waiting.question["value"]["tool"] == "transfer"
        with pytest.raises(InvalidRequestError, match="tool='transfer'"):
            client.answer(run.run_id, "yes", fields={"tool": "other"})
        assert client.get(run.run_id).status == "waiting"
        client.answer(run.run_id, "yes")
        done = client.wait(run.run_id, timeout=20)
    assert done.status == "completed"
    assert done.result["response"]["blocks"][0]["text"] == "Done: Transferred 30 EUR to Ada."


async def test_the_async_client_answers_an_own_answer_class_from_the_refusal(server):
    """AsyncClient.answer(run_id, None, fields=...) becomes the Approval the run waits for."""
    from batonflow.client import AsyncClient

    async with AsyncClient(server.url) as client:
        run = await client.start("custom")
        async for event in client.events(run.run_id):
            if "waiting_for" in event.data:
                break
        answered = await client.answer(run.run_id, None, fields={"approved": True})
        assert answered.run_id == run.run_id
        async for event in client.events(run.run_id, after=event.seq):
            if "waiting_for" in event.data:
                break
        await client.answer(run.run_id, "a")
        done = await client.wait(run.run_id, timeout=20)
    assert done.result == "True a"


@pytest.mark.parametrize(
    "flow, answer, printed",
    [
        pytest.param("agent", "yes", "Done: Transferred 30 EUR to Ada.", id="agent"),
        pytest.param("written", "Ada", "hello Ada", id="written"),
        pytest.param(
            "custom",
            '{"response": "", "approved": false}',
            None,
            id="custom-json-fields",
        ),
    ],
)
def test_cli_answer_option_answers_over_the_server(server, flow, answer, printed):
    """batonflow run --server URL FLOW --answer TEXT: the answer is built from what the run waits for."""
    args = ["run", flow, "--server", server.url, "--answer", answer, "--json"]
    if flow == "agent":
        args += ["--set", "user_msg=send 30 to Ada"]
    if flow == "custom":
        args += ["--answer", "b"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    if printed is not None:
        assert printed in result.stdout
    else:
        assert '"result": "False b"' in result.stdout


def test_cli_answer_that_does_not_fit_is_refused_with_what_the_run_waits_for(server):
    """A --answer the server refuses ends the command with the server's reason."""
    args = ["run", "guess", "--server", server.url, "--answer", "not a number"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1
    assert "The server refused the answer 'not a number'" in result.output


@pytest.mark.parametrize(
    "flow, answers, printed",
    [
        pytest.param("transfer_agent", ["no"], "The transfer was refused.", id="agent"),
        pytest.param("CustomTypesFlow", ['{"approved": true}', "a"], '"True a"', id="custom"),
    ],
)
def test_cli_answer_option_answers_a_run_in_this_process(flow, answers, printed):
    """batonflow run FLOW --answer TEXT (no server): the same answer is built locally."""
    args = ["run", f"tests/apps/waiting_flows.py:{flow}", "--json"]
    for answer in answers:
        args += ["--answer", answer]
    if flow == "transfer_agent":
        args += ["--set", "user_msg=send 30 to Ada"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert printed in result.stdout


def test_runs_resume_answers_a_stored_question_with_its_required_value(tmp_path):
    """A server's agent run left waiting; `runs resume --answer yes` builds the answer from the
    question in the store (tool="transfer" filled in) and the tool goes on."""
    db = tmp_path / "runs.db"
    app_ = create_app(waiting_flows(), store=RunStore(db), checkpoints=SqliteCheckpointStore(db))
    with BackgroundServer(app_) as server, httpx.Client(base_url=server.url) as http:
        run_id = ask(http, "agent", user_msg="send 30 to Ada")["run_id"]
    flow = "tests/apps/waiting_flows.py:transfer_agent"
    args = ["runs", "resume", run_id, "--db", str(db), "--flow", flow, "--answer", "yes"]
    result = CliRunner().invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    assert "Done: Transferred 30 EUR to Ada." in result.stdout
    assert RunStore(db).get(run_id).status == "completed"
