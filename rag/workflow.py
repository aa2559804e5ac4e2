"""``RAGWorkflow``: retrieve passages, optionally rerank them, and answer with citations.

::

    response = await RAGWorkflow(store=QdrantStore(), llm=OpenAI(model="gpt-4o-mini")).run(
        query="How are events passed between steps?"
    )
    print(response.answer)            # "... [1]"
    print(response.sources[0].metadata["source"])

Steps (each can be replaced by passing a component, or by overriding it in a subclass):

* ``prepare`` (:class:`RAGStart`): checks the query, sends a :class:`QueryEvent` on for synthesis and
  a :class:`RetrieveEvent` for retrieval;
* ``retrieve``: any llama-index retriever (``QdrantRetriever`` over the store by default);
* ``rerank``: any llama-index node postprocessor, when given; streams :class:`SourcesEvent`;
* ``synthesize``: joins the query and the ranked passages with ``ctx.collect_events``, then
  answers with the custom synthesizer, else the LLM (streaming :class:`AnswerDelta` tokens),
  else extractively (no LLM needed). No passages: the answer says nothing was found.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

from batonflow.core import Context, StartEvent, StopEvent, Workflow, step
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.llms import LLM
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore
from pydantic import Field

from .errors import StoreConfigError
from .events import (
    AnswerDelta,
    QueryEvent,
    RerankedEvent,
    RetrievedEvent,
    RetrieveEvent,
    SourcesEvent,
)
from .retriever import QdrantRetriever
from .store import QdrantStore
from .synthesis import (
    RAGResponse,
    SynthesizerFn,
    build_messages,
    extractive_answer,
    nothing_found,
    to_sources,
)


class RAGStart(StartEvent):
    """The start of a :class:`RAGWorkflow` run.

    Attributes:
        query: The question to answer from the ingested documents.
    """

    query: str | None = Field(None, description="the question to answer from the documents")


class RAGWorkflow(Workflow):
    """Answer ``run(query=...)`` from retrieved passages, citing them as [1], [2].

    Args:
        store: the store to search (ignored when ``retriever`` is given). Without both, a
            local ``QdrantStore()`` is opened.
        llm: a llama-index LLM for the answer; without it the answer is extractive.
        embed_model: the embedding model the documents were ingested with (hybrid retrieval).
        retriever: any llama-index ``BaseRetriever`` to use instead of the store's.
        reranker: a llama-index ``BaseNodePostprocessor`` applied after retrieval.
        synthesizer: a callable ``(query, nodes) -> str`` (sync or async), or a llama-index
            response synthesizer, used instead of the LLM prompt.
        top_k: how many passages the default retriever returns.
        stream: stream the LLM's answer token by token as :class:`AnswerDelta` events.
        timeout: the run's time limit in seconds.
        **kwargs: passed to :class:`~batonflow.core.Workflow`.
    """

    def __init__(
        self,
        store: QdrantStore | None = None,
        *,
        llm: LLM | None = None,
        embed_model: BaseEmbedding | None = None,
        retriever: BaseRetriever | None = None,
        reranker: BaseNodePostprocessor | None = None,
        synthesizer: SynthesizerFn | Any | None = None,
        top_k: int = 5,
        stream: bool = True,
        timeout: float | None = 120.0,
        **kwargs: Any,
    ) -> None:
        if top_k < 1:
            raise StoreConfigError(f"top_k must be at least 1, got {top_k}.")
        if synthesizer is not None and not (
            callable(synthesizer) or hasattr(synthesizer, "asynthesize")
        ):
            raise TypeError(
                f"synthesizer must be a callable (query, nodes) -> str or a llama-index "
                f"response synthesizer, got {type(synthesizer).__name__}."
            )
        super().__init__(timeout=timeout, **kwargs)
        if retriever is None:
            store = store if store is not None else QdrantStore()
            retriever = QdrantRetriever(store, embed_model=embed_model, top_k=top_k)
        self.store = store
        self.retriever = retriever
        self.llm = llm
        self.reranker = reranker
        self.synthesizer = synthesizer
        self.top_k = top_k
        self.stream = stream

    @step
    async def prepare(self, ctx: Context, ev: RAGStart) -> QueryEvent | RetrieveEvent:
        """Check the query; send it on for synthesis and for retrieval."""
        query = ev.query
        if not isinstance(query, str) or not query.strip():
            raise ValueError(
                f"RAGWorkflow.run() needs query='your question' (a non-empty string), got "
                f"{query!r}."
            )
        query = query.strip()
        ctx.send_event(QueryEvent(query=query))
        return RetrieveEvent(query=query)

    @step
    async def retrieve(self, ev: RetrieveEvent) -> RetrievedEvent:
        """Fetch passages with the retriever."""
        nodes = await self.retriever.aretrieve(ev.query)
        return RetrievedEvent(query=ev.query, nodes=nodes)

    @step
    async def rerank(self, ctx: Context, ev: RetrievedEvent) -> RerankedEvent:
        """Rerank with the postprocessor (when given) and stream the sources."""
        nodes = ev.nodes
        if self.reranker is not None and nodes:
            nodes = await self.reranker.apostprocess_nodes(nodes, query_str=ev.query)
        ctx.write_event_to_stream(SourcesEvent(query=ev.query, sources=to_sources(nodes)))
        return RerankedEvent(query=ev.query, nodes=nodes)

    @step
    async def synthesize(self, ctx: Context, ev: QueryEvent | RerankedEvent) -> StopEvent | None:
        """Wait for the query and the passages, then answer."""
        collected = ctx.collect_events(ev, [QueryEvent, RerankedEvent])
        if collected is None:
            return None
        query_ev, ranked = collected
        query = query_ev.query
        nodes: list[NodeWithScore] = list(ranked.nodes)
        if not nodes:
            answer = nothing_found(query)
        elif self.synthesizer is not None:
            answer = await self._custom_answer(query, nodes)
        elif self.llm is not None:
            answer = await self._llm_answer(ctx, self.llm, query, nodes)
        else:
            answer = extractive_answer(query, nodes, encoder=_encoder_of(self.store))
        return StopEvent(result=RAGResponse(answer=answer, sources=to_sources(nodes)))

    async def _custom_answer(self, query: str, nodes: list[NodeWithScore]) -> str:
        synth: Any = self.synthesizer
        if hasattr(synth, "asynthesize"):  # a llama-index response synthesizer
            return str(await synth.asynthesize(query, nodes=nodes))
        result = synth(query, nodes)
        if inspect.isawaitable(result):
            result = await result
        return str(result)

    async def _llm_answer(
        self, ctx: Context, llm: LLM, query: str, nodes: Sequence[NodeWithScore]
    ) -> str:
        messages = build_messages(query, nodes)
        if not self.stream:
            response = await llm.achat(messages)
            return response.message.content or ""
        parts: list[str] = []
        async for chunk in await llm.astream_chat(messages):
            if chunk.delta:
                parts.append(chunk.delta)
                ctx.write_event_to_stream(AnswerDelta(delta=chunk.delta))
        return "".join(parts)


def _encoder_of(store: QdrantStore | None) -> Any:
    return store.encoder if store is not None else None


__all__ = ["RAGStart", "RAGWorkflow"]
