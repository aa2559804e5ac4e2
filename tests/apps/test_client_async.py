"""batonflow.client.AsyncClient against a real uvicorn server over real HTTP."""

from __future__ import annotations

import asyncio

import pytest
from batonflow.client import (
    AsyncClient,
    ConflictError,
    NotFoundError,
    RetryPolicy,
    ServerUnavailableError,
)

from .proxy import cutting_proxy


@pytest.fixture
def server_url(start_server) -> str:
    return start_server()[0]


async def test_start_events_answer(server_url):
    """start, follow the events, answer the question; the run completes with the answer."""
    async with AsyncClient(server_url) as api:
        run = await api.start("approval", {"topic": "async"})
        kinds = []
        async for event in api.events(run.run_id):
            kinds.append(event.type or "end")
            if event.type == "InputRequiredEvent":
                answered = await api.answer(run.run_id, "ok")
                assert answered.run_id == run.run_id
        assert kinds == ["InputRequiredEvent", "StopEvent", "end"]
        done = await api.get(run.run_id)
        assert (done.status, done.result) == ("completed", "async: ok")
        assert [r.run_id for r in await api.list(workflow="approval")] == [run.run_id]
        with pytest.raises(ConflictError):
            await api.answer(run.run_id, "late")


async def test_wait_cancel_and_missing_runs(server_url):
    """start(wait=True), cancel() and wait() work; an unknown run is NotFoundError."""
    async with AsyncClient(server_url) as api:
        assert (await api.start("echo", {"k": "v"}, wait=True)).result == {"k": "v"}
        slow = await api.start("sleepy", {"seconds": 30})
        waiter = asyncio.create_task(api.wait(slow.run_id, timeout=20))
        assert (await api.cancel(slow.run_id)).status == "cancelled"
        assert (await waiter).status == "cancelled"
        with pytest.raises(NotFoundError, match="Run 'nope' does not exist"):
            await api.get("nope")
        assert (await api.health())["status"] == "ok"
        assert "echo" in [w["name"] for w in await api.workflows()]


async def test_events_reconnect_after_the_stream_is_cut(server_url):
    """The async stream also resumes after a cut with Last-Event-ID: every event once."""
    async with AsyncClient(server_url) as api:
        run = await api.start("ticks", {"count": 8, "delay": 0.005}, wait=True)
        whole = [(e.seq, e.data) async for e in api.events(run.run_id)]
    with cutting_proxy(server_url, cuts=[420, 350, 600]) as proxy:
        async with AsyncClient(proxy.url, retry=RetryPolicy(first_delay=0.01)) as flaky:
            got = [(e.seq, e.data) async for e in flaky.events(run.run_id)]
    assert got == whole and proxy.connections >= 3


async def test_events_without_reconnect_raise_on_a_cut(server_url):
    """With reconnect=False a cut stream raises ServerUnavailableError at once."""
    async with AsyncClient(server_url) as api:
        run = await api.start("ticks", {"count": 3, "delay": 0}, wait=True)
    with cutting_proxy(server_url, cuts=[300]) as proxy:
        async with AsyncClient(proxy.url) as flaky:
            with pytest.raises(
                ServerUnavailableError,
                match=r"broke \(RemoteProtocolError: .*\); resume it with events\('\w+', after=0\)",
            ):
                async for _ in flaky.events(run.run_id, reconnect=False):
                    pass
    assert proxy.connections == 1
