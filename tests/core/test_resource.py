"""Resources: factories run once per manager, shared, recursive, with clear errors."""

import asyncio
import json
from pathlib import Path
from typing import Annotated

import pytest
from batonflow.core.errors import ResourceCycleError, ResourceError, WorkflowConfigurationError
from batonflow.core.resource import (
    Resource,
    ResourceConfig,
    ResourceManager,
    resource_params,
)
from pydantic import BaseModel


class Client:
    def __init__(self, tag: str = "c") -> None:
        self.tag = tag


class Counter:
    """Counts calls of the factories that use it."""

    def __init__(self) -> None:
        self.calls = 0


async def resolve(manager: ResourceManager, res, annotation=object, step="s", param="p"):
    return await manager.resolve(res, step_name=step, param_name=param, annotation=annotation)


async def test_cached_factory_runs_once_per_manager() -> None:
    """A cached factory is called once and its result shared by every step."""
    calls = Counter()

    def make() -> Client:
        calls.calls += 1
        return Client()

    manager = ResourceManager()
    a = await resolve(manager, Resource(make), step="first")
    b = await resolve(manager, Resource(make), step="second")
    assert a is b and calls.calls == 1


async def test_each_manager_has_its_own_cache() -> None:
    """Two workflow instances (two managers) get two objects."""

    def make() -> Client:
        return Client()

    one = await resolve(ResourceManager(), Resource(make))
    two = await resolve(ResourceManager(), Resource(make))
    assert one is not two


async def test_uncached_factory_makes_fresh_objects() -> None:
    """cache=False calls the factory at every injection."""

    def make() -> Client:
        return Client()

    manager = ResourceManager()
    res = Resource(make, cache=False)
    assert await resolve(manager, res) is not await resolve(manager, res)


async def test_async_factory_is_awaited() -> None:
    """An async factory's result is awaited before injection."""

    async def make() -> Client:
        await asyncio.sleep(0)
        return Client("async")

    assert (await resolve(ResourceManager(), Resource(make))).tag == "async"


async def test_concurrent_first_use_calls_factory_once() -> None:
    """Many steps resolving a cached resource at once share one factory call."""
    calls = Counter()

    async def make() -> Client:
        calls.calls += 1
        await asyncio.sleep(0.01)
        return Client()

    manager = ResourceManager()
    results = await asyncio.gather(
        *(resolve(manager, Resource(make), step=f"s{i}") for i in range(20))
    )
    assert calls.calls == 1
    assert all(r is results[0] for r in results)


async def test_factory_dependencies_are_injected() -> None:
    """A factory's own Annotated[..., Resource(...)] parameters are resolved (and shared)."""
    calls = Counter()

    def make_client() -> Client:
        calls.calls += 1
        return Client("base")

    async def make_service(client: Annotated[Client, Resource(make_client)]) -> dict:
        return {"client": client}

    manager = ResourceManager()
    service = await resolve(manager, Resource(make_service))
    direct = await resolve(manager, Resource(make_client))
    assert service["client"] is direct and calls.calls == 1


async def test_dependency_cycle_is_reported() -> None:
    """Factories that depend on each other raise a ResourceCycleError (a ValueError) naming the cycle."""

    def make_a(b: Annotated[object, Resource(lambda: None)]) -> object:  # replaced below
        return b

    def make_b(a: Annotated[object, Resource(make_a)]) -> object:
        return a

    make_a.__annotations__["b"] = Annotated[object, Resource(make_b)]
    with pytest.raises(
        ResourceCycleError,
        match=r"^Circular resource dependency detected: .*make_a -> .*make_b -> .*make_a "
        r"\(injecting .*\)\. Break the cycle so that no factory depends on itself\.$",
    ) as info:
        await resolve(ResourceManager(), Resource(make_a))
    assert isinstance(info.value, ValueError) and isinstance(info.value, ResourceError)


async def test_failing_factory_names_resource_step_and_parameter() -> None:
    """A factory that raises becomes a ResourceError naming factory, step and parameter."""

    def get_memory() -> Client:
        raise ConnectionError("db down")

    with pytest.raises(
        ResourceError,
        match=r"Resource factory '.*get_memory' failed while injecting parameter 'memory' of step 'first_step': ConnectionError: db down",
    ) as info:
        await resolve(ResourceManager(), Resource(get_memory), step="first_step", param="memory")
    assert isinstance(info.value.__cause__, ConnectionError)


async def test_failing_dependency_names_the_chain() -> None:
    """A failing nested factory is named together with the factory that needed it."""

    def broken() -> Client:
        raise ValueError("nope")

    def outer(c: Annotated[Client, Resource(broken)]) -> Client:
        return c

    with pytest.raises(ResourceError, match=r"'.*broken' \(needed by .*outer\) failed"):
        await resolve(ResourceManager(), Resource(outer))


async def test_failed_factory_is_retried_on_next_use() -> None:
    """A failure is not cached: the next injection calls the factory again."""
    calls = Counter()

    def flaky() -> Client:
        calls.calls += 1
        if calls.calls == 1:
            raise RuntimeError("first time fails")
        return Client()

    manager = ResourceManager()
    with pytest.raises(ResourceError):
        await resolve(manager, Resource(flaky))
    assert isinstance(await resolve(manager, Resource(flaky)), Client)
    assert calls.calls == 2


async def test_concurrent_waiters_see_the_failure_with_their_own_step() -> None:
    """Steps waiting on a failing shared factory each get a ResourceError naming their step."""

    async def slow_fail() -> Client:
        await asyncio.sleep(0.01)
        raise RuntimeError("late failure")

    manager = ResourceManager()
    results = await asyncio.gather(
        resolve(manager, Resource(slow_fail), step="a"),
        resolve(manager, Resource(slow_fail), step="b"),
        return_exceptions=True,
    )
    assert all(isinstance(r, ResourceError) for r in results)
    assert "of step 'a'" in str(results[0]) and "of step 'b'" in str(results[1])
    assert all(isinstance(r.__cause__, RuntimeError) for r in results)


async def test_resource_needs_a_callable() -> None:
    """Resource(non-callable) is a TypeError saying what to pass."""
    with pytest.raises(
        TypeError, match=r"Resource\(\) needs a callable factory.*Resource\(make_client\)"
    ):
        Resource(42)  # type: ignore[arg-type]


async def test_resource_params_reads_annotated_parameters() -> None:
    """resource_params finds Annotated Resource/ResourceConfig parameters and their types."""

    class Cfg(BaseModel):
        x: int = 0

    def make() -> Client:
        return Client()

    res = Resource(make)
    cfg = ResourceConfig("c.json")

    async def my_step(
        ev: int, client: Annotated[Client, res], cfg_: Annotated[Cfg, cfg], n: int = 1
    ) -> None:
        return None

    params = resource_params(my_step)
    assert list(params) == ["client", "cfg_"]
    assert params["client"].annotation is Client and params["client"].descriptor is res
    assert params["cfg_"].descriptor is cfg


async def test_resolve_all_resolves_a_steps_parameters() -> None:
    """resolve_all returns a kwargs dict for one step execution."""

    def make() -> Client:
        return Client("x")

    async def my_step(client: Annotated[Client, Resource(make)]) -> None:
        return None

    kwargs = await ResourceManager().resolve_all(resource_params(my_step), step_name="my_step")
    assert kwargs["client"].tag == "x"


async def test_seed_style_factory_with_star_args() -> None:
    """A factory taking *args, **kwargs (as in the seed) is called with none."""

    def get_memory(*args, **kwargs) -> dict:
        return {"args": args, "kwargs": kwargs}

    assert await resolve(ResourceManager(), Resource(get_memory)) == {"args": (), "kwargs": {}}


def module_factory() -> Client:
    return Client("module")


async def test_string_annotations_resolve_module_level_names() -> None:
    """String annotations (from __future__ import annotations) are evaluated in the module."""

    def my_step(client: "Annotated[Client, Resource(module_factory)]") -> None:
        return None

    params = resource_params(my_step)
    assert params["client"].descriptor.factory is module_factory


async def test_unresolvable_resource_annotation_is_a_clear_error() -> None:
    """A string annotation naming an unknown factory says how to fix it."""

    def my_step(client: "Annotated[Client, Resource(nowhere_defined)]", x: "Unknown") -> None:  # noqa: F821
        return None

    with pytest.raises(
        WorkflowConfigurationError,
        match=r"parameter 'client' .*NameError.*define the names it uses before the workflow class",
    ):
        resource_params(my_step)


class LLMConfig(BaseModel):
    model: str
    temperature: float = 0.0


def write_config(tmp_path: Path) -> Path:
    path = tmp_path / "config.json"
    path.write_text(
        json.dumps(
            {"models": {"chat": {"model": "gpt-x", "temperature": 0.5}}, "list": [{"model": "m0"}]}
        )
    )
    return path


async def test_resource_config_loads_selected_path(tmp_path: Path) -> None:
    """ResourceConfig validates the value at path_selector into the annotated model."""
    cfg = ResourceConfig(write_config(tmp_path), path_selector="models.chat")
    value = await resolve(ResourceManager(), cfg, annotation=LLMConfig)
    assert value == LLMConfig(model="gpt-x", temperature=0.5)


async def test_resource_config_selects_list_items(tmp_path: Path) -> None:
    """path_selector indexes lists with integers."""
    cfg = ResourceConfig(write_config(tmp_path), path_selector="list.0")
    assert (await resolve(ResourceManager(), cfg, annotation=LLMConfig)).model == "m0"


async def test_resource_config_is_cached(tmp_path: Path) -> None:
    """A config is loaded once per manager and shared."""
    cfg = ResourceConfig(write_config(tmp_path), path_selector="models.chat")
    manager = ResourceManager()
    first = await resolve(manager, cfg, annotation=LLMConfig)
    assert await resolve(manager, cfg, annotation=LLMConfig) is first


@pytest.mark.parametrize(
    ("selector", "annotation", "content", "match"),
    [
        pytest.param(
            "models.chat",
            LLMConfig,
            None,
            r"^No such file: .*config\.json \(the config_file of ResourceConfig\(.*\)\); create "
            r"it or fix config_file\.$",
            id="missing-file",
        ),
        pytest.param(
            "models.chat",
            LLMConfig,
            "{not json",
            r"is not readable JSON .*fix the file",
            id="bad-json",
        ),
        pytest.param(
            "models.nope",
            LLMConfig,
            "",
            r"has no 'nope' on path 'models.nope'; fix path_selector",
            id="bad-path",
        ),
        pytest.param(
            "models",
            LLMConfig,
            "",
            r"does not fit LLMConfig: .*model: Field required; fix the file",
            id="invalid",
        ),
        pytest.param(
            "models.chat",
            dict,
            "",
            r"not a pydantic model; annotate the parameter with a BaseModel",
            id="not-model",
        ),
    ],
)
async def test_resource_config_errors(tmp_path: Path, selector, annotation, content, match) -> None:
    """Bad config files, paths and annotations are clear configuration errors."""
    path = write_config(tmp_path)
    if content is None:
        path.unlink()
    elif content:
        path.write_text(content)
    cfg = ResourceConfig(path, path_selector=selector)
    with pytest.raises(WorkflowConfigurationError, match=match):
        cfg.load(annotation)
    with pytest.raises(ResourceError, match=r"ResourceConfig.* of step 's'") as info:
        await resolve(ResourceManager(), cfg, annotation=annotation)
    assert isinstance(info.value.__cause__, WorkflowConfigurationError)
    # A missing file is also a FileNotFoundError, at load() and when a step needs it.
    assert isinstance(info.value, FileNotFoundError) is (content is None)


async def test_resource_config_name_prefers_label(tmp_path: Path) -> None:
    """name is the label when given, else file:path."""
    assert ResourceConfig("a.json", path_selector="x", label="LLM").name == "LLM"
    assert ResourceConfig("a.json", path_selector="x").name == "a.json:x"
    assert ResourceConfig("a.json").name == "a.json"


async def test_cached_lists_made_resources() -> None:
    """cached() names the resources made so far."""

    def make_thing() -> Client:
        return Client()

    manager = ResourceManager()
    thing = await resolve(manager, Resource(make_thing))
    assert list(manager.cached().values()) == [thing]
    assert next(iter(manager.cached())).endswith("make_thing")
