"""Graph validation: which problem is reported when, with which class, in LlamaIndex's words."""

from __future__ import annotations

from typing import Any

import pytest
from batonflow.core import (
    Context,
    Event,
    HumanResponseEvent,
    InputRequiredEvent,
    StartEvent,
    StopEvent,
    Workflow,
    WorkflowConfigurationError,
    WorkflowValidationError,
    step,
)


class Begin(StartEvent):
    query: str


class Verdict(StopEvent):
    outcome: str


class Ping(Event):
    pass


class Pong(Event):
    pass


class Island(Event):
    pass


async def test_several_start_event_classes_fail_at_creation() -> None:
    """Two StartEvent classes are a configuration error raised by ``Workflow()``."""

    class Flow(Workflow):
        @step
        async def one(self, ev: Begin) -> None:
            return None

        @step
        async def two(self, ev: StartEvent) -> StopEvent:
            return StopEvent()

    with pytest.raises(
        WorkflowConfigurationError,
        match=r"Only one type of StartEvent is allowed per workflow, found 2: Begin, StartEvent "
        r"in workflow 'Flow'\. Use one StartEvent class",
    ):
        Flow()


async def test_several_stop_event_classes_fail_at_creation() -> None:
    """Two StopEvent classes are a configuration error raised by ``Workflow()``."""

    class Flow(Workflow):
        @step
        async def one(self, ev: StartEvent) -> Verdict:
            return Verdict(outcome="x")

        @step
        async def two(self, ev: StartEvent) -> StopEvent:
            return StopEvent()

    with pytest.raises(
        WorkflowConfigurationError,
        match=r"Only one type of StopEvent is allowed per workflow, found 2: Verdict, StopEvent",
    ):
        Flow()


async def test_disable_validation_defers_the_creation_checks() -> None:
    """``disable_validation=True`` lets steps attached to the instance complete the workflow."""

    class Base(Workflow):
        @step
        async def begin(self, ev: StartEvent) -> Ping:
            return Ping()

    with pytest.raises(WorkflowConfigurationError, match="StopEvent must be returned"):
        Base()
    flow = Base(disable_validation=True)

    @step(workflow=flow)
    async def end(ev: Ping) -> StopEvent:
        return StopEvent(result="done")

    assert flow.validate() is False
    assert await flow.run() == "done"


async def test_a_step_cannot_accept_stop_event() -> None:
    """Steps taking a StopEvent (or subclass) are named, together."""

    class Flow(Workflow):
        @step
        async def start(self, ev: StartEvent) -> StopEvent:
            return StopEvent()

        @step
        async def after(self, ev: StopEvent) -> StopEvent:
            return StopEvent()

        @step
        async def later(self, ev: StopEvent) -> StopEvent:
            return StopEvent()

    with pytest.raises(
        WorkflowValidationError,
        match=r"Steps 'after', 'later' cannot accept StopEvent\. StopEvent signals the end of "
        r"the workflow\. Use a different Event type instead",
    ):
        Flow().validate()


async def test_produced_but_never_consumed_names_the_producer() -> None:
    """An emitted event nobody takes fails validate() and run() with the fix."""

    class Flow(Workflow):
        @step
        async def start(self, ev: StartEvent) -> Ping | StopEvent:
            return StopEvent()

    message = (
        r"The following events are produced but never consumed: Ping\. Add a step that takes "
        r"`ev: Ping`, or remove Ping from the return annotation of start\."
    )
    with pytest.raises(WorkflowValidationError, match=message):
        Flow().validate()
    with pytest.raises(WorkflowValidationError, match=message):
        Flow().run()


async def test_consumed_but_never_produced_names_the_taker() -> None:
    """An accepted event nobody emits fails validation, unless the step says it comes from outside."""

    class Flow(Workflow):
        @step
        async def start(self, ev: StartEvent) -> StopEvent:
            return StopEvent(result="ok")

        @step
        async def orphan(self, ev: Island) -> StopEvent:
            return StopEvent()

    with pytest.raises(
        WorkflowValidationError,
        match=r"The following events are consumed but never produced: Island\. Add Island "
        r"\(taken by orphan\) to the return annotation.*skip_graph_checks=\['reachability'\]",
    ):
        Flow().validate()

    class FromOutside(Workflow):
        @step
        async def start(self, ev: StartEvent) -> StopEvent:
            return StopEvent(result="ok")

        @step(skip_graph_checks=["reachability"])
        async def orphan(self, ev: Island) -> StopEvent:
            return StopEvent()

    assert FromOutside().validate() is False


async def test_unreachable_steps_are_a_graph_problem() -> None:
    """A step whose events only it produces is unreachable from the start."""

    class Flow(Workflow):
        @step
        async def start(self, ev: StartEvent) -> Ping:
            return Ping()

        @step
        async def finish(self, ev: Ping) -> StopEvent:
            return StopEvent()

        @step
        async def island(self, ev: Island) -> Island | StopEvent:
            return StopEvent()

    with pytest.raises(
        WorkflowValidationError,
        match=r"Graph validation failed:\n  - \[reachability\] Unreachable steps: island\n    "
        r"Steps must be reachable from StartEvent or HumanResponseEvent",
    ):
        Flow().validate()
    assert Flow(skip_graph_checks={"reachability"}).validate() is False


async def test_graph_problems_are_reported_together() -> None:
    """Unreachable and dead-end steps come in one error, each with its check name."""

    class Flow(Workflow):
        @step
        async def entry(self, ev: StartEvent) -> Ping | StopEvent:
            return StopEvent()

        @step
        async def loop1(self, ev: Ping) -> Pong:
            return Pong()

        @step
        async def loop2(self, ev: Pong) -> Ping:
            return Ping()

        @step
        async def island(self, ev: Island) -> Island:
            return Island()

    with pytest.raises(WorkflowValidationError) as caught:
        Flow().validate()
    message = str(caught.value)
    assert message.startswith("Graph validation failed:\n")
    assert "[reachability] Unreachable steps: island" in message
    assert "[dead_end] Dead-end steps: island, loop1, loop2" in message
    assert "Steps must have a path to StopEvent or InputRequiredEvent" in message


async def test_dead_end_can_be_skipped_per_step() -> None:
    """``skip_graph_checks=['dead_end']`` on a step accepts a loop that ends elsewhere."""

    class Flow(Workflow):
        @step
        async def entry(self, ev: StartEvent) -> Ping | StopEvent:
            return Ping()

        @step(skip_graph_checks=["dead_end"])
        async def spin(self, ctx: Context, ev: Ping) -> Pong:
            return Pong()

        @step(skip_graph_checks=["dead_end"])
        async def spun(self, ctx: Context, ev: Pong) -> None:
            return None

    assert Flow().validate() is False


async def test_human_in_the_loop_paths_are_reachable() -> None:
    """Steps fed by HumanResponseEvent are reachable; InputRequiredEvent is a way out."""

    class Flow(Workflow):
        @step
        async def ask(self, ev: StartEvent) -> InputRequiredEvent:
            return InputRequiredEvent(prefix="?")

        @step
        async def answer(self, ev: HumanResponseEvent) -> StopEvent:
            return StopEvent(result=ev.response)

    assert Flow().validate() is True


async def test_no_steps_is_a_configuration_error() -> None:
    """A workflow with no steps at all says how to add them."""
    with pytest.raises(
        WorkflowConfigurationError,
        match=r"Workflow 'Workflow' has no configured steps\. Did you forget to annotate methods "
        r"with @step",
    ):
        Workflow().validate()


async def test_add_step_checks_its_argument() -> None:
    """``add_step`` refuses undecorated functions and names already taken."""

    class Flow(Workflow):
        @step
        def foo_step(self, ev: StartEvent) -> StopEvent:
            return StopEvent()

    def plain(ev: StartEvent) -> None:
        pass

    with pytest.raises(
        WorkflowValidationError,
        match=r"Step function plain is missing the `@step` decorator\. Decorate it with "
        r"@step\(workflow=Flow\)",
    ):
        Flow.add_step(plain)
    with pytest.raises(
        WorkflowValidationError,
        match=r"A step foo_step is already part of this workflow, please choose another name\.",
    ):

        @step(workflow=Flow)
        def foo_step(ev: StartEvent) -> None:
            pass


async def test_step_on_a_free_function_needs_a_workflow() -> None:
    """Bare ``@step`` on a function outside a class body says to pass ``workflow=``."""
    with pytest.raises(
        WorkflowValidationError,
        match=r"To decorate f please pass a workflow class to the @step decorator\. Use "
        r"@step\(workflow=MyWorkflow\)",
    ):

        @step
        def f(ev: Event) -> Event:
            return Event()

    with pytest.raises(WorkflowConfigurationError, match="num_workers must be an integer"):

        @step(workflow=Workflow, num_workers=0.5)  # type: ignore[arg-type]
        def g(ev: Event) -> Event:
            return Event()


async def test_unresolvable_annotation_fails_at_decoration() -> None:
    """A string annotation naming nothing fails where the step is written."""
    with pytest.raises(
        WorkflowValidationError,
        match=r"Failed to resolve type annotations for .*Flow\.start\. Missing name: Nowhere\. "
        r"If you are using 'from __future__ import annotations'",
    ):

        class Flow(Workflow):
            @step
            async def start(self, ev: StartEvent) -> Nowhere:  # type: ignore[name-defined]  # noqa: F821
                return StopEvent()


async def test_local_names_resolve_at_decoration() -> None:
    """Events defined in the enclosing function resolve under postponed annotations."""

    class LocalStop(StopEvent):
        pass

    class Flow(Workflow):
        @step
        async def start(self, ev: StartEvent) -> LocalStop:
            return LocalStop(result="local")

    result: Any = await Flow().run()
    assert isinstance(result, LocalStop) and result.result == "local"


async def test_signature_errors_start_with_llamaindex_wording() -> None:
    """A step without an event parameter or a return annotation: LlamaIndex's sentence, then ours."""
    with pytest.raises(
        WorkflowValidationError,
        match=r"^Step signature must have at least one parameter annotated as type Event\. "
        r"Step lonely has no event parameter\. Add one",
    ):

        class NoEvent(Workflow):
            @step
            async def lonely(self, ctx: Context) -> StopEvent:
                return StopEvent()

    with pytest.raises(
        WorkflowValidationError,
        match=r"^Return types of workflows step functions must be annotated with their type\. "
        r"Step open_ended has no return annotation\.",
    ):

        class NoReturn(Workflow):
            @step
            async def open_ended(self, ev: StartEvent):  # type: ignore[no-untyped-def]
                return StopEvent()
