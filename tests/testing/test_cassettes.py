"""Cassettes: a real agent run recorded against OpenAI (respx) and replayed with no network."""

from __future__ import annotations

from pathlib import Path

import pytest
import respx
from batonflow.core import SqliteCheckpointStore
from batonflow.testing import CassetteMismatchError, load_cassette, record, replay
from flows import TOOL_RUNS, AskFlow, get_time, get_weather, mock_weather_answers, weather_agent
from openai_mock import CHAT_URL, completion


async def test_agent_run_replays_offline_with_the_same_result(
    tmp_path: Path, openai_wire: respx.MockRouter
) -> None:
    """A FunctionAgent run recorded against OpenAI replays with the network blocked."""
    path = tmp_path / "agent.json"
    route = mock_weather_answers(openai_wire)
    async with record(path):
        recorded = await weather_agent().run(user_msg="Weather in Rome?")
    assert route.call_count == 2
    openai_wire.stop()
    TOOL_RUNS.clear()
    kinds = [(e["kind"], e.get("tool")) for e in load_cassette(path)]
    assert kinds == [("llm", None), ("tool", "get_weather"), ("llm", None)]
    first = load_cassette(path)[0]
    assert first["request"]["model"] == "gpt-4o-mini"
    assert first["request"]["tools"][0]["function"]["name"] == "get_weather"
    assert first["usage"]["total_tokens"] == 15
    assert load_cassette(path)[1]["arguments"] == {"city": "Rome"}
    with respx.mock(assert_all_called=False) as no_routes:
        async with replay(path):
            replayed = await weather_agent().run(user_msg="Weather in Rome?")
        assert no_routes.calls.call_count == 0
    assert str(replayed) == str(recorded) == "It is 24C and sunny in Rome."
    assert TOOL_RUNS == []  # the tool's result came from the cassette


async def test_user_step_achat_replays_with_sockets_refused(
    tmp_path: Path, openai_wire: respx.MockRouter, request: pytest.FixtureRequest
) -> None:
    """A step's own ``llm.achat`` is recorded and replayed; replay opens no socket."""
    path = tmp_path / "ask.json"
    openai_wire.post(CHAT_URL).mock(return_value=completion("Hi Ada!"))
    async with record(path):
        assert await AskFlow(timeout=30).run(name="Ada") == "Hi Ada!"
    openai_wire.stop()
    request.getfixturevalue("offline")
    async with replay(path):
        assert await AskFlow(timeout=30).run(name="Ada") == "Hi Ada!"


async def test_changed_prompt_fails_with_a_diff_of_the_two_requests(
    tmp_path: Path, openai_wire: respx.MockRouter
) -> None:
    """A changed system prompt fails the replay, naming the call and the field that differs."""
    path = tmp_path / "agent.json"
    mock_weather_answers(openai_wire)
    async with record(path):
        await weather_agent().run(user_msg="Weather in Rome?")
    openai_wire.stop()
    with respx.mock(assert_all_called=False), pytest.raises(CassetteMismatchError) as caught:
        async with replay(path):
            await weather_agent(prompt="You answer briefly.").run(user_msg="Weather in Rome?")
    message = str(caught.value)
    assert "LLM call 1 (OpenAI.chat) sent something else" in message
    assert "messages[0].content:" in message
    assert 'cassette: "You answer weather questions."' in message
    assert 'now:      "You answer briefly."' in message
    assert message.endswith("replay with mode='rewrite' to record this call again.")


async def test_a_different_tool_list_fails_naming_the_tools(
    tmp_path: Path, openai_wire: respx.MockRouter
) -> None:
    """Offering another tool than was recorded fails on the ``tools`` field."""
    path = tmp_path / "agent.json"
    mock_weather_answers(openai_wire)
    async with record(path):
        await weather_agent().run(user_msg="Weather in Rome?")
    openai_wire.stop()
    with respx.mock(assert_all_called=False), pytest.raises(CassetteMismatchError) as caught:
        async with replay(path):
            agent = weather_agent(tools=[get_weather, get_time])
            await agent.run(user_msg="Weather in Rome?")
    assert "tools[1]:" in str(caught.value)
    assert "get_time" in str(caught.value)


async def test_rewrite_mode_asks_the_llm_again_and_rewrites_the_entry(
    tmp_path: Path, openai_wire: respx.MockRouter
) -> None:
    """``mode="rewrite"`` makes the changed call for real and writes it over the old entry."""
    path = tmp_path / "ask.json"
    route = openai_wire.post(CHAT_URL).mock(
        side_effect=[completion("Hi Ada!"), completion("Hello there, Ada.")]
    )
    async with record(path):
        await AskFlow(timeout=30).run(name="Ada")
    async with replay(path, mode="rewrite"):
        assert await AskFlow(timeout=30).run(name="Ada") == "Hi Ada!"  # unchanged: replayed
    assert route.call_count == 1
    async with replay(path, mode="rewrite"):
        changed = AskFlow(prompt="Greet {name} warmly.", timeout=30)
        assert await changed.run(name="Ada") == "Hello there, Ada."
    assert route.call_count == 2
    (entry,) = load_cassette(path)
    assert entry["request"]["messages"] == [{"role": "user", "content": "Greet Ada warmly."}]
    openai_wire.stop()
    with respx.mock(assert_all_called=False):
        async with replay(path):
            assert await changed.run(name="Ada") == "Hello there, Ada."


async def test_a_missing_cassette_says_how_to_record_one(tmp_path: Path) -> None:
    """Replaying a file that does not exist names it and says to record it."""
    with pytest.raises(Exception, match=r"no cassette at .*nope.json\. Record one first"):
        replay(tmp_path / "nope.json")


async def test_a_durable_agent_run_replays_into_a_new_store(
    tmp_path: Path, openai_wire: respx.MockRouter
) -> None:
    """An agent run recorded as a durable SQLite run replays offline as a durable run of
    another store, with the same result and the same steps checkpointed."""
    path = tmp_path / "durable.json"
    mock_weather_answers(openai_wire)
    with SqliteCheckpointStore(tmp_path / "prod.db") as prod:
        async with record(path):
            handler = weather_agent(checkpoint_store=prod).run(user_msg="Weather in Rome?")
            recorded = str(await handler)
        recorded_steps = [c.step_name for c in prod.list(handler.run_id)]
    openai_wire.stop()
    with SqliteCheckpointStore(tmp_path / "test.db") as test, respx.mock(assert_all_called=False):
        async with replay(path):
            handler = weather_agent(checkpoint_store=test).run(user_msg="Weather in Rome?")
            assert str(await handler) == recorded
        assert [c.step_name for c in test.list(handler.run_id)] == recorded_steps
