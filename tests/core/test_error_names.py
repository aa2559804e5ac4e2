"""Errors raised when a run starts carry LlamaIndex's class names, and batonflow's classes."""

import copy
import pickle
from collections.abc import Callable
from typing import Any

import pytest
from batonflow.core import (
    Context,
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


class Topic(StartEvent):
    topic: str


class Typed(Workflow):
    @step
    async def go(self, ev: Topic) -> StopEvent:
        return StopEvent(result=ev.topic)


class Plain(Workflow):
    @step
    async def go(self, ctx: Context, ev: StartEvent) -> StopEvent:
        return StopEvent(result="ok")


@pytest.mark.parametrize(
    ("start", "name", "also"),
    [
        pytest.param(
            lambda: Typed().run(),
            "WorkflowRuntimeError",
            (StartEventError, WorkflowRuntimeError, ValueError),
            id="missing-field",
        ),
        pytest.param(
            lambda: Typed().run(topic=3),
            "WorkflowRuntimeError",
            (StartEventError, WorkflowRuntimeError, ValueError),
            id="wrong-field-type",
        ),
        pytest.param(
            lambda: Typed().run(start_event={"topic": "a"}),
            "ValueError",
            (StartEventError, ValueError),
            id="start-event-not-an-event",
        ),
        pytest.param(
            lambda: Plain(num_concurrent_runs=0),
            "WorkflowValidationError",
            (WorkflowConfigurationError, WorkflowValidationError),
            id="num-concurrent-runs",
        ),
    ],
)
async def test_run_start_errors_have_llama_index_names(
    start: Callable[[], Any], name: str, also: tuple[type[BaseException], ...]
) -> None:
    """``type(e).__name__`` is LlamaIndex's; batonflow's own classes still catch it."""
    with pytest.raises(BaseException) as info:
        start()
    error = info.value
    assert type(error).__name__ == name
    assert all(isinstance(error, cls) for cls in also)
    assert repr(error).startswith(f"{name}(")


async def test_send_event_to_a_missing_step_is_a_workflow_runtime_error() -> None:
    """``ctx.send_event(ev, step="nope")`` raises what LlamaIndex names WorkflowRuntimeError."""
    handler = Plain().run()
    with pytest.raises(WorkflowStepDoesNotExistError, match="Step nope does not exist") as info:
        handler.ctx.send_event(StartEvent(), step="nope")
    assert type(info.value).__name__ == "WorkflowRuntimeError"
    assert await handler == "ok"


async def test_renamed_errors_pickle_and_copy() -> None:
    """The renamed classes survive pickle and copy (a failed run's error is often stored)."""
    with pytest.raises(StartEventError) as info:
        Typed().run()
    for again in (pickle.loads(pickle.dumps(info.value)), copy.copy(info.value)):
        assert type(again) is type(info.value)
        assert str(again) == str(info.value)


async def test_a_missing_state_key_is_also_a_value_error() -> None:
    """``except ValueError`` written for LlamaIndex's ``ctx.store.get`` still catches it."""
    from batonflow.core import StateKeyError

    ctx = Context(Plain())
    with pytest.raises(ValueError, match="Key 'nope' is not in the state store") as info:
        await ctx.store.get("nope")
    assert isinstance(info.value, KeyError | StateKeyError)
