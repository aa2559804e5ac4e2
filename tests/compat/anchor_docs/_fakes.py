"""Stand-ins for the services the anchor's documentation examples reach: HTTP and Redis.

The ported programs import these instead of `requests` or a Redis client, so they run offline
and print the same thing on every run (standard library only; the LLM is in ``_llm.py``).
"""

from __future__ import annotations

from typing import Any


class FakeResponse:
    """What ``requests.get(url)`` returns here: ``.json()`` of a canned body."""

    def __init__(self, url: str) -> None:
        self.url = url

    def json(self) -> dict[str, Any]:
        return {"url": self.url, "rows": [1, 2, 3]}


class FakeRequests:
    """A ``requests`` module stand-in whose ``get`` answers without a network."""

    @staticmethod
    def get(url: str, **kwargs: Any) -> FakeResponse:
        return FakeResponse(url)


class FakeRedis:
    """The two Redis calls the durable-workflows page makes, on a dict."""

    def __init__(self, **kwargs: Any) -> None:
        self.hashes: dict[str, dict[str, Any]] = {}

    def hset(self, name: str, mapping: dict[str, Any]) -> int:
        self.hashes.setdefault(name, {}).update(mapping)
        return len(mapping)
