"""batonflow.client rides out a `batonflow serve` stopped for 15 s and started on the same port.

Calls made while the server is away (start, get, answer, wait, events; blocking and asyncio)
are retried under the client's default policy and all come through once it is back.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from batonflow.client import AsyncClient, Client, RunEvent

FLOWS = str(Path(__file__).with_name("flows.py"))
ROOT = Path(__file__).resolve().parents[2]
#: How long the server stays away: longer than a default server takes to start.
DOWN_FOR = 15.0


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Serve:
    """`python -m batonflow serve` on a fixed port and run store; its stderr in a file."""

    def __init__(self, db: Path, port: int, log: Path) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "OTEL_"))}
        self.log = log
        before = log.read_text().count("batonflow server on ") if log.exists() else 0
        with open(log, "a") as err:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "batonflow",
                    "serve",
                    "--port",
                    str(port),
                    "--db",
                    str(db),
                    "--no-prebuilt",
                    "-w",
                    f"approval={FLOWS}:ApprovalFlow",
                    "-w",
                    f"echo={FLOWS}:EchoFlow",
                ],
                cwd=ROOT,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=err,
            )
        self.url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while log.read_text().count("batonflow server on ") == before:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.proc.kill()
                raise AssertionError(f"the server did not start:\n{log.read_text()}")
            time.sleep(0.05)

    def stop(self) -> None:
        """SIGTERM, as a deploy or an operator stops it; SIGKILL if it lingers."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


def _once_in_order(events: list[RunEvent], status: str = "completed") -> None:
    seqs = [e.seq for e in events]
    assert seqs == list(range(1, len(seqs) + 1)), seqs
    assert events[-1].is_end and events[-1].status == status


async def _async_calls(url: str, run_id: str, first: threading.Event) -> dict[str, object]:
    """start, get, answer, wait and events of the asyncio client, made while the server is away."""
    async with AsyncClient(url) as api:
        got: list[RunEvent] = []

        async def follow() -> None:
            async for event in api.events(run_id):
                got.append(event)

        reader = asyncio.create_task(follow())
        first.set()
        started, fetched, answered, waited = await asyncio.gather(
            api.start("echo", {"via": "async"}),
            api.get(run_id),
            api.answer(run_id, "async yes"),
            api.wait(run_id),
        )
        await reader
        return {
            "started": (await api.wait(started.run_id)).result,
            "fetched": fetched.run_id,
            "answered": answered.run_id,
            "waited": waited.result,
            "events": got,
        }


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_calls_ride_out_a_server_down_for_15_seconds(tmp_path):
    """Both clients' calls made while the server is down for 15 s come through after it."""
    port, db, log = free_port(), tmp_path / "runs.db", tmp_path / "serve.log"
    server = Serve(db, port, log)
    try:
        with Client(server.url) as api:
            sync_run = api.start("approval", {"topic": "sync"})
            async_run = api.start("approval", {"topic": "async"})
            seen: list[RunEvent] = []
            reader = threading.Thread(target=lambda: seen.extend(api.events(sync_run.run_id)))
            reader.start()
            deadline = time.monotonic() + 30
            while not seen or api.get(async_run.run_id).status != "waiting":
                assert time.monotonic() < deadline, "the runs never asked their question"
                time.sleep(0.02)

            server.stop()
            stopped = time.monotonic()
            async_first = threading.Event()
            with ThreadPoolExecutor(5) as pool:
                started = pool.submit(api.start, "echo", {"via": "sync"})
                fetched = pool.submit(api.get, sync_run.run_id)
                answered = pool.submit(api.answer, sync_run.run_id, "sync yes")
                waited = pool.submit(api.wait, sync_run.run_id)
                async_results = pool.submit(
                    asyncio.run, _async_calls(server.url, async_run.run_id, async_first)
                )
                assert async_first.wait(30)
                time.sleep(max(0.0, DOWN_FOR - (time.monotonic() - stopped)))  # the outage
                server = Serve(db, port, log)

                assert api.wait(started.result(60).run_id).result == {"via": "sync"}
                assert fetched.result(60).run_id == sync_run.run_id
                assert answered.result(60).run_id == sync_run.run_id
                assert waited.result(60).result == "sync: sync yes"
                from_async = async_results.result(60)
            reader.join(60)
        _once_in_order(seen)
        assert [e.type for e in seen] == ["InputRequiredEvent", "StopEvent", None]
        assert from_async["started"] == {"via": "async"}
        assert from_async["fetched"] == from_async["answered"] == async_run.run_id
        assert from_async["waited"] == "async: async yes"
        _once_in_order(from_async["events"])  # type: ignore[arg-type]
        assert log.read_text().count("batonflow server on ") == 2
    finally:
        server.stop()
