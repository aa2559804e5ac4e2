"""A real `batonflow serve` subprocess: start message, access log, port in use, --server commands."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import httpx

from .served import _env

FLOWS = str(Path(__file__).with_name("flows.py"))


FLOW_ARGS = (
    "--no-prebuilt",
    "-w", f"echo={FLOWS}:EchoFlow",
    "-w", f"approval={FLOWS}:approval_flow",
    "-w", f"sleepy={FLOWS}:sleepy_flow",
)  # fmt: skip


def batonflow(*args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "batonflow", *args],
        capture_output=True, text=True, timeout=60, env=_env(), input=input,
    )  # fmt: skip


def test_access_log_line_per_request_and_quiet(serve):
    """Each request logs one access line; --quiet logs none."""
    loud = serve(*FLOW_ARGS)
    assert httpx.get(f"{loud.url}/health").status_code == 200
    httpx.post(f"{loud.url}/workflows/echo/runs?wait=true", json={"a": 1})
    loud.wait_for(r'"GET /health HTTP/1\.1" 200')
    loud.wait_for(r'"POST /workflows/echo/runs\?wait=true HTTP/1\.1" 200')
    quiet = serve(*FLOW_ARGS, "--quiet")
    assert httpx.get(f"{quiet.url}/health").status_code == 200
    assert not [ln for ln in quiet.drain() if "HTTP/1.1" in ln]


def test_start_message_is_short_without_an_llm_key(serve):
    """The prebuilt LLM flows that cannot run are named in one short line."""
    served = serve("--no-durable", "-w", f"echo={FLOWS}:EchoFlow")
    lines = served.drain()
    skipped = [ln for ln in lines if ln.startswith("not serving")]
    assert skipped[0] == "not serving joke, react (set OPENAI_API_KEY)"
    assert all(len(ln) < 200 for ln in skipped if "rag" not in ln)


def test_a_port_in_use_is_one_line(serve):
    """A second server on the same port exits 1 with one line naming the port and --port 0."""
    first = serve(*FLOW_ARGS)
    port = first.url.rsplit(":", 1)[1]
    started = time.monotonic()
    second = batonflow("serve", "--port", port, *FLOW_ARGS)
    assert second.returncode == 1
    assert second.stderr.strip() == (
        f"error: Port {port} on 127.0.0.1 is already in use by another process; stop it, choose "
        "another with --port, or pass --port 0 for any free port."
    )
    assert time.monotonic() - started < 30  # it fails before building any flow


def test_run_and_runs_with_server(serve):
    """run/runs --server URL start, answer, list, show and cancel runs on a real server."""
    served = serve(*FLOW_ARGS)
    done = batonflow("run", "approval", "--server", served.url, "--answer", "yes", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["result"] == "?: yes" and result["flow"] == "approval"
    by_stdin = batonflow("run", "approval", "--server", served.url, "-s", "topic=t", input="no\n")
    assert by_stdin.returncode == 0 and by_stdin.stdout.strip() == "t: no"
    assert "approve?" in by_stdin.stderr
    listed = batonflow("runs", "list", "--server", served.url, "--json")
    rows = json.loads(listed.stdout)
    assert [r["status"] for r in rows] == ["completed", "completed"]
    assert rows[1]["run_id"] == result["run_id"] and rows[1]["source"] == served.url
    shown = batonflow(
        "runs", "show", result["run_id"], "--server", served.url, "--events", "--json"
    )
    data = json.loads(shown.stdout)
    assert data["result"] == "?: yes"
    assert [e.get("type") for e in data["events"]] == ["InputRequiredEvent", "StopEvent", None]
    slow = httpx.post(f"{served.url}/workflows/sleepy/runs", json={"seconds": 30}).json()["run_id"]
    cancelled = batonflow("runs", "cancel", slow, "--server", served.url)
    assert cancelled.returncode == 0 and cancelled.stdout.strip() == f"run {slow}: cancelled"
    bogus = batonflow("runs", "list", "--server", served.url, "--status", "bogus")
    assert bogus.returncode == 1 and "Unknown status 'bogus'; use one of running" in bogus.stderr
    missing = batonflow("run", "nope", "--server", served.url)
    assert missing.returncode == 1
    assert (
        "error: 404: Workflow 'nope' is not served here; served: approval, echo" in missing.stderr
    )
    down = batonflow("runs", "list", "--server", "http://127.0.0.1:9")
    assert down.returncode == 1
    assert "No answer from the batonflow server at http://127.0.0.1:9" in down.stderr
