"""``batonflow run AGENT``: the answer as it streams, tool calls as lines, the answer as output.

The agents are ``agent_flows.py``'s, on scripted LLMs that stream word by word and call tools;
the command runs through typer's runner, a real server (``--server``) and a real terminal.
"""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from batonflow.apps.cli import app
from batonflow.apps.run_store import RunStore
from batonflow.apps.server import BackgroundServer, create_app
from typer.testing import CliRunner

from . import agent_flows

AGENTS = str(Path(__file__).with_name("agent_flows.py"))
ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()

CALC_STREAM = (
    "Let me add.\n"  # the first LLM turn, streamed, then its tool call
    "→ add(a=2, b=3)\n"
    "← add: 5\n"
    f"{agent_flows.CALC_ANSWER}\n"  # the answer's tokens, on one growing line
)


def run(*args: str):
    return runner.invoke(app, ["run", *args])


def test_stream_prints_the_answer_as_one_growing_line_and_tool_calls_as_lines():
    """--stream: each LLM turn's tokens make one line, tool calls and results a line each."""
    result = run(f"{AGENTS}:calc", "--set", "user_msg=What is 2 + 3?", "--stream")
    assert result.exit_code == 0, result.output
    assert result.stderr == CALC_STREAM
    assert result.stdout == f"{agent_flows.CALC_ANSWER}\n"


def test_the_output_is_the_answer_and_json_the_whole_agent_output():
    """Without --stream stdout is the answer text; --json prints the whole AgentOutput."""
    plain = run(f"{AGENTS}:calc", "--set", "user_msg=What is 2 + 3?")
    assert plain.exit_code == 0, plain.output
    assert plain.stdout == f"{agent_flows.CALC_ANSWER}\n"
    assert plain.stderr == ""
    as_json = run(f"{AGENTS}:calc", "--set", "user_msg=What is 2 + 3?", "--json")
    assert as_json.exit_code == 0, as_json.output
    output = json.loads(as_json.stdout)["result"]
    assert output["response"]["blocks"] == [{"block_type": "text", "text": agent_flows.CALC_ANSWER}]
    assert output["current_agent_name"] == "calc"
    assert output["is_final"] is True
    (call,) = output["tool_calls"]
    assert (call["tool_name"], call["tool_kwargs"], call["tool_output"]["raw_output"]) == (
        "add",
        {"a": 2, "b": 3},
        5,
    )


def test_a_handoff_is_a_line_naming_the_agent_that_takes_over():
    """An AgentWorkflow's handoff shows which agent answers from then on."""
    result = run(f"{AGENTS}:relay", "--set", "user_msg=How far is the Moon?", "--stream")
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == [
        '→ lookup(topic="Moon")',
        "← lookup: Moon: 384,400 km from the Earth",
        '→ handoff(to_agent="writer", reason="the facts are in")',
        # the tool's output on one line
        "← handoff: Agent writer is now handling the request due to the following reason: "
        "the facts are in. Please continue with the current request.",
        "[writer] takes over",
        "The Moon is about 384,400 km away.",
    ]
    assert result.stdout == "The Moon is about 384,400 km away.\n"


def test_a_message_that_parses_as_json_is_still_text():
    """--set user_msg=42 gives the agent the text "42" (its field takes text), not a number."""
    result = run(f"{AGENTS}:calc", "--set", "user_msg=42", "--set", "max_iterations=5", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["result"]["is_final"] is True  # it was refused before


@pytest.mark.parametrize(
    "value, sent",
    [
        pytest.param("42", "42", id="number"),
        pytest.param("true", "true", id="boolean"),
        pytest.param("[1, 2]", "[1, 2]", id="list"),
        pytest.param('"quoted"', "quoted", id="json-string"),
        pytest.param("null", None, id="null"),  # the field takes null
    ],
)
def test_set_gives_text_fields_the_text_written(value, sent):
    """A value that parses as JSON of a type its field does not take stays the text written."""
    from batonflow.apps._introspect import start_schema
    from batonflow.apps.registry import parse_sets, text_where_expected

    items = [f"user_msg={value}", "max_iterations=3"]
    fields = text_where_expected(parse_sets(items), items, start_schema(agent_flows.calc))
    assert fields == {"user_msg": sent, "max_iterations": 3}


def test_a_tool_that_fails_is_a_line_that_says_so():
    """A tool's error is its result line, marked failed; the agent then answers."""
    result = run(f"{AGENTS}:broken", "--set", "user_msg=1 / 0?", "--stream")
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == [
        "→ divide(a=1, b=0)",
        "← divide: failed: Error: tool 'divide' raised ZeroDivisionError: division by zero",
        "I cannot divide by zero.",
    ]


def test_a_tool_that_asks_a_human_is_answered_from_the_option():
    """The question is shown among the tool lines and --answer approves the transfer."""
    result = run(f"{AGENTS}:bank", "-s", "user_msg=Pay Ada", "--stream", "--answer", "yes")
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == [
        '→ transfer(amount=30, to="Ada")',
        "InputRequiredEvent {'prefix': 'Transfer 30 EUR to Ada?'}",
        "← transfer: sent 30 EUR to Ada",
        "Done: sent 30 EUR to Ada.",
    ]
    assert result.stdout == "Done: sent 30 EUR to Ada.\n"


@pytest.fixture
def server(tmp_path) -> Iterator[str]:
    """A real server of the agents; yields its URL."""
    flows = {"calc": agent_flows.calc, "bank": agent_flows.bank}
    served = BackgroundServer(create_app(flows, store=RunStore(tmp_path / "runs.db"))).start()
    yield served.url
    served.stop()


def test_on_a_server_the_stream_and_the_answer_print_the_same(server):
    """--server URL prints what the local run prints; --json the whole AgentOutput."""
    result = run("calc", "--server", server, "-s", "user_msg=What is 2 + 3?", "--stream")
    assert result.exit_code == 0, result.output
    assert result.stderr.split("\n", 1)[1] == CALC_STREAM  # after "run ID on URL"
    assert result.stdout == f"{agent_flows.CALC_ANSWER}\n"
    approved = run("bank", "--server", server, "-s", "user_msg=Pay Ada", "--answer", "no")
    assert approved.exit_code == 0, approved.output
    assert approved.stdout == "Done: the human refused the transfer.\n"
    as_json = run("calc", "--server", server, "-s", "user_msg=What is 2 + 3?", "--json")
    assert json.loads(as_json.stdout)["result"]["current_agent_name"] == "calc"
    number = run("calc", "--server", server, "-s", "user_msg=42", "--json")
    assert number.exit_code == 0, number.output
    run_id = json.loads(number.stdout)["run_id"]
    assert httpx.get(f"{server}/runs/{run_id}").json()["start"] == {"user_msg": "42"}


def test_runs_show_lists_a_streamed_turn_as_one_line(server):
    """runs show --events: an LLM turn's AgentStream events are one line with their text."""
    done = run("calc", "--server", server, "-s", "user_msg=What is 2 + 3?", "--json")
    run_id = json.loads(done.stdout)["run_id"]
    shown = runner.invoke(app, ["runs", "show", run_id, "--events", "--server", server])
    assert shown.exit_code == 0, shown.output
    streamed = [line for line in shown.stdout.splitlines() if "AgentStream" in line]
    assert len(streamed) == 2, shown.stdout  # one per LLM turn, not one per token
    assert streamed[0].endswith("AgentStream × 3: Let me add.")
    assert re.fullmatch(
        rf"  #\d+-\d+ AgentStream × 8: {re.escape(agent_flows.CALC_ANSWER)}", streamed[1]
    )


def _on_a_terminal(*args: str) -> str:
    """What ``batonflow`` shows on a terminal (stdout and stderr both a pseudo-terminal)."""
    leader, follower = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    proc = subprocess.run(
        [sys.executable, "-m", "batonflow", *args],
        stdin=subprocess.DEVNULL,
        stdout=follower,
        stderr=follower,
        env=env,
        timeout=120,
    )
    os.close(follower)
    shown = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the terminal is closed and read to its end
            break
        if not chunk:
            break
        shown += chunk
    os.close(leader)
    assert proc.returncode == 0, shown
    return shown.decode().replace("\r\n", "\n")


def test_on_a_terminal_the_streamed_answer_is_not_printed_twice():
    """Streamed to the terminal that stdout is too, the answer is shown once."""
    shown = _on_a_terminal("run", f"{AGENTS}:calc", "-s", "user_msg=What is 2 + 3?", "--stream")
    assert shown == CALC_STREAM
