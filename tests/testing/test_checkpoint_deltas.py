"""A long agent conversation's checkpoints grow linearly, and read back the same states.

A prebuilt agent keeps its scratchpad and tool calls in state keys that grow at every step;
a durable run's checkpoint stores such a key as the edit of its previous text
(``core/durable/_state_extensions.py``), not whole. Sizes are read from the SQLite store.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from batonflow.core import SqliteCheckpointStore
from batonflow.core.durable import _state_extensions
from batonflow.core.durable._records import state_values
from conversation import checkpoint_bytes, durable_conversation


async def test_a_four_times_longer_conversation_stores_about_four_times_the_checkpoints(
    tmp_path: Path,
) -> None:
    """10 and 40 turns: the checkpoints' bytes grow by about 4, not 16 (every checkpoint
    holding the whole scratchpad); the biggest checkpoint before the answer stays small."""
    totals = {}
    for turns in (10, 40):
        db = tmp_path / f"{turns}.db"
        await durable_conversation(db, turns)
        sizes = checkpoint_bytes(db)
        totals[turns] = sum(sizes)
        # The last one holds the whole conversation once, in the agent's memory.
        assert max(sizes[:-1]) < 4_000, sizes
    assert totals[40] < 5 * totals[10], totals


async def test_the_checkpoints_read_back_the_states_whole_keys_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every checkpoint of a conversation stored with edits reads back, text for text, the
    state that storing every changed key whole gives."""
    await durable_conversation(tmp_path / "edits.db", 12)
    monkeypatch.setattr(_state_extensions, "MIN_KEPT", 10**9)  # no edits: whole keys
    await durable_conversation(tmp_path / "whole.db", 12)
    states = {}
    for name in ("edits", "whole"):
        with SqliteCheckpointStore(tmp_path / f"{name}.db") as store:
            states[name] = [state_values(c.ctx_data["state"]) for c in store.list("talk")]
    assert len(states["edits"]) > 50
    assert states["edits"] == states["whole"]
    assert (
        sum(checkpoint_bytes(tmp_path / "edits.db"))
        < sum(checkpoint_bytes(tmp_path / "whole.db")) / 2
    )
