"""GenAI spans for llama-index LLM, embedding and retrieval calls, via its instrumentation dispatcher.

llama-index-core reports every LLM call through ``llama_index.core.instrumentation``: the
dispatcher opens a span around each decorated method and emits start/end events from inside
(``LLMChatStartEvent`` … ``LLMChatEndEvent``). This module registers one span handler (to learn
the dispatcher's span tree, the object a method ran on, and failures) and one event handler
(to open and close OpenTelemetry spans with the GenAI semantic-convention attributes):

* ``chat {model}`` / ``text_completion {model}``: ``gen_ai.operation.name``,
  ``gen_ai.provider.name``, ``gen_ai.request.model``, ``gen_ai.response.model``,
  ``gen_ai.response.id``, ``gen_ai.usage.input_tokens`` / ``output_tokens``,
  ``gen_ai.response.finish_reasons``;
* ``embeddings {model}``; ``retrieval {collection}`` with the documents found as OpenInference
  records them (``retrieval.documents.{i}.document.id`` / ``.score``; ``.content`` and
  ``.metadata`` only with content capture). A span opened inside another (the query's
  embedding inside a retrieval) is that span's child.

OpenInference's attributes ride along (:mod:`batonflow.observability.openinference`): the
span kinds ``LLM`` / ``EMBEDDING`` / ``RETRIEVER``, ``llm.model_name``, ``llm.token_count.*``,
and with content capture ``input.value`` / ``output.value``.

Each span is a child of the span current where the LLM was called, which inside a traced step
is the step span. An LLM call nested in another of the same kind (``CustomLLM.chat`` calling
its own ``complete``, ``predict`` calling ``chat``) gives one span, not two. Message content is
recorded (``gen_ai.input.messages`` / ``gen_ai.output.messages``, JSON) only when
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``.

Importing this module imports llama-index-core; ``batonflow.observability`` imports it only
when LLM instrumentation is asked for.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from batonflow.core.tracing import TRACER_NAME
from llama_index.core.instrumentation import root_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.instrumentation.events.embedding import (
    EmbeddingEndEvent,
    EmbeddingStartEvent,
)
from llama_index.core.instrumentation.events.exception import ExceptionEvent
from llama_index.core.instrumentation.events.llm import (
    LLMChatEndEvent,
    LLMChatInProgressEvent,
    LLMChatStartEvent,
    LLMCompletionEndEvent,
    LLMCompletionStartEvent,
)
from llama_index.core.instrumentation.events.retrieval import (
    RetrievalEndEvent,
    RetrievalStartEvent,
)
from llama_index.core.instrumentation.span_handlers import BaseSpanHandler
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode
from pydantic import PrivateAttr

from ._capture import CAPTURE_ENV as CAPTURE_ENV
from ._capture import capture_content_from_env
from .openinference import EMBEDDING, KIND, LLM, RETRIEVER, json_attributes, value_attributes

# OpenInference's token counts (Phoenix reads these, not gen_ai.usage.*)
TOKENS_IN, TOKENS_OUT = "llm.token_count.prompt", "llm.token_count.completion"
TOKENS_TOTAL = "llm.token_count.total"

# llama-index class_name() values whose GenAI provider name is not simply the prefix
_PROVIDERS = {
    "azure_openai_llm": "azure.ai.openai",
    "azure_openai": "azure.ai.openai",
    "bedrock_llm": "aws.bedrock",
    "gemini_llm": "gcp.gemini",
    "vertex_llm": "gcp.vertex_ai",
    "mistralai_llm": "mistral_ai",
}


def _provider(model_dict: Mapping[str, Any]) -> str:
    name = str(model_dict.get("class_name") or "unknown").lower()
    if name in _PROVIDERS:
        return _PROVIDERS[name]
    for suffix in ("_llm", "_embedding", "embedding", "llm"):
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)].rstrip("_")
    return name


def _model(model_dict: Mapping[str, Any]) -> str:
    for key in ("model", "model_name"):
        value = model_dict.get(key)
        if value:
            return str(value)
    return "unknown"


def _get(obj: Any, key: str) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(key)
    return getattr(obj, key, None)


def _usage(response: Any) -> tuple[int | None, int | None]:
    extra = _get(response, "additional_kwargs") or {}
    usage = _get(_get(response, "raw"), "usage") or extra
    tokens_in = _get(usage, "prompt_tokens")
    if tokens_in is None:
        tokens_in = _get(usage, "input_tokens")
    tokens_out = _get(usage, "completion_tokens")
    if tokens_out is None:
        tokens_out = _get(usage, "output_tokens")
    return (
        tokens_in if isinstance(tokens_in, int) else None,
        tokens_out if isinstance(tokens_out, int) else None,
    )


def _finish_reasons(response: Any) -> list[str]:
    raw = _get(response, "raw")
    reasons = [
        str(reason)
        for choice in (_get(raw, "choices") or [])
        if (reason := _get(choice, "finish_reason"))
    ]
    if not reasons:
        for source in (raw, _get(response, "additional_kwargs")):
            reason = _get(source, "stop_reason") or _get(source, "finish_reason")
            if reason:
                return [str(reason)]
    return reasons


def _role(message: Any) -> str:
    role = getattr(message, "role", "")
    return str(getattr(role, "value", role))


def _parts(message: Any) -> list[dict[str, Any]]:
    """A message's parts in the GenAI conventions' shape: text, tool calls, tool results."""
    parts: list[dict[str, Any]] = []
    extra = getattr(message, "additional_kwargs", None) or {}
    if _role(message) == "tool":
        return [
            {
                "type": "tool_call_response",
                "id": str(extra.get("tool_call_id", "")),
                "response": str(getattr(message, "content", "") or ""),
            }
        ]
    seen: set[str] = set()
    for block in getattr(message, "blocks", None) or []:
        kind = getattr(block, "block_type", "")
        if kind == "text" and getattr(block, "text", ""):
            parts.append({"type": "text", "content": block.text})
        elif kind == "tool_call":
            call_id = str(getattr(block, "tool_call_id", "") or "")
            seen.add(call_id)
            parts.append(
                {
                    "type": "tool_call",
                    "id": call_id,
                    "name": getattr(block, "tool_name", ""),
                    "arguments": _arguments(getattr(block, "tool_kwargs", None)),
                }
            )
    for call in extra.get("tool_calls") or []:  # providers that keep calls in additional_kwargs
        call_id = str(_get(call, "id") or "")
        function = _get(call, "function")
        if call_id in seen or function is None:
            continue
        parts.append(
            {
                "type": "tool_call",
                "id": call_id,
                "name": str(_get(function, "name") or ""),
                "arguments": _arguments(_get(function, "arguments")),
            }
        )
    if not parts:
        parts.append({"type": "text", "content": str(getattr(message, "content", "") or "")})
    return parts


def _arguments(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value if value is not None else {}


def _messages_json(messages: Any) -> str:
    out = [{"role": _role(m), "parts": _parts(m)} for m in messages or []]
    return json.dumps(out, ensure_ascii=False, default=str)


def _collection(instance: Any) -> str:
    for path in (
        ("collection",),  # batonflow.rag.QdrantRetriever
        ("store", "collection"),
        ("collection_name",),
        ("_collection_name",),
        ("_vector_store", "collection_name"),
        ("_index", "vector_store", "collection_name"),
        ("store", "collection_name"),
    ):
        value: Any = instance
        for part in path:
            value = getattr(value, part, None)
            if value is None:
                break
        if isinstance(value, str) and value:
            return value
    return type(instance).__name__ if instance is not None else "unknown"


@dataclass(slots=True)
class _Open:
    kind: str
    span: Span


class _Tracker:
    """The state shared by the two handlers: the dispatcher span tree and open OTel spans."""

    def __init__(self, tracer: trace.Tracer, capture_content: bool) -> None:
        self.tracer = tracer
        self.capture = capture_content
        self.lock = threading.Lock()
        self.parents: dict[str, str | None] = {}
        self.instances: dict[str, Any] = {}
        self.open: dict[str, _Open] = {}

    # dispatcher spans
    def entered(self, id_: str, parent: str | None, instance: Any) -> None:
        with self.lock:
            self.parents[id_] = parent
            self.instances[id_] = instance

    def left(self, id_: str, error: BaseException | None) -> None:
        with self.lock:
            self.parents.pop(id_, None)
            self.instances.pop(id_, None)
            found = self.open.get(id_)
            # a streamed response finishes after its method returned: keep its span open
            if found is not None and error is not None:
                del self.open[id_]
            else:
                found = None
        if found is not None and error is not None:
            _error(found.span, error)
            found.span.end()

    def _enclosing(self, span_id: str) -> Span | None:
        # The innermost GenAI span open around this call (the query's embedding inside a
        # retrieval): the new span becomes its child instead of the step's.
        current = self.parents.get(span_id)
        while current is not None:
            found = self.open.get(current)
            if found is not None:
                return found.span
            current = self.parents.get(current)
        return None

    def _nested(self, span_id: str, kind: str) -> bool:
        current: str | None = span_id
        while current is not None:
            found = self.open.get(current)
            if found is not None and found.kind == kind:
                return True
            current = self.parents.get(current)
        return False

    # GenAI spans
    def start(
        self, span_id: str | None, kind: str, name: str, attrs: dict[str, Any]
    ) -> Span | None:
        if span_id is None:
            return None
        with self.lock:
            if self._nested(span_id, kind):
                return None
            enclosing = self._enclosing(span_id)
            context = trace.set_span_in_context(enclosing) if enclosing is not None else None
            span = self.tracer.start_span(
                name, context=context, kind=SpanKind.CLIENT, attributes=attrs
            )
            self.open[span_id] = _Open(kind, span)
            return span

    def finish(self, span_id: str | None, kind: str) -> Span | None:
        if span_id is None:
            return None
        with self.lock:
            found = self.open.get(span_id)
            if found is None or found.kind != kind:
                return None
            del self.open[span_id]
            return found.span

    def annotate(self, span_id: str | None, kind: str, key: str, value: Any) -> None:
        """Set an attribute on the open span of ``kind`` for ``span_id``, if there is one."""
        if span_id is None:
            return
        with self.lock:
            found = self.open.get(span_id)
        if found is not None and found.kind == kind:
            found.span.set_attribute(key, value)

    def instance_of(self, span_id: str | None) -> Any:
        with self.lock:
            return self.instances.get(span_id) if span_id is not None else None


def _error(span: Span, error: BaseException) -> None:
    span.record_exception(error)
    span.set_attribute("error.type", type(error).__qualname__)
    span.set_status(Status(StatusCode.ERROR, f"{type(error).__name__}: {error}"))


class _SpanHandler(BaseSpanHandler[Any]):
    """Learns the dispatcher span tree and closes GenAI spans of methods that raised."""

    _tracker: _Tracker = PrivateAttr()

    def __init__(self, tracker: _Tracker) -> None:
        super().__init__(open_spans={}, completed_spans=[], dropped_spans=[], current_span_ids={})
        self._tracker = tracker

    @classmethod
    def class_name(cls) -> str:
        return "BatonflowOTelSpanHandler"

    def new_span(
        self,
        id_: str,
        bound_args: Any,
        instance: Any | None = None,
        parent_span_id: str | None = None,
        tags: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self._tracker.entered(id_, parent_span_id, instance)
        return None

    def prepare_to_exit_span(
        self,
        id_: str,
        bound_args: Any,
        instance: Any | None = None,
        result: Any | None = None,
        **kwargs: Any,
    ) -> None:
        self._tracker.left(id_, None)
        return None

    def prepare_to_drop_span(
        self,
        id_: str,
        bound_args: Any,
        instance: Any | None = None,
        err: BaseException | None = None,
        **kwargs: Any,
    ) -> None:
        self._tracker.left(id_, err or RuntimeError("llama-index span dropped"))
        return None


class _EventHandler(BaseEventHandler):
    """Opens and closes the GenAI spans from llama-index start/end events."""

    _tracker: _Tracker = PrivateAttr()

    def __init__(self, tracker: _Tracker) -> None:
        super().__init__()
        self._tracker = tracker

    @classmethod
    def class_name(cls) -> str:
        return "BatonflowOTelEventHandler"

    def handle(self, event: BaseEvent, **kwargs: Any) -> None:
        t = self._tracker
        if isinstance(event, LLMChatStartEvent | LLMCompletionStartEvent):
            op = "chat" if isinstance(event, LLMChatStartEvent) else "text_completion"
            model = _model(event.model_dict)
            attrs: dict[str, Any] = {
                "gen_ai.operation.name": op,
                "gen_ai.provider.name": _provider(event.model_dict),
                "gen_ai.request.model": model,
                KIND: LLM,
                "llm.model_name": model,
            }
            # llama-index's payload holds the LLM's metadata only: the settings are read from
            # the LLM object the call ran on (the span handler saw it), then from the payload.
            llm = t.instance_of(event.span_id)
            for src, dst in (
                ("temperature", "gen_ai.request.temperature"),
                ("max_tokens", "gen_ai.request.max_tokens"),
            ):
                value = getattr(llm, src, None)
                if value is None:
                    value = event.model_dict.get(src)
                if isinstance(value, int | float) and not isinstance(value, bool):
                    attrs[dst] = value
            if t.capture:
                if isinstance(event, LLMChatStartEvent):
                    attrs["gen_ai.input.messages"] = _messages_json(event.messages)
                else:
                    attrs["gen_ai.input.messages"] = json.dumps(
                        [{"role": "user", "parts": [{"type": "text", "content": event.prompt}]}]
                    )
                attrs.update(json_attributes("input", attrs["gen_ai.input.messages"]))
            t.start(event.span_id, "llm", f"{op} {model}", attrs)
        elif isinstance(event, LLMChatInProgressEvent):
            # A stream that reports usage (stream_options.include_usage) ends with a chunk
            # that has no choices: the finish reason comes from the chunk before it.
            reasons = _finish_reasons(event.response)
            if reasons:
                t.annotate(event.span_id, "llm", "gen_ai.response.finish_reasons", reasons)
        elif isinstance(event, LLMChatEndEvent | LLMCompletionEndEvent):
            span = t.finish(event.span_id, "llm")
            if span is None:
                return
            response = event.response
            if response is not None:
                _llm_response(span, response, t.capture)
            span.end()
        elif isinstance(event, EmbeddingStartEvent):
            model = _model(event.model_dict)
            t.start(
                event.span_id,
                "embeddings",
                f"embeddings {model}",
                {
                    "gen_ai.operation.name": "embeddings",
                    "gen_ai.provider.name": _provider(event.model_dict),
                    "gen_ai.request.model": model,
                    KIND: EMBEDDING,
                    "embedding.model_name": model,
                },
            )
        elif isinstance(event, EmbeddingEndEvent):
            span = t.finish(event.span_id, "embeddings")
            if span is not None:
                span.set_attribute("batonflow.embeddings.inputs", len(event.chunks))
                if event.embeddings:
                    span.set_attribute(
                        "gen_ai.embeddings.dimension.count", len(event.embeddings[0])
                    )
                span.end()
        elif isinstance(event, RetrievalStartEvent):
            collection = _collection(t.instance_of(event.span_id))
            attrs = {
                "gen_ai.operation.name": "retrieval",
                "gen_ai.data_source.id": collection,
                KIND: RETRIEVER,
            }
            if t.capture:
                attrs["batonflow.retrieval.query"] = str(event.str_or_query_bundle)
                attrs.update(value_attributes("input", attrs["batonflow.retrieval.query"]))
            t.start(event.span_id, "retrieval", f"retrieval {collection}", attrs)
        elif isinstance(event, RetrievalEndEvent):
            span = t.finish(event.span_id, "retrieval")
            if span is not None:
                span.set_attribute("batonflow.retrieval.documents", len(event.nodes))
                _documents(span, event.nodes, t.capture)
                span.end()
        elif isinstance(event, ExceptionEvent):
            # raised while a streamed response was being consumed
            for kind in ("llm", "embeddings", "retrieval"):
                span = t.finish(event.span_id, kind)
                if span is not None:
                    _error(span, event.exception)
                    span.end()


def _documents(span: Span, nodes: Any, capture: bool) -> None:
    """The retrieved documents, as OpenInference records them: id and score always, content
    and metadata only when content capture is on."""
    for i, scored in enumerate(nodes or []):
        prefix = f"retrieval.documents.{i}.document"
        node = getattr(scored, "node", None)
        node_id = getattr(node, "node_id", None)
        if node_id is not None:
            span.set_attribute(f"{prefix}.id", str(node_id))
        score = getattr(scored, "score", None)
        if isinstance(score, int | float):
            span.set_attribute(f"{prefix}.score", float(score))
        if capture and node is not None:
            get_content = getattr(node, "get_content", None)
            if callable(get_content):
                span.set_attribute(f"{prefix}.content", str(get_content()))
            metadata = getattr(node, "metadata", None)
            if metadata:
                span.set_attribute(
                    f"{prefix}.metadata", json.dumps(metadata, ensure_ascii=False, default=str)
                )


def _llm_response(span: Span, response: Any, capture: bool) -> None:
    tokens_in, tokens_out = _usage(response)
    if tokens_in is not None:
        span.set_attributes({"gen_ai.usage.input_tokens": tokens_in, TOKENS_IN: tokens_in})
    if tokens_out is not None:
        span.set_attributes({"gen_ai.usage.output_tokens": tokens_out, TOKENS_OUT: tokens_out})
    if tokens_in is not None and tokens_out is not None:
        span.set_attribute(TOKENS_TOTAL, tokens_in + tokens_out)
    reasons = _finish_reasons(response)
    if reasons:
        span.set_attribute("gen_ai.response.finish_reasons", reasons)
    raw = _get(response, "raw")
    for key, attr in (("id", "gen_ai.response.id"), ("model", "gen_ai.response.model")):
        value = _get(raw, key)
        if isinstance(value, str) and value:
            span.set_attribute(attr, value)
    if capture:
        message = _get(response, "message")
        if message is not None:
            output = _messages_json([message])
        else:
            text = str(_get(response, "text") or "")
            output = json.dumps(
                [{"role": "assistant", "parts": [{"type": "text", "content": text}]}]
            )
        span.set_attributes({"gen_ai.output.messages": output, **json_attributes("output", output)})


def is_instrumented() -> bool:
    """Whether batonflow's LLM span handlers are on llama-index's root dispatcher."""
    return any(
        h.class_name() == "BatonflowOTelEventHandler" for h in root_dispatcher.event_handlers
    )


def instrument_llama_index(
    tracer_provider: trace.TracerProvider | None = None,
    capture_content: bool | None = None,
) -> Callable[[], None]:
    """Trace llama-index LLM, embedding and retrieval calls as GenAI spans.

    Args:
        tracer_provider: Where the spans go; ``None`` means the global provider.
        capture_content: Record prompts and completions; ``None`` reads
            ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``.

    Returns:
        A function that removes the handlers again.
    """
    if capture_content is None:
        capture_content = capture_content_from_env()
    tracker = _Tracker(
        trace.get_tracer(TRACER_NAME, tracer_provider=tracer_provider), capture_content
    )
    span_handler = _SpanHandler(tracker)
    event_handler = _EventHandler(tracker)
    root_dispatcher.add_span_handler(span_handler)
    root_dispatcher.add_event_handler(event_handler)

    def uninstrument() -> None:
        root_dispatcher.span_handlers = [
            h for h in root_dispatcher.span_handlers if h is not span_handler
        ]
        root_dispatcher.event_handlers = [
            h for h in root_dispatcher.event_handlers if h is not event_handler
        ]

    return uninstrument


__all__ = [
    "CAPTURE_ENV",
    "capture_content_from_env",
    "instrument_llama_index",
    "is_instrumented",
]
