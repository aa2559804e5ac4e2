"""The one request the command line makes to a Qdrant server before loading qdrant-client.

The server is mocked at the network edge (respx); a refused connection is a real closed port.
"""

from __future__ import annotations

import socket
import subprocess
import sys

import httpx
import pytest
import respx
from batonflow.rag._probe import probe_server
from batonflow.rag.errors import CollectionNotFoundError, StoreUnavailableError

URL = "http://qdrant.test:6333"


def _collections(*names: str) -> httpx.Response:
    body = {"result": {"collections": [{"name": n} for n in names]}, "status": "ok"}
    return httpx.Response(200, json=body)


@respx.mock
def test_a_server_without_the_collection_lists_those_it_has() -> None:
    """The error names the collection, the server and what is there, as the store says."""
    route = respx.get(f"{URL}/collections").mock(return_value=_collections("docs", "notes"))
    with pytest.raises(CollectionNotFoundError, match=r"Collection 'nope' does not exist at "):
        probe_server(URL + "/", "nope", api_key="k3y")
    with pytest.raises(CollectionNotFoundError, match=r"the collections there are: docs, notes"):
        probe_server(URL, "nope")
    assert route.calls[0].request.headers["api-key"] == "k3y"
    probe_server(URL, "docs")  # there: nothing to say
    probe_server(URL)  # only reachability asked


@respx.mock
@pytest.mark.parametrize(
    "answer",
    [httpx.Response(401, text="Unauthorized"), httpx.Response(200, text="<html>proxy</html>")],
    ids=["needs-a-key", "not-qdrant"],
)
def test_other_answers_are_left_to_qdrant_client(answer: httpx.Response) -> None:
    """An answer that is not Qdrant's list of collections raises nothing here."""
    respx.get(f"{URL}/collections").mock(return_value=answer)
    probe_server(URL, "docs")


def test_a_refused_connection_is_store_unavailable() -> None:
    """Nothing listening: the store's StoreUnavailableError, with the reason and the fixes."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    with pytest.raises(StoreUnavailableError, match=rf"Could not reach Qdrant at {url} \(.*\)"):
        probe_server(url, "docs")


def test_batonflow_rag_loads_llama_index_only_when_a_name_needs_it() -> None:
    """``from batonflow.rag import QdrantStore`` opens and lists a local store without
    llama-index or qdrant-client; every exported name still resolves."""
    code = """
import sys, tempfile
from batonflow.rag import QdrantStore, StoreLockedError, CollectionNotFoundError
with QdrantStore(path=tempfile.mkdtemp(), collection="docs") as store:
    store.ensure_collection()
    assert store.exists() and store.collections() == ["docs"]
    assert store.query("anything") == []
heavy = [m for m in ("llama_index.core", "qdrant_client") if m in sys.modules]
assert heavy == [], heavy
import batonflow.rag as rag
for name in rag.__all__:
    assert getattr(rag, name) is not None, name
assert "llama_index.core" in sys.modules
assert set(rag.__all__) <= set(dir(rag))
try:
    rag.NoSuchName
except AttributeError as exc:
    assert "batonflow.rag" in str(exc) and "NoSuchName" in str(exc)
else:
    raise AssertionError("no AttributeError")
print("ok")
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"
