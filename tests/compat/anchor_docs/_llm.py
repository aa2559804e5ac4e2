"""The LLM of the anchor's documentation examples, scripted.

The ported programs use this instead of OpenAI or Anthropic, so they run offline and print the
same thing on every run. It is a llama-index-core ``CustomLLM``, which both the anchor's venv
and batonflow's have, so one program runs unchanged (bar its imports) on both engines.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.base.llms.types import (
    CompletionResponse,
    CompletionResponseGen,
    LLMMetadata,
)
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.llms.custom import CustomLLM


class ScriptedLLM(CustomLLM):
    """An LLM that answers every prompt with a fixed, prompt-derived text.

    The answer is ``"<model> on: <the prompt>"``, so a reader of the
    printed output can follow which prompt produced which answer. Streaming yields the answer
    word by word, as an OpenAI stream yields roughly one token per chunk.
    """

    model: str = "scripted"

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name=self.model)

    def _answer(self, prompt: str) -> str:
        return f"{self.model} on: {prompt}"

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text=self._answer(prompt))

    @llm_completion_callback()
    def stream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponseGen:
        text = ""
        for word in self._answer(prompt).split(" "):
            delta = word if not text else " " + word
            text += delta
            yield CompletionResponse(text=text, delta=delta)
