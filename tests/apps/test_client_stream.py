"""batonflow.client's events() against scripted servers: silence, long pauses, bad messages.

A real server never sends these, so a scripted one does (tests/apps/fake_server.py): a socket
that accepts and never answers, a stream that pauses longer than the client's timeout, and
messages that are not a run's events.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time

import pytest
from batonflow.client import (
    AsyncClient,
    Client,
    ClientTimeoutError,
    EventStreamError,
    RetryPolicy,
    ServerUnavailableError,
)

from .fake_server import SSE_HEAD, fake_server, sse

END = json.dumps({"seq": 2, "status": "completed", "result": 1, "error": None})
EVENT = json.dumps({"seq": 1, "type": "Tick", "qualified_name": "x.Tick", "value": {"n": 1}})
#: Far below the 60 s a silent server used to hold a stream: a behaviour bound, not a benchmark.
NOT_THE_OLD_MINUTE = 20.0


def test_a_silent_server_times_events_out():
    """events(timeout=2) on a server that accepts and never answers: ClientTimeoutError."""
    with fake_server(None) as silent, Client(silent.url) as api:
        began = time.monotonic()
        with pytest.raises(
            ClientTimeoutError,
            match=r"The event stream of run 'r1' did not reach the run's end within 2 s \(last "
            r"event read: 0; the last problem: ReadTimeout.*\). Resume with "
            r"events\('r1', after=0\) or pass a longer timeout.",
        ):
            list(api.events("r1", timeout=2))
        assert time.monotonic() - began < NOT_THE_OLD_MINUTE
    assert isinstance(ClientTimeoutError("x"), TimeoutError)


async def test_a_silent_server_times_async_events_out():
    """The asyncio client's events(timeout=2) ends the same way on a silent server."""
    with fake_server(None) as silent:
        async with AsyncClient(silent.url) as api:
            began = time.monotonic()
            with pytest.raises(ClientTimeoutError, match="did not reach the run's end within 2 s"):
                async for _ in api.events("r1", timeout=2):
                    pass
            assert time.monotonic() - began < NOT_THE_OLD_MINUTE


def test_a_silent_server_is_retried_within_the_clients_timeout():
    """Without events(timeout=), each attempt waits the client's timeout for the headers."""
    with (
        fake_server(None) as silent,
        Client(silent.url, timeout=1, retry=RetryPolicy(total=1.5, first_delay=0.1)) as api,
    ):
        began = time.monotonic()
        with pytest.raises(
            ServerUnavailableError,
            match=r"The event stream of run 'r1' at http://\S+ could not be reopened: \d "
            r"attempt\(s\) over .* the last with ReadTimeout",
        ):
            list(api.events("r1"))
        assert time.monotonic() - began < NOT_THE_OLD_MINUTE
        assert len(silent.requests) >= 2


def test_wait_on_a_silent_server_honours_its_timeout():
    """wait(timeout=2) on a silent server: ClientTimeoutError saying the server did not answer."""
    with fake_server(None) as silent, Client(silent.url) as api:
        began = time.monotonic()
        with pytest.raises(
            ClientTimeoutError,
            match=r"Run 'r1' could not be checked within 2 s: the server at \S+ did not answer "
            r"\(ReadTimeout",
        ):
            api.wait("r1", timeout=2)
        assert time.monotonic() - began < NOT_THE_OLD_MINUTE


def test_an_open_stream_may_pause_longer_than_the_clients_timeout():
    """Once the headers came, silence between messages is allowed past the client's timeout."""
    script = [SSE_HEAD, 1.5, sse(1, "event", EVENT), sse(2, "end", END)]
    with fake_server(lambda n, head: script) as server, Client(server.url, timeout=0.5) as api:
        assert [e.seq for e in api.events("r1")] == [1, 2]
    assert len(server.requests) == 1  # never reconnected


@pytest.mark.parametrize(
    "message, problem",
    [
        pytest.param(
            sse(1, "event", "{not json"),
            r"its data is not JSON \(Expecting property name.*\)",
            id="bad-json",
        ),
        pytest.param(sse(None, "event", EVENT), "it has no id of its own", id="no-id"),
        pytest.param(
            sse(1, "event", EVENT) + sse(None, "end", END),
            "it has no id of its own",
            id="no-id-after-one",
        ),
        pytest.param(sse("x", "event", EVENT), "its id 'x' is not a sequence number", id="bad-id"),
        pytest.param(sse(1, "event", "[1, 2]"), "its data is not a JSON object", id="list"),
        pytest.param(sse(7, "event", EVENT), "its data's seq 1 is not its id 7", id="seq"),
    ],
)
def test_a_malformed_message_raises_naming_it(message, problem):
    """A message the client cannot number or read is an EventStreamError naming it."""
    script = [SSE_HEAD, message, sse(9, "end", END.replace('"seq": 2', '"seq": 9'))]
    with (
        fake_server(lambda n, head: script) as server,
        Client(server.url) as api,
        pytest.raises(
            EventStreamError,
            match=rf"The event stream of run 'r1' at \S+ sent a message that is not a run's "
            rf"event: {problem} \(id: .*, event: .*, data: .*\). The last event read is \d; "
            r"check that no proxy rewrites the stream, then resume with events\('r1', ",
        ),
    ):
        list(api.events("r1"))


async def test_a_malformed_message_raises_in_the_async_client():
    """The asyncio client reads messages with the same rules."""
    script = [SSE_HEAD, sse(1, "event", "{not json")]
    with fake_server(lambda n, head: script) as server:
        async with AsyncClient(server.url) as api:
            with pytest.raises(EventStreamError, match="its data is not JSON"):
                async for _ in api.events("r1"):
                    pass


def test_a_message_of_unknown_kind_is_logged_and_skipped(caplog):
    """A well-formed message of a kind this client does not know: a warning, then on."""
    odd = json.dumps({"seq": 1, "note": "from a newer server"})
    end = END
    script = [SSE_HEAD, sse(1, "snapshot", odd), sse(2, "end", end)]
    with (
        fake_server(lambda n, head: script) as server,
        Client(server.url) as api,
        caplog.at_level(logging.WARNING, logger="batonflow.client"),
    ):
        assert [(e.seq, e.kind) for e in api.events("r1")] == [(2, "end")]
    assert "sent a message of unknown kind 'snapshot' (id 1, data '{\"seq\": 1" in caplog.text
    assert "upgrade batonflow to read it" in caplog.text


def test_an_answer_that_is_not_a_stream_is_an_error():
    """A 200 that is not text/event-stream (a proxy's page) is an EventStreamError."""
    page = b"HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: 2\r\n\r\nhi"
    with (
        fake_server(lambda n, head: [page]) as server,
        Client(server.url) as api,
        pytest.raises(
            EventStreamError,
            match=r"GET /runs/r1/events at \S+ answered text/html where an event stream",
        ),
    ):
        list(api.events("r1"))


def test_a_stream_resumes_after_the_last_event_and_never_repeats_one():
    """A stream cut after event 1 is reopened with Last-Event-ID: 1; a repeat is skipped."""

    def script(number: int, head: bytes) -> list[bytes | float]:
        if number == 0:
            return [SSE_HEAD, sse(1, "event", EVENT)]  # then closes before the end
        return [SSE_HEAD, sse(1, "event", EVENT), sse(2, "end", END)]  # replays 1

    with (
        fake_server(script) as server,
        Client(server.url, retry=RetryPolicy(first_delay=0.01)) as api,
    ):
        assert [e.seq for e in api.events("r1")] == [1, 2]
    assert b"last-event-id: 1" in server.requests[1].lower()


def test_events_without_reconnect_raise_at_the_first_break():
    """reconnect=False: a stream that closes before the run's end raises, saying how to resume."""
    script = [SSE_HEAD, sse(1, "event", EVENT)]
    with (
        fake_server(lambda n, head: script) as server,
        Client(server.url) as api,
        pytest.raises(
            ServerUnavailableError,
            match=r"closed before the run's end; resume it with events\('r1', after=1\)",
        ),
    ):
        list(api.events("r1", reconnect=False))
    assert len(server.requests) == 1


def test_a_stream_that_keeps_events_coming_still_ends_at_its_timeout():
    """events(timeout=) bounds the call also when the stream never goes quiet."""
    many = [
        sse(i, "event", json.dumps({"seq": i, "type": "T", "value": {}})) for i in range(1, 400)
    ]
    script: list[bytes | float] = [SSE_HEAD]
    for message in many:
        script += [message, 0.01]
    with (
        fake_server(lambda n, head: script) as server,
        Client(server.url) as api,
        pytest.raises(ClientTimeoutError, match="events kept coming"),
    ):
        list(api.events("r1", timeout=1))
    assert len(server.requests) == 1


def test_async_events_take_their_time_budget_from_the_loop():
    """An event loop running events(timeout=) ends it even when nothing arrives (asyncio)."""

    async def follow() -> None:
        with fake_server(lambda n, head: [SSE_HEAD, 30.0]) as server:
            async with AsyncClient(server.url) as api:
                async for _ in api.events("r1", timeout=1):
                    pass

    with pytest.raises(ClientTimeoutError, match="within 1 s"):
        asyncio.run(follow())
