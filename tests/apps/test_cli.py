"""The ``batonflow`` command line through typer's runner and as a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from batonflow.apps.cli import app
from typer.testing import CliRunner

FLOWS = str(Path(__file__).with_name("flows.py"))
ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()


def invoke(*args: str, input: str | None = None):
    return runner.invoke(app, list(args), input=input)


def test_run_by_reference_prints_json_result():
    """run file.py:Class with --set fields prints the result as JSON with the run id."""
    result = invoke(
        "run",
        f"{FLOWS}:EchoFlow",
        "--set",
        "n=3",
        "--set",
        "tags=[1,2]",
        "--set",
        "name=ada",
        "--set",
        "none=null",
        "--json",
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout.strip().splitlines()[-1])
    assert data["result"] == {"n": 3, "tags": [1, 2], "name": "ada", "none": None}
    assert len(data["run_id"]) > 8


def test_run_an_instance_and_a_factory():
    """module:instance and module:factory() references work too."""
    for ref in ("echo_instance", "make_echo"):
        result = invoke("run", f"{FLOWS}:{ref}", "-s", "x=1", "--json")
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout.splitlines()[-1])["result"] == {"x": 1}


def test_run_prebuilt_hitl_flow_answers_from_option_and_stdin():
    """The hitl flow takes --answer, else reads the answer from stdin."""
    by_option = invoke("run", "hitl", "--answer", "yes", "--json")
    assert by_option.exit_code == 0, by_option.output
    assert json.loads(by_option.stdout.splitlines()[-1])["result"]["approved"] is True
    by_stdin = invoke("run", "hitl", "--set", "topic=v2", input="no\n")
    assert by_stdin.exit_code == 0, by_stdin.output
    assert '"approved": false' in by_stdin.stdout
    assert "Approve this note?" in by_stdin.stderr


def test_run_stream_prints_events_as_ndjson():
    """--stream --json prints one JSON line per streamed event, then the result."""
    result = invoke(
        "run", f"{FLOWS}:TicksFlow", "-s", "count=3", "-s", "delay=0", "--stream", "--json"
    )
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [ln["event"]["value"]["n"] for ln in lines[:-1]] == [1, 2, 3]
    assert lines[-1]["result"] == 3


@pytest.mark.parametrize(
    "args, message",
    [
        pytest.param(["run", "nope"], "Unknown flow 'nope'; use one of joke,", id="unknown-flow"),
        pytest.param(
            ["run", "hitl", "--set", "topic"],
            "--set expects key=value, got 'topic'",
            id="set-without-equals",
        ),
        pytest.param(
            ["run", "hitl", "--set", "a b=1"], "is not a valid field name", id="set-bad-key"
        ),
        pytest.param(
            ["run", "missing/flows.py:Flow"],
            "File 'missing/flows.py' does not exist",
            id="missing-file",
        ),
        pytest.param(
            ["run", "no_such_module_xyz:Flow"],
            "Module 'no_such_module_xyz' was not found",
            id="missing-module",
        ),
        pytest.param(["run", f"{FLOWS}:Nope"], "has no attribute 'Nope'", id="missing-attr"),
        pytest.param(
            ["run", f"{FLOWS}:not_a_workflow"],
            "is not a Workflow (it is a int)",
            id="not-a-workflow",
        ),
        pytest.param(
            ["run", f"{FLOWS}:TypedFlow", "-s", "n=abc"],
            "--set n: Input should be a valid integer",
            id="typed-start-field",
        ),
        pytest.param(
            ["run", f"{FLOWS}:FailFlow"], "ValueError: the step failed on purpose", id="failing-run"
        ),
        pytest.param(
            ["run", "hitl"], "stdin is closed; pass the answer with --answer", id="no-answer"
        ),
        pytest.param(
            ["rag", "ingest", "does/not/exist"],
            "Path(s) not found: does/not/exist",
            id="ingest-missing-path",
        ),
        pytest.param(
            ["draw", f"{FLOWS}:EchoFlow", "-o", "x.png"],
            "use a .html, .mmd or .md",
            id="draw-bad-suffix",
        ),
        pytest.param(
            ["draw", f"{FLOWS}:EchoFlow", "-o", "no/dir/x.mmd"],
            "Folder 'no/dir' does not exist",
            id="draw-missing-folder",
        ),
        pytest.param(
            ["runs", "list", "--db", "nowhere/runs.db"], "No run store at", id="runs-no-store"
        ),
    ],
)
def test_bad_arguments_exit_1_with_one_line_error(args, message):
    """Bad input exits 1 with one `error:` line naming the problem and no traceback."""
    result = invoke(*args, input="")
    assert result.exit_code == 1, result.output
    lines = [ln for ln in result.stderr.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1, result.stderr
    assert message in lines[0]
    assert "Traceback" not in result.output


def test_debug_shows_the_traceback():
    """--debug prints the traceback instead of the one-line error."""
    result = invoke("run", f"{FLOWS}:FailFlow", "--debug")
    assert result.exit_code == 1
    assert "Traceback (most recent call last)" in result.stderr
    assert "ValueError: the step failed on purpose" in result.stderr


def test_unknown_option_is_a_usage_error():
    """Options typer does not know give exit code 2 and usage help."""
    result = invoke("run", "hitl", "--bogus")
    assert result.exit_code == 2
    assert "No such option" in result.output


def test_draw_mermaid_and_html(tmp_path):
    """draw writes Mermaid (.mmd, .md) and a self-contained HTML page naming every step."""
    mmd = tmp_path / "flow.mmd"
    assert invoke("draw", f"{FLOWS}:ApprovalFlow", "-o", str(mmd)).exit_code == 0
    text = mmd.read_text()
    assert text.lstrip().startswith(("flowchart", "graph")) and "decide" in text
    md = tmp_path / "flow.md"
    assert invoke("draw", "hitl", "-o", str(md)).exit_code == 0
    assert md.read_text().startswith("```mermaid")
    html = tmp_path / "flow.html"
    result = invoke("draw", f"{FLOWS}:ApprovalFlow", "-o", str(html))
    assert result.exit_code == 0, result.output
    page = html.read_text()
    assert "<html" in page.lower() and "decide" in page and "http://" not in page.split("<svg")[0]


def test_help_of_every_command():
    """--help works on the root and on every command and group."""
    for args in (
        [],
        ["run"],
        ["rag"],
        ["rag", "ingest"],
        ["rag", "ask"],
        ["draw"],
        ["serve"],
        ["runs"],
        ["runs", "list"],
        ["runs", "show"],
        ["runs", "resume"],
        ["demo"],
    ):
        result = invoke(*args, "--help")
        assert result.exit_code == 0, (args, result.output)
        assert "Usage" in result.output
    # Wide enough that rich does not cut the variable names short.
    serve_help = runner.invoke(app, ["serve", "--help"], env={"COLUMNS": "200"}).output
    assert "BATONFLOW_PORT" in serve_help and "BATONFLOW_API_TOKEN" in serve_help
    assert "BATONFLOW_DATABASE_URL" in serve_help and "BATONFLOW_LEASE_SECONDS" in serve_help
    assert "pip install 'batonflow[server]'" in serve_help  # not eaten as rich markup


def _python_m(*args: str, input: str | None = None, cwd: Path | None = None):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "OTEL_"))}
    return subprocess.run(
        [sys.executable, "-m", "batonflow.apps", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        input=input,
        cwd=cwd or ROOT,
    )


def test_python_m_runs_a_flow():
    """`python -m batonflow.apps run ... --json` works in a real process."""
    proc = _python_m("run", f"{FLOWS}:EchoFlow", "--set", "topic=pirates", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.splitlines()[-1])["result"] == {"topic": "pirates"}


def test_python_m_bad_arguments():
    """A real process reports an unknown flow in one line with exit code 1."""
    proc = _python_m("run", "no-such-flow")
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [
        "error: Unknown flow 'no-such-flow'; use one of joke, react, guess-number, accumulate, "
        "rag, hitl or module:WorkflowClass (e.g. mypkg.flows:MyFlow, or path/to/file.py:MyFlow)."
    ]
    missing = _python_m("run", "gone.py:Flow")
    assert missing.returncode == 1 and "File 'gone.py' does not exist" in missing.stderr
    version = _python_m("--version")
    assert version.returncode == 0 and version.stdout.startswith("batonflow ")


def test_rag_ingest_and_ask(tmp_path):
    """rag ingest reports files and chunks; rag ask answers with numbered sources."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "tea.md").write_text("# Tea\n\nGreen tea is steeped at 80 degrees for two minutes.\n")
    (docs / "bread.md").write_text("# Bread\n\nSourdough rises slowly with wild yeast.\n")
    (docs / "empty.md").write_text("")
    where = ["--qdrant-path", str(tmp_path / "q"), "--collection", "kitchen"]
    ingested = invoke("rag", "ingest", str(docs), *where)
    assert ingested.exit_code == 0, ingested.output
    assert "ingested 2 file(s)" in ingested.stdout and "skipped" in ingested.stdout
    answer = invoke("rag", "ask", "How hot should green tea water be?", *where)
    assert answer.exit_code == 0, answer.output
    assert "Sources:" in answer.stdout and "[1] tea.md" in answer.stdout
    empty = invoke("rag", "ask", "  ", *where)
    assert empty.exit_code == 1 and "The question is empty" in empty.stderr
    typo = invoke("rag", "ask", "tea?", "--qdrant-path", str(tmp_path / "q"), "-c", "kitchn")
    assert typo.exit_code == 1, typo.output
    assert typo.stderr.strip().splitlines() == [
        f"error: Collection 'kitchn' does not exist at {tmp_path / 'q'}; the collections there "
        "are: kitchen; pass one with collection= (--collection), or ingest documents first: "
        "batonflow rag "
        "ingest PATH --collection kitchn."
    ]
    nothing = invoke("rag", "ask", "tea?", "--qdrant-path", str(tmp_path / "q2"))
    assert nothing.exit_code == 1
    assert "does not exist at" in nothing.stderr and "it has no collections yet;" in nothing.stderr


def test_rag_with_the_qdrant_folder_in_use_gives_cli_advice(tmp_path):
    """A local Qdrant folder held by another store: the advice names CLI options, not path=."""
    from batonflow.rag import QdrantStore

    folder = tmp_path / "q"
    holder = QdrantStore(path=str(folder), collection="docs")
    try:
        result = invoke("rag", "ask", "tea?", "--qdrant-path", str(folder))
    finally:
        holder.close()
    assert result.exit_code == 1, result.output
    line = result.stderr.strip().splitlines()[-1]
    assert line.startswith(f"error: The local Qdrant folder {str(folder)!r} is in use by another")
    assert "use another --qdrant-path" in line and "--qdrant-url" in line
    assert "store.close()" not in line


@pytest.mark.parametrize(
    "args, message",
    [
        pytest.param(
            ["guess-number", "--set", "targt=7"],
            "error: --set targt: GuessNumberStart has no field 'targt'; its fields are target, "
            "first_guess; fix the name and run again.",
            id="typo",
        ),
        pytest.param(
            ["guess-number", "--set", "target=700"],
            "error: --set target: Input should be less than or equal to 100, got 700; fix the "
            "value and run again.",
            id="out-of-range",
        ),
        pytest.param(
            ["accumulate", "--set", "numbers=abc"],
            "error: --set numbers: AccumulateWorkflow.run(numbers=...) needs a list of numbers, "
            "got 'abc'; e.g. run(numbers=[1, 2, 3]); fix the value and run again.",
            id="not-numbers",
        ),
        pytest.param(
            ["accumulate"],
            "error: --set numbers: Field required; add --set numbers=VALUE.",
            id="missing",
        ),
    ],
)
def test_prebuilt_flows_check_their_start_fields(args, message, tmp_path, monkeypatch):
    """Prebuilt flows have typed start events: a typo or a bad value is a one-line error."""
    monkeypatch.chdir(tmp_path)
    result = invoke("run", *args)
    assert result.exit_code == 1, result.output
    assert result.stderr.strip().splitlines() == [message]


def test_rag_start_field_typo_names_query(tmp_path, monkeypatch):
    """run rag --set question=... names the field the rag flow takes (once its collection
    exists: a missing one is reported first, before the flow loads)."""
    from batonflow.rag import QdrantStore

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("BATONFLOW_QDRANT_PATH", raising=False)
    monkeypatch.delenv("BATONFLOW_COLLECTION", raising=False)
    with QdrantStore(path=tmp_path / ".batonflow" / "qdrant", collection="docs") as store:
        store.ensure_collection()
    result = invoke("run", "rag", "--set", "question=hi")
    assert result.exit_code == 1, result.output
    assert "--set question: RAGStart has no field 'question'; its fields are query" in (
        result.stderr
    )


def test_durable_run_with_non_json_state_explains_the_checkpoints(tmp_path):
    """run --durable failing to checkpoint says so and how to run anyway; without it, it works."""
    db = str(tmp_path / "runs.db")
    durable = invoke("run", f"{FLOWS}:OpaqueStateFlow", "--durable", "--db", db)
    assert durable.exit_code == 1, durable.output
    line = [ln for ln in durable.stderr.splitlines() if ln.startswith("error:")][0]
    assert line.startswith("error: SerializationError: Cannot serialize state['payload']")
    assert line.endswith(
        "(--durable checkpoints every step, which needs serializable state and stream events: "
        "run without --durable, or give the workflow serializer=PickleSerializer() for trusted "
        "data.)"
    )
    plain = invoke("run", f"{FLOWS}:OpaqueStateFlow")
    assert plain.exit_code == 0 and plain.stdout.strip() == "done"
    # A stream event is not part of a checkpoint: its log entry shows it as JSON (or repr).
    streamed = invoke("run", f"{FLOWS}:OpaqueStreamFlow", "--durable", "--db", db)
    assert streamed.exit_code == 0 and streamed.stdout.strip() == "done", streamed.output
