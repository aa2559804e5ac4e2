"""Instruments: hooks that watch runs without being able to break them.

An :class:`Instrument` receives one frozen record per happening: a run started or finished, a
step attempt started or finished, an event emitted, a set of events joined by
``collect_events``. Every hook has a no-op default, so an instrument overrides only what it
needs. One wrap-style hook, :meth:`Instrument.step_scope`, returns a context manager that is
entered inside the step's own task (and so in the thread of a sync step), so that work done by
the step (LLM calls, tool calls) nests under whatever the instrument opened (a span).

A hook that raises is logged and that hook is disabled for the rest of the process; it never
fails the run. ``Workflow(verbose=True)`` is simply the :class:`PrintingInstrument`
(``_printing``).

Lineage: every step execution has an ``execution_id`` unique within its run; each record of a
step carries ``origins``, the execution ids of the steps that emitted its triggering event(s)
(empty for the start event and events sent from outside). Instruments use this to link spans
across concurrent steps. ``meta`` is a per-run ``dict[str, str]`` that is saved with the run
(``ctx.to_dict()``, checkpoints) and restored on resume; instruments keep e.g. a W3C
``traceparent`` there so that a resumed run continues the same trace.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .._public import publish

logger = logging.getLogger("batonflow.instrument")


@dataclass(frozen=True, slots=True)
class RunStarted:
    """A run began (or resumed, when ``resumed`` is true)."""

    run_id: str
    workflow_name: str
    start_event: Any
    resumed: bool
    meta: dict[str, str] = field(default_factory=dict)
    #: The Workflow instance that runs, and the run's Context.
    workflow: Any = None
    context: Any = None


@dataclass(frozen=True, slots=True)
class RunFinished:
    """A run ended. ``status`` is one of ``completed``, ``failed``, ``timed_out``, ``cancelled``.

    ``paused_steps`` names the steps that were waiting for an event (``ctx.wait_for_event``,
    e.g. for a human) when the run ended: a run cancelled then is paused, to be resumed from a
    snapshot, rather than abandoned.
    """

    run_id: str
    workflow_name: str
    status: str
    result: Any
    error: BaseException | None
    duration: float
    meta: dict[str, str] = field(default_factory=dict)
    paused_steps: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class StepStarted:
    """One attempt of one step began on ``input_event``.

    ``execution_id`` numbers the run's executions (1, 2, ...); ``worker`` is the step's worker
    slot the execution holds, the lowest free one in ``0..num_workers-1`` (LlamaIndex's
    worker id).
    """

    run_id: str
    workflow_name: str
    step_name: str
    execution_id: int
    attempt: int
    input_event: Any
    origins: tuple[int, ...]
    meta: dict[str, str] = field(default_factory=dict)
    worker: int = 0


@dataclass(frozen=True, slots=True)
class StepFinished:
    """One attempt of one step ended; ``error`` is set when it raised."""

    run_id: str
    workflow_name: str
    step_name: str
    execution_id: int
    attempt: int
    input_event: Any
    output_events: tuple[Any, ...]
    error: BaseException | None
    duration: float
    will_retry: bool = False
    meta: dict[str, str] = field(default_factory=dict)
    worker: int = 0


@dataclass(frozen=True, slots=True)
class EventEmitted:
    """A step (or the outside, when ``step_name`` is None) put an event into the run.

    ``target`` names the one step it was sent to (``send_event(ev, step=...)``), if any.
    """

    run_id: str
    workflow_name: str
    event: Any
    step_name: str | None
    execution_id: int | None
    target: str | None = None


@dataclass(frozen=True, slots=True)
class EventsJoined:
    """``collect_events`` released a full set of events in the given step execution."""

    run_id: str
    workflow_name: str
    step_name: str
    execution_id: int
    events: tuple[Any, ...]
    origins: tuple[int, ...]


class Instrument:
    """Base class for instruments: override the hooks you need; the rest do nothing."""

    def wants_run(self, run_id: str, workflow_name: str) -> bool:
        """Whether to watch this run at all; asked once when a run is created.

        Returning ``False`` (e.g. tracing with no SDK configured) removes the instrument from
        the run, so its hooks cost nothing there. The default watches every run.
        """
        return True

    def run_started(self, record: RunStarted) -> None:
        """Called when a run begins or resumes, before its first step."""

    def run_finished(self, record: RunFinished) -> None:
        """Called once when a run ends, whatever the outcome."""

    def step_started(self, record: StepStarted) -> None:
        """Called before each attempt of a step, in the run loop."""

    def step_finished(self, record: StepFinished) -> None:
        """Called after each attempt of a step, in the run loop."""

    def event_emitted(self, record: EventEmitted) -> None:
        """Called for every event a step returns or sends, and for events sent from outside."""

    def events_joined(self, record: EventsJoined) -> None:
        """Called when ``collect_events`` returns a full set."""

    def step_scope(self, record: StepStarted) -> contextlib.AbstractContextManager[Any] | None:
        """Return a context manager entered around the step body, in the step's own task.

        Returning ``None`` (the default) costs nothing.
        """
        return None


_HOOKS = (
    "run_started",
    "run_finished",
    "step_started",
    "step_finished",
    "event_emitted",
    "events_joined",
    "step_scope",
)


class InstrumentSet:
    """The instruments of one workflow, with each hook pre-resolved to the ones that override it.

    The run loop asks ``instruments.has_step_hooks`` etc. before building a record, so
    instruments that are not there cost a boolean test.
    """

    __slots__ = ("_disabled", "_filtering", "_hooks", "_subsets", "instruments")

    def __init__(
        self,
        instruments: Sequence[Instrument] = (),
        _disabled: set[tuple[int, str]] | None = None,
    ) -> None:
        self.instruments: tuple[Instrument, ...] = tuple(instruments)
        # Hooks that raised, as (id(instrument), hook). Keyed by id, valid because this set (and
        # the per-run subsets sharing it) holds every instrument it names alive.
        self._disabled: set[tuple[int, str]] = set() if _disabled is None else _disabled
        self._hooks: dict[str, tuple[Instrument, ...]] = {}
        for hook in _HOOKS:
            base = getattr(Instrument, hook)
            self._hooks[hook] = tuple(
                inst for inst in self.instruments if getattr(type(inst), hook) is not base
            )
        self._filtering = tuple(
            inst for inst in self.instruments if type(inst).wants_run is not Instrument.wants_run
        )
        self._subsets: dict[tuple[int, ...], InstrumentSet] = {}

    def for_run(self, run_id: str, workflow_name: str) -> InstrumentSet:
        """The instruments that want to watch this run (``Instrument.wants_run``)."""
        if not self._filtering:
            return self
        kept: list[Instrument] = []
        for inst in self.instruments:
            if inst in self._filtering:
                try:
                    if not inst.wants_run(run_id, workflow_name):
                        continue
                except Exception:
                    logger.exception("Instrument %r raised in wants_run; watching the run.", inst)
            kept.append(inst)
        if len(kept) == len(self.instruments):
            return self
        key = tuple(id(inst) for inst in kept)
        subset = self._subsets.get(key)
        if subset is None:
            subset = self._subsets[key] = InstrumentSet(kept, self._disabled)
        return subset

    def wants(self, hook: str) -> bool:
        """Whether any instrument overrides ``hook``."""
        return bool(self._hooks[hook])

    def call(self, hook: str, record: Any) -> None:
        """Call ``hook`` on every instrument that overrides it; a raising hook is disabled."""
        for inst in self._hooks[hook]:
            key = (id(inst), hook)
            if key in self._disabled:
                continue
            try:
                getattr(inst, hook)(record)
            except Exception:
                self._disabled.add(key)
                logger.exception(
                    "Instrument %r raised in %s; that hook is disabled from now on.", inst, hook
                )

    def scopes(self, record: StepStarted) -> list[contextlib.AbstractContextManager[Any]]:
        """The context managers the instruments want entered around a step body."""
        found: list[contextlib.AbstractContextManager[Any]] = []
        for inst in self._hooks["step_scope"]:
            key = (id(inst), "step_scope")
            if key in self._disabled:
                continue
            try:
                scope = inst.step_scope(record)
            except Exception:
                self._disabled.add(key)
                logger.exception("Instrument %r raised in step_scope; hook disabled.", inst)
                continue
            if scope is not None:
                found.append(scope)
        return found


__all__ = [
    "PRINT_STYLES",
    "EventEmitted",
    "EventsJoined",
    "Instrument",
    "InstrumentSet",
    "PrintingInstrument",
    "RunFinished",
    "RunStarted",
    "StepFinished",
    "StepStarted",
    "add_global_instrument",
    "global_instruments",
    "remove_global_instrument",
]


_GLOBAL_INSTRUMENTS: list[Instrument] = []
_GLOBAL_VERSION = [0]


def add_global_instrument(instrument: Instrument) -> None:
    """Install ``instrument`` for every workflow run in this process (e.g. tracing).

    Runs that start after the call see it; removing it with :func:`remove_global_instrument`
    takes effect for runs started afterwards.
    """
    if instrument not in _GLOBAL_INSTRUMENTS:
        _GLOBAL_INSTRUMENTS.append(instrument)
        _GLOBAL_VERSION[0] += 1


def remove_global_instrument(instrument: Instrument) -> None:
    """Uninstall an instrument added with :func:`add_global_instrument` (no error if absent)."""
    if instrument in _GLOBAL_INSTRUMENTS:
        _GLOBAL_INSTRUMENTS.remove(instrument)
        _GLOBAL_VERSION[0] += 1


# The instrument that traces to the application's global OpenTelemetry SDK provider (see
# batonflow.core.tracing.GlobalProviderInstrument). Created only once the SDK is imported, so
# an application without OpenTelemetry never loads it; it always comes last.
_GLOBAL_TRACING: list[Instrument] = []
_SDK_MODULE = "opentelemetry.sdk.trace"


# The instrument that emits runs and steps to llama-index's instrumentation dispatcher (see
# _llama_dispatch). Created only once llama_index_instrumentation is imported (anyone who
# attached a handler to it has imported it), so core never loads llama-index itself.
_GLOBAL_DISPATCH: list[Instrument] = []
_DISPATCH_MODULE = "llama_index_instrumentation"


def global_instruments() -> tuple[tuple[Instrument, ...], int]:
    """The globally installed instruments and a version number that changes with them."""
    if not _GLOBAL_TRACING and _SDK_MODULE in sys.modules:
        # Here, not at the top: tracing imports the OpenTelemetry API (~40 ms), which an
        # application that never traces does not load.
        from .tracing import GlobalProviderInstrument

        _GLOBAL_TRACING.append(GlobalProviderInstrument())
        _GLOBAL_VERSION[0] += 1
    if not _GLOBAL_DISPATCH and _DISPATCH_MODULE in sys.modules:
        from ._llama_dispatch import LlamaDispatchInstrument

        _GLOBAL_DISPATCH.append(LlamaDispatchInstrument())
        _GLOBAL_VERSION[0] += 1
    return (*_GLOBAL_INSTRUMENTS, *_GLOBAL_DISPATCH, *_GLOBAL_TRACING), _GLOBAL_VERSION[0]


# Stored runs and pickles name these classes by their public path.
publish(__name__, globals())

# The printing instrument (verbose=True) lives in its own module; it builds on the above.
from ._printing import PRINT_STYLES, PrintingInstrument  # noqa: E402
