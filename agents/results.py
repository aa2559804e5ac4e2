"""What an agent run returns: the answer and a record of how it got there."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

if TYPE_CHECKING:
    # Imported where used: batonflow.agents loads this module at once, and the flows that use
    # no LLM (accumulate, guess-number) must not pay for llama-index's import.
    from llama_index.core.tools import ToolOutput

_M = TypeVar("_M", bound=BaseModel)


class PydanticConversionWarning(Warning):
    """A structured response does not validate against the model asked for."""


def as_model(data: dict[str, Any] | None, model: type[_M]) -> _M | None:
    """``data`` validated as ``model``; ``None`` (with a warning) when it does not fit."""
    if data is None:
        return None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        warnings.warn(
            f"The structured response does not fit {model.__name__}: {exc.title}. Check the "
            "output_cls= you gave, or read the raw dict in .structured_response.",
            PydanticConversionWarning,
            stacklevel=3,
        )
        return None


class ToolCallRecord(BaseModel):
    """One tool call an agent made, and what came back.

    Attributes:
        tool_name: The tool the LLM asked for (possibly one that does not exist).
        tool_kwargs: The arguments the LLM gave.
        tool_id: The call's id (the LLM's own for native tool calls).
        output: The tool's output as text, or the error the LLM was shown.
        is_error: Whether the call failed (unknown tool, bad arguments, the tool raised).
    """

    model_config = ConfigDict(frozen=True)

    tool_name: str
    tool_kwargs: dict[str, Any] = Field(default_factory=dict)
    tool_id: str = ""
    output: str = ""
    is_error: bool = False

    @property
    def tool_output(self) -> ToolOutput:
        """The output as llama-index's ``ToolOutput`` (as on its ``ToolCallResult``).

        Its ``content`` is :attr:`output` (so ``str()`` prints what llama-index prints); the
        record keeps the text only, so ``raw_output`` is that text too.
        """
        from llama_index.core.tools import ToolOutput

        return ToolOutput(
            content=self.output,
            tool_name=self.tool_name,
            raw_input={"args": (), "kwargs": dict(self.tool_kwargs)},
            raw_output=self.output,
            is_error=self.is_error,
        )


class AgentResult(BaseModel):
    """The result of an agent run (``await agent.run(input=...)``).

    ``str(result)`` is the answer, so ``print(await agent.run(input="..."))`` prints it.

    Attributes:
        response: The agent's final answer.
        tool_calls: Every tool call of the run, in the order the calls were made.
        reasoning: The agent's reasoning, one entry per LLM turn (ReAct thoughts; for the
            function-calling agent, any text the LLM wrote alongside its tool calls).
        structured_response: The structured output as a dict, when ``output_cls=`` or
            ``structured_output_fn=`` asked for one (the shape of llama-index's
            ``AgentOutput.structured_response``); ``None`` otherwise or when it could not be
            made (a ``StructuredOutputWarning`` says why).
    """

    model_config = ConfigDict(frozen=True)

    response: str
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)
    reasoning: list[str] = Field(default_factory=list)
    structured_response: dict[str, Any] | None = None

    def get_pydantic_model(self, model: type[_M]) -> _M | None:
        """The structured response validated as ``model`` (``None`` if there is none).

        As llama-index's ``AgentOutput.get_pydantic_model``: warns with
        :class:`PydanticConversionWarning` and returns ``None`` when it does not fit.
        """
        return as_model(self.structured_response, model)

    def __str__(self) -> str:
        return self.response


__all__ = ["AgentResult", "PydanticConversionWarning", "ToolCallRecord", "as_model"]
