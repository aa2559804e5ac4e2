"""``batonflow run --budget``, ``batonflow runs budget RUN --raise N`` and the usage that
``runs show`` and ``runs list`` print, over a SQLite run store; bad budgets get clear errors."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from batonflow.apps.cli import app
from typer.testing import CliRunner

from .budget_flows import calls

runner = CliRunner()
FLOW = f"{Path(__file__).with_name('budget_flows.py')}:BudgetedAgent"


def _run_id(db: Path, status: str, deadline: float = 90) -> str:
    """The one run of ``db`` once it has ``status``."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if db.exists():
            listed = runner.invoke(app, ["runs", "list", "--db", str(db), "--json"])
            rows = json.loads(listed.stdout) if listed.exit_code == 0 else []
            if rows and rows[0]["status"] == status:
                return str(rows[0]["run_id"])
        time.sleep(0.2)
    raise AssertionError(f"no {status} run in {db}")


@pytest.mark.slow
def test_a_cli_run_waits_for_its_budget_until_runs_budget_raises_it(tmp_path):
    """`batonflow run --durable --budget 120` makes one LLM call and waits; `runs budget
    --raise 1000` from another process lets it finish; show and list print its usage."""
    db = tmp_path / "runs.db"
    command = [sys.executable, "-m", "batonflow", "run", FLOW, "--durable", "--db", str(db)]
    command += ["--budget", "120", "--set", "user_msg=What is the answer?", "--json"]
    proc = subprocess.Popen(
        command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        run_id = _run_id(db, "waiting")
        time.sleep(0.5)  # a call made past the budget would show meanwhile
        assert calls(tmp_path) == 1
        shown = runner.invoke(app, ["runs", "show", run_id, "--db", str(db)])
        assert "budget: 120 tokens (over it: wait)" in shown.stdout
        assert f"batonflow runs budget {run_id} --raise N" in shown.stdout
        raised = runner.invoke(app, ["runs", "budget", run_id, "--raise", "1000", "--db", str(db)])
        assert raised.exit_code == 0, raised.output
        assert "budget: 1120 tokens" in raised.stdout
        stdout, stderr = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, stderr
    assert "The answer is 42." in json.dumps(json.loads(stdout)["result"])
    assert calls(tmp_path) == 2
    shown = runner.invoke(app, ["runs", "show", run_id, "--db", str(db)])
    assert "usage: 300 tokens (prompt 250, completion 50; 2 LLM calls), cost unknown" in (
        shown.stdout
    )
    assert "  run_agent_step: 300 tokens" in shown.stdout
    table = runner.invoke(app, ["runs", "list", "--db", str(db)])
    assert "300" in table.stdout  # the tokens column
    listed = runner.invoke(app, ["runs", "list", "--db", str(db), "--json"])
    assert json.loads(listed.stdout)[0]["usage"]["total_tokens"] == 300
    ended = runner.invoke(app, ["runs", "budget", run_id, "--raise", "5", "--db", str(db)])
    assert ended.exit_code != 0 and "has ended (completed)" in ended.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["--budget", "-5", "--durable"], "is negative", id="negative"),
        pytest.param(["--budget", "5 apples", "--durable"], "write e.g. '5000'", id="unit"),
        pytest.param(["--budget", "100"], "--budget needs a run store", id="not-durable"),
    ],
)
def test_a_bad_budget_is_refused_before_anything_runs(tmp_path, args, message):
    """A negative budget, an unknown unit, a budget without a run store: a clear error."""
    db = tmp_path / "runs.db"
    result = runner.invoke(app, ["run", FLOW, "--db", str(db), *args, "--set", "user_msg=x"])
    assert result.exit_code != 0
    assert message in result.output
    assert calls(tmp_path) == 0


def test_a_raise_of_a_bad_amount_is_refused(tmp_path):
    """`runs budget RUN --raise -5` and an unknown unit: clear errors."""
    for amount, message in (("-5", "adds to the budget"), ("5 apples", "--raise: The raise")):
        result = runner.invoke(app, ["runs", "budget", "x", "--raise", amount, "--db", "y.db"])
        assert result.exit_code != 0 and message in result.output


@pytest.mark.slow
def test_a_cli_run_killed_while_it_waits_is_resumed_waiting(tmp_path):
    """Killed (SIGKILL) while waiting for its budget, the run resumed with `runs resume`
    waits again without calling the LLM; a raise lets the resumed run finish."""
    db = tmp_path / "runs.db"
    command = [sys.executable, "-m", "batonflow", "run", FLOW, "--durable", "--db", str(db)]
    command += ["--budget", "120", "--set", "user_msg=What is the answer?"]
    first = subprocess.Popen(command, cwd=tmp_path, stderr=subprocess.DEVNULL)
    try:
        run_id = _run_id(db, "waiting")
    finally:
        first.kill()
        first.wait(20)
    resume = [sys.executable, "-m", "batonflow", "runs", "resume", run_id, "--db", str(db)]
    second = subprocess.Popen(
        resume, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 90
        while "budget: 120 tokens" not in _shown(db, run_id) or "waiting for a budget" not in (
            _shown(db, run_id)
        ):
            assert time.monotonic() < deadline and second.poll() is None, second.stderr
            time.sleep(0.2)
        time.sleep(0.5)
        assert calls(tmp_path) == 1
        raised = runner.invoke(app, ["runs", "budget", run_id, "--raise", "1000", "--db", str(db)])
        assert raised.exit_code == 0, raised.output
        stdout, stderr = second.communicate(timeout=90)
    finally:
        if second.poll() is None:
            second.kill()
    assert second.returncode == 0, stderr
    assert calls(tmp_path) == 2


def _shown(db: Path, run_id: str) -> str:
    return str(runner.invoke(app, ["runs", "show", run_id, "--db", str(db)]).stdout)


def test_serve_refuses_a_budget_for_a_workflow_it_does_not_serve(tmp_path):
    """`batonflow serve --budget NAME=AMOUNT` with an unknown NAME or a bad amount: an error
    naming it, before the server starts."""
    base = ["serve", "--no-prebuilt", "-w", f"budgeted={FLOW}", "--port", "0"]
    base += ["--db", str(tmp_path / "runs.db")]
    unknown = runner.invoke(app, [*base, "--budget", "chat=500"])
    assert unknown.exit_code != 0 and "no workflow 'chat' is served here" in unknown.output
    bad = runner.invoke(app, [*base, "--budget", "budgeted=5 apples"])
    assert bad.exit_code != 0 and "write e.g. '5000'" in bad.output
