"""OpenInference attributes beside the GenAI ones, for Arize Phoenix and Langfuse.

Phoenix and Langfuse both take OTLP spans, but neither draws a batonflow trace from the GenAI
conventions alone. Phoenix files traces under the project named by the resource attribute
``openinference.project.name`` (else "default"), shows each span's kind from
``openinference.span.kind`` (else "unknown") and its input and output from ``input.value`` /
``output.value`` (with ``input.mime_type`` / ``output.mime_type``: ``text/plain`` or
``application/json``). Langfuse reads the same kind first to type an observation (``LLM`` is a
generation; ``invoke_workflow`` has no GenAI mapping, so a run was a plain span), and
``input.value`` / ``output.value`` before ``gen_ai.input.messages`` for its input and output; the
root span's become the trace's.

What batonflow adds (names from ``openinference-semantic-conventions``):

* run spans: ``CHAIN`` (``AGENT`` for an agent workflow's run); input: the start event's
  fields; output: the run's result;
* step spans: ``CHAIN``; input: the event the step received (``{"EventType": {fields}}``);
  output: the events it returned;
* LLM spans: ``LLM``, ``llm.model_name``, ``llm.token_count.*``; input and output: the same JSON
  as ``gen_ai.input.messages`` / ``gen_ai.output.messages``;
* embeddings ``EMBEDDING``, retrieval ``RETRIEVER`` (input: the query), ``invoke_agent``
  ``AGENT``, agents' tool calls ``TOOL`` (input: the arguments, output: the result).

Kinds are always set; values only with content capture on
(``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``), as for messages.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from batonflow.core.instrument import RunFinished, RunStarted, StepFinished, StepStarted
from batonflow.core.tracing import OpenTelemetryInstrument
from openinference.semconv.resource import ResourceAttributes
from openinference.semconv.trace import (
    OpenInferenceMimeTypeValues,
    OpenInferenceSpanKindValues,
    SpanAttributes,
)
from opentelemetry import trace
from opentelemetry.trace import Span
from pydantic import BaseModel

from ._capture import capture_content_from_env

KIND = SpanAttributes.OPENINFERENCE_SPAN_KIND
PROJECT_NAME = ResourceAttributes.PROJECT_NAME
CHAIN = OpenInferenceSpanKindValues.CHAIN.value
AGENT = OpenInferenceSpanKindValues.AGENT.value
LLM = OpenInferenceSpanKindValues.LLM.value
EMBEDDING = OpenInferenceSpanKindValues.EMBEDDING.value
RETRIEVER = OpenInferenceSpanKindValues.RETRIEVER.value
TEXT = OpenInferenceMimeTypeValues.TEXT.value
JSON = OpenInferenceMimeTypeValues.JSON.value


def value_attributes(direction: str, value: Any) -> dict[str, str]:
    """``{direction}.value`` and its mime type: text as ``text/plain``, the rest as JSON.

    Args:
        direction: ``"input"`` or ``"output"``.
        value: A string, or anything JSON can write (pydantic models are dumped; other
            objects are written as their ``str``).
    """
    if isinstance(value, str):
        return {f"{direction}.value": value, f"{direction}.mime_type": TEXT}
    text = json.dumps(_plain(value), ensure_ascii=False, default=str)
    return {f"{direction}.value": text, f"{direction}.mime_type": JSON}


def json_attributes(direction: str, text: str) -> dict[str, str]:
    """``{direction}.value`` for text that is JSON already (an LLM call's messages)."""
    return {f"{direction}.value": text, f"{direction}.mime_type": JSON}


def event_fields(event: Any) -> Any:
    """An event as plain data: its fields (declared and extra) by name."""
    if isinstance(event, BaseModel):
        try:
            return event.model_dump()
        except Exception:  # a field pydantic cannot dump: its repr still tells the story
            return repr(event)
    return event


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return event_fields(value)
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _typed(event: Any) -> dict[str, Any]:
    return {type(event).__name__: event_fields(event)}


def _is_agent_run(start_event: Any) -> bool:
    # the agents' start events (AgentWorkflowStartEvent, AgentStart) live in batonflow.agents
    return type(start_event).__module__.startswith("batonflow.agents")


def project_attributes(
    service_name: str, resource_attributes: Mapping[str, Any], environ: Mapping[str, str]
) -> dict[str, str]:
    """Phoenix's project (``openinference.project.name``): the service name, unless given.

    A project named in ``resource_attributes`` or ``OTEL_RESOURCE_ATTRIBUTES`` wins.
    """
    if PROJECT_NAME in resource_attributes:
        return {}
    for item in environ.get("OTEL_RESOURCE_ATTRIBUTES", "").split(","):
        key, _, value = item.partition("=")
        if key.strip() == PROJECT_NAME and value.strip():
            return {}
    return {PROJECT_NAME: service_name}


class OpenInferenceInstrument(OpenTelemetryInstrument):
    """:class:`~batonflow.core.tracing.OpenTelemetryInstrument` with OpenInference attributes.

    ``configure_tracing()`` installs this one. Run spans get ``openinference.span.kind``
    ``CHAIN`` (``AGENT`` for an agent workflow), step spans ``CHAIN``; with content capture on,
    ``input.value`` / ``output.value`` too (see the module docstring). Use it in place of
    ``OpenTelemetryInstrument`` with your own provider:
    ``Workflow(instruments=[OpenInferenceInstrument(tracer_provider=provider)])``.

    Args:
        tracer_provider: The provider spans go to (default: the global one).
        capture_content: Record inputs and outputs; ``None`` reads
            ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``.
    """

    def __init__(
        self,
        tracer_provider: trace.TracerProvider | None = None,
        *,
        capture_content: bool | None = None,
    ) -> None:
        super().__init__(tracer_provider)
        if capture_content is None:
            capture_content = capture_content_from_env(os.environ)
        self.capture_content = capture_content

    def run_started(self, record: RunStarted) -> None:
        """Open the run span, with its kind and (captured) input."""
        super().run_started(record)
        run = self._runs.get(record.run_id)
        if run is None:
            return
        attributes: dict[str, str] = {KIND: AGENT if _is_agent_run(record.start_event) else CHAIN}
        if self.capture_content and record.start_event is not None:
            attributes.update(value_attributes("input", event_fields(record.start_event)))
        run.span.set_attributes(attributes)

    def run_finished(self, record: RunFinished) -> None:
        """Close the run span, with its (captured) result."""
        run = self._runs.get(record.run_id)
        if run is not None and self.capture_content and record.status == "completed":
            run.span.set_attributes(value_attributes("output", record.result))
        super().run_finished(record)

    def step_started(self, record: StepStarted) -> None:
        """Open the step span, with its kind and (captured) input event."""
        super().step_started(record)
        span = self._step_span(record.run_id, record.execution_id, record.attempt)
        if span is None:
            return
        span.set_attribute(KIND, CHAIN)
        if self.capture_content:
            span.set_attributes(value_attributes("input", _typed(record.input_event)))

    def step_finished(self, record: StepFinished) -> None:
        """Close the step span, with the (captured) events it returned."""
        if self.capture_content and record.error is None and record.output_events:
            span = self._step_span(record.run_id, record.execution_id, record.attempt)
            if span is not None:
                outputs = [_typed(event) for event in record.output_events]
                span.set_attributes(value_attributes("output", outputs))
        super().step_finished(record)

    def _step_span(self, run_id: str, execution_id: int, attempt: int) -> Span | None:
        run = self._runs.get(run_id)
        return None if run is None else run.open_steps.get((execution_id, attempt))


__all__ = [
    "KIND",
    "PROJECT_NAME",
    "OpenInferenceInstrument",
    "event_fields",
    "json_attributes",
    "project_attributes",
    "value_attributes",
]
