"""What Arize Phoenix and Langfuse read from OTLP spans, applied to what a receiver decoded.

Each reader keeps only the rules of its tool that a batonflow trace meets, written from the
tool's documentation and ingestion code:

* Phoenix: the project is the resource attribute ``openinference.project.name`` (else
  ``default``); a span's kind is ``openinference.span.kind`` (else ``UNKNOWN``); its input and
  output are ``input.value`` / ``output.value`` with their mime types; an LLM span's tokens are
  ``llm.token_count.*``.
* Langfuse: an observation's type comes from the first rule that matches, in this order:
  ``langfuse.observation.type``; ``openinference.span.kind`` (``LLM`` is a generation); the
  GenAI ``gen_ai.operation.name`` (``chat`` / ``text_completion`` a generation, ``embeddings``,
  ``invoke_agent`` an agent, ``execute_tool`` a tool); a ``gen_ai.tool.*`` attribute (a tool);
  a model attribute (a generation); else a span. Its input and output are the first pair of
  attributes present, in this order: ``langfuse.observation.input``/``output``,
  ``input.value``/``output.value``, ``gen_ai.input.messages``/``output.messages``,
  ``gen_ai.tool.call.arguments``/``result``. The root span's input and output are the trace's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from otel_testing import OTLPReceiver, any_value


@dataclass
class WireSpan:
    """One span as it arrived, with its resource's attributes."""

    name: str
    span_id: str
    parent_id: str | None
    attributes: dict[str, Any]
    resource: dict[str, Any]


def received(receiver: OTLPReceiver) -> list[WireSpan]:
    """Every span the receiver decoded, in arrival order."""
    with receiver._lock:
        requests = list(receiver.requests)
    out = []
    for request in requests:
        for resource_spans in request.resource_spans:
            resource = {kv.key: any_value(kv.value) for kv in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    out.append(
                        WireSpan(
                            name=span.name,
                            span_id=span.span_id.hex(),
                            parent_id=span.parent_span_id.hex() or None,
                            attributes={kv.key: any_value(kv.value) for kv in span.attributes},
                            resource=resource,
                        )
                    )
    return out


@dataclass
class PhoenixSpan:
    """A span as Phoenix shows it."""

    name: str
    kind: str
    input: str | None
    input_mime_type: str | None
    output: str | None
    output_mime_type: str | None
    tokens: tuple[int | None, int | None, int | None]


def phoenix_projects(receiver: OTLPReceiver) -> dict[str, list[PhoenixSpan]]:
    """Project name -> its spans, as Phoenix files and shows them."""
    projects: dict[str, list[PhoenixSpan]] = {}
    for span in received(receiver):
        project = span.resource.get("openinference.project.name") or "default"
        a = span.attributes
        projects.setdefault(project, []).append(
            PhoenixSpan(
                name=span.name,
                kind=a.get("openinference.span.kind", "UNKNOWN"),
                input=a.get("input.value"),
                input_mime_type=a.get("input.mime_type"),
                output=a.get("output.value"),
                output_mime_type=a.get("output.mime_type"),
                tokens=(
                    a.get("llm.token_count.prompt"),
                    a.get("llm.token_count.completion"),
                    a.get("llm.token_count.total"),
                ),
            )
        )
    return projects


_OPENINFERENCE_TYPES = {
    "CHAIN": "CHAIN",
    "RETRIEVER": "RETRIEVER",
    "LLM": "GENERATION",
    "EMBEDDING": "EMBEDDING",
    "AGENT": "AGENT",
    "TOOL": "TOOL",
}
_GENAI_TYPES = {
    "chat": "GENERATION",
    "text_completion": "GENERATION",
    "embeddings": "EMBEDDING",
    "invoke_agent": "AGENT",
    "execute_tool": "TOOL",
}
_IO_PAIRS = [
    ("langfuse.observation.input", "langfuse.observation.output"),
    ("input.value", "output.value"),
    ("gen_ai.input.messages", "gen_ai.output.messages"),
    ("gen_ai.tool.call.arguments", "gen_ai.tool.call.result"),
]


@dataclass
class LangfuseObservation:
    """A span as Langfuse stores it."""

    name: str
    type: str
    input: Any
    output: Any
    model: str | None


def _langfuse_type(a: dict[str, Any]) -> str:
    if a.get("langfuse.observation.type"):
        return str(a["langfuse.observation.type"]).upper()
    mapped = _OPENINFERENCE_TYPES.get(a.get("openinference.span.kind", ""))
    if mapped:
        return mapped
    mapped = _GENAI_TYPES.get(a.get("gen_ai.operation.name", ""))
    if mapped:
        return mapped
    if a.get("gen_ai.tool.name") or a.get("gen_ai.tool.call.id"):
        return "TOOL"
    if a.get("gen_ai.request.model") or a.get("gen_ai.response.model"):
        return "GENERATION"
    return "SPAN"


def _langfuse_io(a: dict[str, Any]) -> tuple[Any, Any]:
    for input_key, output_key in _IO_PAIRS:
        if a.get(input_key) or a.get(output_key):
            return a.get(input_key), a.get(output_key)
    return None, None


def langfuse_trace(receiver: OTLPReceiver) -> tuple[dict[str, Any], list[LangfuseObservation]]:
    """The trace (name, input, output) and its observations, as Langfuse stores them."""
    spans = received(receiver)
    observations = []
    root: dict[str, Any] = {}
    for span in spans:
        a = span.attributes
        io = _langfuse_io(a)
        observations.append(
            LangfuseObservation(
                name=span.name,
                type=_langfuse_type(a),
                input=io[0],
                output=io[1],
                model=a.get("gen_ai.response.model") or a.get("gen_ai.request.model"),
            )
        )
        if span.parent_id is None:
            root = {"name": span.name, "input": io[0], "output": io[1]}
    return root, observations


def loads(text: str | None) -> Any:
    """JSON text back to data (``None`` stays ``None``)."""
    return None if text is None else json.loads(text)
