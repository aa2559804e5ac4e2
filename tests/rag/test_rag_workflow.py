"""RAGWorkflow: retrieval joined with the query, LLM/extractive/custom answers, every stage replaceable."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
import respx
from batonflow.core import Context, StopEvent, step
from batonflow.rag import (
    AnswerDelta,
    IngestionWorkflow,
    QdrantStore,
    RAGResponse,
    RAGWorkflow,
    RetrievedEvent,
    RetrieveEvent,
    SourcesEvent,
)
from batonflow.rag.errors import CollectionNotFoundError, RAGConfigError
from batonflow.rag.store import chunks_of
from batonflow.rag.synthesis import SYSTEM_PROMPT
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.llms.openai import OpenAI
from rag_helpers import ConceptEmbedding

OPENAI_CHAT = "https://api.openai.com/v1/chat/completions"


@pytest.fixture
async def ingested(memory_store: QdrantStore, corpus: Path) -> QdrantStore:
    await IngestionWorkflow(store=memory_store).run(paths=[corpus])
    return memory_store


def _llm() -> OpenAI:
    return OpenAI(model="gpt-4o-mini", api_key="test", max_retries=0)


def _completion(content: str) -> httpx.Response:
    return httpx.Response(
        200,
        json={
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": "gpt-4o-mini",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        },
    )


def _stream(pieces: list[str]) -> httpx.Response:
    lines = []
    for i, piece in enumerate(pieces):
        delta = {"role": "assistant", "content": piece} if i == 0 else {"content": piece}
        chunk = {
            "id": "chatcmpl-1",
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


@respx.mock
async def test_llm_answer_cites_the_retrieved_source(ingested: QdrantStore) -> None:
    """The LLM gets numbered sources and the rules; its cited answer comes back with the sources."""
    route = respx.post(OPENAI_CHAT).mock(
        return_value=_completion("Change the engine oil every 8000 kilometres [1].")
    )
    flow = RAGWorkflow(store=ingested, llm=_llm(), stream=False)
    response = await flow.run(query="How often should I change the engine oil?")
    assert isinstance(response, RAGResponse)
    assert response.answer == "Change the engine oil every 8000 kilometres [1]."
    assert response.sources[0].metadata["file_name"] == "cars.md"
    assert response.sources[0].node_id and response.sources[0].score > 0
    body = json.loads(route.calls.last.request.content)
    assert body["model"] == "gpt-4o-mini"
    assert body["messages"][0] == {"role": "system", "content": SYSTEM_PROMPT}
    user = body["messages"][1]["content"]
    assert user.startswith("Sources:\n\n[1] cars.md\n# Looking after a car")
    assert user.endswith("Question: How often should I change the engine oil?\nAnswer:")


@respx.mock
async def test_llm_answer_streams_tokens_after_the_sources(ingested: QdrantStore) -> None:
    """With a streaming LLM, SourcesEvent comes first, then AnswerDelta tokens that make the answer."""
    respx.post(OPENAI_CHAT).mock(return_value=_stream(["Knead ", "for ten ", "minutes [1]."]))
    handler = RAGWorkflow(store=ingested, llm=_llm()).run(query="how long to knead the dough")
    streamed = [ev async for ev in handler.stream_events()]
    response = await handler
    kinds = [type(ev).__name__ for ev in streamed]
    assert kinds.index("SourcesEvent") < kinds.index("AnswerDelta")
    deltas = [ev.delta for ev in streamed if isinstance(ev, AnswerDelta)]
    assert deltas == ["Knead ", "for ten ", "minutes [1]."]
    assert response.answer == "Knead for ten minutes [1]."
    sources = next(ev for ev in streamed if isinstance(ev, SourcesEvent)).sources
    assert (
        sources[0].metadata["file_name"] == "bread.txt" == response.sources[0].metadata["file_name"]
    )


async def test_extractive_answer_without_llm(ingested: QdrantStore) -> None:
    """With no LLM the answer quotes the best passage's matching sentences and cites [1]."""
    response = await RAGWorkflow(store=ingested).run(query="When do puppies get vaccinations?")
    assert response.answer == (
        "From the indexed documents:\n"
        "- Puppies need their vaccinations before their first walk outside. [1]"
    )
    assert response.sources[0].metadata["file_name"] == "dogs.txt"
    assert str(response) == response.answer


@respx.mock
async def test_empty_retrieval_says_nothing_was_found(ingested: QdrantStore) -> None:
    """When nothing matches, the answer says so and the LLM is never asked (no hallucination)."""
    route = respx.post(OPENAI_CHAT).mock(return_value=_completion("made up"))
    response = await RAGWorkflow(store=ingested, llm=_llm()).run(query="zeppelin altitude records")
    assert response.sources == []
    assert response.answer.startswith("I found nothing about 'zeppelin altitude records'")
    assert not route.called


async def test_missing_collection_is_a_clear_error(
    memory_store: QdrantStore, tmp_path: Path
) -> None:
    """Asking a collection that does not exist says so (a typo would otherwise find nothing)."""
    with pytest.raises(
        CollectionNotFoundError,
        match=r"Collection 'docs' does not exist at :memory:; it has no collections yet; ingest",
    ):
        await RAGWorkflow(store=memory_store).run(query="engine oil")
    with QdrantStore(path=tmp_path / "q", collection="typo") as store:
        store.upsert(chunks_of("b.md", ["cake"]))
    with QdrantStore(path=tmp_path / "q", collection="typ") as store:
        with pytest.raises(LookupError, match=r"the collections there are: typo; pass one with"):
            await RAGWorkflow(store=store).run(query="cake")


async def test_collection_with_no_match_says_nothing_was_found(memory_store: QdrantStore) -> None:
    """A query no chunk matches is not an error: the answer says nothing was found."""
    memory_store.upsert(chunks_of("a.md", ["bread and butter"]))
    response = await RAGWorkflow(store=memory_store).run(query="engine oil")
    assert response.sources == [] and "found nothing" in response.answer


async def test_bad_query_is_a_clear_error(memory_store: QdrantStore) -> None:
    """A missing or blank query says what to pass."""
    with pytest.raises(
        ValueError, match=r"needs query='your question' \(a non-empty string\), got None"
    ):
        await RAGWorkflow(store=memory_store).run()
    with pytest.raises(ValueError, match="got '  '"):
        await RAGWorkflow(store=memory_store).run(query="  ")


async def test_misspelt_start_field_is_refused_by_run(memory_store: QdrantStore) -> None:
    """RAGStart declares query: run(question=...) is refused at once, naming the field."""
    from batonflow.rag.workflow import RAGStart

    workflow = RAGWorkflow(store=memory_store)
    assert workflow.start_event_class is RAGStart
    with pytest.raises(ValueError, match="question"):
        workflow.run(question="engine oil")


class _FixedRetriever(BaseRetriever):
    """A user's own retriever: returns two fixed passages."""

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return [
            NodeWithScore(node=TextNode(id_="a", text="Alpha facts. Irrelevant."), score=0.9),
            NodeWithScore(node=TextNode(id_="b", text="Beta facts about the query."), score=0.5),
        ]


class _ReverseReranker(BaseNodePostprocessor):
    """A user's reranker: reverses the order and keeps the first one."""

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        return list(reversed(nodes))[:1]


async def test_custom_retriever_replaces_the_store() -> None:
    """Any llama-index retriever can be plugged in; its nodes become the sources."""
    response = await RAGWorkflow(retriever=_FixedRetriever()).run(query="alpha")
    assert [s.node_id for s in response.sources] == ["a", "b"]
    assert response.answer.splitlines()[1] == "- Alpha facts. [1]"


async def test_custom_reranker_reorders_the_sources() -> None:
    """A node postprocessor runs between retrieval and synthesis."""
    flow = RAGWorkflow(retriever=_FixedRetriever(), reranker=_ReverseReranker())
    response = await flow.run(query="beta query")
    assert [s.node_id for s in response.sources] == ["b"]
    assert response.answer.endswith("- Beta facts about the query. [1]")


@pytest.mark.parametrize(
    "use_async", [pytest.param(False, id="sync"), pytest.param(True, id="async")]
)
async def test_custom_synthesizer_gets_query_and_nodes(
    ingested: QdrantStore, use_async: bool
) -> None:
    """A synthesizer callable (sync or async) replaces the LLM prompt."""
    seen: list[tuple[str, list[str]]] = []

    def synth(query: str, nodes: list[NodeWithScore]) -> str:
        seen.append((query, [n.node.metadata["file_name"] for n in nodes]))
        return f"{len(nodes)} passages for {query}"

    async def asynth(query: str, nodes: list[NodeWithScore]) -> str:
        return synth(query, nodes)

    flow = RAGWorkflow(store=ingested, synthesizer=asynth if use_async else synth, top_k=2)
    response = await flow.run(query="engine oil")
    assert response.answer == "1 passages for engine oil"
    assert seen == [("engine oil", ["cars.md"])]


def test_synthesizer_must_be_callable(memory_store: QdrantStore) -> None:
    """A synthesizer that is neither callable nor a llama-index synthesizer is refused."""
    with pytest.raises(RAGConfigError, match="synthesizer must be a callable"):
        RAGWorkflow(store=memory_store, synthesizer="summarise")


async def test_subclass_can_override_one_step(ingested: QdrantStore) -> None:
    """Overriding retrieve in a subclass changes retrieval; the other steps stay."""

    class KeywordExpansionRAG(RAGWorkflow):
        @step
        async def retrieve(self, ev: RetrieveEvent) -> RetrievedEvent:
            nodes = await self.retriever.aretrieve(ev.query + " dough bake")
            return RetrievedEvent(query=ev.query, nodes=nodes)

    response = await KeywordExpansionRAG(store=ingested).run(query="zzz")
    assert response.sources[0].metadata["file_name"] == "bread.txt"
    plain = await RAGWorkflow(store=ingested).run(query="zzz")
    assert plain.sources == []


async def test_subclass_can_override_synthesis(ingested: QdrantStore) -> None:
    """The synthesis step can be replaced whole, still joining with collect_events."""
    from batonflow.rag import QueryEvent, RerankedEvent

    class CountingRAG(RAGWorkflow):
        @step
        async def synthesize(
            self, ctx: Context, ev: QueryEvent | RerankedEvent
        ) -> StopEvent | None:
            got = ctx.collect_events(ev, [QueryEvent, RerankedEvent])
            if got is None:
                return None
            return StopEvent(result=f"{got[0].query}: {len(got[1].nodes)}")

    assert await CountingRAG(store=ingested, top_k=2).run(query="engine oil") == "engine oil: 1"


async def test_hybrid_rag_answers_a_paraphrase(memory_store: QdrantStore, corpus: Path) -> None:
    """With a (fake, deterministic) embedding model, a question sharing no word finds its passage."""
    embed = ConceptEmbedding()
    await IngestionWorkflow(store=memory_store, embed_model=embed).run(paths=[corpus])
    assert (await RAGWorkflow(store=memory_store).run(query="canine healthcare")).sources == []
    response = await RAGWorkflow(store=memory_store, embed_model=embed).run(
        query="canine healthcare"
    )
    assert response.sources[0].metadata["file_name"] == "dogs.txt"
    assert response.answer.splitlines()[1].endswith("[1]")
    assert "Puppies need their vaccinations" in response.answer


async def test_llama_index_response_synthesizer_can_be_plugged_in(ingested: QdrantStore) -> None:
    """A llama-index response synthesizer (here over a mock LLM that echoes) writes the answer."""
    from llama_index.core import get_response_synthesizer
    from llama_index.core.llms import MockLLM

    synth = get_response_synthesizer(llm=MockLLM(), response_mode="simple_summarize")
    response = await RAGWorkflow(store=ingested, synthesizer=synth).run(query="engine oil")
    assert "Change the engine oil every 8000 kilometres" in response.answer  # echoed context
    assert response.sources[0].metadata["file_name"] == "cars.md"


def test_rag_start_event_is_public():
    """RAGStart, the typed entry event of RAGWorkflow, is importable from batonflow.rag."""
    import batonflow.rag
    from batonflow.rag import RAGStart, RAGWorkflow

    assert "RAGStart" in batonflow.rag.__all__
    assert RAGWorkflow(store=None).start_event_class is RAGStart
