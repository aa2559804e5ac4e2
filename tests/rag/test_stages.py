"""Stage options: postprocessor and transformation lists, streaming synthesizers, LLM failures."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx
from batonflow.agents import LLMCallError
from batonflow.apps.cli import app
from batonflow.core import retry_policy, stop_after_attempt, wait_fixed
from batonflow.rag import AnswerDelta, IngestionWorkflow, QdrantStore, RAGConfigError, RAGWorkflow
from llama_index.core import get_response_synthesizer
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.postprocessor import SimilarityPostprocessor
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import BaseNode, NodeWithScore, QueryBundle, TransformComponent
from llama_index.llms.openai import OpenAI
from rag_helpers import ConceptEmbedding
from typer.testing import CliRunner

OPENAI_CHAT = "https://api.openai.com/v1/chat/completions"


@pytest.fixture
async def ingested(memory_store: QdrantStore, corpus: Path) -> QdrantStore:
    await IngestionWorkflow(store=memory_store).run(paths=[corpus])
    return memory_store


def _stream(pieces: list[str]) -> httpx.Response:
    lines = []
    for i, piece in enumerate(pieces):
        delta = {"role": "assistant", "content": piece} if i == 0 else {"content": piece}
        chunk = {
            "id": "c1",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "gpt-4o-mini",
            "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
        }
        lines.append(f"data: {json.dumps(chunk)}\n\n")
    lines.append("data: [DONE]\n\n")
    return httpx.Response(
        200, headers={"content-type": "text/event-stream"}, content="".join(lines).encode()
    )


def _llm() -> OpenAI:
    return OpenAI(model="gpt-4o-mini", api_key="test", max_retries=0)


class KeepFirst(BaseNodePostprocessor):
    """Keeps the first node only, and records what it was given."""

    seen: list[int] = []

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        KeepFirst.seen.append(len(nodes))
        return nodes[:1]


async def test_reranker_list_applies_postprocessors_in_order(ingested: QdrantStore) -> None:
    """reranker=[a, b] runs a, then b on what a kept."""
    KeepFirst.seen = []
    flow = RAGWorkflow(
        store=ingested, reranker=[SimilarityPostprocessor(similarity_cutoff=0.5), KeepFirst()]
    )
    response = await flow.run(query="engine oil tyre pressure dough")
    assert len(response.sources) == 1
    assert KeepFirst.seen == [2]  # the cutoff dropped the passages that matched no query word


def test_reranker_that_is_not_a_postprocessor_is_refused_at_construction(
    memory_store: QdrantStore,
) -> None:
    """A wrong item in reranker= fails when the workflow is built, naming the fix."""
    with pytest.raises(
        RAGConfigError, match=r"reranker= got str; pass a llama-index node postprocessor"
    ):
        RAGWorkflow(store=memory_store, reranker=[SimilarityPostprocessor(), "rerank"])


class Tagger(TransformComponent):
    """A transformation that adds metadata to every node (as a metadata extractor would)."""

    def __call__(self, nodes: list[BaseNode], **kwargs: Any) -> list[BaseNode]:
        for node in nodes:
            node.metadata["words"] = len(node.get_content().split())
        return nodes


async def test_splitter_list_runs_like_an_ingestion_pipeline(
    memory_store: QdrantStore, corpus: Path
) -> None:
    """splitter=[parser, extractor] splits, then the extractor's metadata is stored with each chunk."""
    flow = IngestionWorkflow(
        store=memory_store, splitter=[SentenceSplitter(chunk_size=64, chunk_overlap=0), Tagger()]
    )
    await flow.run(paths=[corpus])
    hit = memory_store.query("knead the dough")[0]
    assert hit.metadata["words"] == len(hit.text.split())


@pytest.mark.parametrize(
    ("splitter", "message"),
    [
        pytest.param(
            [SentenceSplitter(), "x"],
            r"splitter= got str; pass a llama-index node parser",
            id="str",
        ),
        pytest.param(
            [ConceptEmbedding()],
            r"holds the embedding model ConceptEmbedding; pass it as embed_model=",
            id="embed",
        ),
        pytest.param([], r"splitter= is an empty list", id="empty"),
    ],
)
def test_bad_splitter_is_refused_at_construction(
    memory_store: QdrantStore, splitter: Any, message: str
) -> None:
    """A splitter list with something else in it fails when the workflow is built."""
    with pytest.raises(RAGConfigError, match=message):
        IngestionWorkflow(store=memory_store, splitter=splitter)


@respx.mock
async def test_streaming_synthesizer_streams_answer_deltas(
    ingested: QdrantStore, caplog: pytest.LogCaptureFixture
) -> None:
    """get_response_synthesizer(streaming=True) gives AnswerDelta events and leaves no task behind."""
    respx.post(OPENAI_CHAT).mock(return_value=_stream(["Knead ", "ten ", "minutes."]))
    synth = get_response_synthesizer(llm=_llm(), streaming=True)
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        handler = RAGWorkflow(store=ingested, synthesizer=synth).run(query="knead the dough")
        deltas = [ev.delta async for ev in handler.stream_events() if isinstance(ev, AnswerDelta)]
        response = await handler
    assert deltas == ["Knead ", "ten ", "minutes."]
    assert response.answer == "Knead ten minutes."
    assert not [r for r in caplog.records if "destroyed" in r.getMessage()]


@respx.mock
async def test_llm_failure_is_an_llm_call_error_and_retried(ingested: QdrantStore) -> None:
    """A 500 from the LLM is an LLMCallError naming model and fix; retry_policy= retries it."""
    route = respx.post(OPENAI_CHAT).mock(
        side_effect=[httpx.Response(500, json={"error": {"message": "boom"}}), _stream(["ok [1]"])]
    )
    flow = RAGWorkflow(store=ingested, llm=_llm())
    with pytest.raises(
        LLMCallError, match=r"'gpt-4o-mini' failed: HTTP 500 .*retry_policy="
    ) as info:
        await flow.run(query="engine oil")
    assert info.value.status_code == 500
    route.side_effect = [
        httpx.Response(500, json={"error": {"message": "boom"}}),
        _stream(["ok [1]"]),
    ]
    retried = RAGWorkflow(
        store=ingested,
        llm=_llm(),
        retry_policy=retry_policy(wait=wait_fixed(0), stop=stop_after_attempt(2)),
    )
    assert (await retried.run(query="engine oil")).answer == "ok [1]"


@respx.mock
async def test_synthesizer_llm_failure_is_an_llm_call_error(ingested: QdrantStore) -> None:
    """A llama-index synthesizer whose LLM fails raises LLMCallError too."""
    respx.post(OPENAI_CHAT).mock(
        return_value=httpx.Response(429, json={"error": {"message": "slow"}})
    )
    synth = get_response_synthesizer(llm=_llm())
    with pytest.raises(LLMCallError, match=r"HTTP 429 .*rate-limiting"):
        await RAGWorkflow(store=ingested, synthesizer=synth).run(query="engine oil")


def test_bad_retry_policy_is_refused(memory_store: QdrantStore) -> None:
    """retry_policy= without next() is refused at construction."""
    with pytest.raises(RAGConfigError, match=r"has no next\(\) method"):
        RAGWorkflow(store=memory_store, retry_policy=3)  # type: ignore[arg-type]


def test_cli_ask_with_a_wrong_key_prints_one_line_naming_the_fix(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`rag ask` whose key OpenAI rejects prints one error line that says to check the key."""
    runner = CliRunner()
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "tea.md").write_text("Green tea is steeped at 80 degrees.\n")
    where = ["--qdrant-path", str(tmp_path / "q")]
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert runner.invoke(app, ["rag", "ingest", str(docs), *where]).exit_code == 0
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
    with respx.mock:
        respx.post(OPENAI_CHAT).mock(
            return_value=httpx.Response(401, json={"error": {"message": "Incorrect API key"}})
        )
        result = runner.invoke(app, ["rag", "ask", "green tea?", *where])
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(
        "error: LLMCallError: The LLM call to 'gpt-4o-mini' failed: HTTP 401"
    )
    assert lines[0].endswith("check OPENAI_API_KEY (or the LLM's api_key=).")
