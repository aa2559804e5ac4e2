"""`batonflow demo` (the README's first command): an offline tour whose every part shows up.

The tour runs as a user runs it, in a fresh process in an empty folder with no key and no
OTEL_* variables: an agent calling tools, a RAG answer, a drawing, a trace, the run console.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "OTEL_"))}
    return {**env, "PYTHONUNBUFFERED": "1", "COLUMNS": "200"}


def _parts(out: str) -> dict[str, str]:
    """The demo's output cut into its numbered parts, by title."""
    found = re.split(r"^(\d\. .+?)  → (\S+)$", out, flags=re.MULTILINE)
    parts = {}
    for title, page, body in zip(found[1::3], found[2::3], found[3::3], strict=True):
        assert (ROOT / page.split("#")[0]).is_file(), f"{title} points at {page}, not a page"
        parts[title.split(". ", 1)[1]] = body
    return parts


@pytest.mark.slow
def test_demo_tours_agent_rag_drawing_trace_console_offline_twice(tmp_path):
    """Each part prints what it shows and names its docs page; a second run reuses the data."""
    for attempt in (1, 2):
        proc = subprocess.run(
            [sys.executable, "-m", "batonflow.apps", "demo"],
            cwd=tmp_path,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert proc.returncode == 0, f"attempt {attempt}:\n{proc.stdout}\n{proc.stderr}"
        parts = _parts(proc.stdout)
        assert list(parts) == [
            "An agent calling tools",
            "RAG: an answer from the sample docs",
            "A drawing of the agent",
            "A trace of the agent's run",
            "The run console",
        ]
        agent = parts["An agent calling tools"]
        assert "tool call: get_weather(city='Paris') → 18C, sunny" in agent
        assert "tool call: get_weather(city='Rome') → 24C, clear" in agent
        assert "answer: Paris: 18C and sunny. Rome: 24C and clear." in agent
        rag = parts["RAG: an answer from the sample docs"]
        assert "ingested 4 file(s)" in rag and "[1] durability.md" in rag
        drawing = parts["A drawing of the agent"]
        assert "event_AgentStart --> step_receive_input" in drawing
        trace = parts["A trace of the agent's run"]
        assert re.search(r"\d+ spans written to \.batonflow/demo-trace\.jsonl", trace)
        tree = trace.split("the agent's run:", 1)[1]
        assert "invoke_workflow FunctionCallingAgent" in tree
        assert tree.count("execute_tool get_weather") == 2 and "chat scripted" in tree
        console = parts["The run console"]
        assert "guess-number → completed: Found 73 in " in console
        assert "the demo answers 'lgtm'" in console and "'approved': True" in console
        assert re.search(r"this run's page: http://127\.0\.0\.1:\d+/#/runs/\w+", console)
    home = tmp_path / ".batonflow"
    assert (home / "runs.db").exists() and (home / "qdrant").is_dir()
    assert "<svg" in (home / "demo-agent.html").read_text()
    spans = [json.loads(line) for line in (home / "demo-trace.jsonl").read_text().splitlines()]
    assert {"invoke_workflow FunctionCallingAgent", "execute_tool get_weather"} <= {
        s["name"] for s in spans
    }


@pytest.mark.slow
def test_demo_serve_keeps_the_console_open_until_ctrl_c(tmp_path):
    """`batonflow demo --serve` serves the console and the demo's runs until SIGINT."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "batonflow.apps", "demo", "--serve"],
        cwd=tmp_path,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        page = None
        for line in proc.stdout:
            found = re.search(r"this run's page: (http://\S+)/#/runs/(\w+)", line)
            if found:
                page = found.groups()
                break
        assert page is not None, proc.stderr.read() if proc.stderr else ""
        url, run_id = page
        console = httpx.get(f"{url}/", timeout=20)
        assert console.status_code == 200 and "<html" in console.text.lower()
        run = httpx.get(f"{url}/runs/{run_id}", timeout=20).json()
        assert (run["workflow"], run["status"]) == ("hitl", "completed")
        steps = httpx.get(f"{url}/runs/{run_id}/steps", timeout=20).json()["steps"]
        assert steps, "the console has the run's steps"
    finally:
        proc.send_signal(signal.SIGINT)
        code = proc.wait(30)
    assert code == 0
