"""OpenTelemetry spans for runs and steps, on the OpenTelemetry *API* only.

:class:`OpenTelemetryInstrument` turns the engine's instrument records into spans:

* one span per run, ``invoke_workflow {WorkflowName}`` (``gen_ai.operation.name`` =
  ``invoke_workflow``, ``gen_ai.workflow.name``, ``batonflow.run_id``);
* one span per step *attempt*, ``step {step_name}``, with ``batonflow.*`` attributes (step
  name, run id, execution id, attempt, input event type, returned event types, and the types
  of events sent with ``ctx.send_event`` in ``batonflow.step.sent_events``). A retried step
  shows one span per attempt; a failed attempt has status ERROR, ``error.type`` and the
  recorded exception.

Parenting rule. Every step span is a child of its run span, never of whatever task happened to
start a worker; causality between steps is carried by span *links*: a step span links to the
step span(s) that emitted its triggering event (the record's ``origins``). When
``collect_events`` releases a full set, the links to the other joined emitters are added to the
running step span with ``Span.add_link`` (OpenTelemetry API >= 1.23; exporters read links when
the span ends, samplers only see the links known at start), and a ``batonflow.events_joined``
span event lists the joined event types. Inside ``step_scope`` the step span is the current
span, in the step's task or, for a sync step, in its thread, so spans opened by the step's own
code (LLM, tool, retrieval calls) nest under it.

Resume. The run span's W3C ``traceparent`` (and ``tracestate``) is written into the run's
``meta``, which the engine saves with ``ctx.to_dict()`` and checkpoints. A resumed run opens a
new ``invoke_workflow`` span in the *same trace*, as a child of the original run span, marked
``batonflow.run.resumed=true``; ``meta`` keeps the original run span's ``traceparent``, so every
resumption of a run hangs under the one original run span. A run cancelled while a step waits
for an event (``ctx.wait_for_event``, a human's answer) is *paused*: its span has
``batonflow.run.status="paused"`` and its open step spans ``batonflow.step.paused=true``, with
no error status, so a run paused in one process and resumed in another shows no red spans.

This module never installs an SDK nor calls ``trace.set_tracer_provider``: pass
``tracer_provider=`` or let the global provider be used. With no SDK configured, spans are
invalid no-ops and the instrument stops after one check per run. When the application sets a
global SDK provider itself, :class:`GlobalProviderInstrument` (installed by the engine once
the SDK is imported) traces every run there without ``configure_tracing()``.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Link, Span, SpanContext, SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from .._public import publish
from .instrument import (
    EventEmitted,
    EventsJoined,
    Instrument,
    RunFinished,
    RunStarted,
    StepFinished,
    StepStarted,
)

TRACER_NAME = "batonflow"
_PROPAGATOR = TraceContextTextMapPropagator()

# Attribute names, kept in one place so docs, tests and dashboards agree.
ATTR_OPERATION = "gen_ai.operation.name"
ATTR_WORKFLOW = "gen_ai.workflow.name"
ATTR_RUN_ID = "batonflow.run_id"
ATTR_RESUMED = "batonflow.run.resumed"
ATTR_RUN_STATUS = "batonflow.run.status"
ATTR_STEP = "batonflow.step.name"
ATTR_EXECUTION = "batonflow.step.execution_id"
ATTR_ATTEMPT = "batonflow.step.attempt"
ATTR_INPUT = "batonflow.step.input_event"
ATTR_OUTPUT = "batonflow.step.output_events"
ATTR_SENT = "batonflow.step.sent_events"
ATTR_WILL_RETRY = "batonflow.step.will_retry"
ATTR_PAUSED = "batonflow.step.paused"
ATTR_LINK_KIND = "batonflow.link.kind"
ATTR_ERROR_TYPE = "error.type"
# What a run's (or a step's) LLM calls used, when its calls are counted (batonflow.budgets):
# the GenAI semantic conventions' usage names, summed over the calls, and their cost.
ATTR_USAGE_INPUT = "gen_ai.usage.input_tokens"
ATTR_USAGE_OUTPUT = "gen_ai.usage.output_tokens"
ATTR_USAGE_TOTAL = "batonflow.usage.total_tokens"
ATTR_USAGE_COST = "batonflow.usage.cost"
ATTR_USAGE_CALLS = "batonflow.usage.llm_calls"

# The run an OpenTelemetryInstrument last agreed to trace. The engine asks a run's instruments
# in order (the workflow's own, the installed ones, the global-provider one last) within one
# call, so GlobalProviderInstrument sees here whether another instrument already traces the
# run, and stands down instead of recording every span twice.
_claimed_run: list[str | None] = [None]

# How many step executions per run are remembered for linking to their emitted events; an event
# consumed after this many later executions loses its link (never its parent).
_MAX_EMITTERS = 10_000


def _type_name(obj: object) -> str:
    return type(obj).__name__


def _error_type(error: BaseException) -> str:
    cls = type(error)
    if cls.__module__ in ("builtins", "__main__"):
        return cls.__qualname__
    return f"{cls.__module__}.{cls.__qualname__}"


def _fail(span: Span, error: BaseException) -> None:
    span.record_exception(error)
    span.set_attribute(ATTR_ERROR_TYPE, _error_type(error))
    span.set_status(Status(StatusCode.ERROR, f"{type(error).__name__}: {error}"))


@dataclass(slots=True)
class _RunTrace:
    """What the instrument keeps for one traced run."""

    span: Span
    context: otel_context.Context
    # execution id -> span context of that execution's latest attempt, to link emitters
    emitters: dict[int, SpanContext] = field(default_factory=dict)
    # (execution id, attempt) -> open step span
    open_steps: dict[tuple[int, int], Span] = field(default_factory=dict)
    # execution id of an open attempt -> types of the events it sent with ctx.send_event
    sent: dict[int, list[str]] = field(default_factory=dict)
    # the run's Context: a counted run's usage is read from it when the run ends
    ctx: Any = None


class OpenTelemetryInstrument(Instrument):
    """An instrument that records runs and step attempts as OpenTelemetry spans.

    Install it on a workflow like any instrument (``batonflow.observability.configure_tracing``
    does it for you). It uses only the OpenTelemetry API: spans go to ``tracer_provider`` when
    given, else to the global provider (resolved lazily, so a provider configured after the
    instrument was built is still used).

    Args:
        tracer_provider: The provider to get the ``batonflow`` tracer from; ``None`` means the
            global one.
    """

    def __init__(self, tracer_provider: trace.TracerProvider | None = None) -> None:
        self._provider = tracer_provider
        self._tracer = trace.get_tracer(TRACER_NAME, tracer_provider=tracer_provider)
        self._runs: dict[str, _RunTrace] = {}

    def wants_run(self, run_id: str, workflow_name: str) -> bool:
        """Watch a run only when a tracer provider that records spans is configured.

        With the API's defaults (no SDK installed or configured: the global provider is still
        OpenTelemetry's proxy, or a ``NoOpTracerProvider``) the engine drops the instrument from
        the run, so its hooks cost nothing. Asked per run, so configuring an SDK later is seen.
        """
        provider = self._provider
        if provider is None or isinstance(provider, trace.ProxyTracerProvider):
            provider = trace.get_tracer_provider()
        wanted = not isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider)
        if wanted:
            _claimed_run[0] = run_id
        return wanted

    # -- runs -----------------------------------------------------------------------------

    def run_started(self, record: RunStarted) -> None:
        """Open the run span; a resumed run continues the trace saved in ``meta``."""
        parent = otel_context.get_current()
        links: list[Link] = []
        saved = _PROPAGATOR.extract(record.meta) if record.resumed else None
        if saved is not None and trace.get_current_span(saved).get_span_context().is_valid:
            caller = trace.get_current_span(parent).get_span_context()
            if caller.is_valid:
                links.append(Link(caller, {ATTR_LINK_KIND: "resumed_by"}))
            parent = saved
        span = self._tracer.start_span(
            f"invoke_workflow {record.workflow_name}",
            context=parent,
            kind=SpanKind.INTERNAL,
            links=links,
            attributes={
                ATTR_OPERATION: "invoke_workflow",
                ATTR_WORKFLOW: record.workflow_name,
                ATTR_RUN_ID: record.run_id,
                ATTR_RESUMED: record.resumed,
            },
        )
        span_context = span.get_span_context()
        if not span_context.is_valid:
            return  # no SDK: nothing to record, and every later hook is one dict miss
        run_ctx = trace.set_span_in_context(span, otel_context.Context())
        if saved is None or "traceparent" not in record.meta:
            _PROPAGATOR.inject(record.meta, context=run_ctx)
        self._runs[record.run_id] = _RunTrace(span=span, context=run_ctx, ctx=record.context)

    def run_finished(self, record: RunFinished) -> None:
        """Close the run span (and any step span the run left open)."""
        run = self._runs.pop(record.run_id, None)
        if run is None:
            return
        # Cancelled while waiting for an event (a human): the run is paused, to be resumed
        # from a snapshot, so its open steps are interrupted, not failed.
        paused = record.status == "cancelled" and bool(record.paused_steps)
        for step_span in run.open_steps.values():
            if paused:
                step_span.set_attribute(ATTR_PAUSED, True)
            else:
                step_span.set_attribute(ATTR_ERROR_TYPE, "cancelled")
                step_span.set_status(Status(StatusCode.ERROR, f"run {record.status}"))
            step_span.end()
        span = run.span
        span.set_attribute(ATTR_RUN_STATUS, "paused" if paused else record.status)
        # A durable run whose LLM calls are counted (core/durable/_budget.py: RunBudget.used).
        used = getattr(getattr(run.ctx, "_budget", None), "used", None)
        if used is not None and used.calls:
            span.set_attributes(usage_attributes(used))
        if paused:
            span.set_attribute("batonflow.run.paused_steps", list(record.paused_steps))
        if record.error is not None and record.status != "cancelled":
            _fail(span, record.error)
        elif record.status in ("failed", "timed_out"):
            span.set_attribute(ATTR_ERROR_TYPE, record.status)
            span.set_status(Status(StatusCode.ERROR, record.status))
        span.end()

    # -- steps ----------------------------------------------------------------------------

    def step_started(self, record: StepStarted) -> None:
        """Open the attempt's span: child of the run span, linked to its emitters."""
        run = self._runs.get(record.run_id)
        if run is None:
            return
        links = [
            Link(run.emitters[origin], {ATTR_LINK_KIND: "triggered_by"})
            for origin in dict.fromkeys(record.origins)
            if origin in run.emitters
        ]
        span = self._tracer.start_span(
            f"step {record.step_name}",
            context=run.context,
            kind=SpanKind.INTERNAL,
            links=links,
            attributes={
                ATTR_STEP: record.step_name,
                ATTR_RUN_ID: record.run_id,
                ATTR_EXECUTION: record.execution_id,
                ATTR_ATTEMPT: record.attempt,
                ATTR_INPUT: _type_name(record.input_event),
            },
        )
        run.open_steps[(record.execution_id, record.attempt)] = span
        emitters = run.emitters
        emitters[record.execution_id] = span.get_span_context()
        if len(emitters) > _MAX_EMITTERS:  # a very long run: forget the oldest emitters
            del emitters[next(iter(emitters))]
        run.sent[record.execution_id] = []

    def event_emitted(self, record: EventEmitted) -> None:
        """Note the events a running step sends (its returned events come with step_finished)."""
        if record.execution_id is None:
            return
        run = self._runs.get(record.run_id)
        if run is None:
            return
        sent = run.sent.get(record.execution_id)
        if sent is not None:
            sent.append(_type_name(record.event))

    def step_scope(self, record: StepStarted) -> contextlib.AbstractContextManager[Any] | None:
        """Make the attempt's span current around the step body (task or thread)."""
        run = self._runs.get(record.run_id)
        if run is None:
            return None
        span = run.open_steps.get((record.execution_id, record.attempt))
        if span is None:
            return None
        return _current(span, self._tracer)

    def events_joined(self, record: EventsJoined) -> None:
        """Link the joining step's span to every emitter of the joined events."""
        run = self._runs.get(record.run_id)
        if run is None:
            return
        span = self._latest_attempt(run, record.execution_id)
        if span is None:
            return
        already = {link.context.span_id for link in _links_of(span)}
        already.add(span.get_span_context().span_id)
        for origin in dict.fromkeys(record.origins):
            emitter = run.emitters.get(origin)
            if emitter is not None and emitter.span_id not in already:
                span.add_link(emitter, {ATTR_LINK_KIND: "joined"})
                already.add(emitter.span_id)
        span.add_event(
            "batonflow.events_joined",
            {
                "batonflow.joined.event_types": [_type_name(ev) for ev in record.events],
                "batonflow.joined.origins": list(record.origins),
            },
        )

    def step_finished(self, record: StepFinished) -> None:
        """Close the attempt's span with its emitted events or its error."""
        run = self._runs.get(record.run_id)
        if run is None:
            return
        span = run.open_steps.pop((record.execution_id, record.attempt), None)
        if span is None:
            return
        span.set_attribute(ATTR_OUTPUT, [_type_name(ev) for ev in record.output_events])
        sent = run.sent.pop(record.execution_id, None)
        if sent:
            span.set_attribute(ATTR_SENT, sent)
        if record.error is not None:
            if record.will_retry:
                span.set_attribute(ATTR_WILL_RETRY, True)
            _fail(span, record.error)
        span.end()

    # -- helpers --------------------------------------------------------------------------

    @staticmethod
    def _latest_attempt(run: _RunTrace, execution_id: int) -> Span | None:
        found: Span | None = None
        best = -1
        for (execution, attempt), span in run.open_steps.items():
            if execution == execution_id and attempt > best:
                found, best = span, attempt
        return found


class GlobalProviderInstrument(OpenTelemetryInstrument):
    """Traces runs to the application's global SDK provider, with no ``configure_tracing()``.

    OpenTelemetry's convention for libraries: emit spans through the API and let the
    application choose the SDK. When the application set a global SDK tracer provider
    (``trace.set_tracer_provider(...)``, or ``opentelemetry-instrument`` did it), every run is
    traced there. The engine installs this instrument itself once the OpenTelemetry SDK has been
    imported (never before: with no SDK it is not even created). It declines a run when the
    global provider is the API's default (no SDK configured), and when another
    :class:`OpenTelemetryInstrument` already traces the run (``configure_tracing()``'s, or one
    given to the workflow), so no span is recorded twice.
    """

    def __init__(self) -> None:
        super().__init__(tracer_provider=None)

    def wants_run(self, run_id: str, workflow_name: str) -> bool:
        """Trace the run unless another instrument does, or no SDK provider is set globally."""
        if _claimed_run[0] == run_id:
            return False
        return super().wants_run(run_id, workflow_name)


def usage_attributes(usage: Any) -> dict[str, Any]:
    """The span attributes of a usage (``prompt_tokens``, ``completion_tokens``,
    ``total_tokens``, ``cost`` or ``None``, ``calls``)."""
    attributes: dict[str, Any] = {
        ATTR_USAGE_INPUT: usage.prompt_tokens,
        ATTR_USAGE_OUTPUT: usage.completion_tokens,
        ATTR_USAGE_TOTAL: usage.total_tokens,
        ATTR_USAGE_CALLS: usage.calls,
    }
    if usage.cost is not None:
        attributes[ATTR_USAGE_COST] = usage.cost
    return attributes


def _links_of(span: Span) -> Iterable[Link]:
    # SDK spans expose the links they were started with; API spans have none to show.
    links = getattr(span, "links", ())
    return links if isinstance(links, Iterable) else ()


# The tracer of the step span that is current, so that tool spans opened inside the step go to
# the same provider as the step span even when that provider is not the global one.
_step_tracer: contextvars.ContextVar[trace.Tracer | None] = contextvars.ContextVar(
    "batonflow_step_tracer", default=None
)


@contextlib.contextmanager
def _current(span: Span, tracer: trace.Tracer) -> Iterator[Span]:
    token = otel_context.attach(trace.set_span_in_context(span))
    tracer_token = _step_tracer.set(tracer)
    try:
        yield span
    finally:
        _step_tracer.reset(tracer_token)
        otel_context.detach(token)


def current_tracer() -> trace.Tracer:
    """The tracer of the step span that is current, else the global provider's.

    Spans opened inside a step with it go to the same provider as the step span, also when the
    workflow's instrument was given its own ``tracer_provider=``.
    """
    return _step_tracer.get() or trace.get_tracer(TRACER_NAME)


@contextlib.contextmanager
def tool_span(
    name: str,
    *,
    call_id: str | None = None,
    description: str | None = None,
    arguments: Mapping[str, Any] | str | None = None,
) -> Iterator[Span]:
    """Trace one tool call as an ``execute_tool {name}`` span (GenAI semantic conventions).

    Use it where a tool is called (agents do); inside a traced step the span is a child of the
    step span and goes to the step span's provider, elsewhere to the global provider. A tool
    that raises gives a span with status ERROR, ``error.type`` and the exception; the exception
    propagates unchanged.

    Args:
        name: The tool's name (``gen_ai.tool.name``).
        call_id: The LLM's id for this call (``gen_ai.tool.call.id``), if it gave one.
        description: The tool's description (``gen_ai.tool.description``).
        arguments: The call's arguments; recorded as ``gen_ai.tool.call.arguments`` (JSON
            text) only when ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``.

    Yields:
        The span, to add attributes such as the result size.
    """
    tracer = current_tracer()
    attributes: dict[str, Any] = {
        ATTR_OPERATION: "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.type": "function",
    }
    if call_id:
        attributes["gen_ai.tool.call.id"] = call_id
    if description:
        attributes["gen_ai.tool.description"] = description
    if arguments is not None and _capture_content():
        attributes["gen_ai.tool.call.arguments"] = (
            arguments if isinstance(arguments, str) else json.dumps(dict(arguments), default=str)
        )
    with tracer.start_as_current_span(
        f"execute_tool {name}",
        kind=SpanKind.INTERNAL,
        attributes=attributes,
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        try:
            yield span
        except asyncio.CancelledError:
            # Cancelled from outside (the run ended or paused for a human), not a tool error.
            span.set_attribute("batonflow.cancelled", True)
            raise
        except BaseException as error:
            _fail(span, error)
            raise


def _capture_content() -> bool:
    value = os.environ.get("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "")
    return value.strip().lower() in ("true", "1", "yes")


__all__ = [
    "TRACER_NAME",
    "GlobalProviderInstrument",
    "OpenTelemetryInstrument",
    "current_tracer",
    "tool_span",
]

# Stored runs and pickles name these classes by their public path.
publish(__name__, globals())
