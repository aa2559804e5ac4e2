"""The ``@step`` and ``@catch_error`` decorators.

``@step`` marks a method (or, with ``workflow=``, a plain function) as a step; its signature
says what the step accepts, emits and receives (see :mod:`batonflow.core.engine._step_spec`, which
reads it into a :class:`StepSpec`). ``@catch_error`` marks a step as the error handler of
others.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar, overload

from .._public import publish
from ..data.events import StepFailedEvent
from ..errors import WorkflowConfigurationError, WorkflowValidationError
from ._step_spec import (
    STEP_ATTR,
    ParamKind,
    StepOptions,
    StepParam,
    StepSpec,
    build_spec,
    check_annotations_present,
)

if TYPE_CHECKING:
    from ..retrying.retry import AnyRetryPolicy
    from .workflow import Workflow

F = TypeVar("F", bound=Callable[..., Any])

#: Names of the graph checks that ``skip_graph_checks`` may name (LlamaIndex's names).
GRAPH_CHECKS = frozenset({"reachability", "terminal_event", "dead_end"})


@overload
def step(func: F, /) -> F: ...


@overload
def step(
    *,
    workflow: Workflow | type[Workflow] | None = None,
    num_workers: int = 4,
    retry_policy: AnyRetryPolicy | None = None,
    timeout: float | None = None,
    skip_graph_checks: Iterable[str] | None = None,
    accept_event_subclasses: bool = True,
    children: Iterable[Workflow | type[Workflow]] = (),
) -> Callable[[F], F]: ...


def step(
    func: F | None = None,
    /,
    *,
    workflow: Workflow | type[Workflow] | None = None,
    num_workers: int = 4,
    retry_policy: AnyRetryPolicy | None = None,
    timeout: float | None = None,
    skip_graph_checks: Iterable[str] | None = None,
    accept_event_subclasses: bool = True,
    children: Iterable[Workflow | type[Workflow]] = (),
) -> F | Callable[[F], F]:
    """Mark a function as a workflow step.

    Use it bare (``@step``) or with options (``@step(num_workers=2)``). Inside a ``Workflow``
    subclass it decorates methods; with ``workflow=`` it attaches a plain function to a workflow
    instance (or class).

    Args:
        func: The function, when used bare.
        workflow: Attach the function to this workflow instance or class.
        num_workers: Most executions of this step running at once within one run.
        retry_policy: A :class:`RetryPolicy` consulted when an attempt raises.
        timeout: Seconds one attempt may take; a longer attempt is cancelled and fails with
            :class:`StepTimeoutError` (retryable).
        skip_graph_checks: Validation checks to skip for this step: ``"reachability"`` (the
            step accepts an event no step produces, e.g. one sent from outside).
        accept_event_subclasses: Accepted for LlamaIndex compatibility; batonflow always
            routes an event to steps accepting one of its base classes.
        children: The workflows (classes or instances) the step runs with
            ``ctx.run_child``: the workflow's drawing nests each one's graph under the step.

    Returns:
        The same function, marked as a step (or a decorator doing that).

    Raises:
        WorkflowValidationError: The signature has a parameter without annotation, no event
            parameter, or a return annotation that is not made of events.
        WorkflowConfigurationError: ``num_workers`` or ``timeout`` is not positive, or a
            ``children`` entry is not a workflow.
    """
    child_classes = _child_classes(children)
    if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 1:
        raise WorkflowConfigurationError(
            f"num_workers must be an integer greater than 0, got {num_workers!r}; pass "
            "num_workers=1 or more."
        )
    if timeout is not None and (isinstance(timeout, bool) or not timeout > 0):
        raise WorkflowConfigurationError(
            f"timeout must be a positive number of seconds or None, got {timeout!r}."
        )
    if isinstance(retry_policy, type):
        raise WorkflowConfigurationError(
            f"retry_policy={retry_policy.__name__} is a class; pass an instance: "
            f"retry_policy={retry_policy.__name__}(...)."
        )
    if retry_policy is not None and not callable(getattr(retry_policy, "next", None)):
        raise WorkflowConfigurationError(
            f"retry_policy {retry_policy!r} has no next(elapsed_time, attempts, error) method; "
            "pass a RetryPolicy such as retry_policy(wait=wait_fixed(1), stop=stop_after_attempt(3))."
        )
    skips = frozenset(skip_graph_checks or ())
    check_graph_check_names(skips)
    localns = _caller_namespace()

    def decorate(fn: F) -> F:
        if not callable(fn):
            raise WorkflowValidationError(f"@step decorates functions, got {fn!r}.")
        if workflow is None and _is_free_function(fn):
            raise WorkflowValidationError(
                f"To decorate {fn.__name__} please pass a workflow class to the @step "
                f"decorator. Use @step(workflow=MyWorkflow) (a class, or a Workflow instance), "
                f"or define {fn.__name__} as a method of a Workflow subclass."
            )
        setattr(
            fn,
            STEP_ATTR,
            StepOptions(num_workers, retry_policy, timeout, localns, skips, children=child_classes),
        )
        check_annotations_present(fn)
        # Annotations are resolved now (LlamaIndex does the same), so a name that is not
        # defined fails where the step is written, not at the first run.
        build_spec(fn, fn.__name__)
        if workflow is not None:
            if isinstance(workflow, type):
                workflow.add_step(fn)
            else:
                workflow._add_instance_step(fn)
        return fn

    if func is not None:
        return decorate(func)
    return decorate


def check_graph_check_names(names: frozenset[str]) -> None:
    """Reject ``skip_graph_checks`` names that are not graph checks.

    Raises:
        WorkflowConfigurationError: A name is unknown (also a ``WorkflowValidationError``).
    """
    unknown = names - GRAPH_CHECKS
    if unknown:
        raise WorkflowConfigurationError(
            f"Unknown graph check names: {', '.join(sorted(unknown))}. Valid names are: "
            f"{', '.join(sorted(GRAPH_CHECKS))}; fix skip_graph_checks."
        )


def _child_classes(children: Iterable[Any]) -> tuple[type, ...]:
    """The workflow classes of ``@step(children=...)`` (an instance stands for its class).

    Raises:
        WorkflowConfigurationError: An entry is not a workflow class or instance.
    """
    if isinstance(children, type | str) or not isinstance(children, Iterable):
        children = (children,)
    found: list[type] = []
    for child in children:
        cls = child if isinstance(child, type) else type(child)
        if not hasattr(cls, "_class_graph"):
            raise WorkflowConfigurationError(
                f"@step(children=...) lists the workflows a step runs with ctx.run_child, got "
                f"{child!r}; list Workflow subclasses (or instances), e.g. children=[Outline]."
            )
        found.append(cls)
    return tuple(dict.fromkeys(found))


def _is_free_function(fn: Callable[..., Any]) -> bool:
    # A module-level function ("f") or one nested in a function ("outer.<locals>.f"), not a
    # method written in a class body ("Flow.f", "outer.<locals>.Flow.f"): PEP 3155 names.
    parts = getattr(fn, "__qualname__", "").split(".")
    return len(parts) == 1 or parts[-2] == "<locals>"


def _caller_namespace() -> dict[str, Any] | None:
    # Names local to the function that defines a workflow (tests, notebooks) are not in the
    # module globals; remember them so postponed annotations can still be resolved.
    ns: dict[str, Any] = {}
    frame = sys._getframe(2)
    for _ in range(3):
        if frame is None:
            break
        if frame.f_code.co_name == "<module>":
            break
        for key, value in frame.f_locals.items():
            ns.setdefault(key, value)
        frame = frame.f_back  # type: ignore[assignment]
    return ns or None


@overload
def catch_error(func: F, /) -> F: ...


@overload
def catch_error(
    *, for_steps: Iterable[str] | None = None, max_recoveries: int = 1
) -> Callable[[F], F]: ...


def catch_error(
    func: F | None = None,
    /,
    *,
    for_steps: Iterable[str] | None = None,
    max_recoveries: int = 1,
) -> F | Callable[[F], F]:
    """Mark a step as the error handler of other steps.

    When a step gives up (its retry policy, if any, is exhausted), instead of failing the run
    a :class:`StepFailedEvent` goes to its handler, which may return a ``StopEvent``, another
    event to carry on, or raise (then the run fails with that error). A workflow has at most
    one handler without ``for_steps`` (the wildcard); a step may be named by one scoped
    handler only.

    Args:
        func: The handler, when used bare.
        for_steps: The step names it handles (default: every step without a scoped handler).
        max_recoveries: How many times it may recover one lineage of events (>= 1): a failure
            it handles, then a failure further down what its recovery produced, and so on;
            the next failure fails the run.

    Returns:
        The function, marked as a step accepting ``StepFailedEvent``.

    Raises:
        WorkflowValidationError: ``max_recoveries`` below 1, ``for_steps`` not a list of names,
            or a handler whose event parameter is not ``StepFailedEvent``.
    """
    if (
        isinstance(max_recoveries, bool)
        or not isinstance(max_recoveries, int)
        or max_recoveries < 1
    ):
        raise WorkflowValidationError(
            f"@catch_error max_recoveries must be an integer >= 1, got {max_recoveries!r}; "
            "pass max_recoveries=1 or more."
        )
    if for_steps is not None and (
        isinstance(for_steps, str) or not all(isinstance(name, str) for name in for_steps)
    ):
        raise WorkflowValidationError(
            "@catch_error for_steps must be None or a list of step name strings, got "
            f"{for_steps!r}; pass e.g. for_steps=['fetch']."
        )
    names = tuple(for_steps) if for_steps is not None else None
    localns = _caller_namespace()

    def decorate(fn: F) -> F:
        setattr(
            fn,
            STEP_ATTR,
            StepOptions(1, None, None, localns, frozenset(), True, names, max_recoveries),
        )
        check_annotations_present(fn)
        with contextlib.suppress(NameError):
            spec = build_spec(fn, fn.__name__)
            _check_handler(spec)
        return fn

    if func is not None:
        return decorate(func)
    return decorate


def _check_handler(spec: StepSpec) -> None:
    """A ``@catch_error`` step takes exactly ``StepFailedEvent`` (nothing else reaches it)."""
    if spec.accepted != (StepFailedEvent,):
        raise WorkflowValidationError(
            f"@catch_error handler '{spec.name}' must accept StepFailedEvent as its event "
            "parameter. Annotate it `ev: StepFailedEvent` (and only that type)."
        )


def is_step(obj: Any) -> bool:
    """Whether ``obj`` was decorated with ``@step``."""
    return hasattr(obj, STEP_ATTR)


__all__ = [
    "STEP_ATTR",
    "ParamKind",
    "StepOptions",
    "StepParam",
    "StepSpec",
    "build_spec",
    "catch_error",
    "is_step",
    "step",
]

# Stored runs and pickles name these classes by their public path.
publish(__name__, globals())
