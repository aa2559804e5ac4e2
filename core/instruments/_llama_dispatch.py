"""Runs and steps as llama-index instrumentation spans and events, as LlamaIndex's engine emits.

Tools that plug into llama-index's instrumentation (a ``BaseSpanHandler`` or
``BaseEventHandler`` added to a dispatcher: Arize Phoenix's and Langfuse's llama-index
instrumentors, custom handlers) see a batonflow workflow as they see a llama-index-workflows
one, through the dispatcher named ``batonflow.core.workflow`` (a child of the root dispatcher):

* a run is a span with id ``<WorkflowClass>.run-<uuid>``, entered when the run starts (under
  the caller's active span, ``instance`` the workflow, ``bound_args`` its ``start_event``) while
  the tags ``llamaindex.run_id`` and ``llamaindex.start_event`` are active; it ends with a
  ``workflow.output`` event and a span exit (result: the StopEvent), or a
  ``SpanCancelledEvent`` and an exit (cancelled), or a ``SpanDropEvent`` and a drop (failed,
  timed out);
* each step attempt is a span ``<qualified step name>-<uuid>``, child of the run's span, with
  the tags ``llamaindex.run_id``, ``llamaindex.step.input_event`` and
  ``llamaindex.step.input_summary`` (active inside the step too, so a llama-index LLM call in
  the step is its child and carries them); it ends with a ``step.output`` event and an exit
  (the returned event), a ``SpanCancelledEvent`` and an exit, or a ``SpanDropEvent`` and a drop.

This module imports ``llama_index_instrumentation`` (the package ``llama_index.core.
instrumentation`` re-exports) at its top, so it is loaded lazily: ``global_instruments()``
imports it only once that package is already in ``sys.modules``, which it is as soon as anyone
could have attached a handler. ``batonflow.core`` itself never loads llama-index (its
import contract forbids ``llama_index`` in core; see docs/architecture.md), and with no
handler attached the instrument leaves every run at once (``wants_run``), costing nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from llama_index_instrumentation import get_dispatcher
from llama_index_instrumentation.base import BaseEvent
from llama_index_instrumentation.dispatcher import Dispatcher, active_instrument_tags
from llama_index_instrumentation.event_handlers import NullEventHandler
from llama_index_instrumentation.events.span import SpanDropEvent
from llama_index_instrumentation.span import active_span_id
from llama_index_instrumentation.span_handlers import NullSpanHandler

from ._printing import is_stop_event, summarize_event
from .instrument import EventEmitted, Instrument, RunFinished, RunStarted, StepFinished, StepStarted

DISPATCHER_NAME = "batonflow.core.workflow"


class SpanCancelledEvent(BaseEvent):
    """A span ended because its step or run was cancelled (``reason`` says which)."""

    reason: str

    @classmethod
    def class_name(cls) -> str:
        """The event's name for handlers (LlamaIndex's)."""
        return "SpanCancelledEvent"


class WorkflowStepOutputEvent(BaseEvent):
    """A step returned an event; ``output`` summarizes it."""

    output: str

    @classmethod
    def class_name(cls) -> str:
        """The event's name for handlers (LlamaIndex's)."""
        return "step.output"


class WorkflowRunOutputEvent(BaseEvent):
    """A run completed; ``output`` summarizes its StopEvent."""

    output: str

    @classmethod
    def class_name(cls) -> str:
        """The event's name for handlers (LlamaIndex's)."""
        return "workflow.output"


def _run_arguments(init_state: Any, start_event: Any, tags: Any) -> None:
    """The shape of a run span's ``bound_args`` (LlamaIndex's run function's parameters;
    ``init_state`` and ``tags`` are its runtime's internals, ``None`` here)."""


_RUN_SIGNATURE = inspect.signature(_run_arguments)

#: A step's span name, its signature without ``self``, its event and context parameter names.
_StepDetails = tuple[str, inspect.Signature | None, str, str]


@dataclass(slots=True)
class _RunSpan:
    span_id: str
    bound: inspect.BoundArguments
    workflow: Any
    context: Any
    tags: dict[str, Any]
    stop: Any = None
    steps: dict[tuple[int, int], _StepSpan] = field(default_factory=dict)


class LlamaDispatchInstrument(Instrument):
    """Emits runs and steps to llama-index's instrumentation dispatcher (see the module)."""

    def __init__(self) -> None:
        self.dispatcher: Dispatcher = get_dispatcher(DISPATCHER_NAME)
        self._runs: dict[str, _RunSpan] = {}
        #: (workflow class, step name) -> (span name, signature without self, and the names
        #: of its event and context parameters).
        self._steps: dict[tuple[type, str], _StepDetails] = {}

    def wants_run(self, run_id: str, workflow_name: str) -> bool:
        """Watch a run only while some handler is attached to the dispatcher or its parents."""
        current: Dispatcher | None = self.dispatcher
        while current is not None:
            # type() rather than isinstance: pydantic's metaclass makes isinstance slow, and
            # this is asked at every run's start.
            for span_handler in current.span_handlers:
                if type(span_handler) is not NullSpanHandler:
                    return True
            for event_handler in current.event_handlers:
                if type(event_handler) is not NullEventHandler:
                    return True
            if not current.propagate or current.manager is None:
                return False
            current = current.manager.dispatchers.get(current.parent_name)
        return False

    def run_started(self, record: RunStarted) -> None:
        """Enter the run's span, under the caller's active span (this runs in ``run()``)."""
        workflow = record.workflow
        tags = {**active_instrument_tags.get(), "llamaindex.run_id": record.run_id}
        span_id = f"{type(workflow).__name__}.run-{uuid.uuid4()}"
        bound = _RUN_SIGNATURE.bind(None, record.start_event, None)
        run = _RunSpan(span_id, bound, workflow, record.context, tags)
        self._runs[record.run_id] = run
        entering = dict(tags)
        if record.start_event is not None:
            entering["llamaindex.start_event"] = summarize_event(record.start_event)
        parent = active_span_id.get()
        with _active(None, entering):
            self.dispatcher.span_enter(
                id_=span_id, bound_args=bound, instance=workflow, parent_id=parent
            )

    def event_emitted(self, record: EventEmitted) -> None:
        """Keep the StopEvent that ends the run (its span exits with it)."""
        run = self._runs.get(record.run_id)
        if run is not None and is_stop_event(record.event):
            run.stop = record.event

    def step_scope(self, record: StepStarted) -> contextlib.AbstractContextManager[Any] | None:
        """The step attempt's span, entered in the step's own task (or thread)."""
        run = self._runs.get(record.run_id)
        if run is None:
            return None
        return _StepSpan(self, run, record)

    def step_finished(self, record: StepFinished) -> None:
        """Close a step span that returned: ``step.output``, then the exit with its result."""
        run = self._runs.get(record.run_id)
        if run is None:
            return
        span = run.steps.pop((record.execution_id, record.attempt), None)
        if span is None or record.error is not None:
            return  # its scope already ended it (an error or a cancellation)
        outputs = record.output_events
        result = outputs[0] if len(outputs) == 1 else (list(outputs) if outputs else None)
        with _active(span.span_id, span.tags):
            if outputs:
                self.dispatcher.event(WorkflowStepOutputEvent(output=summarize_event(outputs[0])))
            self.dispatcher.span_exit(
                id_=span.span_id, bound_args=span.bound, instance=None, result=result
            )

    def run_finished(self, record: RunFinished) -> None:
        """Close the run's span as the run ended."""
        run = self._runs.pop(record.run_id, None)
        if run is None:
            return
        d = self.dispatcher
        with _active(run.span_id, run.tags):
            if record.status == "completed":
                if run.stop is not None:
                    d.event(WorkflowRunOutputEvent(output=summarize_event(run.stop)))
                d.span_exit(
                    id_=run.span_id, bound_args=run.bound, instance=run.workflow, result=run.stop
                )
            elif record.status == "cancelled":
                d.event(SpanCancelledEvent(reason="workflow cancelled by user"))
                d.span_exit(
                    id_=run.span_id, bound_args=run.bound, instance=run.workflow, result=None
                )
            else:
                error = record.error or RuntimeError(f"The run ended {record.status}.")
                d.event(SpanDropEvent(span_id=run.span_id, err_str=str(error)))
                d.span_drop(id_=run.span_id, bound_args=run.bound, instance=run.workflow, err=error)

    def step_details(self, workflow: Any, step_name: str) -> _StepDetails:
        """A step's span name, parameters, event and context parameter (read once per class)."""
        key = (type(workflow), step_name)
        found = self._steps.get(key)
        if found is None:
            found = self._steps[key] = _step_details(workflow, step_name)
        return found


class _StepSpan:
    """One step attempt's span: entered and left around the step body, in its task."""

    def __init__(self, owner: LlamaDispatchInstrument, run: _RunSpan, record: StepStarted):
        self.owner = owner
        self.run = run
        self.record = record
        self.span_id = ""
        self.tags: dict[str, Any] = {}
        self.bound = _RUN_SIGNATURE.bind_partial()
        self._tokens: tuple[Any, Any] | None = None

    def __enter__(self) -> _StepSpan:
        record, run = self.record, self.run
        name, signature, event_param, ctx_param = self.owner.step_details(
            run.workflow, record.step_name
        )
        event = record.input_event
        self.span_id = f"{name}-{uuid.uuid4()}"
        self.tags = {
            **run.tags,
            "llamaindex.step.input_event": type(event).__name__,
            "llamaindex.step.input_summary": summarize_event(event),
        }
        given = {ctx_param: run.context} if ctx_param else {}
        if event_param:
            given[event_param] = event
        self.bound = (
            signature.bind_partial(**given)
            if signature is not None
            else _RUN_SIGNATURE.bind_partial()
        )
        run.steps[(record.execution_id, record.attempt)] = self
        self._tokens = (active_span_id.set(self.span_id), active_instrument_tags.set(self.tags))
        self.owner.dispatcher.span_enter(
            id_=self.span_id,
            bound_args=self.bound,
            instance=None,
            parent_id=run.span_id,
            tags=self.tags,
        )
        return self

    def __exit__(self, kind: Any, error: BaseException | None, tb: Any) -> None:
        d = self.owner.dispatcher
        try:
            if error is not None:
                self.run.steps.pop((self.record.execution_id, self.record.attempt), None)
                if isinstance(error, asyncio.CancelledError):
                    d.event(SpanCancelledEvent(reason="step cancelled"))
                    d.span_exit(id_=self.span_id, bound_args=self.bound, instance=None)
                else:
                    d.event(SpanDropEvent(span_id=self.span_id, err_str=str(error)))
                    d.span_drop(id_=self.span_id, bound_args=self.bound, instance=None, err=error)
        finally:
            if self._tokens is not None:
                span_token, tag_token = self._tokens
                active_instrument_tags.reset(tag_token)
                active_span_id.reset(span_token)


@contextlib.contextmanager
def _active(span_id: str | None, tags: dict[str, Any]) -> Iterator[None]:
    """Make ``span_id`` and ``tags`` the active ones while handlers are told something."""
    span_token = active_span_id.set(span_id) if span_id is not None else None
    tag_token = active_instrument_tags.set(tags)
    try:
        yield
    finally:
        active_instrument_tags.reset(tag_token)
        if span_token is not None:
            active_span_id.reset(span_token)


def _step_details(workflow: Any, step_name: str) -> _StepDetails:
    # The engine's reading of the step (its function and parameter kinds), reached through the
    # workflow: this room cannot import the engine.
    try:
        spec = workflow._graph().steps[step_name]
        func = spec.func
        signature = inspect.signature(func)
        if spec.has_self:
            params = list(signature.parameters.values())[1:]
            signature = signature.replace(parameters=params)
        kinds = {p.kind.name: p.name for p in reversed(spec.params)}
        name = getattr(func, "__qualname__", step_name)
        return name, signature, kinds.get("EVENT", ""), kinds.get("CONTEXT", "")
    except Exception:
        return f"{type(workflow).__name__}.{step_name}", None, "", ""
