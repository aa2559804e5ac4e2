"""Resources injected into real runs."""

import asyncio
import json
import threading
from typing import Annotated

import pytest
from batonflow.core import (
    Context,
    Event,
    Resource,
    ResourceError,
    ResourceManager,
    StartEvent,
    StopEvent,
    Workflow,
    retry_policy,
    step,
    stop_after_attempt,
    wait_fixed,
)


class Client:
    """A heavy, unserializable dependency (it holds a lock)."""

    made = 0

    def __init__(self) -> None:
        Client.made += 1
        self.lock = threading.Lock()
        self.calls: list[str] = []


def get_client() -> Client:
    return Client()


class Second(Event):
    pass


class Shared(Workflow):
    @step
    async def first(
        self, ev: StartEvent, client: Annotated[Client, Resource(get_client)]
    ) -> Second:
        client.calls.append("first")
        return Second()

    @step
    async def second(
        self, ctx: Context, ev: Second, client: Annotated[Client, Resource(get_client)]
    ) -> StopEvent:
        client.calls.append("second")
        return StopEvent(result=client)


@pytest.fixture(autouse=True)
def reset_count():
    Client.made = 0


async def test_cached_resource_is_shared_by_steps_and_runs() -> None:
    """One factory call per workflow instance, shared by every step and run."""
    w = Shared()
    a = await w.run()
    b = await w.run()
    assert a is b and a.calls == ["first", "second", "first", "second"]
    assert Client.made == 1
    assert await Shared().run() is not a  # another instance, another client


async def test_uncached_resource_is_fresh_per_injection() -> None:
    """cache=False gives every injection its own object."""

    class Fresh(Workflow):
        @step
        async def first(
            self, ev: StartEvent, c: Annotated[Client, Resource(get_client, cache=False)]
        ) -> Second:
            c.calls.append("first")
            return Second()

        @step
        async def second(
            self, ev: Second, c: Annotated[Client, Resource(get_client, cache=False)]
        ) -> StopEvent:
            return StopEvent(result=c.calls)

    assert await Fresh().run() == []
    assert Client.made == 2


async def test_concurrent_workers_call_the_factory_once() -> None:
    """Eight workers starting at once share one (slow, async) factory call."""
    calls: list[int] = []

    async def slow_client() -> Client:
        calls.append(1)
        await asyncio.sleep(0.01)
        return Client()

    class Job(Event):
        i: int

    class Done(Event):
        client_id: int

    class Fan(Workflow):
        @step
        async def start(self, ctx: Context, ev: StartEvent) -> Job | None:
            for i in range(8):
                ctx.send_event(Job(i=i))
            return None

        @step(num_workers=8)
        async def work(self, ev: Job, c: Annotated[Client, Resource(slow_client)]) -> Done:
            return Done(client_id=id(c))

        @step
        async def gather(self, ctx: Context, ev: Done) -> StopEvent | None:
            got = ctx.collect_events(ev, [Done] * 8)
            return None if got is None else StopEvent(result={e.client_id for e in got})

    assert len(await Fan().run()) == 1
    assert calls == [1]


async def test_failing_factory_fails_the_run_naming_step_and_parameter() -> None:
    """A factory error fails the run with a ResourceError chaining the original."""

    def get_memory() -> Client:
        raise ConnectionError("memory backend down")

    class W(Workflow):
        @step
        async def first_step(
            self, ev: StartEvent, memory: Annotated[Client, Resource(get_memory)]
        ) -> StopEvent:
            return StopEvent(result="unreachable")

    with pytest.raises(
        ResourceError,
        match=r"Resource factory '.*get_memory' failed while injecting parameter 'memory' of step 'first_step': ConnectionError: memory backend down",
    ) as info:
        await W().run()
    assert isinstance(info.value.__cause__, ConnectionError)


async def test_retried_step_calls_a_failed_factory_again() -> None:
    """A factory failure is not cached: the step's retry makes a new attempt."""
    attempts: list[int] = []

    def flaky_factory() -> Client:
        attempts.append(1)
        if len(attempts) == 1:
            raise TimeoutError("slow start")
        return Client()

    class W(Workflow):
        @step(retry_policy=retry_policy(wait=wait_fixed(0), stop=stop_after_attempt(2)))
        async def use(
            self, ev: StartEvent, c: Annotated[Client, Resource(flaky_factory)]
        ) -> StopEvent:
            return StopEvent(result="ok")

    assert await W().run() == "ok"
    assert len(attempts) == 2


async def test_sync_step_gets_resources() -> None:
    """Plain (sync) steps get their resources injected too."""

    class W(Workflow):
        @step
        def use(self, ev: StartEvent, c: Annotated[Client, Resource(get_client)]) -> StopEvent:
            return StopEvent(result=isinstance(c, Client))

    assert await W().run() is True


async def test_resources_never_enter_the_snapshot() -> None:
    """ctx.to_dict() works with unserializable resources in use; none is written."""
    w = Shared()
    handler = w.run()
    await handler
    data = handler.ctx.to_dict()
    assert "Client" not in json.dumps(data)


async def test_shared_resource_manager_across_instances() -> None:
    """Workflow(resource_manager=...) shares cached resources between instances."""
    manager = ResourceManager()
    a = await Shared(resource_manager=manager).run()
    b = await Shared(resource_manager=manager).run()
    assert a is b and Client.made == 1
