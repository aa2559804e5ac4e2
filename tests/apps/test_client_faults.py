"""batonflow.client against a proxy that loses its server, a lost answer, a 429.

Real uvicorn servers behind real TCP proxies (tests/apps/proxy.py): the proxy answers
``502``/``503`` for a while, as a load balancer does right after a replica died, and every
call made meanwhile comes through once it forwards again.
"""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from batonflow.client import (
    AsyncClient,
    Client,
    InvalidRequestError,
    RetryPolicy,
    ServerUnavailableError,
)

from .fake_server import fake_server
from .proxy import cutting_proxy, gateway_proxy
from .sse import wait_status


@pytest.fixture
def served(start_server) -> tuple[str, httpx.Client]:
    return start_server()


def _wait_until(check, what: str, timeout: float = 20.0) -> None:
    """Poll ``check()`` until it is true (a deadline, not a timing assert)."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"never happened: {what}")
        time.sleep(0.02)


def _seqs_once(events) -> None:
    seqs = [e.seq for e in events]
    assert seqs == list(range(1, len(seqs) + 1)), seqs  # each once, in order
    assert events[-1].is_end and events[-1].status == "completed"


def test_sync_calls_ride_out_a_proxy_answering_503(served):
    """start, get, answer, wait and events made while the proxy answers 503 all come through."""
    url, direct = served
    with gateway_proxy(url, status=503, retry_after=1) as proxy, Client(proxy.url) as api:
        waiting = api.start("approval", {"topic": "lb"})
        wait_status(direct, waiting.run_id, {"waiting"})
        got = []
        reader = threading.Thread(target=lambda: got.extend(api.events(waiting.run_id)))
        reader.start()
        _wait_until(lambda: got, "the reader saw the question")
        proxy.down = True  # the replica died: the stream is cut, every new request gets 503
        with ThreadPoolExecutor(4) as pool:
            started = pool.submit(api.start, "echo", {"n": 1})
            fetched = pool.submit(api.get, waiting.run_id)
            answered = pool.submit(api.answer, waiting.run_id, "yes")
            waited = pool.submit(api.wait, waiting.run_id, timeout=60)
            _wait_until(lambda: len(proxy.answered) >= 5, "every call met the 503")
            proxy.down = False
            assert api.wait(started.result().run_id).result == {"n": 1}
            assert fetched.result().run_id == waiting.run_id
            assert answered.result().run_id == waiting.run_id
            assert waited.result().result == "lb: yes"
        reader.join(30)
    _seqs_once(got)
    assert [e.type for e in got] == ["InputRequiredEvent", "StopEvent", None]
    met = {line.split("?")[0] for line in proxy.answered}
    assert {
        "503 POST /workflows/echo/runs",
        f"503 GET /runs/{waiting.run_id}",
        f"503 POST /runs/{waiting.run_id}/events",
        f"503 GET /runs/{waiting.run_id}/events",
    } <= met


async def test_async_calls_ride_out_a_proxy_answering_503(served):
    """The asyncio client rides out the same 503s: every call comes through, events once."""
    url, direct = served
    with gateway_proxy(url, status=503, retry_after=1) as proxy:
        async with AsyncClient(proxy.url) as api:
            waiting = await api.start("approval", {"topic": "alb"})
            await asyncio.to_thread(wait_status, direct, waiting.run_id, {"waiting"})
            got = []

            async def follow() -> None:
                async for event in api.events(waiting.run_id):
                    got.append(event)

            reader = asyncio.create_task(follow())
            while not got:
                await asyncio.sleep(0.02)
            proxy.down = True
            calls = asyncio.gather(
                api.start("echo", {"n": 2}),
                api.get(waiting.run_id),
                api.answer(waiting.run_id, "ok"),
                api.wait(waiting.run_id, timeout=60),
            )
            while len(proxy.answered) < 5:
                await asyncio.sleep(0.02)
            proxy.down = False
            started, fetched, answered, waited = await calls
            await reader
            assert (await api.wait(started.run_id)).result == {"n": 2}
            assert fetched.run_id == answered.run_id == waiting.run_id
            assert waited.result == "alb: ok"
    _seqs_once(got)
    assert len({line.split(" ")[1] for line in proxy.answered}) == 2  # GETs and POSTs met it


def test_reads_and_starts_ride_out_502_but_an_answer_is_not_sent_again(served):
    """A 502 may come after the proxy passed the request on: GETs and starts (sent with an
    Idempotency-Key) retry, an answer does not."""
    url, direct = served
    with gateway_proxy(url, status=502) as proxy, Client(proxy.url) as api:
        run = api.start("approval", {"topic": "gw"})
        wait_status(direct, run.run_id, {"waiting"})
        before = len(direct.get("/runs").json()["runs"])
        proxy.down = True
        with pytest.raises(
            ServerUnavailableError,
            match=rf"POST /runs/{run.run_id}/events got 502 Bad Gateway from a proxy, which may "
            r"have passed it on .* it is not retried automatically. Check with get\(\) or list",
        ) as caught:
            api.answer(run.run_id, "too soon")
        assert caught.value.__cause__.status_code == 502
        with ThreadPoolExecutor(3) as pool:
            fetched = pool.submit(api.get, run.run_id)
            events = pool.submit(lambda: list(api.events(run.run_id, timeout=60)))
            started = pool.submit(api.start, "echo", {"n": 3})
            _wait_until(lambda: len(proxy.answered) >= 6, "the reads and the start met the 502")
            proxy.down = False
            assert fetched.result().status == "waiting"
            assert started.result().run_id
            api.answer(run.run_id, "fine")
            _seqs_once(events.result())
    assert len(direct.get("/runs").json()["runs"]) == before + 1  # the start, once


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_a_start_whose_answer_was_lost_is_sent_again_and_makes_one_run(served, asynchronous):
    """The proxy passes the start on and drops the answer: the client sends it again with the
    same Idempotency-Key and gets the run the first attempt started; one run."""
    url, direct = served
    before = len(direct.get("/runs", params={"workflow": "echo"}).json()["runs"])
    with cutting_proxy(url, cuts=[0]) as proxy:
        if asynchronous:

            async def start():
                async with AsyncClient(proxy.url) as api:
                    return await api.start("echo", {"lost": True})

            run = asyncio.run(start())
        else:
            with Client(proxy.url) as api:
                run = api.start("echo", {"lost": True})
    assert proxy.connections == 2
    runs = direct.get("/runs", params={"workflow": "echo"}).json()["runs"]
    assert len(runs) == before + 1 and runs[0]["start"] == {"lost": True}
    assert runs[0]["run_id"] == run.run_id


def _json(status: int, body: str, extra: str = "") -> bytes:
    return (
        f"HTTP/1.1 {status} X\r\ncontent-type: application/json\r\n{extra}"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n{body}"
    ).encode()


def test_429_is_retried_after_its_retry_after():
    """A 429 with Retry-After is retried after it; the second answer is the result."""
    health = '{"status": "ok"}'

    def script(number: int, head: bytes) -> list[bytes | float]:
        if number == 0:
            return [_json(429, '{"detail": "slow down"}', "retry-after: 1\r\n")]
        return [_json(200, health)]

    with fake_server(script) as server, Client(server.url) as api:
        assert api.health() == {"status": "ok"}
        assert len(server.requests) == 2


def test_429_without_retry_after_is_not_retried():
    """A 429 that does not say when to come back is the server's refusal, raised at once."""
    with (
        fake_server(lambda n, head: [_json(429, '{"detail": "slow down"}')]) as server,
        Client(server.url, retry=RetryPolicy(first_delay=0.01)) as api,
        pytest.raises(InvalidRequestError, match="429: slow down"),
    ):
        api.health()
    assert len(server.requests) == 1
