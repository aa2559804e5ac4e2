"""``RAGWorkflow``: retrieve passages, optionally rerank them, and answer with citations.

::

    response = await RAGWorkflow(store=QdrantStore(), llm=OpenAI(model="gpt-4o-mini")).run(
        query="How are events passed between steps?", filters={"lang": "en"}, top_k=3
    )
    print(response.answer)            # "... [1]"
    print(response.sources[0].metadata["source"])

Steps (each can be replaced by passing a component, or by overriding it in a subclass):

* ``prepare`` (:class:`RAGStart`): checks the query, sends a :class:`QueryEvent` on for synthesis and
  a :class:`RetrieveEvent` for retrieval;
* ``retrieve``: any llama-index retriever (``QdrantRetriever`` over the store by default);
* ``rerank``: llama-index node postprocessors, in order, when given; streams :class:`SourcesEvent`;
* ``synthesize``: joins the query and the ranked passages with ``ctx.collect_events``, then
  answers with the custom synthesizer, else the LLM (streaming :class:`AnswerDelta` tokens),
  else extractively (no LLM needed). No passages: the answer says nothing was found.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

from batonflow.agents.errors import LLMCallError
from batonflow.agents.llm import chat, llm_call_error
from batonflow.core import Context, StartEvent, StopEvent, Workflow, step
from batonflow.core.retry import RetryPolicy
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.llms import LLM
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore
from pydantic import Field

from .errors import RAGConfigError, StoreConfigError
from .events import (
    AnswerDelta,
    QueryEvent,
    RerankedEvent,
    RetrievedEvent,
    RetrieveEvent,
    SourcesEvent,
)
from .filters import to_qdrant_filter
from .retriever import QdrantQuery, QdrantRetriever
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
        filters: Only passages matching it, for this run: llama-index ``MetadataFilters``, a
            qdrant-client ``models.Filter`` or a dict (on top of the workflow's ``filters``).
        top_k: How many passages to retrieve in this run (instead of the workflow's).
    """

    query: str | None = Field(None, description="the question to answer from the documents")
    filters: Any = Field(None, description="metadata filters for this run")
    top_k: int | None = Field(None, description="how many passages to retrieve")


def _postprocessors(reranker: Any) -> list[BaseNodePostprocessor]:
    items = list(reranker) if isinstance(reranker, list | tuple) else [reranker]
    bad = [type(r).__name__ for r in items if not isinstance(r, BaseNodePostprocessor)]
    if bad:
        raise RAGConfigError(
            f"reranker= got {', '.join(bad)}; pass a llama-index node postprocessor (a "
            "BaseNodePostprocessor such as SimilarityPostprocessor or a reranker) or a list of "
            "them, applied in order."
        )
    return items


class RAGWorkflow(Workflow):
    """Answer ``run(query=...)`` from retrieved passages, citing them as [1], [2].

    ``run()`` also takes ``filters=`` and ``top_k=`` for that run (see :class:`RAGStart`).

    Args:
        store: the store to search (ignored when ``retriever`` is given). Without both, a
            local ``QdrantStore()`` is opened.
        llm: a llama-index LLM for the answer; without it the answer is extractive.
        embed_model: the embedding model the documents were ingested with (hybrid retrieval).
        retriever: any llama-index ``BaseRetriever`` to use instead of the store's.
        reranker: a llama-index ``BaseNodePostprocessor``, or a list of them applied in order.
        synthesizer: a callable ``(query, nodes) -> str`` (sync or async), or a llama-index
            response synthesizer (``get_response_synthesizer(streaming=True)`` streams).
        filters: only passages matching it, in every run (MetadataFilters, a Qdrant filter or
            a dict); needs the default retriever.
        top_k: how many passages the default retriever returns.
        stream: stream the LLM's answer token by token as :class:`AnswerDelta` events.
        retry_policy: retry failed LLM calls with this ``RetryPolicy`` (from batonflow.core).
        timeout: the run's time limit in seconds.
        **kwargs: passed to :class:`~batonflow.core.Workflow`.

    Raises:
        RAGConfigError: a ``reranker``, ``synthesizer`` or ``retry_policy`` that cannot work.
        StoreConfigError: ``top_k < 1`` or a filter of an unknown kind.
    """

    def __init__(
        self,
        store: QdrantStore | None = None,
        *,
        llm: LLM | None = None,
        embed_model: BaseEmbedding | None = None,
        retriever: BaseRetriever | None = None,
        reranker: BaseNodePostprocessor | Sequence[BaseNodePostprocessor] | None = None,
        synthesizer: SynthesizerFn | Any | None = None,
        filters: Any = None,
        top_k: int = 5,
        stream: bool = True,
        retry_policy: RetryPolicy | None = None,
        timeout: float | None = 120.0,
        **kwargs: Any,
    ) -> None:
        if top_k < 1:
            raise StoreConfigError(f"top_k must be at least 1, got {top_k}.")
        if synthesizer is not None and not (
            callable(synthesizer) or hasattr(synthesizer, "asynthesize")
        ):
            raise RAGConfigError(
                f"synthesizer must be a callable (query, nodes) -> str or a llama-index "
                f"response synthesizer, got {type(synthesizer).__name__}."
            )
        if retry_policy is not None and not callable(getattr(retry_policy, "next", None)):
            raise RAGConfigError(
                f"RAGWorkflow(retry_policy=...) got {retry_policy!r}, which has no next() "
                "method; pass one built with batonflow.core.retry_policy(...)."
            )
        if filters is not None and retriever is not None:
            raise RAGConfigError(
                "RAGWorkflow got filters= and retriever=; give the filters to your retriever, "
                "or leave retriever= out to filter the store's default QdrantRetriever."
            )
        self.postprocessors = _postprocessors(reranker) if reranker is not None else []
        super().__init__(timeout=timeout, **kwargs)
        if retriever is None:
            store = store if store is not None else QdrantStore()
            retriever = QdrantRetriever(
                store, embed_model=embed_model, top_k=top_k, filters=to_qdrant_filter(filters)
            )
        self.store = store
        self.retriever = retriever
        self.llm = llm
        self.reranker = reranker
        self.synthesizer = synthesizer
        self.top_k = top_k
        self.stream = stream
        self.retry_policy = retry_policy

    @step
    async def prepare(self, ctx: Context, ev: RAGStart) -> QueryEvent | RetrieveEvent:
        """Check the query and the run's options; send the query on for synthesis and retrieval."""
        query = ev.query
        if not isinstance(query, str) or not query.strip():
            raise ValueError(
                f"RAGWorkflow.run() needs query='your question' (a non-empty string), got "
                f"{query!r}."
            )
        if ev.top_k is not None and (not isinstance(ev.top_k, int) or ev.top_k < 1):
            raise StoreConfigError(f"run(top_k=...) must be at least 1, got {ev.top_k!r}.")
        if (ev.filters is not None or ev.top_k is not None) and not isinstance(
            self.retriever, QdrantRetriever
        ):
            raise RAGConfigError(
                f"run(filters=..., top_k=...) needs the default QdrantRetriever, and this "
                f"workflow has a {type(self.retriever).__name__}; set them on your retriever, "
                "or leave retriever= out."
            )
        to_qdrant_filter(ev.filters)  # a bad filter fails here, before any work
        query = query.strip()
        ctx.send_event(QueryEvent(query=query))
        return RetrieveEvent(query=query, filters=ev.filters, top_k=ev.top_k)

    @step
    async def retrieve(self, ev: RetrieveEvent) -> RetrievedEvent:
        """Fetch passages with the retriever."""
        if ev.filters is not None or ev.top_k is not None:
            bundle: Any = QdrantQuery(ev.query, filters=ev.filters, top_k=ev.top_k)
            nodes = await self.retriever.aretrieve(bundle)
        else:
            nodes = await self.retriever.aretrieve(ev.query)
        return RetrievedEvent(query=ev.query, nodes=nodes)

    @step
    async def rerank(self, ctx: Context, ev: RetrievedEvent) -> RerankedEvent:
        """Apply the postprocessors (when given) in order, and stream the sources."""
        nodes = ev.nodes
        for postprocessor in self.postprocessors:
            if not nodes:
                break
            nodes = await postprocessor.apostprocess_nodes(nodes, query_str=ev.query)
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
            answer = await self._custom_answer(ctx, query, nodes)
        elif self.llm is not None:
            answer = await self._llm_answer(ctx, self.llm, query, nodes)
        else:
            answer = extractive_answer(query, nodes, encoder=_encoder_of(self.store))
        return StopEvent(result=RAGResponse(answer=answer, sources=to_sources(nodes)))

    async def _custom_answer(self, ctx: Context, query: str, nodes: list[NodeWithScore]) -> str:
        synth: Any = self.synthesizer
        if not hasattr(synth, "asynthesize"):
            result = synth(query, nodes)
            if inspect.isawaitable(result):
                result = await result
            return str(result)
        llm = getattr(synth, "_llm", None)  # a llama-index synthesizer keeps its LLM here
        try:
            response = await synth.asynthesize(query, nodes=nodes)
            if hasattr(response, "async_response_gen"):  # get_response_synthesizer(streaming=True)
                parts: list[str] = []
                async for delta in response.async_response_gen():
                    if delta:
                        parts.append(delta)
                        ctx.write_event_to_stream(AnswerDelta(delta=delta))
                return "".join(parts)
            if hasattr(response, "response_gen"):  # a synchronous stream
                parts = []
                for delta in response.response_gen:
                    if delta:
                        parts.append(delta)
                        ctx.write_event_to_stream(AnswerDelta(delta=delta))
                return "".join(parts)
            return str(response)
        except LLMCallError:
            raise
        except Exception as exc:
            if not isinstance(llm, LLM):
                raise
            raise llm_call_error(exc, llm) from exc

    async def _llm_answer(
        self, ctx: Context, llm: LLM, query: str, nodes: Sequence[NodeWithScore]
    ) -> str:
        messages = build_messages(query, nodes)

        async def on_delta(delta: str, _text: str) -> None:
            ctx.write_event_to_stream(AnswerDelta(delta=delta))

        response = await chat(
            llm,
            messages,
            on_delta=on_delta if self.stream else None,
            retry_policy=self.retry_policy,
        )
        return response.message.content or ""


def _encoder_of(store: QdrantStore | None) -> Any:
    return store.encoder if store is not None else None


__all__ = ["RAGStart", "RAGWorkflow"]
