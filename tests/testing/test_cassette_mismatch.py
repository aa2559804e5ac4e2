"""What a replay says when the run leaves the cassette: more calls, other tool arguments, and
that calls outside the cassette's context are left alone."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
import respx
from batonflow.testing import CassetteMismatchError, load_cassette, record, replay
from flows import AskFlow, openai_llm
from llama_index.core.llms import ChatMessage
from llama_index.core.tools import FunctionTool
from openai_mock import CHAT_URL, completion


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


async def test_a_call_past_the_end_says_how_many_the_cassette_holds(
    tmp_path: Path, openai_wire: respx.MockRouter
) -> None:
    """A run that makes one LLM call more than was recorded fails naming the count."""
    path = tmp_path / "one.json"
    openai_wire.post(CHAT_URL).mock(return_value=completion("Hi Ada!"))
    async with record(path):
        await AskFlow(timeout=30).run(name="Ada")
    openai_wire.stop()
    with respx.mock(assert_all_called=False), pytest.raises(CassetteMismatchError) as caught:
        async with replay(path):
            await AskFlow(timeout=30).run(name="Ada")
            await AskFlow(timeout=30).run(name="Ada")
    assert str(caught.value).startswith("LLM call 2 (OpenAI.chat) is not in the cassette")
    assert "it holds 1 LLM calls" in str(caught.value)


def test_sync_tool_calls_replay_and_other_arguments_show_the_diff(tmp_path: Path) -> None:
    """A tool's ``call`` is answered by the recorded call with the same arguments; other
    arguments fail with the diff against the recorded call of that tool."""
    path = tmp_path / "tools.json"
    tool = FunctionTool.from_defaults(fn=add)
    with record(path):
        assert tool.call(a=2, b=3).raw_output == 5
    with replay(path):
        assert tool.call(a=2, b=3).raw_output == 5
    with pytest.raises(CassetteMismatchError) as caught, replay(path):
        tool.call(a=2, b=4)
    message = str(caught.value)
    assert message.startswith('Tool call add({"a": 2, "b": 4}) is not in the cassette')
    assert "  b:\n    cassette: 3\n    now:      4" in message


async def test_calls_outside_the_cassettes_context_are_left_alone(
    tmp_path: Path, openai_wire: respx.MockRouter
) -> None:
    """A thread started before the cassette opened calls OpenAI for real while it replays."""
    path = tmp_path / "ask.json"
    route = openai_wire.post(CHAT_URL).mock(return_value=completion("Hi Ada!"))
    async with record(path):
        await AskFlow(timeout=30).run(name="Ada")
    go, answers = threading.Event(), []

    def outside() -> None:
        go.wait(30)
        llm = openai_llm()
        answers.append(llm.chat([ChatMessage(role="user", content="Not recorded.")]))

    thread = threading.Thread(target=outside)
    thread.start()
    async with replay(path):
        go.set()
        thread.join(30)
        assert await AskFlow(timeout=30).run(name="Ada") == "Hi Ada!"
    assert answers[0].message.content == "Hi Ada!"
    assert route.call_count == 2  # the recording and the thread's call; the replay made none


async def test_rewrite_drops_the_calls_a_run_no_longer_makes(
    tmp_path: Path, openai_wire: respx.MockRouter
) -> None:
    """A rewrite of a run that now makes fewer calls keeps only the calls it made."""
    path = tmp_path / "two.json"
    openai_wire.post(CHAT_URL).mock(return_value=completion("Hi Ada!"))
    async with record(path):
        await AskFlow(timeout=30).run(name="Ada")
        await AskFlow(timeout=30).run(name="Ada")
    async with replay(path, mode="rewrite"):
        await AskFlow(timeout=30).run(name="Ada")
    assert len(load_cassette(path)) == 1


async def test_a_run_that_stops_early_fails_the_replay(
    tmp_path: Path, openai_wire: respx.MockRouter
) -> None:
    """A replay that leaves recorded calls unused fails when its block ends, counting them."""
    path = tmp_path / "two.json"
    openai_wire.post(CHAT_URL).mock(return_value=completion("Hi Ada!"))
    async with record(path):
        await AskFlow(timeout=30).run(name="Ada")
        await AskFlow(timeout=30).run(name="Ada")
    openai_wire.stop()
    with respx.mock(assert_all_called=False), pytest.raises(CassetteMismatchError) as caught:
        async with replay(path):
            await AskFlow(timeout=30).run(name="Ada")
    assert str(caught.value).startswith(
        "The run made 1 of the 2 LLM calls and 0 of the 0 tool calls the cassette"
    )
