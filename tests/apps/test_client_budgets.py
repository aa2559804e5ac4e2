"""The client's side of budgets: ``start(budget=...)``, ``raise_budget`` and the run's
``usage``, ``budget`` and ``waiting_reason``, against a real server (uvicorn in a thread)."""

from __future__ import annotations

import time

import pytest
from batonflow.apps.run_store import RunStore
from batonflow.apps.server import BackgroundServer, create_app
from batonflow.client import Client
from batonflow.client.errors import ConflictError, InvalidRequestError

from .budget_flows import BudgetedAgent, calls


def test_a_client_starts_a_budgeted_run_and_raises_its_budget(tmp_path, monkeypatch):
    """The run waits for its budget (waiting_reason 'budget', one LLM call); raise_budget lets
    it finish; a second raise of the ended run is a ConflictError, a negative one refused."""
    monkeypatch.chdir(tmp_path)  # the agent notes its LLM calls in the working folder
    store = RunStore(tmp_path / "runs.db")
    app = create_app({"budgeted": BudgetedAgent()}, store=store)
    with BackgroundServer(app) as server, Client(server.url) as client:
        run = client.start("budgeted", {"user_msg": "What is the answer?"}, budget=120)
        deadline = time.monotonic() + 30
        while run.waiting_reason != "budget" and time.monotonic() < deadline:
            time.sleep(0.05)
            run = client.get(run.run_id)
        assert run.status == "waiting" and run.waiting_reason == "budget"
        assert run.budget == {"tokens": 120, "cost": None, "on_exceed": "wait"}
        assert run.usage is not None and run.usage["total_tokens"] == 120
        assert calls(tmp_path) == 1
        with pytest.raises(InvalidRequestError):
            client.raise_budget(run.run_id, tokens=-1)
        raised = client.raise_budget(run.run_id, tokens=1000)
        assert raised.budget is not None and raised.budget["tokens"] == 1120
        done = client.wait(run.run_id, timeout=30)
        assert done.status == "completed" and done.usage["total_tokens"] == 300  # type: ignore[index]
        with pytest.raises(ConflictError, match="has ended"):
            client.raise_budget(run.run_id, tokens=5)
    store.close()
    assert calls(tmp_path) == 2


def test_a_run_waiting_for_an_answer_says_so(start_server):
    """A run that asked a question: waiting_reason 'input', no budget, no usage."""
    from .sse import wait_status

    _, client = start_server()
    run_id = client.post("/workflows/approval/runs", json={"topic": "x"}).json()["run_id"]
    wait_status(client, run_id, {"waiting"})
    body = client.get(f"/runs/{run_id}").json()
    assert (body["waiting_reason"], body["budget"], body["usage"]) == ("input", None, None)
    assert body["waiting_for_input"] is True


def test_a_served_workflows_budget_applies_to_its_runs(tmp_path, monkeypatch):
    """create_app(budgets=...) (batonflow serve --budget NAME=AMOUNT): a start without
    ?budget= gets the workflow's budget; one with ?budget= its own."""
    from batonflow.core import Budget

    monkeypatch.chdir(tmp_path)
    store = RunStore(tmp_path / "runs.db")
    app = create_app({"budgeted": BudgetedAgent()}, store=store, budgets={"budgeted": Budget(120)})
    with BackgroundServer(app) as server, Client(server.url) as client:
        run = client.start("budgeted", {"user_msg": "What is the answer?"})
        deadline = time.monotonic() + 30
        while run.waiting_reason != "budget" and time.monotonic() < deadline:
            time.sleep(0.05)
            run = client.get(run.run_id)
        assert run.budget == {"tokens": 120, "cost": None, "on_exceed": "wait"}
        own = client.start("budgeted", {"user_msg": "again"}, budget=5000)
        done = client.wait(own.run_id, timeout=30)
        assert done.status == "completed"
        assert done.budget == {"tokens": 5000, "cost": None, "on_exceed": "wait"}
        client.cancel(run.run_id)
    store.close()


def test_an_agent_run_without_a_budget_shows_its_usage(tmp_path, monkeypatch):
    """No budget: the run's LLM calls are counted all the same (budget null, usage 300)."""
    monkeypatch.chdir(tmp_path)
    store = RunStore(tmp_path / "runs.db")
    with BackgroundServer(create_app({"budgeted": BudgetedAgent()}, store=store)) as server:
        with Client(server.url) as client:
            run = client.start("budgeted", {"user_msg": "What is the answer?"}, wait=True)
    store.close()
    assert run.status == "completed" and run.budget is None
    assert run.usage is not None and (run.usage["total_tokens"], run.usage["calls"]) == (300, 2)
    assert run.raw["usage_by_step"]["run_agent_step"]["total_tokens"] == 300


def test_a_budget_for_a_queued_workflows_run_is_refused(tmp_path, monkeypatch):
    """A workflow the server queues takes no per-run ?budget= (yet): 422 saying so."""
    import httpx
    from batonflow.core import RunLimits

    monkeypatch.chdir(tmp_path)
    store = RunStore(tmp_path / "runs.db")
    limits = {"budgeted": RunLimits(max_running=1)}
    app = create_app({"budgeted": BudgetedAgent()}, store=store, limits=limits)
    with BackgroundServer(app) as server:
        refused = httpx.post(
            server.url + "/workflows/budgeted/runs", params={"budget": "100"}, json={}
        )
    store.close()
    assert refused.status_code == 422
    assert "queues its runs" in refused.json()["detail"]
    assert calls(tmp_path) == 0
