"""The ``cassette`` pytest fixture: a user's test records once, then replays offline."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

AGENTS_TESTS = Path(__file__).resolve().parents[1] / "agents"

USER_TEST = """
import os

import respx
from llama_index.core.llms import ChatMessage
from llama_index.llms.openai import OpenAI
from openai_mock import CHAT_URL, completion


def test_hi(cassette):
    prompt = os.environ.get("PROMPT", "Say hi.")
    with respx.mock(assert_all_called=False) as wire:
        if not os.environ.get("OFFLINE"):
            wire.post(CHAT_URL).mock(return_value=completion("Hi!"))
        with cassette():
            llm = OpenAI(model="gpt-4o-mini", api_key="sk-test-0123456789abcdef", max_retries=0)
            assert llm.chat([ChatMessage(role="user", content=prompt)]).message.content == "Hi!"
"""


def run_user_tests(folder: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run pytest on the user's test file in ``folder`` (the plugin comes by entry point)."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args, "test_user.py"],
        cwd=folder,
        env={**os.environ, "PYTHONPATH": str(AGENTS_TESTS), **env},
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.slow
def test_the_fixture_records_once_then_replays_offline(tmp_path: Path) -> None:
    """The first run records ``cassettes/test_user/test_hi.json``; later runs replay it with no
    route for OpenAI; a changed prompt fails with the diff."""
    (tmp_path / "test_user.py").write_text(USER_TEST)
    first = run_user_tests(tmp_path)
    assert first.returncode == 0, first.stdout + first.stderr
    assert (tmp_path / "cassettes" / "test_user" / "test_hi.json").exists()
    again = run_user_tests(tmp_path, "--cassette-mode=replay", OFFLINE="1")
    assert again.returncode == 0, again.stdout + again.stderr
    changed = run_user_tests(tmp_path, OFFLINE="1", PROMPT="Say hello.")
    assert changed.returncode == 1
    assert "messages[0].content:" in changed.stdout
    assert 'now:      "Say hello."' in changed.stdout
