"""A workflow's steps and the graph they make, found once per class and cached.

A workflow class's steps are its ``@step`` methods, those of its bases (a plain method
overriding one removes it) and the functions ``add_step`` (``@step(workflow=MyFlow)``) added to
it; an instance may add its own with ``@step(workflow=instance)``. Their graph is compiled
once per class (or per instance that added steps) and the steps' calls bound once per
instance, so a run only looks them up. :class:`~batonflow.core.engine.workflow.Workflow`
binds these functions in its class body (its public ``add_step`` calls :func:`add_class_step`).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import WorkflowValidationError
from ._calls import make_call
from .graph import Graph, compile_graph
from .step import STEP_ATTR, StepSpec, build_spec, is_step

if TYPE_CHECKING:
    from .workflow import Workflow

_CLASS_GRAPHS: weakref.WeakKeyDictionary[type, Graph] = weakref.WeakKeyDictionary()


def add_class_step(cls: type[Workflow], func: Callable[..., Any]) -> None:
    """:meth:`Workflow.add_step <batonflow.core.workflow.Workflow.add_step>`: check ``func``,
    add it to ``cls`` and forget the compiled graphs (a subclass's include it too)."""
    name = getattr(func, "__name__", repr(func))
    if not is_step(func):
        raise WorkflowValidationError(
            f"Step function {name} is missing the `@step` decorator. Decorate it with "
            f"@step(workflow={cls.__name__}) (which adds it) instead of calling add_step."
        )
    if name in cls._class_steps():
        raise WorkflowValidationError(
            f"A step {name} is already part of this workflow, please choose another name. "
            f"{cls.__name__} has a step {name} already; rename the function."
        )
    if "_added_steps" not in cls.__dict__:
        cls._added_steps = {}
    cls._added_steps[func.__name__] = func
    _CLASS_GRAPHS.clear()


def add_instance_step(self: Workflow, func: Callable[..., Any]) -> None:
    """Add a step to this instance only (``@step(workflow=instance)``)."""
    self._instance_steps[func.__name__] = func
    self._own_graph = None
    self._calls = None


def class_steps(cls: type[Workflow]) -> dict[str, Callable[..., Any]]:
    """The class's steps by name: its bases' first, overridden in MRO order."""
    found: dict[str, Callable[..., Any]] = {}
    for klass in reversed(cls.__mro__):
        for name, attr in vars(klass).items():
            if is_step(attr):
                found[name] = attr
            elif name in found and callable(attr):
                del found[name]  # overridden by a plain method
        found.update(vars(klass).get("_added_steps", {}))
    return found


def class_graph(cls: type[Workflow]) -> Graph:
    """The class's graph, compiled at its first use."""
    graph = _CLASS_GRAPHS.get(cls)
    if graph is None:
        graph = compile_graph(cls.__name__, _specs(cls._class_steps()))
        _CLASS_GRAPHS[cls] = graph
    return graph


def graph_of(self: Workflow) -> Graph:
    """This instance's graph: its class's, unless it added steps of its own."""
    if not self._instance_steps:
        return self._class_graph()
    graph = self._own_graph
    if graph is None:
        steps = {**type(self)._class_steps(), **self._instance_steps}
        graph = self._own_graph = compile_graph(self.workflow_name, _specs(steps))
    return graph


def bound_calls(self: Workflow, graph: Graph) -> list[Callable[..., Any]]:
    """The calls of ``graph``'s steps bound to this instance, in the graph's order."""
    cached = self._calls
    if cached is not None and cached[0] is graph:
        return cached[1]
    calls = []
    for spec in graph.order:
        func = spec.func.__get__(self) if spec.has_self else spec.func
        calls.append(make_call(spec, func))
    self._calls = (graph, calls)
    return calls


def _specs(steps: dict[str, Callable[..., Any]]) -> list[StepSpec]:
    specs = []
    for name, func in steps.items():
        if not hasattr(func, STEP_ATTR):
            continue
        specs.append(build_spec(func, name))
    return specs
