"""SIGINT/SIGTERM on real `batonflow` processes: durable runs interrupted, the server stopped."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from .served import Served
from .sse import wait_checkpoint, wait_status

FLOWS = str(Path(__file__).with_name("flows.py"))


def _env() -> dict[str, str]:
    return {
        k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "OTEL_", "BATONFLOW_"))
    }


def batonflow(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "batonflow", *args],
        capture_output=True, text=True, timeout=90, env=_env(), cwd=cwd,
    )  # fmt: skip


def wait_until_it_catches_sigterm(pid: int, timeout: float = 60) -> None:
    """Wait until process ``pid`` handles SIGTERM (run_interruptibly has installed its handlers)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = Path(f"/proc/{pid}/status").read_text()
        caught = next(ln for ln in status.splitlines() if ln.startswith("SigCgt:"))
        if int(caught.split()[1], 16) & (1 << (signal.SIGTERM - 1)):
            return
        time.sleep(0.05)
    raise AssertionError(f"process {pid} never installed a SIGTERM handler")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_interrupts_a_durable_run_which_resumes(tmp_path, sig):
    """The run is recorded interrupted, one line names the resume command, exit 130; resume
    finishes it without re-running the step that had completed."""
    db, log = tmp_path / "runs.db", tmp_path / "log.txt"
    proc = subprocess.Popen(
        [sys.executable, "-m", "batonflow", "run", f"{FLOWS}:SlowSecondStepFlow", "--durable",
         "--db", str(db), "--set", "value=1", "--set", f"log={log}"],
        stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=_env(), cwd=tmp_path,
    )  # fmt: skip
    assert proc.stderr is not None
    run_id = proc.stderr.readline().split()[1]
    wait_checkpoint(db, run_id, "first")
    proc.send_signal(sig)
    out, rest = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert out == ""
    assert rest.splitlines() == [
        f"interrupted by {sig.name}: run {run_id} stopped after its last completed step; "
        f"continue it with: batonflow runs resume {run_id}"
    ]
    shown = json.loads(
        batonflow("runs", "show", run_id, "--db", str(db), "--json", cwd=tmp_path).stdout
    )
    assert shown["status"] == "interrupted"
    assert f"Interrupted by {sig.name}" in shown["error"]
    Path(f"{log}.go").touch()  # the second step may finish now
    resumed = batonflow("runs", "resume", run_id, "--db", str(db), "--json", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["result"] == 2
    assert log.read_text() == "first\n"  # the completed step did not run again


def test_a_signal_stops_a_plain_run_without_a_traceback(tmp_path):
    """Without --durable, Ctrl-C prints one line and exits 130 (nothing to resume)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "batonflow", "run", f"{FLOWS}:SleepyFlow", "--set", "seconds=60"],
        stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=_env(), cwd=tmp_path,
    )  # fmt: skip
    wait_until_it_catches_sigterm(proc.pid)  # it prints nothing before the run starts
    proc.send_signal(signal.SIGINT)
    out, rest = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert rest.strip() == "interrupted by SIGINT"
    assert "Traceback" not in rest and "never retrieved" not in rest


def test_server_sigterm_checkpoints_runs_and_the_next_start_resumes_them(tmp_path):
    """SIGTERM stops the server cleanly (exit 0); the next start logs and resumes the run."""
    log = tmp_path / "log.txt"
    served = Served(tmp_path, "--no-prebuilt", "-w", f"slow={FLOWS}:SlowSecondStepFlow")
    run_id = httpx.post(
        f"{served.url}/workflows/slow/runs", json={"value": 5, "log": str(log)}
    ).json()["run_id"]
    wait_checkpoint(tmp_path / "runs.db", run_id, "first")
    served.proc.send_signal(signal.SIGTERM)
    assert served.proc.wait(30) == 0
    lines = served.drain(0.1)
    assert (
        "INFO:  stopping with 1 run(s) in progress: they are checkpointed and resume at the next start"
        in lines
    )
    assert lines[-1] == "batonflow server stopped"
    assert not [ln for ln in lines if "Traceback" in ln or "ERROR" in ln]
    Path(f"{log}.go").touch()
    again = Served(tmp_path, "--no-prebuilt", "-w", f"slow={FLOWS}:SlowSecondStepFlow")
    try:
        again.wait_for(r"resumed 1 run\(s\) the previous server left unfinished")
        with httpx.Client(base_url=again.url) as client:
            done = wait_status(client, run_id, {"completed", "failed", "interrupted"}, timeout=60)
        assert (done["status"], done["result"]) == ("completed", 6)
        assert log.read_text() == "first\n"
    finally:
        again.stop()


def test_a_signal_stops_rag_ingest_which_can_be_run_again(tmp_path):
    """rag ingest stopped by SIGINT: one line, exit 130; running it again ingests everything once."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(30):
        (docs / f"d{i}.md").write_text(f"# Doc {i}\n\n" + f"Words about topic {i}. " * 40)
    args = ["rag", "ingest", str(docs), "--qdrant-path", str(tmp_path / "q"), "--json"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "batonflow", *args],
        stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=_env(), cwd=tmp_path,
    )  # fmt: skip
    wait_until_it_catches_sigterm(proc.pid)
    proc.send_signal(signal.SIGINT)
    out, rest = proc.communicate(timeout=90)
    assert proc.returncode == 130, out + rest
    assert rest.splitlines()[-1] == (
        "interrupted by SIGINT: the chunks stored so far are kept; run the same command again "
        "to finish (unchanged files are skipped)"
    )
    assert "Traceback" not in rest and "never retrieved" not in rest
    again = batonflow(*args, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["files"] == 30
    from batonflow.rag import QdrantStore  # the embedded engine the CLI wrote with

    store = QdrantStore(tmp_path / "q", collection="docs")
    try:
        assert store.count() == 30  # each file's chunk once
    finally:
        store.close()
