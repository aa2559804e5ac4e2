"""Idempotent starts over HTTP, through the client and the command line.

A real uvicorn server (``start_server``): ``POST /workflows/{name}/runs`` with an
``Idempotency-Key`` it has seen answers ``200`` with that key's run (a new start is ``202``);
the same key with other fields, or a bad key, is a ``422`` that says so. The client sends a key
on every start; ``batonflow run --idempotency-key`` gives one of the caller's own.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from batonflow.apps.cli import app
from batonflow.client import Client, InvalidRequestError
from typer.testing import CliRunner

from .sse import wait_status

FLOWS = str(Path(__file__).with_name("flows.py"))


def test_a_start_sent_again_with_its_key_answers_its_run(client):
    """202 for the start, 200 with the same run (and Idempotent-Replayed) for its retries."""
    first = client.post("/workflows/echo/runs", json={"n": 1}, headers={"Idempotency-Key": "a1"})
    assert first.status_code == 202
    run_id = first.json()["run_id"]
    wait_status(client, run_id, {"completed"})
    again = client.post("/workflows/echo/runs", json={"n": 1}, headers={"Idempotency-Key": "a1"})
    assert again.status_code == 200 and again.headers["idempotent-replayed"] == "true"
    assert again.json()["run_id"] == run_id
    assert (again.json()["status"], again.json()["result"]) == ("completed", {"n": 1})
    waited = client.post(
        "/workflows/echo/runs?wait=true", json={"n": 1}, headers={"Idempotency-Key": "a1"}
    )
    assert (waited.status_code, waited.json()["run_id"]) == (200, run_id)
    runs = client.get("/runs", params={"workflow": "echo"}).json()["runs"]
    assert [r["run_id"] for r in runs] == [run_id]


@pytest.mark.parametrize(
    ("key", "body", "detail"),
    [
        pytest.param(
            "a1",
            {"n": 2},
            r"Idempotency-Key: Idempotency key 'a1' started run \w+ of other start fields",
            id="other-fields",
        ),
        pytest.param("k" * 300, {"n": 1}, r"300 characters long; pass 1 to 255", id="long"),
        pytest.param("", {"n": 1}, r"is empty; pass 1 to 255 characters", id="empty"),
    ],
)
def test_a_key_that_cannot_start_this_run_is_a_422(client, key, body, detail):
    """A key reused with other fields, or not a key, is refused; nothing more runs."""
    first = client.post("/workflows/echo/runs", json={"n": 1}, headers={"Idempotency-Key": "a1"})
    refused = client.post("/workflows/echo/runs", json=body, headers={"Idempotency-Key": key})
    assert refused.status_code == 422
    assert re.search(detail, refused.json()["detail"]), refused.json()["detail"]
    runs = client.get("/runs", params={"workflow": "echo"}).json()["runs"]
    assert [r["run_id"] for r in runs] == [first.json()["run_id"]]


def test_the_client_sends_a_key_and_takes_one_of_its_own(start_server):
    """Every start carries a new key; the caller's own key gives the run it started."""
    url, direct = start_server()
    with Client(url) as api:
        one = api.start("echo", {"n": 1})
        two = api.start("echo", {"n": 1})
        assert one.run_id != two.run_id  # a key per call: two calls are two starts
        mine = api.start("echo", {"n": 5}, idempotency_key="order-17")
        again = api.start("echo", {"n": 5}, idempotency_key="order-17")
        assert again.run_id == mine.run_id
        with pytest.raises(InvalidRequestError, match="other start fields"):
            api.start("echo", {"n": 6}, idempotency_key="order-17")
    assert len(direct.get("/runs", params={"workflow": "echo"}).json()["runs"]) == 3


def test_cli_run_with_a_key_follows_the_run_it_started(start_server, tmp_path):
    """batonflow run --idempotency-key: on a server the second run prints the first's result;
    locally (--durable) it says which run the key started; without a store it is refused."""
    url, _ = start_server()
    runner = CliRunner()
    args = ["run", "echo", "--server", url, "-s", "n=4", "--idempotency-key", "k1", "--json"]
    first = runner.invoke(app, args)
    second = runner.invoke(app, args)
    assert first.exit_code == 0 and second.exit_code == 0, first.output + second.output
    one, two = (json.loads(r.stdout.strip().splitlines()[-1]) for r in (first, second))
    assert one == two and one["result"] == {"n": 4}
    local = ["run", f"{FLOWS}:EchoFlow", "-s", "n=4", "--idempotency-key", "k1"]
    db = ["--durable", "--db", str(tmp_path / "cli.db")]
    assert runner.invoke(app, [*local, *db]).exit_code == 0
    again = runner.invoke(app, [*local, *db])
    assert again.exit_code == 1
    assert "--idempotency-key k1 started run" in again.stderr
    assert "See it with: batonflow runs show" in again.stderr
    bare = runner.invoke(app, local)
    assert bare.exit_code != 0 and "add --durable (or --server URL)" in bare.stderr
