"""A long agent conversation's journal grows linearly, and still exports the same cassette.

Each LLM call of a conversation sends every earlier message again; the journal of a durable run
keeps, for each call, only the messages new since an earlier call of the run
(``batonflow._request_deltas``). Sizes are read from the SQLite store; the exported cassette is
compared byte for byte with the one ``batonflow.testing.record`` writes for the same scripted
run: after a kill in the middle of the conversation too, and from a journal of the old format
(whole message lists).
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import pytest
from batonflow import _request_deltas
from batonflow.apps.server import BackgroundServer, create_app
from batonflow.client import Client
from batonflow.core import SqliteCheckpointStore, WorkflowCheckpointer
from batonflow.core.durable._records import JournalEntry
from batonflow.testing import REDACTED
from conversation import (
    ANSWER,
    cli,
    conversation_agent,
    durable_conversation,
    exported,
    llm_entry_sizes,
    recorded_conversation,
    run_fields,
    stored_values,
)
from worker_run import line_count, resume, start_and_kill

WORKER = str(Path(__file__).with_name("conversation_worker.py"))
TURNS = 30


def _message_lists(db: Path, run_id: str = "talk") -> list[object]:
    """What the store holds for each journaled LLM call's messages: a list, or a compact form."""
    values = [v for v in stored_values(db, run_id) if isinstance(v, dict) and "response" in v]
    return [v["cassette"][0]["request"]["messages"] for v in values]


async def test_each_call_of_a_long_conversation_stores_the_same_few_bytes(tmp_path: Path) -> None:
    """30 turns on SQLite: the 29th LLM call's stored entry is as big as the 10th's (but for
    the digits of its ids), not three times bigger."""
    db = tmp_path / "runs.db"
    await durable_conversation(db, TURNS)
    sizes = llm_entry_sizes(db)
    assert len(sizes) == TURNS
    assert sizes[28] - sizes[9] < 64, sizes
    assert max(sizes) < 2 * sizes[1], sizes


async def test_a_compact_journal_exports_the_cassette_record_writes(tmp_path: Path) -> None:
    """Only the first call keeps its whole message list; ``runs export`` writes, byte for byte,
    the cassette ``record()`` writes for the same scripted run, and ``runs journal --json``
    shows every request whole."""
    db = tmp_path / "runs.db"
    await durable_conversation(db, TURNS)
    lists = _message_lists(db)
    assert isinstance(lists[0], list)
    assert all(
        isinstance(m, dict) and m["runs"] == [[0, 2 * i]] for i, m in enumerate(lists[1:], 1)
    )
    recorded = await recorded_conversation(tmp_path / "recorded.json", TURNS)
    assert exported(db, tmp_path / "exported.json") == recorded
    shown = json.loads(cli("runs", "journal", "talk", "--json", "--db", str(db)))["calls"]
    llm = [c["value"] for c in shown if c["name"] == "llm"]
    assert [len(v["cassette"][0]["request"]["messages"]) for v in llm] == [
        2 + 2 * i for i in range(TURNS)
    ]
    assert not any(_request_deltas.REF_KEY in v for v in llm)


async def test_a_journal_of_whole_message_lists_still_exports(tmp_path: Path) -> None:
    """A run journaled before calls were stored compactly (each request whole, no ``ref``)
    exports the same cassette."""
    db = tmp_path / "runs.db"
    await durable_conversation(db, TURNS)
    calls = _request_deltas.expand(
        [
            {"value": json.loads(e.body), "entry": e}
            for e in SqliteCheckpointStore(db).journal("talk")
        ]
    )
    with SqliteCheckpointStore(db) as store:
        for call in calls:
            old = call["entry"]
            body = json.dumps({k: v for k, v in call["value"].items() if k != "ref"})
            store.journal_put("talk", JournalEntry(**{**_fields(old), "body": body}))
    assert all(isinstance(m, list) for m in _message_lists(db))
    recorded = await recorded_conversation(tmp_path / "recorded.json", TURNS)
    assert exported(db, tmp_path / "exported.json") == recorded


def test_the_journal_over_http_lists_every_request_whole(tmp_path: Path) -> None:
    """``GET /runs/{id}/journal`` (the client) rebuilds the compact message lists, and shows
    what ``batonflow runs journal --json`` shows locally."""
    db, turns = tmp_path / "runs.db", 10
    with SqliteCheckpointStore(db) as store:
        served = create_app({"talk": conversation_agent(turns)}, checkpoints=store)
        with BackgroundServer(served) as server, Client(server.url) as api:
            run = api.start("talk", run_fields(turns))
            assert api.wait(run.run_id, timeout=60).status == "completed"
            calls = api.journal(run.run_id)
    llm = [c["value"] for c in calls if c["name"] == "llm"]
    assert [len(v["cassette"][0]["request"]["messages"]) for v in llm] == [
        2 + 2 * i for i in range(turns)
    ]
    assert not any(_request_deltas.REF_KEY in v for v in llm)
    assert all(isinstance(m, dict) for m in _message_lists(db, run.run_id)[1:])
    local = json.loads(cli("runs", "journal", run.run_id, "--json", "--db", str(db)))["calls"]
    assert local == calls


async def test_every_message_of_a_compact_journal_is_redacted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A secret (a ``*_KEY`` environment variable) in each tool result: no stored LLM call, no
    stored cassette part and no exported cassette holds it; the new messages a compact call
    keeps hold the redaction mark. (A tool call's own outcome keeps the output: it is replayed.)"""
    secret, turns = "lookup-key-0123456789", 5
    monkeypatch.setenv("LOOKUP_SERVICE_KEY", secret)
    db = tmp_path / "runs.db"
    with SqliteCheckpointStore(db) as store:
        agent = conversation_agent(turns, tail=f"(key {secret})")
        cptr = WorkflowCheckpointer(agent, store=store)
        assert str(await cptr.run(run_id="talk", **run_fields(turns))) == ANSWER
        values = [(e.name, json.loads(e.body)) for e in store.journal("talk")]
    kept = [v if name == "llm" else v["cassette"] for name, v in values]
    assert len(kept) == 2 * turns - 1 and secret not in json.dumps(kept)
    compact = _message_lists(db)[2]
    assert isinstance(compact, dict) and f"(key {REDACTED})" in json.dumps(compact["new"])
    assert secret not in exported(db, tmp_path / "exported.json").decode()


def _fields(entry: JournalEntry) -> dict[str, object]:
    return {name: getattr(entry, name) for name in JournalEntry.__slots__}


@pytest.mark.slow
async def test_a_conversation_killed_midway_resumes_and_exports_the_same_cassette(
    tmp_path: Path,
) -> None:
    """SIGKILL after about ten turns, resumed in a new process: the run ends with the answer,
    the resumed run's first LLM call keeps its whole list (this process remembers no earlier
    call) and the next ones are compact again, and the export is the recorded cassette."""
    db, effects = tmp_path / "runs.db", tmp_path / "effects.txt"
    args = [str(db), str(effects), str(TURNS)]
    start_and_kill(
        WORKER, args, random.Random(7), lambda: line_count(effects) >= 20, sys.executable
    )
    killed_at = effects.read_text().split().count("llm")
    assert killed_at < TURNS
    assert resume(WORKER, args, sys.executable) == ANSWER
    calls = effects.read_text().split().count("llm")
    assert TURNS <= calls <= TURNS + 1  # at most the call in flight at the kill was made again
    lists = _message_lists(db)
    assert len(lists) == TURNS
    whole = [i for i, m in enumerate(lists) if isinstance(m, list)]
    assert whole[0] == 0 and len(whole) == 2 and whole[1] <= killed_at
    recorded = await recorded_conversation(tmp_path / "recorded.json", TURNS)
    assert exported(db, tmp_path / "exported.json") == recorded
