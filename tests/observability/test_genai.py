"""GenAI spans for llama-index LLM, embedding and retrieval calls."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import respx
from batonflow.observability.genai import CAPTURE_ENV, instrument_llama_index
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.llms.types import (
    ChatMessage,
)
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from opentelemetry.trace import StatusCode
from otel_testing import ScriptedLLM, Spans


class DocsRetriever(BaseRetriever):
    """A retriever over a named collection of two fixed nodes."""

    collection_name = "docs"

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return [NodeWithScore(node=TextNode(text=t), score=1.0) for t in ("a", "b")]


@pytest.fixture
def traced(spans: Spans) -> Iterator[Spans]:
    """LLM instrumentation sending to the in-memory store, removed afterwards."""
    undo = instrument_llama_index(spans.provider)
    yield spans
    undo()


def _under_parent(spans: Spans, call: Any) -> Any:
    tracer = spans.provider.get_tracer("test")
    with tracer.start_as_current_span("step work"):
        return call()


def test_chat_gives_one_span_under_the_current_span(traced: Spans) -> None:
    """chat() on a completion-based LLM is one `chat {model}` span (its inner complete is not)."""
    llm = ScriptedLLM()
    _under_parent(traced, lambda: llm.chat([ChatMessage(role="user", content="say hi now")]))
    assert traced.tree() == "step work\n  chat scripted-1"
    span = traced.one("chat scripted-1")
    assert dict(span.attributes or {}) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "custom",
        "gen_ai.request.model": "scripted-1",
        "gen_ai.usage.input_tokens": 7,
        "gen_ai.usage.output_tokens": 2,
        "gen_ai.response.finish_reasons": ("stop",),
        "gen_ai.response.id": "resp-42",
        "gen_ai.response.model": "scripted-1-0611",
        # OpenInference's, for Arize Phoenix and Langfuse (test_openinference.py)
        "openinference.span.kind": "LLM",
        "llm.model_name": "scripted-1",
        "llm.token_count.prompt": 7,
        "llm.token_count.completion": 2,
        "llm.token_count.total": 9,
    }


def test_predict_and_complete(traced: Spans) -> None:
    """predict() and complete() each give one text_completion span (no nested duplicate)."""
    llm = ScriptedLLM()
    from llama_index.core.prompts import PromptTemplate

    _under_parent(traced, lambda: llm.predict(PromptTemplate("hi {who}"), who="you"))
    _under_parent(traced, lambda: llm.complete("x y"))
    names = sorted(s.name for s in traced.finished)
    assert names == [
        "step work",
        "step work",
        "text_completion scripted-1",
        "text_completion scripted-1",
    ]


async def test_async_chat(traced: Spans) -> None:
    """achat() in a coroutine nests under the span current in that coroutine."""
    llm = ScriptedLLM()
    tracer = traced.provider.get_tracer("test")
    with tracer.start_as_current_span("step work"):
        await llm.achat([ChatMessage(role="user", content="hi")])
    assert traced.tree() == "step work\n  chat scripted-1"


def test_streamed_chat_ends_when_consumed(traced: Spans) -> None:
    """A streamed completion's span closes once the stream is exhausted."""
    llm = ScriptedLLM(answers=["one two three"])
    stream = _under_parent(traced, lambda: llm.stream_complete("go"))
    assert traced.named("text_completion scripted-1") == []
    assert list(r.delta for r in stream) == ["one", "two", "three"]
    assert traced.one("text_completion scripted-1").end_time is not None


def test_failed_llm_call_is_an_error_span(traced: Spans) -> None:
    """An LLM call that raises gives an ERROR span with error.type and the exception."""
    llm = ScriptedLLM(fail=True)
    with pytest.raises(ConnectionError):
        _under_parent(traced, lambda: llm.chat([ChatMessage(role="user", content="hi")]))
    span = traced.one("chat scripted-1")
    assert span.status.status_code is StatusCode.ERROR
    assert (span.attributes or {})["error.type"] == "ConnectionError"
    assert [e.name for e in span.events] == ["exception"]


def test_message_content_only_when_asked(traced: Spans, monkeypatch: pytest.MonkeyPatch) -> None:
    """Prompts and answers are recorded only with the capture-content variable set."""
    llm = ScriptedLLM()
    _under_parent(traced, lambda: llm.chat([ChatMessage(role="user", content="secret")]))
    assert "gen_ai.input.messages" not in (traced.one("chat scripted-1").attributes or {})

    monkeypatch.setenv(CAPTURE_ENV, "true")
    undo = instrument_llama_index(traced.provider)
    try:
        traced.exporter.clear()
        _under_parent(traced, lambda: llm.chat([ChatMessage(role="user", content="secret")]))
    finally:
        undo()
    # two handlers are installed now (the fixture's and this one); each makes its own span
    captured = [
        s
        for s in traced.named("chat scripted-1")
        if "gen_ai.input.messages" in (s.attributes or {})
    ]
    assert len(captured) == 1
    attrs = captured[0].attributes or {}
    assert json.loads(str(attrs["gen_ai.input.messages"])) == [
        {"role": "user", "parts": [{"type": "text", "content": "secret"}]}
    ]
    assert "hello there" in str(attrs["gen_ai.output.messages"])


def test_embeddings_and_retrieval_spans(traced: Spans) -> None:
    """Embedding and retrieval calls give `embeddings {model}` and `retrieval {collection}`."""
    embed = MockEmbedding(embed_dim=4)
    _under_parent(traced, lambda: embed.get_text_embedding_batch(["a", "b", "c"]))
    _under_parent(traced, lambda: DocsRetriever().retrieve("what?"))
    emb = traced.one("embeddings unknown")
    assert (emb.attributes or {})["gen_ai.operation.name"] == "embeddings"
    assert (emb.attributes or {})["gen_ai.embeddings.dimension.count"] == 4
    ret = traced.one("retrieval docs")
    assert (ret.attributes or {})["gen_ai.data_source.id"] == "docs"
    assert (ret.attributes or {})["batonflow.retrieval.documents"] == 2
    assert ret.parent is not None


def test_uninstrument_stops_spans(spans: Spans) -> None:
    """After the undo function runs, LLM calls make no spans."""
    undo = instrument_llama_index(spans.provider)
    undo()
    ScriptedLLM().chat([ChatMessage(role="user", content="hi")])
    assert spans.finished == []


CHAT_REPLY = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "gpt-4o-mini-2024-07-18",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "Hi!"}, "finish_reason": "stop"}
    ],
    "usage": {"prompt_tokens": 11, "completion_tokens": 4, "total_tokens": 15},
}


@respx.mock
def test_openai_chat_over_http(traced: Spans) -> None:
    """The real OpenAI LLM class (HTTP mocked) gives exactly one chat span with its usage."""
    from llama_index.llms.openai import OpenAI

    route = respx.post("https://api.openai.com/v1/chat/completions").mock(
        return_value=httpx.Response(200, json=CHAT_REPLY)
    )
    llm = OpenAI(model="gpt-4o-mini", api_key="test", max_retries=0)
    _under_parent(traced, lambda: llm.chat([ChatMessage(role="user", content="hi")]))
    assert route.call_count == 1
    assert traced.tree() == "step work\n  chat gpt-4o-mini"
    attrs = dict(traced.one("chat gpt-4o-mini").attributes or {})
    assert attrs["gen_ai.provider.name"] == "openai"
    assert attrs["gen_ai.usage.input_tokens"] == 11
    assert attrs["gen_ai.usage.output_tokens"] == 4
    assert attrs["gen_ai.response.finish_reasons"] == ("stop",)
    assert attrs["gen_ai.response.model"] == "gpt-4o-mini-2024-07-18"
