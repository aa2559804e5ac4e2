"""Without an extra, every command says in one line which extra to install (no traceback)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Runs `python -m batonflow ARGS` with some top-level packages made unimportable, as if the
# extra that installs them were missing.
# (A None in sys.modules is what Python's import and find_spec treat as "not there".)
BLOCKER = """
import runpy, sys

for name in sys.argv[1].split(","):
    sys.modules[name] = None
sys.argv = ["batonflow", *sys.argv[2:]]
runpy.run_module("batonflow", run_name="__main__")
"""


def run_without(blocked: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "OTEL_"))}
    env["OPENAI_API_KEY"] = "sk-test"  # the LLM flows get as far as building their LLM
    return subprocess.run(
        [sys.executable, "-c", BLOCKER, blocked, *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env=env,
    )


@pytest.mark.parametrize(
    "blocked, args, extra",
    [
        pytest.param("typer", ["--help"], "cli", id="cli-without-typer"),
        pytest.param("rich", ["run", "accumulate"], "cli", id="cli-without-rich"),
        pytest.param("fastapi", ["serve", "--port", "0"], "server", id="serve"),
        pytest.param("uvicorn", ["serve", "--port", "0"], "server", id="serve-uvicorn"),
        pytest.param("llama_index", ["run", "joke", "--set", "topic=x"], "agents", id="run-joke"),
        pytest.param("qdrant_client", ["rag", "ask", "why?"], "rag", id="rag"),
        pytest.param(
            "httpx_sse",
            ["runs", "list", "--server", "http://127.0.0.1:9"],
            "client",
            id="runs-server",
        ),
        pytest.param(
            "httpx_sse",
            ["run", "hitl", "--server", "http://127.0.0.1:9"],
            "client",
            id="run-server",
        ),
        pytest.param("qdrant_client", ["demo"], "demo", id="demo"),
    ],
)
def test_a_missing_extra_is_one_line_naming_it(tmp_path, blocked, args, extra):
    """The command exits 1 with one 'error:' line that names pip install 'batonflow[extra]'."""
    proc = run_without(blocked, *args, cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1, proc.stderr
    assert f"pip install 'batonflow[{extra}]'" in lines[0]


def test_python_dash_m_batonflow_runs_the_command_line(tmp_path):
    """python -m batonflow is the command line (as the console script is)."""
    proc = subprocess.run(
        [sys.executable, "-m", "batonflow", "run", "accumulate", "--set", "numbers=[1,2]"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "Sum: 3, count: 2"


def test_flows_without_an_llm_do_not_import_llama_index(tmp_path):
    """run accumulate / guess-number import neither llama-index nor the agents' LLM events."""
    probe = (
        "import sys, runpy\n"
        "sys.argv = ['batonflow', *sys.argv[1:]]\n"
        "try:\n"
        "    runpy.run_module('batonflow', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        # the bare namespace package `llama_index` is found (cheaply) to check the extra
        "heavy = sorted(m for m in sys.modules if m.startswith(('llama_index.', 'qdrant_client',"
        " 'fastapi', 'uvicorn', 'batonflow.agents.events', 'batonflow.rag')))\n"
        "print('HEAVY', heavy)\n"
    )
    for args in (
        ["run", "accumulate", "--set", "numbers=[1,2]"],
        ["run", "guess-number", "-s", "target=9"],
    ):
        proc = subprocess.run(
            [sys.executable, "-c", probe, *args],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
        )
        assert proc.returncode == 0, proc.stderr
        assert "HEAVY []" in proc.stdout, proc.stdout
