"""Agent spans: ``invoke_agent``, tool outcomes and handoffs, on the OpenTelemetry API.

The engine traces runs and steps (:mod:`batonflow.core.tracing`), llama-index's dispatcher
traces LLM calls (:mod:`batonflow.observability.genai`). This module adds what only the agents
know, following the GenAI semantic conventions:

* ``invoke_agent {name}`` around each agent turn (the LLM call nests under it), with
  ``gen_ai.agent.name`` and ``gen_ai.agent.description``;
* on ``execute_tool`` spans: the tool's own exception type in ``error.type`` (``ValueError``,
  not a generic "tool error"), the agent's name, and ``gen_ai.tool.call.result`` when message
  content capture is on (``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``);
* a handoff as attributes and an event on the handoff tool's span
  (``batonflow.agent.handoff.from`` / ``.to``);
* OpenInference's span kinds (``AGENT``, ``TOOL``) and, with content capture on, a tool call's
  ``input.value`` (its arguments) and ``output.value`` (its result), for Arize Phoenix and
  Langfuse (see :mod:`batonflow.observability.openinference`).

With no SDK configured every span here is a non-recording no-op.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
from collections.abc import Iterator, Mapping
from typing import Any

from batonflow.core.tracing import current_tracer
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from .tools import ToolOutcome

CAPTURE_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
ATTR_AGENT_NAME = "gen_ai.agent.name"
ATTR_AGENT_DESCRIPTION = "gen_ai.agent.description"
ATTR_HANDOFF_FROM = "batonflow.agent.handoff.from"
ATTR_HANDOFF_TO = "batonflow.agent.handoff.to"
_MAX_RESULT = 4096
# OpenInference's attribute names (openinference-semantic-conventions, which the otel extra
# installs; the agents do not need it to run)
ATTR_KIND = "openinference.span.kind"


logger = logging.getLogger("batonflow.agents")
_llm_spans_on: list[bool] = [False]


def ensure_llm_spans() -> None:
    """Trace LLM calls too when the application set a global SDK tracer provider.

    Called at the start of every agent run; after the first check that finds a provider it is
    one list lookup. Runs and steps are traced by the engine's global-provider instrument; LLM
    calls come through llama-index's dispatcher, whose handlers
    (:func:`batonflow.observability.genai.instrument_llama_index`) are added here once, unless
    ``configure_tracing()`` already added them. With no SDK imported nothing is done.
    """
    if _llm_spans_on[0] or "opentelemetry.sdk.trace" not in sys.modules:
        return
    provider = trace.get_tracer_provider()
    if isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider):
        return
    _llm_spans_on[0] = True
    try:
        from batonflow.observability import genai
    except ImportError as exc:  # the otel extra is only partly installed
        logger.warning("LLM calls are not traced: %s. Install 'batonflow[otel]'.", exc)
        return
    if not genai.is_instrumented():
        genai.instrument_llama_index()


def capture_content() -> bool:
    """Whether message content may be recorded on spans (opt-in, as the conventions say)."""
    return os.environ.get(CAPTURE_ENV, "").strip().lower() in ("true", "1", "yes")


def _error_type(error: BaseException) -> str:
    cls = type(error)
    if cls.__module__ in ("builtins", "__main__"):
        return cls.__qualname__
    return f"{cls.__module__}.{cls.__qualname__}"


def record_tool_outcome(
    span: Span,
    outcome: ToolOutcome,
    agent_name: str | None = None,
    arguments: Mapping[str, Any] | None = None,
) -> None:
    """Put a tool call's outcome on its ``execute_tool`` span.

    A failed call gets status ERROR and, in ``error.type``, the type of the exception the tool
    raised (``ToolArgumentsError`` for arguments that do not fit, ``ToolNotFound`` for an
    unknown tool). The result text (and the ``arguments`` as OpenInference's input) is
    recorded only with content capture on.
    """
    if not span.is_recording():
        return
    span.set_attribute(ATTR_KIND, "TOOL")
    if agent_name:
        span.set_attribute(ATTR_AGENT_NAME, agent_name)
    if outcome.is_error:
        error = outcome.exception
        span.set_attribute("error.type", _error_type(error) if error else "ToolNotFound")
        if error is not None:
            span.record_exception(error)
        span.set_status(Status(StatusCode.ERROR, outcome.output[:500]))
    if capture_content():
        result = outcome.output[:_MAX_RESULT]
        span.set_attributes(
            {
                "gen_ai.tool.call.result": result,
                "output.value": result,
                "output.mime_type": "text/plain",
            }
        )
        if arguments is not None:
            span.set_attributes(
                {
                    "input.value": json.dumps(dict(arguments), ensure_ascii=False, default=str),
                    "input.mime_type": "application/json",
                }
            )


def record_handoff(span: Span, from_agent: str, to_agent: str, accepted: bool) -> None:
    """Mark the handoff tool's span with who handed off to whom."""
    if not span.is_recording():
        return
    span.set_attribute(ATTR_HANDOFF_FROM, from_agent)
    span.set_attribute(ATTR_HANDOFF_TO, to_agent)
    span.add_event(
        "batonflow.agent.handoff",
        {ATTR_HANDOFF_FROM: from_agent, ATTR_HANDOFF_TO: to_agent, "accepted": accepted},
    )


@contextlib.contextmanager
def agent_span(name: str, description: str | None = None) -> Iterator[Span]:
    """An ``invoke_agent {name}`` span around one agent turn, current inside the block.

    Inside a traced step it is a child of the step span; the exception of a failed turn is
    recorded and propagates unchanged.
    """
    tracer = current_tracer()
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "invoke_agent",
        ATTR_AGENT_NAME: name,
        ATTR_KIND: "AGENT",
    }
    if description:
        attributes[ATTR_AGENT_DESCRIPTION] = description
    with tracer.start_as_current_span(
        f"invoke_agent {name}",
        kind=SpanKind.INTERNAL,
        attributes=attributes,
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        try:
            yield span
        except Exception as error:
            span.record_exception(error)
            span.set_attribute("error.type", _error_type(error))
            span.set_status(Status(StatusCode.ERROR, f"{type(error).__name__}: {error}"))
            raise


def tool_arguments_json(kwargs: dict[str, Any]) -> str:
    """Tool arguments as JSON text for a span attribute."""
    return json.dumps(kwargs, default=str)


__all__ = [
    "ATTR_AGENT_NAME",
    "agent_span",
    "capture_content",
    "ensure_llm_spans",
    "record_handoff",
    "record_tool_outcome",
]
