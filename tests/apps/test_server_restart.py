"""Runs survive a server restart: a real `batonflow serve` process killed and started again."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from .sse import read_sse, wait_checkpoint, wait_status

FLOWS = str(Path(__file__).with_name("flows.py"))
ROOT = Path(__file__).resolve().parents[2]


class ServerProcess:
    """`python -m batonflow.apps serve --port 0` on a given run store (a SQLite file or a
    PostgreSQL URL); ``extra`` arguments are added to the command."""

    def __init__(
        self, db: Path | str, token: str | None = None, durable: bool = True, *extra: str
    ) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "OTEL_"))}
        args = [
            sys.executable,
            "-m",
            "batonflow.apps",
            "serve",
            "--port",
            "0",
            "--db",
            str(db),
            "--no-prebuilt",
            "-w",
            f"approval={FLOWS}:ApprovalFlow",
            "-w",
            f"sleepy={FLOWS}:SleepyFlow",
            "-w",
            f"echo={FLOWS}:EchoFlow",
            "-w",
            f"twostep={FLOWS}:TwoStepFlow",
            "-w",
            f"slowanswer={FLOWS}:SlowAnswerFlow",
            "-w",
            f"orders={FLOWS}:OrderStateFlow",
        ]
        args += extra  # more workflows (-w), or options
        if not durable:
            args.append("--no-durable")
        if token:
            args += ["--token", token]
        self.proc = subprocess.Popen(
            args, cwd=ROOT, env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True
        )
        assert self.proc.stderr is not None
        line = self.proc.stderr.readline()
        if "batonflow server on " not in line:
            self.proc.kill()
            raise AssertionError(f"server did not start: {line}{self.proc.stderr.read()}")
        self.url = line.split("batonflow server on ", 1)[1].split()[0]
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.client = httpx.Client(base_url=self.url, timeout=20, headers=headers)
        deadline = time.monotonic() + 20
        while True:
            try:
                if self.client.get("/health").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError("server never answered /health")
            time.sleep(0.05)

    def kill(self) -> None:
        self.client.close()
        self.proc.kill()  # SIGKILL: no shutdown hook runs
        self.proc.wait(10)
        assert self.proc.stderr is not None
        self.proc.stderr.close()


@pytest.mark.slow
def test_runs_survive_kill_and_restart(tmp_path):
    """After kill -9 and a restart (no checkpoints): finished runs readable, waiting runs
    answerable, runs in progress marked interrupted; the stream keeps its numbering."""
    db = tmp_path / "runs.db"
    first = ServerProcess(db, token="t0ken", durable=False)
    try:
        c = first.client
        done = c.post("/workflows/echo/runs", params={"wait": True}, json={"k": "v"}).json()
        waiting = c.post("/workflows/approval/runs", json={"topic": "restart"}).json()["run_id"]
        wait_status(c, waiting, {"waiting"})
        sleeping = c.post("/workflows/sleepy/runs").json()["run_id"]
        wait_status(c, sleeping, {"running"})
        before = read_sse(c, f"/runs/{waiting}/events", stop_after=1)
        assert before[0]["data"]["type"] == "InputRequiredEvent"
    finally:
        first.kill()

    second = ServerProcess(db, token="t0ken", durable=False)
    try:
        c = second.client
        finished = c.get(f"/runs/{done['run_id']}").json()
        assert finished["status"] == "completed" and finished["result"] == {"k": "v"}
        assert c.get(f"/runs/{waiting}").json()["status"] == "waiting"
        interrupted = c.get(f"/runs/{sleeping}").json()
        assert interrupted["status"] == "interrupted"
        assert "could not be restored" in interrupted["error"]

        answer = {"type": "HumanResponseEvent", "data": {"response": "ship it"}}
        assert c.post(f"/runs/{waiting}/events", json=answer).status_code == 202
        result = wait_status(c, waiting, {"completed", "failed"})
        assert result["status"] == "completed", result
        assert result["result"] == "restart: ship it"

        stream = read_sse(c, f"/runs/{waiting}/events", headers={"Last-Event-ID": "1"})
        ids = [int(m["id"]) for m in stream]
        assert ids == list(range(2, 2 + len(ids)))
        assert stream[-1]["event"] == "end" and stream[-1]["data"]["status"] == "completed"
    finally:
        second.kill()


@pytest.mark.slow
def test_durable_run_resumes_after_kill_from_its_last_step(tmp_path):
    """With checkpoints on, a run killed in its second step resumes after a restart without
    re-running the first step, and a waiting run still takes its answer."""
    db = tmp_path / "runs.db"
    log = tmp_path / "side-effects.log"
    first = ServerProcess(db)
    try:
        c = first.client
        run_id = c.post("/workflows/twostep/runs", json={"value": 41, "log": str(log)}).json()[
            "run_id"
        ]
        waiting = c.post("/workflows/approval/runs", json={"topic": "durable"}).json()["run_id"]
        wait_status(c, waiting, {"waiting"})
        wait_checkpoint(db, run_id, "first")
        assert c.get(f"/runs/{run_id}").json()["status"] == "running"
    finally:
        first.kill()

    second = ServerProcess(db)
    try:
        c = second.client
        done = wait_status(c, run_id, {"completed", "failed", "interrupted"})
        assert done["status"] == "completed", done
        assert done["result"] == 42
        assert log.read_text() == "first\n"  # the completed first step did not run again
        answer = {"type": "HumanResponseEvent", "data": {"response": "ok"}}
        assert c.post(f"/runs/{waiting}/events", json=answer).status_code == 202
        assert wait_status(c, waiting, {"completed"})["result"] == "durable: ok"
    finally:
        second.kill()


@pytest.mark.slow
def test_pydantic_models_in_untyped_state_survive_kill_and_restart(tmp_path):
    """A run killed after a checkpoint that keeps plain pydantic models in untyped state
    resumes after a restart with the same class and values (it ended `interrupted` before)."""
    db = tmp_path / "runs.db"
    first = ServerProcess(db)
    try:
        c = first.client
        run_id = c.post("/workflows/orders/runs", json={"item": "tea", "qty": 3}).json()["run_id"]
        wait_checkpoint(db, run_id, "first")
        assert c.get(f"/runs/{run_id}").json()["status"] == "running"
    finally:
        first.kill()

    second = ServerProcess(db)
    try:
        done = wait_status(second.client, run_id, {"completed", "failed", "interrupted"})
        assert done["status"] == "completed", done
        assert done["result"] == {
            "classes": ["Order", "Order"],
            "same_class": True,
            "order": {"item": "tea", "qty": 3},
        }
    finally:
        second.kill()


@pytest.mark.slow
def test_ctrl_c_stops_cleanly_and_runs_resume(tmp_path):
    """SIGINT stops `batonflow serve` with exit code 0; its run in progress resumes later."""
    db = tmp_path / "runs.db"
    log = tmp_path / "side-effects.log"
    first = ServerProcess(db)
    run_id = first.client.post("/workflows/twostep/runs", json={"value": 1, "log": str(log)})
    run_id = run_id.json()["run_id"]
    wait_checkpoint(db, run_id, "first")
    first.client.close()
    first.proc.send_signal(signal.SIGINT)
    assert first.proc.wait(20) == 0
    assert first.proc.stderr is not None
    assert "batonflow server stopped" in first.proc.stderr.read()
    first.proc.stderr.close()

    second = ServerProcess(db)
    try:
        assert wait_status(second.client, run_id, {"completed", "failed"})["result"] == 2
        assert log.read_text() == "first\n"
    finally:
        second.kill()


@pytest.mark.slow
def test_console_reads_steps_and_state_of_runs_from_before_a_restart(tmp_path):
    """After a restart, what the console reads of an earlier run (its steps, state and
    drawing) comes from the run's checkpoints in the store, as the first server showed it."""
    db = tmp_path / "runs.db"
    first = ServerProcess(db)
    try:
        c = first.client
        run = c.post(
            "/workflows/orders/runs", params={"wait": True}, json={"item": "tea", "qty": 3}
        )
        run_id = run.json()["run_id"]
        assert run.json()["status"] == "completed", run.json()
        state_before = c.get(f"/runs/{run_id}/state").json()
        steps_before = c.get(f"/runs/{run_id}/steps").json()["steps"]
    finally:
        first.kill()

    second = ServerProcess(db)
    try:
        c = second.client
        steps = c.get(f"/runs/{run_id}/steps")
        assert steps.status_code == 200, steps.text
        shown = [(s["step"], s["input_event"], s["output_events"]) for s in steps.json()["steps"]]
        assert shown == [(s["step"], s["input_event"], s["output_events"]) for s in steps_before]
        assert shown == [("first", "StartEvent", ["Halfway"]), ("second", "Halfway", ["StopEvent"])]
        assert [s["finished"] for s in steps.json()["steps"]] == sorted(
            s["finished"] for s in steps.json()["steps"]
        )
        assert steps.json()["steps"][0]["duration"] is None  # a checkpoint has no start time
        state = c.get(f"/runs/{run_id}/state")
        assert state.status_code == 200, state.text
        assert state.json() == state_before
        assert state.json()["state"]["order"] == {"item": "tea", "qty": 3}
        drawing = c.get(f"/runs/{run_id}/drawing")
        assert drawing.status_code == 200 and "second" in drawing.text
    finally:
        second.kill()
