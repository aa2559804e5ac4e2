"""``Retry-After`` of a full queue (``429``): estimated from the workflow's rate limit.

A queue that admits nothing (``max_queued=0``) refuses every start, so the header is read
without a race: ``per / rate`` seconds (a place frees when the rate lets one run out), at least
1 s and at most 60 s; 1 s without a rate limit.
"""

from __future__ import annotations

import pytest
from batonflow.client import Client
from batonflow.client.errors import ServerUnavailableError
from batonflow.core import RunLimits


@pytest.mark.parametrize(
    ("limits", "header"),
    [
        pytest.param(RunLimits(rate=1, per=10, max_queued=0), "10", id="one-per-10s"),
        pytest.param(RunLimits(rate=4, per=10, max_queued=0), "3", id="rounded-up"),
        pytest.param(RunLimits(rate=100, per=60, max_queued=0), "1", id="floor"),
        pytest.param(RunLimits(rate=1, per=3600, max_queued=0), "60", id="cap"),
        pytest.param(RunLimits(concurrency=1, max_queued=0), "1", id="no-rate"),
        pytest.param(RunLimits(rate=1, per=10, max_queued=0, retry_after=7), "7", id="set"),
    ],
)
def test_retry_after_follows_the_rate_limit(start_server, limits, header) -> None:
    """The 429's Retry-After is the rate's time per run, within the floor and the cap."""
    _, client = start_server(limits={"echo": limits})
    refused = client.post("/workflows/echo/runs", json={"message": "hi"})
    assert refused.status_code == 429, refused.text
    assert refused.headers["retry-after"] == header
    assert client.get("/runs", params={"workflow": "echo"}).json()["runs"] == []


def test_client_gives_up_at_once_when_retry_after_passes_its_budget(start_server) -> None:
    """A Retry-After longer than the client's retry budget is not slept on: it raises."""
    url, _ = start_server(limits={"echo": RunLimits(rate=1, per=3600, max_queued=0)})
    with Client(url, timeout=20) as api, pytest.raises(ServerUnavailableError) as refused:
        api.start("echo", {"message": "hi"})
    assert "1 attempt(s)" in str(refused.value) and "total=30 s" in str(refused.value)
