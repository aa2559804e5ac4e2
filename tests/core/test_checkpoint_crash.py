"""Durable runs: a process killed with SIGKILL mid-step resumes in a new process."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# A fan-out/join pipeline: `fast` finishes and its result waits in the join buffer while `slow`
# is still running; the crash happens inside `slow`. Every step appends its name to a log file
# (fsynced) so the test can count executions across processes.
SCRIPT = textwrap.dedent(
    """
    import asyncio, json, os, sys
    from pathlib import Path

    from batonflow.core import Context, Event, StartEvent, StopEvent, Workflow, step
    from batonflow.core import open_store
    from batonflow.core.checkpoints import WorkflowCheckpointer

    MODE, DB, RUN_ID, LOG, MARKER = sys.argv[1:6]
    STORE = open_store(DB)  # a SQLite file or a postgresql:// URL


    def note(name):
        with open(LOG, "a") as f:
            f.write(name + "\\n")
            f.flush()
            os.fsync(f.fileno())


    class FastJob(Event):
        numbers: list[int]


    class SlowJob(Event):
        numbers: list[int]


    class FastDone(Event):
        total: int


    class SlowDone(Event):
        squares: list[int]


    class Pipeline(Workflow):
        @step
        async def parse(self, ctx: Context, ev: StartEvent) -> FastJob | SlowJob:
            note("parse")
            numbers = [int(x) for x in ev.text.split(",")]
            await ctx.store.set("source", ev.text)
            ctx.send_event(SlowJob(numbers=numbers))
            return FastJob(numbers=numbers)

        @step
        async def fast(self, ctx: Context, ev: FastJob) -> FastDone:
            note("fast")
            async with ctx.store.edit_state() as state:
                state["done"] = state.get("done", []) + ["fast"]
            return FastDone(total=sum(ev.numbers))

        @step
        async def slow(self, ctx: Context, ev: SlowJob) -> SlowDone:
            note("slow")
            if MODE == "crash":
                # Wait until the join step has buffered FastDone and been checkpointed.
                while not any(c.step_name == "join" for c in STORE.list(RUN_ID)):
                    await asyncio.sleep(0.01)
                Path(MARKER).write_text("ready")
                await asyncio.sleep(120)  # killed here
            async with ctx.store.edit_state() as state:
                state["done"] = state.get("done", []) + ["slow"]
            return SlowDone(squares=[n * n for n in ev.numbers])

        @step
        async def join(self, ctx: Context, ev: FastDone | SlowDone) -> StopEvent | None:
            got = ctx.collect_events(ev, [FastDone, SlowDone])
            if got is None:
                return None
            note("join")
            fast, slow = got
            return StopEvent(
                result={
                    "total": fast.total,
                    "squares": slow.squares,
                    "source": await ctx.store.get("source"),
                    "done": sorted(await ctx.store.get("done")),
                }
            )


    async def main():
        if os.environ["DURABLE_API"] == "checkpoint_store":
            # Durable without the checkpointer class: Workflow(checkpoint_store=...).
            runner = Pipeline(timeout=None, checkpoint_store=STORE)
        else:
            runner = WorkflowCheckpointer(workflow=Pipeline(timeout=None), store=STORE)
        if MODE == "resume":
            handler = runner.resume(RUN_ID)
        else:
            handler = runner.run(text="1,2,3,4", run_id=RUN_ID)
        print(json.dumps(await handler))


    asyncio.run(main())
    """
)


def launch(
    tmp_path: Path,
    mode: str,
    db: str,
    run_id: str,
    api: str = "checkpointer",
    url: str | None = None,
) -> subprocess.Popen:
    script = tmp_path / "pipeline.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DURABLE_API": api}
    return subprocess.Popen(
        [
            sys.executable,
            str(script),
            mode,
            url or str(tmp_path / db),
            run_id,
            str(tmp_path / f"{db}.log"),
            str(tmp_path / "ready"),
        ],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(proc: subprocess.Popen) -> object:
    out, err = proc.communicate(timeout=90)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def executions(tmp_path: Path, db: str) -> dict[str, int]:
    names = (tmp_path / f"{db}.log").read_text().split()
    return {name: names.count(name) for name in sorted(set(names))}


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request) -> str | None:
    """Where the durable runs are kept: a SQLite file (None), or a PostgreSQL database URL."""
    if request.param == "sqlite":
        return None
    pytest.importorskip("psycopg", reason="pip install 'batonflow[postgres]'")
    return request.getfixturevalue("postgres_url")


@pytest.mark.slow
@pytest.mark.parametrize("api", ["checkpointer", "checkpoint_store"])
async def test_killed_run_resumes_in_new_process_with_same_result(
    tmp_path: Path, api: str, backend: str | None
) -> None:
    """kill -9 mid-step, resume elsewhere: same result, completed steps not re-executed.

    Both durable APIs: ``WorkflowCheckpointer(store=...)`` and ``Workflow(checkpoint_store=...)``
    with ``w.run()`` / ``w.resume(run_id)``; both backends: SQLite and PostgreSQL.
    """
    expected = finish(launch(tmp_path, "plain", "plain.db", "run-plain", api, backend))
    assert executions(tmp_path, "plain.db") == {"fast": 1, "join": 1, "parse": 1, "slow": 1}

    victim = launch(tmp_path, "crash", "crash.db", "run-crash", api, backend)
    deadline = time.monotonic() + 60
    while not (tmp_path / "ready").exists():
        assert victim.poll() is None, victim.communicate()[1]
        assert time.monotonic() < deadline, "the crashing run never reached its slow step"
        time.sleep(0.02)
    os.kill(victim.pid, signal.SIGKILL)
    victim.communicate(timeout=30)
    assert victim.returncode == -signal.SIGKILL
    assert executions(tmp_path, "crash.db") == {"fast": 1, "parse": 1, "slow": 1}

    resumed = finish(launch(tmp_path, "resume", "crash.db", "run-crash", api, backend))
    assert resumed == expected
    # parse and fast ran once in total; only the interrupted step ran again.
    assert executions(tmp_path, "crash.db") == {"fast": 1, "join": 1, "parse": 1, "slow": 2}

    from batonflow.core import open_store

    with open_store(backend or tmp_path / "crash.db") as store:
        assert store.run("run-crash").status == "completed"
        steps = [c.step_name for c in store.list("run-crash")]
        assert steps[0] == "parse" and steps.count("parse") == 1 and steps.count("fast") == 1
        assert steps[-1] == "join"
