"""Test helpers: in-memory spans with a tree printer, and an OTLP/HTTP receiver with Jaeger's query API."""

from __future__ import annotations

import gzip
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from llama_index.core.base.llms.types import (
    CompletionResponse,
    CompletionResponseGen,
    LLMMetadata,
)
from llama_index.core.llms import CustomLLM
from llama_index.core.llms.callbacks import llm_completion_callback
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Status
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


class ScriptedLLM(CustomLLM):
    """A llama-index LLM answering from a script, reporting token usage like OpenAI does."""

    answers: list[str] = ["hello there"]
    fail: bool = False

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="scripted-1", is_chat_model=False)

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        if self.fail:
            raise ConnectionError("model unreachable")
        text = self.answers[0]
        return CompletionResponse(
            text=text,
            raw={
                "id": "resp-42",
                "model": "scripted-1-0611",
                "usage": {"prompt_tokens": 7, "completion_tokens": 2},
                "choices": [{"finish_reason": "stop"}],
            },
        )

    @llm_completion_callback()
    def stream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponseGen:
        def gen() -> CompletionResponseGen:
            text = ""
            for word in self.answers[0].split():
                text += word
                yield CompletionResponse(text=text, delta=word)

        return gen()


class Spans:
    """An SDK provider whose finished spans are kept in memory, with tree helpers."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    @property
    def finished(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def named(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.finished if s.name == name]

    def one(self, name: str) -> ReadableSpan:
        found = self.named(name)
        assert len(found) == 1, f"expected one {name!r} span, got {[s.name for s in self.finished]}"
        return found[0]

    def tree(self) -> str:
        """The span tree as indented names, children sorted by (start time, name)."""
        return render_tree(
            [
                (s.context.span_id, s.parent.span_id if s.parent else None, s.name, s.start_time)
                for s in self.finished
            ]
        )


def render_tree(rows: list[tuple[int, int | None, str, int]]) -> str:
    """Indented tree text from (span id, parent id, name, start) rows; unknown parents are roots."""
    ids = {row[0] for row in rows}
    children: dict[int | None, list[tuple[int, int | None, str, int]]] = {}
    for row in rows:
        parent = row[1] if row[1] in ids else None
        children.setdefault(parent, []).append(row)
    lines: list[str] = []

    def walk(parent: int | None, depth: int) -> None:
        for row in sorted(children.get(parent, []), key=lambda r: (r[3], r[2])):
            lines.append("  " * depth + row[2])
            walk(row[0], depth + 1)

    walk(None, 0)
    return "\n".join(lines)


# -- a tiny OTLP/HTTP receiver that also answers Jaeger's query API ---------------------------


def _any_value(value: AnyValue) -> tuple[str, Any]:
    kind = value.WhichOneof("value")
    if kind == "string_value":
        return "string", value.string_value
    if kind == "bool_value":
        return "bool", value.bool_value
    if kind == "int_value":
        return "int64", value.int_value
    if kind == "double_value":
        return "float64", value.double_value
    if kind == "array_value":
        return "string", json.dumps([_any_value(v)[1] for v in value.array_value.values])
    return "string", ""


def any_value(value: AnyValue) -> Any:
    """An OTLP attribute value as Python data (arrays as lists)."""
    if value.WhichOneof("value") == "array_value":
        return [any_value(v) for v in value.array_value.values]
    return _any_value(value)[1]


_KINDS = {1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}


class OTLPReceiver:
    """Receives OTLP/HTTP protobuf spans on 127.0.0.1 and serves them in Jaeger's JSON shape."""

    def __init__(self) -> None:
        self.requests: list[ExportTraceServiceRequest] = []
        self.paths: list[str] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                with receiver._lock:
                    receiver.paths.append(self.path)
                if self.path != "/v1/traces":
                    self.send_response(404)
                    self.end_headers()
                    return
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                with receiver._lock:
                    receiver.requests.append(request)
                payload = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_GET(self) -> None:
                url = urlsplit(self.path)
                if url.path != "/api/traces":
                    self.send_response(404)
                    self.end_headers()
                    return
                service = parse_qs(url.query).get("service", [""])[0]
                payload = json.dumps(receiver.jaeger_traces(service)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def jaeger_traces(self, service: str) -> dict[str, Any]:
        """Jaeger's ``GET /api/traces?service=`` answer for the spans received so far."""
        traces: dict[str, dict[str, Any]] = {}
        with self._lock:
            requests = list(self.requests)
        for request in requests:
            for resource_spans in request.resource_spans:
                res = {kv.key: _any_value(kv.value)[1] for kv in resource_spans.resource.attributes}
                if res.get("service.name") != service:
                    continue
                for scope_spans in resource_spans.scope_spans:
                    for span in scope_spans.spans:
                        trace_id = span.trace_id.hex()
                        entry = traces.setdefault(
                            trace_id,
                            {
                                "traceID": trace_id,
                                "spans": [],
                                "processes": {"p1": {"serviceName": service, "tags": []}},
                                "warnings": None,
                            },
                        )
                        entry["spans"].append(self._jaeger_span(span))
        return {"data": list(traces.values()), "total": 0, "limit": 0, "offset": 0, "errors": None}

    @staticmethod
    def _jaeger_span(span: Any) -> dict[str, Any]:
        references = []
        if span.parent_span_id:
            references.append(
                {
                    "refType": "CHILD_OF",
                    "traceID": span.trace_id.hex(),
                    "spanID": span.parent_span_id.hex(),
                }
            )
        for link in span.links:
            references.append(
                {
                    "refType": "FOLLOWS_FROM",
                    "traceID": link.trace_id.hex(),
                    "spanID": link.span_id.hex(),
                }
            )
        tags = []
        for kv in span.attributes:
            kind, value = _any_value(kv.value)
            tags.append({"key": kv.key, "type": kind, "value": value})
        tags.append({"key": "span.kind", "type": "string", "value": _KINDS.get(span.kind, "")})
        if span.status.code == Status.STATUS_CODE_ERROR:
            tags.append({"key": "otel.status_code", "type": "string", "value": "ERROR"})
            tags.append({"key": "error", "type": "bool", "value": True})
        return {
            "traceID": span.trace_id.hex(),
            "spanID": span.span_id.hex(),
            "operationName": span.name,
            "references": references,
            "startTime": span.start_time_unix_nano // 1000,
            "duration": (span.end_time_unix_nano - span.start_time_unix_nano) // 1000,
            "tags": tags,
            "logs": [
                {
                    "timestamp": ev.time_unix_nano // 1000,
                    "fields": [{"key": "event", "type": "string", "value": ev.name}],
                }
                for ev in span.events
            ],
            "processID": "p1",
            "warnings": None,
        }
