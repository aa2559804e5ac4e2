"""Resources whose factories take resources, defined in local scopes, under postponed annotations.

This module uses ``from __future__ import annotations`` on purpose: every annotation below is a
string that batonflow has to resolve, most of them naming classes local to the test function.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import pytest
from batonflow.core import (
    Resource,
    ResourceConfig,
    StartEvent,
    StopEvent,
    Workflow,
    WorkflowValidationError,
    step,
)
from batonflow.core.errors import ResourceCycleError, ResourceError, ResourceFileNotFoundError
from pydantic import BaseModel
from resource_factories import settings_factory


async def test_local_factories_taking_local_resources() -> None:
    """A factory defined in a test function may take a resource of a class local to it."""

    class Connection:
        def __init__(self, host: str) -> None:
            self.host = host

    class Repository:
        def __init__(self, db: Connection) -> None:
            self.db = db

    def connect() -> Connection:
        return Connection("localhost")

    def repository(db: Annotated[Connection, Resource(connect)]) -> Repository:
        return Repository(db)

    class Flow(Workflow):
        @step
        async def use(
            self, ev: StartEvent, repo: Annotated[Repository, Resource(repository)]
        ) -> StopEvent:
            return StopEvent(result=repo.db.host)

    assert await Flow().run() == "localhost"


async def test_nested_cache_settings_are_each_honoured() -> None:
    """A cached factory under an uncached one runs once; the uncached one runs per execution."""
    calls = {"db": 0, "repo": 0}

    class Db: ...

    def db() -> Db:
        calls["db"] += 1
        return Db()

    def repo(conn: Annotated[Db, Resource(db)]) -> list[Db]:
        calls["repo"] += 1
        return [conn]

    class Flow(Workflow):
        @step
        async def use(
            self, ev: StartEvent, r: Annotated[list[Db], Resource(repo, cache=False)]
        ) -> StopEvent:
            return StopEvent(result=r[0])

    flow = Flow()
    first, second = await flow.run(), await flow.run()
    assert first is second
    assert calls == {"db": 1, "repo": 2}


async def test_uncached_dependency_is_made_once_per_execution() -> None:
    """Two resources of one step that need the same uncached one share it; the next run does not."""
    made: list[object] = []

    class Scratch: ...

    def scratch() -> Scratch:
        made.append(Scratch())
        return made[-1]

    def left(s: Annotated[Scratch, Resource(scratch, cache=False)]) -> Scratch:
        return s

    def right(s: Annotated[Scratch, Resource(scratch, cache=False)]) -> Scratch:
        return s

    class Flow(Workflow):
        @step
        async def use(
            self,
            ev: StartEvent,
            a: Annotated[Scratch, Resource(left, cache=False)],
            b: Annotated[Scratch, Resource(right, cache=False)],
        ) -> StopEvent:
            return StopEvent(result=a is b)

    flow = Flow()
    assert await flow.run() is True and await flow.run() is True
    assert len(made) == 2


async def test_a_cycle_fails_the_run_with_the_chain() -> None:
    """Factories that need each other fail the run with a ValueError naming the chain."""

    class A: ...

    def make_a(b: Annotated[A, Resource(lambda: None)]) -> A:
        return A()

    def make_b(a: Annotated[A, Resource(make_a)]) -> A:
        return A()

    make_a.__annotations__["b"] = Annotated[A, Resource(make_b)]

    class Flow(Workflow):
        @step
        async def use(self, ev: StartEvent, a: Annotated[A, Resource(make_a)]) -> StopEvent:
            return StopEvent()

    with pytest.raises(
        ValueError,
        match=r"Circular resource dependency detected: .*make_a -> "
        r".*make_b -> .*make_a \(injecting parameter 'a' of step 'use'\)",
    ) as info:
        await Flow().run()
    assert isinstance(info.value, ResourceCycleError)
    with pytest.raises(WorkflowValidationError, match=r"step 'use', parameter 'a': Circular"):
        Flow().validate(validate_resources=True)


async def test_config_file_is_read_when_the_step_runs(tmp_path: Path) -> None:
    """A workflow may be defined before its config file exists; the run reads it when needed."""
    path = tmp_path / "llm.json"

    class LLM(BaseModel):
        model: str

    class Flow(Workflow):
        @step
        async def use(
            self, ev: StartEvent, llm: Annotated[LLM, ResourceConfig(config_file=path)]
        ) -> StopEvent:
            return StopEvent(result=llm.model)

    flow = Flow()
    with pytest.raises(
        FileNotFoundError,
        match=rf"^No such file: {path}, the config_file of ResourceConfig\('.*'\) for parameter "
        r"'llm' of step 'use'\. Create the file \(it is read again at the next run\)",
    ) as info:
        await flow.run()
    assert isinstance(info.value, ResourceFileNotFoundError)
    path.write_text(json.dumps({"model": "small"}))
    assert await flow.run() == "small"


async def test_factory_annotations_resolve_in_the_factorys_module(tmp_path: Path) -> None:
    """A local class named like the factory module's one does not replace it."""
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"name": "from-file"}))

    class Settings:  # same name as resource_factories.Settings: must not be used
        wrong = True

    class Flow(Workflow):
        @step
        async def use(
            self, ev: StartEvent, got: Annotated[dict, settings_factory(str(path))]
        ) -> StopEvent:
            return StopEvent(result=got)

    assert await Flow().run() == {"name": "from-file", "type": "Settings"}
    assert Settings.wrong


class FileData(BaseModel):
    file: str
    mode: str


async def test_validate_reaches_configs_inside_factories(tmp_path: Path) -> None:
    """validate() loads the configs factories read, naming the way there, without calling them."""
    path = tmp_path / "data.json"
    path.write_text(json.dumps({"file": "a.txt"}))  # no "mode"
    called: list[str] = []

    def operator(data: Annotated[FileData, ResourceConfig(config_file=path)]) -> str:
        called.append("operator")
        return data.file

    def service(op: Annotated[str, Resource(operator)]) -> str:
        called.append("service")
        return op

    class Flow(Workflow):
        @step
        async def use(self, ev: StartEvent, s: Annotated[str, Resource(service)]) -> StopEvent:
            return StopEvent(result=s)

    with pytest.raises(
        WorkflowValidationError,
        match=r"(?s)step 'use', parameter 's' \(via .*service -> .*operator\): Config at "
        r".*data\.json' does not fit FileData: .*mode: Field required",
    ):
        Flow().validate()
    assert called == []
    path.write_text(json.dumps({"file": "a.txt", "mode": "r"}))
    Flow().validate()
    assert await Flow().run() == "a.txt"


async def test_validate_leaves_unresolvable_factory_annotations_to_the_run() -> None:
    """A factory annotation naming something undefined passes validate() and fails the run clearly."""

    def needs_ghost(g: Annotated[int, Resource(ghost_factory)]) -> int:  # noqa: F821
        return g

    class Flow(Workflow):
        @step
        async def use(self, ev: StartEvent, n: Annotated[int, Resource(needs_ghost)]) -> StopEvent:
            return StopEvent(result=n)

    Flow().validate()
    with pytest.raises(ResourceError, match=r"needs_ghost.*NameError: name 'ghost_factory'"):
        await Flow().run()
