"""Bad workflows and bad input get clear errors that name the thing and the fix."""

from __future__ import annotations

import pydantic
import pytest
from batonflow.core import (
    Context,
    Event,
    HumanResponseEvent,
    InputRequiredEvent,
    StartEvent,
    StartEventError,
    StopEvent,
    Workflow,
    WorkflowConfigurationError,
    WorkflowRuntimeError,
    WorkflowStepDoesNotExistError,
    WorkflowValidationError,
    step,
)


class AEvent(Event):
    pass


class BEvent(Event):
    pass


async def test_step_parameter_without_annotation() -> None:
    """A step whose event parameter has no annotation fails at decoration time."""
    with pytest.raises(
        WorkflowValidationError,
        match=r"Step bad parameter 'ev' has no type annotation.*ev: StartEvent",
    ):

        class W(Workflow):
            @step
            async def bad(self, ev) -> StopEvent:  # type: ignore[no-untyped-def]
                return StopEvent()


async def test_step_without_return_annotation() -> None:
    """A step without a return annotation is rejected with the fix."""
    with pytest.raises(
        WorkflowValidationError, match=r"Step bad has no return annotation.*-> None"
    ):

        class W(Workflow):
            @step
            async def bad(self, ev: StartEvent):  # type: ignore[no-untyped-def]
                return StopEvent()


async def test_non_event_parameter_annotation() -> None:
    """A parameter annotated with a non-Event type is rejected."""
    with pytest.raises(
        WorkflowValidationError,
        match=r"Step bad parameter 'ev' is annotated str, which is not an Event",
    ):

        class W(Workflow):
            @step
            async def bad(self, ev: str) -> StopEvent:
                return StopEvent()


async def test_non_event_return_annotation() -> None:
    """A return annotation naming a non-Event is rejected."""
    with pytest.raises(
        WorkflowValidationError,
        match=r"Step bad return annotation .* names str, which is not an Event",
    ):

        class W(Workflow):
            @step
            async def bad(self, ev: StartEvent) -> str:
                return "x"


async def test_no_start_event_consumer() -> None:
    """A workflow with no step accepting StartEvent fails when it is created."""

    class W(Workflow):
        @step
        async def only(self, ev: AEvent) -> StopEvent:
            return StopEvent()

    with pytest.raises(
        WorkflowConfigurationError,
        match=r"At least one Event of type StartEvent must be received by any step\. "
        r"\(Workflow 'W' has no @step that accepts StartEvent\.\) Add a step",
    ):
        W()


async def test_no_stop_event_producer() -> None:
    """A workflow with no step producing StopEvent fails before running."""

    class W(Workflow):
        @step
        async def only(self, ev: StartEvent) -> AEvent:
            return AEvent()

        @step
        async def sink(self, ev: AEvent) -> None:
            return None

    with pytest.raises(
        WorkflowConfigurationError,
        match=r"At least one Event of type StopEvent must be returned by any step\. "
        r"\(Workflow 'W' has no @step that returns StopEvent\.\) Add StopEvent",
    ):
        W()


async def test_event_nobody_accepts() -> None:
    """An emitted event with no accepting step names the step and event."""

    class W(Workflow):
        @step
        async def only(self, ev: StartEvent) -> AEvent | StopEvent:
            return StopEvent()

    with pytest.raises(
        WorkflowValidationError,
        match=r"The following events are produced but never consumed: AEvent\. Add a step that "
        r"takes `ev: AEvent`, or remove AEvent from the return annotation of only\.",
    ):
        W().validate()


async def test_event_nobody_produces() -> None:
    """A step accepting an event no step produces names the step and event."""

    class W(Workflow):
        @step
        async def first(self, ev: StartEvent) -> StopEvent:
            return StopEvent()

        @step
        async def orphan(self, ev: BEvent) -> StopEvent:
            return StopEvent()

    with pytest.raises(
        WorkflowValidationError,
        match=r"The following events are consumed but never produced: BEvent\. Add BEvent "
        r"\(taken by orphan\) to the return annotation",
    ):
        W().run()


async def test_human_events_are_exempt_and_validate_reports_hitl() -> None:
    """HumanResponseEvent needs no producer, InputRequiredEvent no consumer; validate() says HITL."""

    class W(Workflow):
        @step
        async def ask(self, ev: StartEvent) -> InputRequiredEvent:
            return InputRequiredEvent(prefix="?")

        @step
        async def answer(self, ev: HumanResponseEvent) -> StopEvent:
            return StopEvent(result=ev.response)

    assert W().validate() is True


async def test_different_state_types_are_rejected() -> None:
    """Two steps declaring different typed states is a validation error."""

    class S1(pydantic.BaseModel):
        a: int = 0

    class S2(pydantic.BaseModel):
        b: int = 0

    class W(Workflow):
        @step
        async def first(self, ctx: Context[S1], ev: StartEvent) -> AEvent:
            return AEvent()

        @step
        async def second(self, ctx: Context[S2], ev: AEvent) -> StopEvent:
            return StopEvent()

    with pytest.raises(
        WorkflowValidationError,
        match=r"not in a compatible inheritance hierarchy.*first: Context\[S1\], second: "
        r"Context\[S2\]\)\. Annotate the steps with one Context\[Model\]",
    ):
        W().run()


async def test_disable_validation_skips_checks() -> None:
    """``disable_validation=True`` runs a workflow the checks would refuse."""

    class W(Workflow):
        @step
        async def only(self, ev: StartEvent) -> AEvent | StopEvent:
            return StopEvent(result="ran")

    assert await W(disable_validation=True).run() == "ran"


async def test_unknown_field_on_typed_start_event() -> None:
    """``run()`` with a field the typed StartEvent lacks raises a pydantic error naming it."""

    class MyStart(StartEvent):
        topic: str

    class W(Workflow):
        @step
        async def only(self, ev: MyStart) -> StopEvent:
            return StopEvent(result=ev.topic)

    with pytest.raises(
        StartEventError,
        match=r"Failed creating a start event of type 'MyStart' with the keyword arguments: "
        r"\{'tpoic': 'typo'\}\. "
        r"MyStart rejected the fields given to W\.run\(\): tpoic: Extra inputs are not "
        r"permitted\. Its fields are: topic=\.\.\.; fix the keyword arguments\.",
    ) as caught:
        W().run(tpoic="typo")
    # Still a ValueError, with pydantic's error chained and its error list at hand.
    assert isinstance(caught.value, ValueError)
    assert isinstance(caught.value.__cause__, pydantic.ValidationError)
    assert caught.value.errors()[0]["loc"] == ("tpoic",)
    with pytest.raises(StartEventError, match=r"topic: Field required"):
        W().run()
    with pytest.raises(StartEventError, match=r"topic: Input should be a valid string"):
        W().run(topic=3)
    assert await W().run(topic="ok") == "ok"


async def test_step_returning_non_event_fails_the_run() -> None:
    """A step returning something other than an Event fails the run with a clear error."""

    class W(Workflow):
        @step
        async def only(self, ev: StartEvent) -> StopEvent:
            return "oops"  # type: ignore[return-value]

    with pytest.raises(
        WorkflowRuntimeError,
        match=r"Step function only returned str instead of an Event instance\. It returned "
        r"'oops'; a step must return an Event, a list of events, or None",
    ):
        await W().run()


async def test_send_event_to_unknown_step() -> None:
    """``send_event(step=...)`` naming no step raises WorkflowStepDoesNotExistError."""

    class W(Workflow):
        @step
        async def only(self, ctx: Context, ev: StartEvent) -> StopEvent:
            ctx.send_event(AEvent(), step="nope")
            return StopEvent()

    with pytest.raises(
        WorkflowStepDoesNotExistError,
        match=r"Step nope does not exist\. W has no step 'nope'; its steps are: only\. Pass",
    ):
        await W().run()


async def test_bad_options() -> None:
    """Non-positive num_workers/timeouts are configuration errors."""
    with pytest.raises(
        WorkflowConfigurationError, match="num_workers must be an integer greater than 0"
    ):
        step(num_workers=0)
    with pytest.raises(WorkflowConfigurationError, match="timeout must be a positive number"):
        Workflow(timeout=0)
    with pytest.raises(WorkflowConfigurationError, match="has no next"):
        step(retry_policy=object())  # type: ignore[arg-type]


async def test_start_event_of_wrong_type() -> None:
    """``start_event=`` must be a StartEvent."""

    class W(Workflow):
        @step
        async def only(self, ev: StartEvent) -> StopEvent:
            return StopEvent()

    with pytest.raises(
        ValueError,
        match=r"The 'start_event' argument must be an instance of 'StartEvent'; got AEvent\. "
        r"Pass an instance of StartEvent",
    ):
        W().run(start_event=AEvent())  # type: ignore[arg-type]
    with pytest.raises(StartEventError, match="must be an instance of 'StartEvent'; got dict"):
        W().run(start_event={"topic": "x"})  # type: ignore[arg-type]


def test_run_outside_an_event_loop() -> None:
    """``run()`` outside async code says how to call it."""

    class W(Workflow):
        @step
        async def only(self, ev: StartEvent) -> StopEvent:
            return StopEvent()

    with pytest.raises(
        WorkflowRuntimeError, match=r"needs a running event loop.*asyncio\.run\(main\(\)\)"
    ):
        W().run()


async def test_skip_graph_checks() -> None:
    """``skip_graph_checks`` on the workflow or a step lets intentional patterns validate."""

    class Dangling(Workflow):
        @step
        async def only(self, ev: StartEvent) -> AEvent | StopEvent:
            return StopEvent(result="ok")

    assert await Dangling(skip_graph_checks={"terminal_event"}).run() == "ok"

    class FromOutside(Workflow):
        @step
        async def first(self, ev: StartEvent) -> StopEvent:
            return StopEvent(result="ok")

        @step(skip_graph_checks=["reachability"])
        async def external(self, ev: BEvent) -> StopEvent:
            return StopEvent()

    assert await FromOutside().run() == "ok"
    with pytest.raises(
        WorkflowConfigurationError,
        match=r"Unknown graph check names: nope\. Valid names are: dead_end, reachability, "
        r"terminal_event; fix skip_graph_checks\.",
    ):
        Workflow(skip_graph_checks={"nope"})
    with pytest.raises(WorkflowConfigurationError, match="runtime="):
        Workflow(runtime=object())
