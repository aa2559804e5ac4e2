"""Secrets never reach a cassette: keys in the LLM's config or in a message, auth headers."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import respx
from batonflow.testing import REDACTED, load_cassette, record, replay
from flows import SECRET_KEY, openai_llm
from llama_index.core.llms import ChatMessage
from openai_mock import CHAT_URL, completion

TOKEN = "Bearer abcdefgh12345678"


def leaky_messages() -> list[ChatMessage]:
    """A user pasting the key into the chat."""
    return [ChatMessage(role="user", content=f"My key is {SECRET_KEY}, is it valid?")]


async def test_keys_and_auth_headers_never_reach_the_file(
    tmp_path: Path, openai_wire: respx.MockRouter
) -> None:
    """The key in the LLM's config and in a message, and an auth header, are redacted."""
    path = tmp_path / "secret.json"
    openai_wire.post(CHAT_URL).mock(return_value=completion(f"Never share {SECRET_KEY}."))
    async with record(path):
        llm = openai_llm(default_headers={"Authorization": TOKEN})
        await llm.achat(leaky_messages())
    text = path.read_text()
    assert SECRET_KEY not in text and "abcdefgh12345678" not in text
    (entry,) = load_cassette(path)
    assert entry["settings"]["api_key"] == REDACTED
    assert entry["settings"]["default_headers"] == REDACTED
    assert entry["request"]["messages"][0]["content"] == f"My key is {REDACTED}, is it valid?"
    openai_wire.stop()
    with respx.mock(assert_all_called=False):
        async with replay(path):
            response = await openai_llm().achat(leaky_messages())
    assert response.message.content == f"Never share {REDACTED}."


async def test_the_redaction_hook_removes_the_rest(
    tmp_path: Path, openai_wire: respx.MockRouter
) -> None:
    """A ``redact=`` hook changes what is written, and replay compares through it too."""

    def no_emails(interaction: dict[str, Any]) -> dict[str, Any]:
        for message in interaction.get("request", {}).get("messages", []):
            message["content"] = re.sub(r"\w+@[\w.]+\w", "<email>", message["content"])
        return interaction

    path = tmp_path / "email.json"
    question = [ChatMessage(role="user", content="Write to ada@example.com.")]
    openai_wire.post(CHAT_URL).mock(return_value=completion("Done."))
    async with record(path, redact=no_emails):
        await openai_llm().achat(question)
    assert "ada@example.com" not in path.read_text()
    assert load_cassette(path)[0]["request"]["messages"][0]["content"] == "Write to <email>."
    openai_wire.stop()
    with respx.mock(assert_all_called=False):
        async with replay(path, redact=no_emails):
            assert (await openai_llm().achat(question)).message.content == "Done."


async def test_secret_environment_variables_are_cut_out_of_texts(
    tmp_path: Path, openai_wire: respx.MockRouter, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The value of a ``*_TOKEN`` environment variable is cut out of the messages written."""
    monkeypatch.setenv("CRM_SERVICE_TOKEN", "crm-7f3a9c1e55")
    path = tmp_path / "env.json"
    openai_wire.post(CHAT_URL).mock(return_value=completion("Done."))
    async with record(path):
        await openai_llm().achat([ChatMessage(role="user", content="Use crm-7f3a9c1e55.")])
    assert "crm-7f3a9c1e55" not in path.read_text()
    assert load_cassette(path)[0]["request"]["messages"][0]["content"] == f"Use {REDACTED}."
