"""The served RAG flow: a missing collection fails the run with the CLI's message, not "nothing"."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from batonflow.apps.config import Settings
from batonflow.apps.rag_cli import _check_collection
from batonflow.apps.registry import BadParameterError
from batonflow.apps.run_store import RunStore
from batonflow.apps.serve_cli import _served_workflows
from batonflow.apps.server import BackgroundServer, create_app


def test_server_and_cli_give_the_same_missing_collection_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A served RAG run on a collection that does not exist fails with the CLI's sentence."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("BATONFLOW_COLLECTION", "kitchn")
    settings = Settings.load()
    served = _served_workflows(settings, {}, prebuilt=True)
    store = served["rag"].store
    with pytest.raises(BadParameterError) as cli_error:
        _check_collection(store, settings)
    app = create_app(served, store=RunStore(tmp_path / "runs.db"))
    with BackgroundServer(app) as server, httpx.Client(base_url=server.url, timeout=30) as client:
        body = client.post(
            "/workflows/rag/runs", params={"wait": True}, json={"query": "tea?"}
        ).json()
    store.close()
    assert body["status"] == "failed"
    assert body["error"] == f"CollectionNotFoundError: {cli_error.value}"
    assert "Collection 'kitchn' does not exist at" in body["error"]
