"""The resource checks of ``Workflow.validate()``: configs loaded, or factories called once."""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Coroutine
from typing import Any

from ..errors import WorkflowConfigurationError
from .resource import ResourceManager, nested_configs
from .step import StepParam


async def _resolve_all(wanted: list[tuple[str, StepParam]]) -> list[str]:
    manager = ResourceManager()  # throwaway: validation must not cache for the runs
    problems: list[str] = []
    for step_name, param in wanted:
        try:
            await manager.resolve(
                param.resource,
                step_name=step_name,
                param_name=param.name,
                annotation=param.annotation,
                localns=param.localns,
            )
        except Exception as exc:
            problems.append(f"step '{step_name}', parameter '{param.name}': {exc}")
    return problems


def _config_problems(step_name: str, param: StepParam) -> list[str]:
    """Load every ``ResourceConfig`` the parameter reads, its factories' own ones included."""
    where = f"step '{step_name}', parameter '{param.name}'"
    problems = []
    for path, config, annotation in nested_configs(param.resource, param.annotation, param.localns):
        via = f" (via {' -> '.join(path)})" if path else ""
        try:
            config.load(annotation)
        except WorkflowConfigurationError as exc:
            problems.append(f"{where}{via}: {exc}")
    return problems


def _in_own_loop(coro: Coroutine[Any, Any, list[str]]) -> list[str]:
    """Run ``coro`` to the end in a fresh event loop (in a thread when one is running)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def resource_problems(wanted: list[tuple[str, StepParam]], *, call_factories: bool) -> list[str]:
    """What is wrong with the resources of the ``(step name, parameter)`` pairs in ``wanted``.

    Args:
        wanted: The resource parameters to check.
        call_factories: Call every factory once (with a throwaway manager, nothing cached for
            the runs); otherwise only load every ``ResourceConfig`` they read.

    Returns:
        One line per failing parameter, naming the step, the parameter and the reason.
    """
    if call_factories:
        return _in_own_loop(_resolve_all(wanted))
    problems: list[str] = []
    for step_name, param in wanted:
        problems.extend(_config_problems(step_name, param))
    return problems
