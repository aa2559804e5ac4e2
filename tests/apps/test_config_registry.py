"""Settings (flags > environment > defaults), --set parsing and finding flows by name."""

from __future__ import annotations

from pathlib import Path

import pytest
from batonflow.apps.config import ConfigError, Settings
from batonflow.apps.registry import (
    PREBUILT,
    BadParameterError,
    FlowNotFoundError,
    FlowSetupError,
    load_workflow,
    load_workflow_class,
    parse_sets,
)

FLOWS = str(Path(__file__).with_name("flows.py"))


def test_defaults_without_environment():
    """With no flags and no variables the documented defaults apply."""
    s = Settings.load(env={})
    assert (s.host, s.port, s.api_token, s.collection) == ("127.0.0.1", 8000, None, "docs")
    assert s.db_path == Path(".batonflow/runs.db") and s.qdrant_path == Path(".batonflow/qdrant")
    assert s.tracing_configured is False


def test_environment_then_flags():
    """Environment variables override defaults; flags override the environment."""
    env = {
        "BATONFLOW_PORT": "9001",
        "BATONFLOW_API_TOKEN": "env-token",
        "BATONFLOW_HOME": "/data/bf",
        "OPENAI_API_KEY": "sk-x",
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://localhost:4318",
    }
    s = Settings.load(env=env)
    assert s.port == 9001 and s.api_token == "env-token" and s.openai_api_key == "sk-x"
    assert s.db_path == Path("/data/bf/runs.db") and s.tracing_configured
    flagged = Settings.load(env=env, port=7000, api_token="flag-token", db_path="x.db")
    assert flagged.port == 7000 and flagged.api_token == "flag-token"
    assert flagged.db_path == Path("x.db")
    assert Settings.load(env={**env, "OTEL_TRACES_EXPORTER": "none"}).tracing_configured is False


@pytest.mark.parametrize(
    "env, flags, match",
    [
        pytest.param(
            {"BATONFLOW_PORT": "eighty"},
            {},
            "port must be a whole number, got 'eighty'",
            id="port-not-int",
        ),
        pytest.param({}, {"port": 70000}, "Port 70000 is out of range", id="port-range"),
        pytest.param({}, {"nope": 1}, r"Unknown setting\(s\) \['nope'\]", id="unknown-flag"),
    ],
)
def test_bad_settings(env, flags, match):
    """Bad values raise ConfigError naming the setting and the fix."""
    with pytest.raises(ConfigError, match=match):
        Settings.load(env=env, **flags)


@pytest.mark.parametrize(
    "items, expected",
    [
        pytest.param(["n=3"], {"n": 3}, id="int"),
        pytest.param(
            ["x=1.5", "ok=true", "v=null"], {"x": 1.5, "ok": True, "v": None}, id="json-scalars"
        ),
        pytest.param(["xs=[1, 2]", 'd={"a": 1}'], {"xs": [1, 2], "d": {"a": 1}}, id="json"),
        pytest.param(["topic=pirates"], {"topic": "pirates"}, id="text"),
        pytest.param(["q=a=b"], {"q": "a=b"}, id="equals-in-value"),
        pytest.param(["s="], {"s": ""}, id="empty"),
        pytest.param(["n=1", "n=2"], {"n": 2}, id="last-wins"),
        pytest.param(['s="42"'], {"s": "42"}, id="quoted-number-stays-text"),
    ],
)
def test_parse_sets(items, expected):
    """Values are JSON when they parse, else text."""
    assert parse_sets(items) == expected


@pytest.mark.parametrize(
    "item, match",
    [
        pytest.param("novalue", "--set expects key=value, got 'novalue'", id="no-equals"),
        pytest.param("=3", "--set key '' in '=3' is not a valid field name", id="empty-key"),
        pytest.param("a-b=1", "key 'a-b'", id="dash"),
    ],
)
def test_parse_sets_rejects(item, match):
    """Malformed items raise BadParameterError with the fix."""
    with pytest.raises(BadParameterError, match=match):
        parse_sets([item])


def test_prebuilt_offline_flows_load_and_llm_flows_explain():
    """Offline prebuilt flows build; LLM flows without a key say to set OPENAI_API_KEY."""
    offline = Settings.load(env={})
    for name in ("guess-number", "accumulate", "hitl"):
        assert hasattr(load_workflow(name, offline), "run")
    for name in ("joke", "react"):
        with pytest.raises(FlowSetupError, match="needs an LLM.*set OPENAI_API_KEY"):
            load_workflow(name, offline)
    assert {"joke", "react", "guess-number", "accumulate", "rag"} <= set(PREBUILT)


def test_llm_flows_build_with_a_key():
    """With OPENAI_API_KEY set the joke and react flows build (no call is made)."""
    keyed = Settings.load(env={"OPENAI_API_KEY": "sk-test"})
    assert type(load_workflow("joke", keyed)).__name__ == "JokeFlow"
    assert type(load_workflow("react", keyed)).__name__ == "ReActAgent"


def test_classes_for_drawing_need_no_llm():
    """load_workflow_class gives prebuilt classes without building them."""
    assert load_workflow_class("joke").__name__ == "JokeFlow"
    assert load_workflow_class(f"{FLOWS}:EchoFlow").__name__ == "EchoFlow"
    with pytest.raises(FlowNotFoundError, match="Unknown flow 'jokes'"):
        load_workflow_class("jokes")


def test_class_that_needs_arguments_explains():
    """A Workflow class whose constructor needs arguments says to expose an instance."""
    with pytest.raises(FlowNotFoundError, match="cannot be built without arguments.*instance"):
        load_workflow(f"{FLOWS}:NeedsArgs")
    with pytest.raises(FlowNotFoundError, match="is not a Workflow \\(it is the class Path\\)"):
        load_workflow("pathlib:Path")
