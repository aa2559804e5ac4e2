"""``batonflow runs export RUN --cassette FILE``: a durable run's journal as a cassette.

A FunctionAgent run durably against OpenAI (respx) journals its LLM and tool calls with their
requests; the export writes them as the cassette ``record()`` would, secrets redacted, and
``replay()`` runs the agent again with the network blocked and gets the same answer. Runs with
nothing to export and bad paths fail with clear errors.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import respx
from batonflow.agents.journaled import journaled_chat
from batonflow.apps.cli import app
from batonflow.apps.server import BackgroundServer, create_app
from batonflow.client import Client
from batonflow.core import Context, SqliteCheckpointStore, StartEvent, StopEvent, Workflow, step
from batonflow.core.durable._journal import RunJournal
from batonflow.core.durable._records import JournalEntry
from batonflow.core.serialization import JsonSerializer
from batonflow.core.stores import open_store
from batonflow.testing import load_cassette, replay
from flows import SECRET_KEY, TOOL_RUNS, mock_weather_answers, weather_agent
from llama_index.core.base.llms.types import ChatMessage, ChatResponse
from typer.testing import CliRunner

QUESTION = "Weather in Rome?"
ANSWER = "It is 24C and sunny in Rome."


def _export(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["runs", "export", *args])
    return result.exit_code, result.output


async def _durable_run(db: Path) -> str:
    """One durable run of the weather agent in the store ``db``; its run id."""
    with SqliteCheckpointStore(db) as store:
        handler = weather_agent(checkpoint_store=store).run(user_msg=QUESTION)
        assert str(await handler) == ANSWER
        return str(handler.run_id)


async def test_an_exported_durable_run_replays_offline_with_the_same_result(
    tmp_path: Path, openai_wire: respx.MockRouter, request: pytest.FixtureRequest
) -> None:
    """The export holds the run's LLM requests (messages, tools, model), its tool call's
    arguments and result, no secret; replay answers the agent from it with sockets refused."""
    db, path = tmp_path / "runs.db", tmp_path / "out" / "run.json"
    route = mock_weather_answers(openai_wire)
    run_id = await _durable_run(db)
    assert route.call_count == 2
    openai_wire.stop()
    code, output = _export(run_id, "--cassette", str(path), "--db", str(db))
    assert code == 0, output
    assert f"wrote {path}: 2 LLM calls, 1 tool calls of run {run_id}" in output
    text = path.read_text()
    assert SECRET_KEY not in text
    assert json.loads(text)["batonflow_cassette"] == 1
    cassette = load_cassette(path)
    assert [(e["kind"], e.get("tool")) for e in cassette] == [
        ("llm", None),
        ("tool", "get_weather"),
        ("llm", None),
    ]
    first = cassette[0]
    assert first["request"]["model"] == "gpt-4o-mini"
    assert first["request"]["messages"][-1] == {"role": "user", "content": QUESTION}
    assert first["request"]["tools"][0]["function"]["name"] == "get_weather"
    assert first["usage"]["total_tokens"] == 15
    assert cassette[1]["arguments"] == {"city": "Rome"}
    assert cassette[1]["result"]["content"] == "24C and sunny in Rome"
    request.getfixturevalue("offline")
    TOOL_RUNS.clear()
    async with replay(path):
        assert str(await weather_agent().run(user_msg=QUESTION)) == ANSWER
    assert TOOL_RUNS == []  # answered from the cassette


class Plain(Workflow):
    """Journals a call of its own: no agent call, nothing a cassette holds."""

    @step
    async def go(self, ctx: Context, ev: StartEvent) -> StopEvent:
        return StopEvent(result=await ctx.journal("price", lambda: 12))


async def test_an_unknown_run_and_a_run_without_agent_calls_fail_clearly(tmp_path: Path) -> None:
    """A run the store does not hold (a run that was not durable) and a durable run that
    journaled only its own calls each fail naming the run; no file is written."""
    db = tmp_path / "runs.db"
    with SqliteCheckpointStore(db) as store:
        journaled = Plain(timeout=30, checkpoint_store=store).run()
        assert await journaled == 12
    out = str(tmp_path / "c.json")
    code, output = _export("nope", "--cassette", out, "--db", str(db))
    assert code == 1 and "No run 'nope' in the run store" in output
    code, output = _export(str(journaled.run_id), "--cassette", out, "--db", str(db))
    assert code == 1, output
    assert f"Run '{journaled.run_id}' journaled 1 calls but none of them an agent's" in output
    assert "or record the run with batonflow.testing.record." in " ".join(output.split())
    assert not Path(out).exists()


async def test_a_run_that_journaled_nothing_and_bad_paths_fail_clearly(
    tmp_path: Path, openai_wire: respx.MockRouter
) -> None:
    """A durable run with no journaled call, and cassette paths that cannot be written."""
    db = tmp_path / "runs.db"
    with SqliteCheckpointStore(db) as store:
        quiet = Quiet(timeout=30, checkpoint_store=store).run()
        assert await quiet == "done"
    code, output = _export(
        str(quiet.run_id), "--cassette", str(tmp_path / "c.json"), "--db", str(db)
    )
    assert code == 1
    assert f"Run '{quiet.run_id}' journaled no calls: it is not a durable run" in output
    mock_weather_answers(openai_wire)
    run_id = await _durable_run(db)
    code, output = _export(run_id, "--cassette", str(tmp_path), "--db", str(db))
    assert code == 1 and f"The cassette path {tmp_path} is a folder" in output
    blocker = tmp_path / "file"
    blocker.write_text("")
    code, output = _export(run_id, "--cassette", str(blocker / "c.json"), "--db", str(db))
    assert code == 1 and f"Cannot write the cassette {blocker / 'c.json'}" in output
    assert "Pass a path in a folder you can write to." in " ".join(output.split())


class Quiet(Workflow):
    """A durable run that journals nothing."""

    @step
    async def go(self, ev: StartEvent) -> StopEvent:
        return StopEvent(result="done")


async def test_a_journal_written_before_requests_were_kept_still_replays(tmp_path: Path) -> None:
    """An LLM call journaled as the response alone (the old shape) is rebuilt on replay."""
    old = ChatResponse(message=ChatMessage(role="assistant", content="old answer"))
    body = JsonSerializer().serialize(json.loads(old.model_dump_json()))
    with SqliteCheckpointStore(tmp_path / "runs.db") as store:
        store.journal_put("r1", JournalEntry("s", 0, 0, "llm", 0, False, body, 1.0))
        journal = RunJournal(store, JsonSerializer(), "r1")

        class Ctx:
            journaled = True

            async def journal(self, name, fn):  # type: ignore[no-untyped-def]
                return await journal.call("s", 0, 0, name, fn, (), {})

        async def never() -> ChatResponse:
            raise AssertionError("the LLM is asked again")

        got = await journaled_chat(Ctx(), never)  # type: ignore[arg-type]
    assert got.message.content == "old answer"


def test_export_from_a_server_is_the_export_from_its_store(tmp_path: Path) -> None:
    """``--server`` reads the journal through the client: the same cassette as ``--db``."""
    store = open_store(tmp_path / "runs.db")
    app_ = create_app({"weather": weather_agent()}, checkpoints=store)
    with respx.mock(assert_all_called=False) as wire, BackgroundServer(app_) as server:
        wire.route(host="127.0.0.1").pass_through()
        mock_weather_answers(wire)
        with Client(server.url) as api:
            run = api.start("weather", {"user_msg": QUESTION})
            assert api.wait(run.run_id, timeout=60).status == "completed"
        remote, local = tmp_path / "remote.json", tmp_path / "local.json"
        code, output = _export(run.run_id, "--cassette", str(remote), "--server", server.url)
        assert code == 0, output
    code, output = _export(run.run_id, "--cassette", str(local), "--db", str(tmp_path / "runs.db"))
    assert code == 0, output
    store.close()
    assert load_cassette(remote) == load_cassette(local)
    assert [e["kind"] for e in load_cassette(remote)] == ["llm", "tool", "llm"]
