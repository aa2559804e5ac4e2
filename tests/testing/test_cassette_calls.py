"""Every kind of LLM call goes through a cassette: chat and complete, sync and async, streamed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import respx
from batonflow.agents import FunctionAgent
from batonflow.testing import load_cassette, record, replay
from flows import get_weather, openai_llm
from llama_index.core.llms import (
    ChatMessage,
    CompletionResponse,
    CompletionResponseGen,
    CustomLLM,
    LLMMetadata,
)
from llama_index.core.llms.callbacks import llm_completion_callback
from openai_mock import CHAT_URL, completion, stream

COMPLETIONS_URL = "https://api.openai.com/v1/completions"
HI = [ChatMessage(role="user", content="Say hi.")]


def test_sync_chat_and_stream_chat_replay(tmp_path: Path, openai_wire: respx.MockRouter) -> None:
    """``chat`` and ``stream_chat`` (sync) are recorded in order and replayed offline."""
    path = tmp_path / "sync.json"
    openai_wire.post(CHAT_URL).mock(side_effect=[completion("Hi!"), stream(["He", "llo"])])
    with record(path):
        llm = openai_llm(temperature=0.2)
        assert llm.chat(HI).message.content == "Hi!"
        assert "".join(r.delta or "" for r in llm.stream_chat(HI)) == "Hello"
    openai_wire.stop()
    first, second = load_cassette(path)
    assert first["request"]["temperature"] == 0.2 and second["request"]["stream"] is True
    assert second["response"]["message"]["content"] == "Hello"
    with respx.mock(assert_all_called=False), replay(path):
        llm = openai_llm(temperature=0.2)
        assert llm.chat(HI).message.content == "Hi!"
        assert "".join(r.delta or "" for r in llm.stream_chat(HI)) == "Hello"


async def test_async_stream_and_complete_replay(
    tmp_path: Path, openai_wire: respx.MockRouter
) -> None:
    """``astream_chat`` and ``acomplete`` are recorded with their usage and replayed offline."""
    path = tmp_path / "async.json"
    openai_wire.post(CHAT_URL).mock(side_effect=[stream(["Hi", " there"]), completion("Done.")])
    async with record(path):
        llm = openai_llm()
        pieces = [r.delta async for r in await llm.astream_chat(HI)]
        assert "".join(p or "" for p in pieces) == "Hi there"
        assert (await llm.acomplete("Finish.")).text == "Done."
    openai_wire.stop()
    entries = load_cassette(path)
    assert [e["request"]["call"] for e in entries] == ["chat", "complete"]
    assert entries[1]["usage"]["total_tokens"] == 15
    with respx.mock(assert_all_called=False), replay(path):
        llm = openai_llm()
        pieces = [r.delta async for r in await llm.astream_chat(HI)]
        assert "".join(p or "" for p in pieces) == "Hi there"
        assert (await llm.acomplete("Finish.")).text == "Done."


def test_the_file_is_indented_json_with_a_format_number(
    tmp_path: Path, openai_wire: respx.MockRouter
) -> None:
    """A cassette is indented JSON (readable in a review) that names its format."""
    path = tmp_path / "one.json"
    openai_wire.post(CHAT_URL).mock(return_value=completion("Hi!"))
    with record(path):
        openai_llm().chat(HI)
    text = path.read_text()
    assert json.loads(text)["batonflow_cassette"] == 1
    assert '\n  "interactions": [\n' in text
    assert '"messages": [\n' in text


async def test_a_streamed_agent_run_replays(tmp_path: Path, openai_wire: respx.MockRouter) -> None:
    """A streaming FunctionAgent (``astream_chat_with_tools``) replays to the same answer."""
    path = tmp_path / "streamed.json"
    openai_wire.post(CHAT_URL).mock(
        side_effect=[
            stream([], tool_calls=[("call_1", "get_weather", {"city": "Rome"})]),
            stream(["Sunny ", "in Rome."]),
        ]
    )
    agent = FunctionAgent(tools=[get_weather], llm=openai_llm(), streaming=True)
    async with record(path):
        recorded = str(await agent.run(user_msg="Weather in Rome?"))
    openai_wire.stop()
    assert recorded == "Sunny in Rome."
    assert [e["kind"] for e in load_cassette(path)] == ["llm", "tool", "llm"]
    with respx.mock(assert_all_called=False):
        async with replay(path):
            assert str(await agent.run(user_msg="Weather in Rome?")) == recorded


async def test_a_stream_that_yields_nothing_is_recorded_empty(
    tmp_path: Path, openai_wire: respx.MockRouter
) -> None:
    """A streamed call whose stream ends at once is still one interaction (an empty answer)."""
    path = tmp_path / "empty.json"
    openai_wire.post(CHAT_URL).mock(return_value=completion("not a stream"))
    async with record(path):
        assert [r async for r in await openai_llm().astream_chat(HI)] == []
    (entry,) = load_cassette(path)
    assert entry["response"]["message"] == {"role": "assistant", "content": ""}


class EchoLLM(CustomLLM):
    """Another provider's LLM, written the way provider packages write theirs (``CustomLLM``);
    it counts the calls that reach it."""

    calls: int = 0

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="echo-1")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        self.calls += 1
        return CompletionResponse(text=f"echo: {prompt}")

    @llm_completion_callback()
    def stream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponseGen:
        yield self.complete(prompt, formatted, **kwargs)


async def test_an_llm_of_another_provider_is_recorded_and_replayed(tmp_path: Path) -> None:
    """A ``CustomLLM`` subclass is recorded (chat through its ``complete``) and replayed without
    reaching it."""
    path = tmp_path / "echo.json"
    async with record(path):
        llm = EchoLLM()
        assert (await llm.achat(HI)).message.content == "echo: user: Say hi.\nassistant: "
        assert (await llm.acomplete("ping")).text == "echo: ping"
    assert llm.calls == 2
    assert [e["request"]["call"] for e in load_cassette(path)] == ["chat", "complete"]
    async with replay(path):
        again = EchoLLM()
        assert (await again.achat(HI)).message.content == "echo: user: Say hi.\nassistant: "
        assert (await again.acomplete("ping")).text == "echo: ping"
    assert again.calls == 0
