"""``Workflow(verbose=True)``: the instrument that prints what a run does.

Two formats. ``"llama"`` (``verbose=True``) prints what llama-index-workflows 2.26 prints::

    [tick] add: StartEvent(topic='pirates')
    [generate_joke:0] started from StartEvent
    [generate_joke:0] complete with JokeEvent
    [tick] add: JokeEvent(joke='Why did the pirate...')
    [critique_joke:0] started from JokeEvent
    [result] StopEvent(result='A fine joke.')
    [critique_joke:0] complete with StopEvent

(``[tick] add`` for each event put into the run, `` -> step`` when it was sent to one step,
``[result]`` for the StopEvent a step returns, ``[tick] timeout: 45.0s`` and
``[tick] cancelled`` when a run ends so). When the ``batonflow.verbose`` logger is enabled for
DEBUG or INFO at the time the workflow is created, the lines go to that logger at that level
instead of ``print`` (as LlamaIndex's ``workflows.verbose`` logger). ``"seed"``
(``verbose="seed"``) prints the lines of the LlamaIndex versions the seed examples were written
for::

    Running step generate_joke
    Step generate_joke produced event JokeEvent
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import IO, Any

from ..errors import WorkflowConfigurationError
from .instrument import EventEmitted, Instrument, RunFinished, StepFinished, StepStarted

#: The formats of :class:`PrintingInstrument` (``verbose=``): LlamaIndex 2.26's, the seeds'.
PRINT_STYLES = ("llama", "seed")

verbose_logger = logging.getLogger("batonflow.verbose")

# What LlamaIndex shows of the fields below only when they were given: there they are extra
# data, here declared fields with a "" default.
_GIVEN_ONLY = {"InputRequiredEvent": "prefix", "HumanResponseEvent": "response"}


class PrintingInstrument(Instrument):
    """Prints each event put into a run and each step's start and finish (``verbose=True``).

    See the module docstring for the two formats.

    Args:
        stream: Where to print (default: ``sys.stdout`` at the time of printing, or the
            ``batonflow.verbose`` logger when it is enabled, in the ``"llama"`` format).
        style: ``"llama"`` (LlamaIndex 2.26's lines, the default) or ``"seed"`` (the older
            ``Running step NAME`` lines).
        timeout: The workflow's timeout, printed when a run times out (``verbose=True`` passes
            the workflow's own).

    Raises:
        WorkflowConfigurationError: ``style`` is neither.
    """

    def __init__(
        self, stream: IO[str] | None = None, style: str = "llama", timeout: float | None = None
    ) -> None:
        if style not in PRINT_STYLES:
            raise WorkflowConfigurationError(
                f"PrintingInstrument style {style!r} is not one of {', '.join(PRINT_STYLES)}; "
                "pass style='llama' or style='seed'."
            )
        self._stream = stream
        self._llama = style == "llama"
        self._timeout = timeout
        self._output: Callable[[str], None] = self._print
        if self._llama and stream is None:
            if verbose_logger.isEnabledFor(logging.DEBUG):
                self._output = verbose_logger.debug
            elif verbose_logger.isEnabledFor(logging.INFO):
                self._output = verbose_logger.info
        #: Per run: the StopEvent already shown as ``[result]`` (not shown again as added).
        self._results: dict[str, int] = {}

    def _print(self, text: str) -> None:
        print(text, file=self._stream or sys.stdout, flush=True)

    def event_emitted(self, record: EventEmitted) -> None:
        """Print ``[tick] add: Event(...)`` (llama format only)."""
        if not self._llama:
            return
        if self._results.get(record.run_id) == id(record.event):
            del self._results[record.run_id]
            return
        target = f" -> {record.target}" if record.target else ""
        self._output(f"[tick] add: {summarize_event(record.event)}{target}")

    def run_finished(self, record: RunFinished) -> None:
        """Print ``[tick] timeout: Ns`` or ``[tick] cancelled`` (llama format only)."""
        self._results.pop(record.run_id, None)
        if not self._llama:
            return
        if record.status == "timed_out":
            self._output(f"[tick] timeout: {float(self._timeout or 0)}s")
        elif record.status == "cancelled":
            self._output("[tick] cancelled")

    def step_started(self, record: StepStarted) -> None:
        """Print ``[NAME:ID] started from EVENT`` (or ``Running step NAME``)."""
        if self._llama:
            name = type(record.input_event).__name__
            self._output(f"[{record.step_name}:{record.worker}] started from {name}")
            return
        suffix = f" (attempt {record.attempt})" if record.attempt > 1 else ""
        self._print(f"Running step {record.step_name}{suffix}")

    def step_finished(self, record: StepFinished) -> None:
        """Print what the step produced, or its error."""
        if self._llama:
            self._llama_finished(record)
        elif record.error is not None:
            self._print(
                f"Step {record.step_name} failed: {type(record.error).__name__}: {record.error}"
            )
        elif not record.output_events:
            self._print(f"Step {record.step_name} produced no event")
        else:
            names = ", ".join(type(ev).__name__ for ev in record.output_events)
            self._print(f"Step {record.step_name} produced event {names}")

    def _llama_finished(self, record: StepFinished) -> None:
        prefix = f"[{record.step_name}:{record.worker}]"
        if not record.output_events or record.error is not None:
            # LlamaIndex reports a failed attempt as finished with no result, too.
            self._output(f"{prefix} complete with no result")
            return
        first = record.output_events[0]
        if is_stop_event(first):
            # LlamaIndex shows the run's result as the step's outcome arrives, before the
            # step's own line; the StopEvent is not shown again when it is routed.
            self._results[record.run_id] = id(first)
            self._output(f"[result] {summarize_event(first)}")
        self._output(f"{prefix} complete with {type(first).__name__}")


def summarize_event(event: Any, max_length: int = 200) -> str:
    """``Name(field=value, ...)`` for one event, short enough for one line.

    A StopEvent's ``result`` comes first when it is set; then the declared fields, then the
    extra ones. Strings past 50 characters are cut (``'...'...``), lists and dicts past three
    items are counted (``[7 items]``, ``{4 keys}``), and the whole is cut at ``max_length``.
    """
    try:
        cls = type(event)
        given = event.model_fields_set
        values = event.__dict__
        loose = {_GIVEN_ONLY[c.__name__] for c in cls.__mro__ if c.__name__ in _GIVEN_ONLY}
        stop = is_stop_event(event)
        parts: list[str] = []
        later: list[str] = []
        for name in cls.model_fields:
            value = values.get(name)
            if stop and name == "result" and value is None:
                continue
            if name in loose:
                if name in given:
                    later.append(f"{name}={_summarize_value(value)}")
                continue
            parts.append(f"{name}={_summarize_value(value)}")
        parts += later
        for name, value in (event.__pydantic_extra__ or {}).items():
            parts.append(f"{name}={_summarize_value(value)}")
        text = f"{cls.__name__}({', '.join(parts)})"
        return text if len(text) <= max_length else text[: max_length - 3] + "..."
    except Exception:
        try:
            return repr(event)
        except Exception:
            return type(event).__name__


def _summarize_value(value: Any) -> str:
    if isinstance(value, str) and len(value) > 50:
        return repr(value[:50] + "...")
    if isinstance(value, list) and len(value) > 3:
        return f"[{len(value)} items]"
    if isinstance(value, dict) and len(value) > 3:
        return f"{{{len(value)} keys}}"
    return repr(value)


def is_stop_event(event: Any) -> bool:
    """Whether ``event`` is a StopEvent (of batonflow.core.events)."""
    # This room cannot import the events (data/ is its sibling): StopEvent is found by name.
    return any(
        c.__name__ == "StopEvent" and c.__module__ == "batonflow.core.events"
        for c in type(event).__mro__
    )


# Stored runs and pickles name it by its public path, as the rest of batonflow.core.instrument.
PrintingInstrument.__module__ = "batonflow.core.instrument"
