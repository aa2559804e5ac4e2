"""The errors batonflow raises.

Declaration-time errors (a workflow that cannot run as written) are kept apart from run-time
errors (a run that went wrong). Where a builtin exception fits, the error inherits it too, so
``except KeyError`` or ``except TimeoutError`` keep working.

    BatonflowError
    ├── WorkflowValidationError            the workflow's steps/events do not fit together
    │   ├── WorkflowConfigurationError     a bad option or resource configuration
    │   │   └── ConfigFileNotFoundError (FileNotFoundError)   ResourceConfig.load() found no file
    │   └── StateTypeError (ValueError)    steps' Context[Model] types share no inheritance chain
    ├── WorkflowRuntimeError (RuntimeError)
    │   ├── WorkflowTimeoutError (TimeoutError)   the run passed its ``timeout``
    │   ├── StepTimeoutError (TimeoutError)       one step attempt passed its ``timeout``
    │   ├── WorkflowCancelledByUser               the run was cancelled
    │   ├── WorkflowStepDoesNotExistError         ``send_event(step=...)`` names no step
    │   ├── ContextStateError                     a Context method used in the wrong phase
    │   ├── StartEventError (ValueError)          run() fields that do not fit the StartEvent
    │   │   (raised as its subclasses named ``WorkflowRuntimeError`` or ``ValueError``, see below)
    │   ├── JournalMismatchError                  a re-run made another journaled call than
    │   │                                         the one its run recorded at that position
    │   ├── BudgetExceededError                   an LLM call would pass the run's budget
    │   │                                         (its ``on_exceed="fail"``): not made
    │   └── ResourceError                         a resource factory failed
    │       ├── ResourceCycleError (ValueError)   factories that depend on each other
    │       └── ResourceFileNotFoundError (FileNotFoundError)   a ResourceConfig file is missing
    ├── WorkflowDone                        internal: the run already finished
    ├── StateError
    │   ├── StateKeyError (KeyError, ValueError)   a state path that is not there
    │   └── StateValidationError (ValueError) a value that does not fit the typed state
    ├── SerializationError (TypeError, ValueError)  a value the serializer cannot encode
    ├── ContextSerdeError (ValueError)       a serialized context that cannot be restored
    ├── QueueFullError                      a workflow's run queue is full (``max_queued``):
    │                                       nothing was recorded; try again ``retry_after``
    └── CheckpointError                     a checkpoint that is missing, old or corrupt
        ├── StoreFullError (OSError)         the store's disk is full: nothing was written
        ├── StoreReadOnlyError (OSError)     the store cannot be written (permissions, mount)
        ├── StoreLockedError                 another process held the store too long
        ├── StoreUnreachableError            the store's server cannot be reached (a restart,
        │                                    a network failure): try again ``retry_after``
        ├── StoreCorruptError                the store's file or a row in it is damaged
        ├── IncompatibleRunError             the code changed so that a run in flight
        │                                    cannot continue from its checkpoint
        ├── UnstorableTextError (ValueError) text the store cannot hold (a NUL character
        │                                    or a lone surrogate in an id, a name, a filter)
        └── RunConflictError                 the run's state does not allow that (e.g. a
            │                                second answer to one question)
            ├── LeaseLostError               another process (a server replica) took the
            │                                run over: this one must stop running it
            ├── RunBusyError                 another live process is running the run: it
            │                                cannot be resumed here meanwhile
            ├── DuplicateStartError          a start whose idempotency key started a run
            │                                already: that run is the answer
            └── IdempotencyKeyError (ValueError)   an idempotency key reused for a
                                             different start
"""

from __future__ import annotations

from typing import Any, TypeVar

_E = TypeVar("_E", bound=BaseException)


class BatonflowError(Exception):
    """Base class of every error batonflow raises on purpose."""


class WorkflowValidationError(BatonflowError):
    """The workflow's steps and events do not fit together; raised before a run starts."""


class WorkflowConfigurationError(WorkflowValidationError):
    """A workflow, step or resource option has a value that cannot work."""


class StateTypeError(WorkflowValidationError, ValueError):
    """The steps' ``Context[Model]`` state types are not one inheritance chain.

    Steps may take a model and its subclasses (the run's state is the most derived one); two
    unrelated or sibling models cannot share one state. Also a ``ValueError``, as in
    LlamaIndex.
    """


class WorkflowRuntimeError(BatonflowError, RuntimeError):
    """Something went wrong while a run was in progress."""


class WorkflowTimeoutError(WorkflowRuntimeError, TimeoutError):
    """The run took longer than the workflow's ``timeout``."""


class StepTimeoutError(WorkflowRuntimeError, TimeoutError):
    """One attempt of a step took longer than the step's ``timeout``."""


class WorkflowCancelledByUser(WorkflowRuntimeError):
    """The run was cancelled (``handler.cancel_run()``)."""


class WorkflowStepDoesNotExistError(WorkflowRuntimeError):
    """An event was sent to a step name the workflow does not have."""


class ContextStateError(WorkflowRuntimeError):
    """A Context method was called in a phase where it cannot work (e.g. before a run)."""


class StartEventError(WorkflowRuntimeError, ValueError):
    """``run()`` got a start event, or start fields, that the workflow's StartEvent rejects.

    Also a ``ValueError`` (as pydantic's ``ValidationError`` is). When pydantic rejected the
    fields, :meth:`errors` returns its error list and ``__cause__`` is its ``ValidationError``.
    """

    def errors(self) -> list[dict[str, object]]:
        """Pydantic's error list for the rejected fields (empty when pydantic was not asked)."""
        cause = self.__cause__
        if cause is not None and hasattr(cause, "errors"):
            return list(cause.errors())
        return []


class JournalMismatchError(WorkflowRuntimeError):
    """A step re-run after a crash made a journaled call (``ctx.journal``) other than the one
    its run recorded at that position: the step's code or its inputs changed its calls, so
    the recorded results cannot be matched to them. The message names both calls."""


class BudgetExceededError(WorkflowRuntimeError):
    """An LLM call would pass the run's token or cost budget, and the budget says to fail
    (``Budget(on_exceed="fail")``) rather than wait for a raise: the call was not made."""


class ResourceError(WorkflowRuntimeError):
    """A resource factory raised; the message names the resource and the step."""


class ResourceCycleError(ResourceError, ValueError):
    """Resource factories depend on each other in a circle (also a ``ValueError``, as in LlamaIndex)."""


class ResourceFileNotFoundError(ResourceError, FileNotFoundError):
    """The file of a ``ResourceConfig`` a step needs does not exist (also a ``FileNotFoundError``).

    The file is read again at the next run, so creating it is enough.
    """


class ConfigFileNotFoundError(WorkflowConfigurationError, FileNotFoundError):
    """``ResourceConfig.load()`` found no file at ``config_file`` (also a ``FileNotFoundError``)."""


class WorkflowDone(BatonflowError):
    """Internal signal: the run has already finished."""


class StateError(BatonflowError):
    """Base class of state-store errors."""


class StateKeyError(StateError, KeyError, ValueError):
    """A path that is not in the state store (also a ``KeyError``, and a ``ValueError``:
    LlamaIndex's class for it)."""

    def __str__(self) -> str:
        # KeyError.__str__ quotes its argument; we want the plain sentence.
        return str(self.args[0]) if self.args else ""


class StateValidationError(StateError, ValueError):
    """A value that does not fit the typed state model; the state is left unchanged."""


class SerializationError(BatonflowError, TypeError, ValueError):
    """A value the serializer cannot encode; the message names its key path.

    Also a ``TypeError`` and a ``ValueError`` (what LlamaIndex's serializers raise).
    """


class ContextSerdeError(BatonflowError, ValueError):
    """A serialized context that cannot be restored (corrupt, foreign or from another version)."""


class QueueFullError(BatonflowError):
    """A start refused because its workflow's queue holds ``max_queued`` runs already.

    Nothing was recorded. A server answers it ``429`` with ``Retry-After``.

    Args:
        workflow: The workflow whose queue is full.
        max_queued: Its limit.
        retry_after: Seconds until trying again makes sense (``None``: the limits' default).
    """

    def __init__(self, workflow: str, max_queued: int, retry_after: float | None) -> None:
        super().__init__(
            f"The queue of workflow {workflow!r} is full ({max_queued} runs wait already), so "
            "nothing was recorded; start the run again later, or raise its max_queued."
        )
        self.workflow = workflow
        self.max_queued = max_queued
        self.retry_after = retry_after


class CheckpointError(BatonflowError):
    """A checkpoint that is missing, from an older format, corrupt, or for changed steps."""


class StoreFullError(CheckpointError, OSError):
    """The run store's disk (or quota) is full; the write was rolled back, nothing is lost."""


class StoreReadOnlyError(CheckpointError, OSError):
    """The run store cannot be written: a read-only file, folder or mount."""


class StoreLockedError(CheckpointError):
    """Another connection held the run store locked for longer than ``busy_timeout``."""


class StoreUnreachableError(CheckpointError):
    """The store's database server cannot be reached now (it restarts, the network broke).

    Nothing was written by the call that raised it (or the write is known not to have
    committed). While the store rides the outage out, ``retry_after`` says in how many seconds
    to try again: a run waits at its step boundary for that long, a server answers ``503``
    with ``Retry-After``. Once the store's outage budget is spent ``retry_after`` is ``None``:
    the outage is reported like any other store error.

    Args:
        message: What could not be done, where, and what to do.
        retry_after: Seconds until trying again makes sense, or ``None`` to give up.
    """

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class StoreCorruptError(CheckpointError):
    """The run store's file, or a row in it, is damaged or not a batonflow store."""


class IncompatibleRunError(CheckpointError):
    """A run in flight cannot continue with this code: a step its checkpoint has in progress
    (or pending events for) is gone, an event or state field changed incompatibly.

    Raised before anything runs; the message names the run and every reason, and
    :attr:`reasons` holds them one by one. A resume records the run as ``interrupted`` with
    this message as its error (see ``WorkflowCheckpointer.check``).
    """

    def __init__(self, message: str, reasons: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.reasons = reasons


class UnstorableTextError(CheckpointError, ValueError):
    """Text the store cannot hold: a NUL character, or a lone surrogate (not Unicode text).

    PostgreSQL's text holds neither, so its store refuses such an id, name or filter with this
    error (naming the text) before the driver sees it. Also a ``ValueError``: the value is
    wrong, not the store.
    """


class RunConflictError(CheckpointError):
    """What was asked does not fit the run's state: a second answer to one question, an event
    for a run that has ended, a run id that exists already."""


class LeaseLostError(RunConflictError):
    """This process no longer holds the run: another replica took it over after this one's
    lease expired. The run goes on there; this process must stop running it."""


class RunBusyError(RunConflictError):
    """Another live process holds the run (it started or resumed it and is still running it):
    resuming it here too would run its steps twice. Nothing ran; resume it once that process
    has finished or stopped."""


class DuplicateStartError(RunConflictError):
    """A start carried an idempotency key that started a run already: nothing new was started.

    The run that key started is the answer to the start (``run_id``, its ``record``; and its
    ``handler`` when it runs in this process).

    Attributes:
        run_id: The run the key started.
        record: That run's record in the store (a ``RunRecord``).
        handler: Its ``WorkflowHandler`` when it runs in this process, else ``None``.
    """

    def __init__(self, message: str, *, run_id: str, record: object, handler: object) -> None:
        super().__init__(message)
        self.run_id = run_id
        self.record = record
        self.handler = handler


class IdempotencyKeyError(RunConflictError, ValueError):
    """An idempotency key that started a run was sent again with another start (another
    workflow or other start fields): a key names one request. Nothing was started."""


# -- LlamaIndex's names -----------------------------------------------------------------------
#
# Where LlamaIndex raises a broader class for the same mistake (WorkflowRuntimeError for start
# fields that do not validate, ValueError for a start_event that is no StartEvent), batonflow
# raises a subclass of its own precise class that carries LlamaIndex's class name: users print
# and match ``type(e).__name__`` (and tracebacks show it), while ``except StartEventError``,
# ``except WorkflowRuntimeError`` and ``except ValueError`` all keep catching it.

_NAMED: dict[tuple[type[BaseException], str], type[BaseException]] = {}


def llama_named(base: type[_E], name: str) -> type[_E]:
    """The subclass of ``base`` named ``name`` (made once, then reused).

    Its instances pickle and copy (they are rebuilt through this function, since the class
    name is not its attribute name here).
    """
    cls = _NAMED.get((base, name))
    if cls is None:
        cls = type(
            name,
            (base,),
            {
                "__module__": __name__,
                "__qualname__": name,
                "__doc__": f"{base.__name__} under LlamaIndex's name for the same error, {name}.",
                "__reduce__": _reduce_named,
            },
        )
        _NAMED[(base, name)] = cls
    return cls  # type: ignore[return-value]


def _reduce_named(self: BaseException) -> tuple[Any, ...]:
    base = type(self).__mro__[1]
    return (_rebuild_named, (base, type(self).__name__, self.args), self.__dict__ or None)


def _rebuild_named(base: type[BaseException], name: str, args: tuple[Any, ...]) -> BaseException:
    return llama_named(base, name)(*args)


__all__ = [
    "BatonflowError",
    "BudgetExceededError",
    "CheckpointError",
    "ConfigFileNotFoundError",
    "ContextSerdeError",
    "ContextStateError",
    "DuplicateStartError",
    "IdempotencyKeyError",
    "IncompatibleRunError",
    "JournalMismatchError",
    "LeaseLostError",
    "QueueFullError",
    "ResourceCycleError",
    "ResourceError",
    "ResourceFileNotFoundError",
    "RunBusyError",
    "RunConflictError",
    "SerializationError",
    "StartEventError",
    "StateError",
    "StateKeyError",
    "StateValidationError",
    "StepTimeoutError",
    "StoreCorruptError",
    "StoreFullError",
    "StoreLockedError",
    "StoreReadOnlyError",
    "StoreUnreachableError",
    "UnstorableTextError",
    "WorkflowCancelledByUser",
    "WorkflowConfigurationError",
    "WorkflowDone",
    "WorkflowRuntimeError",
    "WorkflowStepDoesNotExistError",
    "WorkflowTimeoutError",
    "WorkflowValidationError",
]
