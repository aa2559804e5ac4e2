"""``Workflow.validate(validate_resource_configs=..., validate_resources=...)``."""

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
from pydantic import BaseModel

CALLS: list[str] = []


class LLMConfig(BaseModel):
    model: str
    temperature: float = 0.0


def make_client() -> dict[str, str]:
    CALLS.append("client")
    return {"client": "ok"}


def broken_client() -> dict[str, str]:
    raise ConnectionError("no API key")


def config_flow(path: Path) -> Workflow:
    class Configured(Workflow):
        @step
        async def answer(
            self,
            ev: StartEvent,
            cfg: Annotated[LLMConfig, ResourceConfig(path, path_selector="llm")],
        ) -> StopEvent:
            return StopEvent(result=cfg.model)

    return Configured()


async def test_resource_configs_are_checked_by_default(tmp_path: Path) -> None:
    """A missing or invalid config file fails validate(), naming the step and parameter."""
    path = tmp_path / "settings.json"
    with pytest.raises(
        WorkflowValidationError,
        match=r"(?s)^Resource validation of Configured failed:\n  - step 'answer', parameter "
        r"'cfg': No such file: .*settings\.json \(the config_file of ResourceConfig",
    ):
        config_flow(path).validate()
    path.write_text(json.dumps({"llm": {"temperature": 1}}))
    with pytest.raises(WorkflowValidationError, match=r"does not fit LLMConfig: 1 error"):
        config_flow(path).validate()
    assert config_flow(path).validate(validate_resource_configs=False) is False
    path.write_text(json.dumps({"llm": {"model": "small"}}))
    assert config_flow(path).validate() is False
    assert await config_flow(path).run() == "small"


async def test_resource_factories_are_called_only_when_asked() -> None:
    """``validate_resources=True`` calls each factory once (not cached for the runs)."""

    class Clients(Workflow):
        @step
        async def use(
            self, ev: StartEvent, client: Annotated[dict[str, str], Resource(make_client)]
        ) -> StopEvent:
            return StopEvent(result=client["client"])

    CALLS.clear()
    w = Clients()
    assert w.validate() is False
    assert CALLS == []
    assert w.validate(validate_resources=True) is False  # inside a running loop: fine
    assert CALLS == ["client"]
    assert await w.run() == "ok"
    assert CALLS == ["client", "client"]  # the run made its own


async def test_failing_factory_is_reported_by_validate() -> None:
    """A factory that raises fails validation, listing the parameter and the error."""

    class Broken(Workflow):
        @step
        async def use(
            self, ev: StartEvent, client: Annotated[dict[str, str], Resource(broken_client)]
        ) -> StopEvent:
            return StopEvent(result="never")

    Broken().validate()
    with pytest.raises(
        WorkflowValidationError,
        match=r"(?s)^Resource validation of Broken failed:\n  - step 'use', parameter 'client': "
        r".*broken_client.*ConnectionError: no API key",
    ):
        Broken().validate(validate_resources=True)
