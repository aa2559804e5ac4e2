"""Fixtures for the agents tests: an OpenAI LLM whose HTTP API is mocked with respx."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import respx
from llama_index.llms.openai import OpenAI


@pytest.fixture
def openai_llm() -> OpenAI:
    """llama-index's OpenAI LLM, no retries, a fake key (every request must be mocked)."""
    return OpenAI(model="gpt-4o-mini", max_retries=0, api_key="test")


@pytest.fixture
def openai_api() -> Iterator[respx.MockRouter]:
    """A respx router for api.openai.com; unmatched requests fail the test."""
    with respx.mock(base_url="https://api.openai.com/v1", assert_all_called=False) as router:
        yield router
