"""Versions: a run records its workflow's version, and new code is checked against a run's
checkpoint before it continues the run (memory, SQLite, PostgreSQL)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from batonflow.core import (
    CheckpointError,
    IncompatibleRunError,
    StartEvent,
    StopEvent,
    Workflow,
    WorkflowCheckpointer,
    WorkflowConfigurationError,
    step,
)
from batonflow.core.checkpoints import CheckpointStore, RunInfo
from versioned_flows import CALLS, answer, make_flow, park


@pytest.fixture(autouse=True)
def _clear_calls() -> None:
    CALLS.clear()


async def test_a_run_records_the_version_of_its_workflow(store: CheckpointStore) -> None:
    """A durable run's record holds Workflow.version, the hash of its shape."""
    flow = make_flow()()
    run_id = await park(WorkflowCheckpointer(flow, store=store))
    record = store.run(run_id)
    assert record is not None and record.workflow_version == flow.version
    assert len(flow.version) == 16 and int(flow.version, 16) >= 0


def test_the_version_changes_with_the_shape_not_with_a_step_body() -> None:
    """Renaming a step or changing an event's or the state's fields changes the hash; a step
    body does not."""
    first = make_flow()().version
    assert make_flow()().version == first
    assert make_flow(body="v2")().version == first
    changed = [
        make_flow(second="dispatch"),
        make_flow(order="optional"),
        make_flow(order="retyped"),
        make_flow(state="list"),
        make_flow(third=True),
    ]
    versions = {cls().version for cls in changed}
    assert first not in versions and len(versions) == len(changed)


def test_a_declared_version_replaces_the_hash() -> None:
    """version= (constructor or class attribute) is what runs record."""
    assert make_flow(version="2026-12")().version == "2026-12"
    assert make_flow()(version="7").version == "7"
    with pytest.raises(WorkflowConfigurationError, match=r"version=3 is not a version.*declare"):
        make_flow()(version=3)  # type: ignore[arg-type]


async def test_a_declared_version_is_trusted_when_equal_and_checked_when_not(
    store: CheckpointStore,
) -> None:
    """A run of the same declared version is not read (the declaration is the promise); one of
    another declared version is read against the code."""
    run_id = await park(WorkflowCheckpointer(make_flow(version="1")(), store=store))
    same = WorkflowCheckpointer(make_flow(second="dispatch", version="1")(), store=store)
    assert same.check(run_id).ok
    bumped = WorkflowCheckpointer(make_flow(second="dispatch", version="2")(), store=store)
    found = bumped.check(run_id)
    assert (found.recorded_version, found.version) == ("1", "2")
    assert found.reasons == ("step 'ship' (with events queued) was renamed or removed",)


_MODULE = """
from batonflow.core import Event, StartEvent, StopEvent, Workflow, step


class Picked(Event):
    name: str
    tags: list[str] = []
    size: int | None = None


class Flow(Workflow):
    @step
    async def pick(self, ev: StartEvent) -> Picked:
        return Picked(name="x")

    @step
    async def done(self, ev: Picked) -> StopEvent:
        return StopEvent(result=ev.name)
"""


def test_the_hash_is_the_same_in_every_process_and_hash_seed(tmp_path: Path) -> None:
    """Two interpreters with different PYTHONHASHSEEDs compute the same version."""
    (tmp_path / "hashed_flow.py").write_text(textwrap.dedent(_MODULE))
    code = "import hashed_flow; print(hashed_flow.Flow().version)"
    seen = set()
    for seed in ("1", "2", "random"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(tmp_path)}
        done = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        seen.add(done.stdout.strip())
    assert len(seen) == 1 and len(seen.pop()) == 16


async def test_a_resume_with_the_step_renamed_is_refused_before_anything_runs(
    store: CheckpointStore,
) -> None:
    """The waiting step renamed: IncompatibleRunError naming the run and the step, the run
    recorded interrupted with that reason, no step ran; the old code resumes it later."""
    run_id = await park(WorkflowCheckpointer(make_flow()(), store=store))
    CALLS.clear()
    new = WorkflowCheckpointer(make_flow(second="dispatch")(), store=store)
    with pytest.raises(IncompatibleRunError, match=rf"Run '{run_id}'.*step 'ship'.*renamed"):
        new.resume(run_id)
    assert CALLS == []
    record = store.run(run_id)
    assert record is not None and record.status == "interrupted"
    assert record.error is not None and "IncompatibleRunError" in record.error
    assert "step 'ship' (with events queued) was renamed or removed" in record.error
    # Interrupted, not ended: the code that started it resumes it (a rollback).
    assert await answer(WorkflowCheckpointer(make_flow()(), store=store), run_id, "ok") == "ok"
    assert CALLS == ["ship"]


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        pytest.param({"order": "required"}, "field 'qty' is required now", id="required-field"),
        pytest.param({"order": "retyped"}, "field 'item': Input should be a valid", id="type"),
        pytest.param(
            {"state": "list"},
            "its state no longer fits the state type: field 'count'",
            id="state-field",
        ),
    ],
)
async def test_an_incompatible_field_change_is_a_reason(
    store: CheckpointStore, change: dict[str, str], reason: str
) -> None:
    """A pending event's required field added or type changed, the state's field retyped:
    check() says why, resume() refuses."""
    run_id = await park(WorkflowCheckpointer(make_flow()(), store=store))
    new = WorkflowCheckpointer(make_flow(**change)(), store=store)
    found = new.check(run_id)
    assert not found.ok and any(reason in r for r in found.reasons), found.reasons
    assert reason in found.line() and found.line().startswith(run_id)
    with pytest.raises(IncompatibleRunError, match=reason.replace("'", ".")):
        new.resume(run_id)


@pytest.mark.parametrize(
    "change",
    [
        pytest.param({"third": True}, id="new-step"),
        pytest.param({"order": "optional"}, id="optional-field"),
        pytest.param({"body": "v2"}, id="step-body"),
    ],
)
async def test_a_compatible_change_continues_the_run(
    store: CheckpointStore, change: dict[str, object]
) -> None:
    """A new step, an optional field, a changed step body: the check passes, the run goes on
    with the new code to its end."""
    run_id = await park(WorkflowCheckpointer(make_flow()(), store=store))
    new = WorkflowCheckpointer(make_flow(**change)(), store=store)  # type: ignore[arg-type]
    assert new.check(run_id).ok
    result = await answer(new, run_id, "yes")
    expected = {"third": "notified: yes", "body": "YES"}
    assert result == next((v for k, v in expected.items() if k in change), "yes")
    record = store.run(run_id)
    assert record is not None and record.status == "completed"


async def test_check_runs_lists_the_runs_in_flight_the_code_cannot_continue(
    store: CheckpointStore,
) -> None:
    """check_runs looks at every run in flight of the workflow: ended runs are not listed."""
    old = WorkflowCheckpointer(make_flow()(), store=store)
    parked = await park(old)
    ended = await park(old)
    await answer(old, ended, "done")
    new = WorkflowCheckpointer(make_flow(second="dispatch")(), store=store)
    checks = new.check_runs()
    assert [c.run_id for c in checks] == [parked]
    assert checks[0].to_dict()["ok"] is False and checks[0].recorded_version == old.workflow.version


async def test_an_ended_run_is_not_checked_and_keeps_its_status(store: CheckpointStore) -> None:
    """Resuming a completed run with changed code returns its result, or fails as restoring
    it fails: the run stays completed, never marked interrupted."""
    old = WorkflowCheckpointer(make_flow()(), store=store)
    run_id = await park(old)
    assert await answer(old, run_id, "done") == "done"
    renamed = WorkflowCheckpointer(make_flow(second="dispatch")(), store=store)
    assert await renamed.resume(run_id) == "done"
    retyped = WorkflowCheckpointer(make_flow(state="list")(), store=store)
    with pytest.raises(CheckpointError) as raised:
        retyped.resume(run_id)
    assert not isinstance(raised.value, IncompatibleRunError)
    record = store.run(run_id)
    assert record is not None and (record.status, record.error) == ("completed", None)


async def test_run_from_and_fork_refuse_a_checkpoint_the_code_cannot_continue(
    store: CheckpointStore,
) -> None:
    """A new run from an incompatible checkpoint is refused; its source run is untouched."""
    run_id = await park(WorkflowCheckpointer(make_flow()(), store=store))
    new = WorkflowCheckpointer(make_flow(order="required")(), store=store)
    latest = store.latest(run_id)
    assert latest is not None
    with pytest.raises(IncompatibleRunError, match="field 'qty' is required now"):
        new.run_from(checkpoint=latest)
    with pytest.raises(IncompatibleRunError, match="field 'qty' is required now"):
        new.fork(run_id)
    record = store.run(run_id)
    assert record is not None and record.status == "waiting"


async def test_a_run_that_died_before_its_first_checkpoint_is_checked_by_its_start_event(
    store: CheckpointStore,
) -> None:
    """No checkpoint: the recorded start event must still fit the workflow's StartEvent."""

    class Begin(StartEvent):
        topic: str

    class Needs(StartEvent):
        topic: str
        lang: str

    class Old(Workflow):
        @step
        async def go(self, ev: Begin) -> StopEvent:
            return StopEvent(result=ev.topic)

    class New(Workflow):
        @step
        async def go(self, ev: Needs) -> StopEvent:
            return StopEvent(result=ev.topic)

    old = WorkflowCheckpointer(Old(workflow_name="W"), store=store)
    record, _, _ = old._new_run(Begin(topic="tea"), None, RunInfo(), {})
    store.create_run(record)  # recorded, then its process stopped before the first step
    let_go = getattr(store, "let_go", None)
    if let_go is not None:
        let_go(record.run_id)
    new = WorkflowCheckpointer(New(workflow_name="W"), store=store)
    found = new.check(record.run_id)
    assert not found.ok and "start event" in found.reasons[0], found.reasons
    with pytest.raises(IncompatibleRunError):
        new.resume(record.run_id)
