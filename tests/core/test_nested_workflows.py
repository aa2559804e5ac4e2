"""COMPAT §13: ``Workflow.add_workflows`` nested-workflow injection and ``ctx.data`` (removed
from LlamaIndex, kept working here with a DeprecationWarning)."""

from __future__ import annotations

import pytest
from batonflow.core import (
    Context,
    StartEvent,
    StopEvent,
    Workflow,
    WorkflowConfigurationError,
    step,
)


class Doubler(Workflow):
    @step
    async def double(self, ev: StartEvent) -> StopEvent:
        return StopEvent(result=ev.x * 2)


class Tripler(Workflow):
    @step
    async def triple(self, ev: StartEvent) -> StopEvent:
        return StopEvent(result=ev.x * 3)


class Parent(Workflow):
    @step
    async def outer(self, ctx: Context, ev: StartEvent, sub: Workflow) -> StopEvent:
        return StopEvent(result=await sub.run(x=ev.x) + 1)


class TypedParent(Workflow):
    @step
    async def outer(self, ev: StartEvent, doubler: Doubler) -> StopEvent:
        return StopEvent(result=await doubler.run(x=ev.x))


class DefaultParent(Workflow):
    @step
    async def outer(self, ev: StartEvent, helper: Tripler = Tripler()) -> StopEvent:  # noqa: B008
        return StopEvent(result=await helper.run(x=ev.x))


async def test_added_workflow_is_injected_by_parameter_name() -> None:
    """The seed's pattern: a step parameter annotated Workflow gets the added instance."""
    parent = Parent()
    with pytest.warns(DeprecationWarning, match=r"add_workflows\(\) is deprecated"):
        parent.add_workflows(sub=Doubler())
    assert await parent.run(x=5) == 11
    with pytest.warns(DeprecationWarning):
        parent.add_workflows(sub=Tripler())  # replaced by name
    assert await parent.run(x=5) == 16


async def test_subclass_annotation_and_default() -> None:
    """A Workflow-subclass annotation is checked; a parameter default is used when nothing
    was added."""
    typed = TypedParent()
    with pytest.warns(DeprecationWarning):
        typed.add_workflows(doubler=Doubler())
    assert await typed.run(x=4) == 8
    assert await DefaultParent().run(x=4) == 12
    other = DefaultParent()
    with pytest.warns(DeprecationWarning):
        other.add_workflows(helper=Tripler(timeout=5))
    assert await other.run(x=1) == 3


async def test_missing_nested_workflow_fails_in_run() -> None:
    """Running without the nested workflow fails before any step runs, saying what to add."""
    with pytest.raises(
        WorkflowConfigurationError,
        match=r"^Step outer of TypedParent takes a nested workflow 'doubler: Doubler', but none "
        r"was added\. Call add_workflows\(doubler=Doubler\(\.\.\.\)\) before running, or give the "
        r"parameter a default\.$",
    ):
        TypedParent().run(x=1)


async def test_nested_workflow_of_the_wrong_class() -> None:
    """An added workflow that is not an instance of the annotated class is refused at run()."""
    typed = TypedParent()
    with pytest.warns(DeprecationWarning):
        typed.add_workflows(doubler=Tripler())
    with pytest.raises(
        WorkflowConfigurationError,
        match=r"takes 'doubler: Doubler', but add_workflows\(doubler=\.\.\.\) gave a Tripler\. "
        r"Add a Doubler under that name\.$",
    ):
        typed.run(x=1)


async def test_add_workflows_takes_workflow_instances_only() -> None:
    """A class or another object is refused with the fix."""
    with (
        pytest.warns(DeprecationWarning),
        pytest.raises(
            WorkflowConfigurationError,
            match=r"^add_workflows\(sub=\.\.\.\) got <class '.*Doubler'>, which is not a "
            r"workflow instance; pass one, e.g\. add_workflows\(sub=MyFlow\(\)\)\.$",
        ),
    ):
        Parent().add_workflows(sub=Doubler)  # type: ignore[arg-type]


async def test_ctx_data_is_the_live_state() -> None:
    """``ctx.data`` (deprecated) reads and writes the same state as ``ctx.store``."""

    class W(Workflow):
        @step
        async def only(self, ctx: Context, ev: StartEvent) -> StopEvent:
            await ctx.store.set("a", 1)
            with pytest.warns(DeprecationWarning, match=r"ctx\.data is deprecated; use"):
                data = ctx.data
            data["b"] = data["a"] + 1
            return StopEvent(result=await ctx.store.get("b"))

    handler = W().run()
    assert await handler == 2
    assert await handler.ctx.store.get_state() == {"a": 1, "b": 2}


async def test_nested_workflows_are_drawn() -> None:
    """The representation shows a nested workflow as a node feeding its step (labelled with
    the parameter); ``include_child_workflows=False`` leaves it out."""
    from batonflow.core import (
        WorkflowGenericNode,
        draw_all_possible_flows_mermaid,
        get_workflow_representation,
    )

    graph = get_workflow_representation(TypedParent)
    node = graph.node("workflow:Doubler")
    assert isinstance(node, WorkflowGenericNode) and node.label == "Doubler"
    assert [(e.source, e.target, e.label) for e in graph.edges if e.source == node.id] == [
        ("workflow:Doubler", "step:outer", "doubler")
    ]
    assert '-->|"doubler"| step_outer' in draw_all_possible_flows_mermaid(
        TypedParent, filename=None
    )
    assert "Doubler" not in draw_all_possible_flows_mermaid(
        TypedParent, filename=None, include_child_workflows=False
    )
