"""One cheap request to a Qdrant server, so a command fails fast when the server cannot work.

``batonflow rag ask --qdrant-url URL`` would otherwise import qdrant-client and llama-index
(seconds) before it finds the server down or the collection missing. This asks the server's
REST API (``GET /collections``) with httpx, which qdrant-client is built on, and raises the
errors the store would raise, with the same words. Any other answer (a key the server wants, a
proxy's page) is left to qdrant-client, which reports it in full.
"""

from __future__ import annotations

from .errors import CollectionNotFoundError, StoreUnavailableError, collection_missing

#: Seconds to wait for the server, as qdrant-client's default.
TIMEOUT = 5.0


def unreachable(url: str, reason: object) -> StoreUnavailableError:
    """The error for a Qdrant server at ``url`` that does not answer (the store says the same)."""
    return StoreUnavailableError(
        f"Could not reach Qdrant at {url} ({reason}); start the server, check url= "
        "(and api_key=), or leave url= out to use local embedded Qdrant."
    )


def probe_server(
    url: str,
    collection: str | None = None,
    *,
    api_key: str | None = None,
    timeout: float = TIMEOUT,
) -> None:
    """Check that the Qdrant server at ``url`` answers (and holds ``collection``, when given).

    Raises:
        StoreUnavailableError: Nothing answers at ``url`` (refused, no such host, timeout).
        CollectionNotFoundError: The server answers and has no collection ``collection``.
    """
    import httpx

    headers = {"api-key": api_key} if api_key else {}
    try:
        response = httpx.get(f"{url.rstrip('/')}/collections", headers=headers, timeout=timeout)
    except httpx.TransportError as exc:
        raise unreachable(url, exc) from exc
    if collection is None or response.status_code != 200:
        return
    try:
        listed = response.json()["result"]["collections"]
        names = sorted(str(item["name"]) for item in listed)
    except (ValueError, KeyError, TypeError):
        return  # not Qdrant's answer: qdrant-client will say what it is
    if collection not in names:
        raise CollectionNotFoundError(collection_missing(collection, url, names))


__all__ = ["TIMEOUT", "probe_server", "unreachable"]
