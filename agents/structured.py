"""Structured output of an agent run: ``output_cls=`` or ``structured_output_fn=``.

After the final answer, ``output_cls`` makes one more LLM call that fills the model from the
conversation (llama-index's ``generate_structured_response``: the LLM's structured-prediction,
native tool calls where it has them); ``structured_output_fn`` is your function from the final
messages to a dict (sync or async). The result is ``AgentOutput.structured_response`` (a dict;
``output.get_pydantic_model(Model)`` validates it) and an ``AgentStreamStructuredOutput``
event. As in llama-index, a failure warns (:class:`StructuredOutputWarning`) and leaves
``structured_response`` as ``None``: the answer itself is not lost.
"""

from __future__ import annotations

import importlib
import inspect
import warnings
from collections.abc import Callable
from typing import Any

from batonflow.core import Context
from llama_index.core.agent.utils import generate_structured_response
from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.memory import BaseMemory
from pydantic import BaseModel

from .errors import AgentConfigurationError, AgentInputError
from .events import AgentStreamStructuredOutput
from .members import AgentMember

#: The state key of the output class one run asked for (``run(output_cls=...)``), by path.
RUN_OUTPUT_CLS = "run_output_cls"


class StructuredOutputWarning(UserWarning):
    """The structured output of a run could not be made (the run still answers)."""


def import_path(cls: type) -> str:
    """``module:qualname`` of a class."""
    return f"{cls.__module__}:{cls.__qualname__}"


# Output classes asked for per run, by import path: a run keeps only the path in its state
# (a class does not serialize); classes defined in a function are found here.
_OUTPUT_CLASSES: dict[str, type[BaseModel]] = {}


def resolve_output_cls(path: str | None) -> type[BaseModel] | None:
    """The output class a run asked for, by its :func:`import_path`."""
    if path is None:
        return None
    known = _OUTPUT_CLASSES.get(path)
    if known is not None:
        return known
    module, _, qualname = path.partition(":")
    obj: Any = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    if not (isinstance(obj, type) and issubclass(obj, BaseModel)):
        raise AgentConfigurationError(
            f"The run's output_cls {path!r} is not a pydantic model; pass output_cls=YourModel."
        )
    return obj


def remember_output_cls(cls: type[BaseModel]) -> None:
    """Remember a run's output class, so its path resolves in this process."""
    _OUTPUT_CLASSES[import_path(cls)] = cls


def run_output_cls_path(value: Any, owner: str) -> str | None:
    """Check a ``run(output_cls=...)`` value; the import path a run keeps in its state.

    Raises:
        AgentInputError: the value is not a pydantic model class.
    """
    if value is None:
        return None
    if not (isinstance(value, type) and issubclass(value, BaseModel)):
        raise AgentInputError(
            f"{owner}.run(output_cls=...) must be a pydantic BaseModel subclass, got "
            f"{value!r:.80}; define class Answer(BaseModel): ... and pass output_cls=Answer."
        )
    remember_output_cls(value)
    return import_path(value)


async def structured_response(
    ctx: Context, memory: BaseMemory, agent: AgentMember, *levels: AgentMember | Any
) -> dict[str, Any] | None:
    """The run's structured output, if one was asked for; streamed as an event when made.

    Who asks, first one wins: ``run(output_cls=...)``, then the first of ``levels`` that has
    either option (an :class:`~batonflow.agents.AgentWorkflow` passes itself then the
    answering agent, so a workflow's ``structured_output_fn`` wins over its agent's
    ``output_cls``; a standalone agent passes itself). Within a level ``output_cls`` wins over
    ``structured_output_fn``, as in llama-index.

    Args:
        ctx: The run's context.
        memory: The run's memory (its messages are what the output is made from).
        agent: The agent that answered (its LLM and system prompt make the output).
        *levels: Objects with ``output_cls`` and ``structured_output_fn`` attributes.
    """
    output_cls = resolve_output_cls(await ctx.store.get(RUN_OUTPUT_CLS, default=None))
    fn = None
    if output_cls is None:
        level = next(
            (lv for lv in levels if lv.output_cls is not None or lv.structured_output_fn), None
        )
        if level is None:
            return None
        output_cls = level.output_cls
        fn = None if output_cls is not None else level.structured_output_fn
    structured = await make_structured_output(await memory.aget(), agent, output_cls, fn)
    if structured is not None:
        ctx.write_event_to_stream(AgentStreamStructuredOutput(output=structured))
    return structured


async def make_structured_output(
    messages: list[ChatMessage],
    agent: AgentMember,
    output_cls: type[BaseModel] | None,
    fn: Callable[[list[ChatMessage]], Any] | None,
) -> dict[str, Any] | None:
    """The structured response from the run's final messages, or None (with a warning)."""
    try:
        if output_cls is not None:
            llm_input = list(messages)
            if agent.system_prompt:
                llm_input.insert(
                    0, ChatMessage(role=MessageRole.SYSTEM, content=agent.system_prompt)
                )
            return dict(
                await generate_structured_response(
                    messages=llm_input, llm=agent.get_llm(), output_cls=output_cls
                )
            )
        if fn is None:
            return None
        value = fn(messages)
        if inspect.isawaitable(value):
            value = await value
        if isinstance(value, BaseModel):
            return value.model_dump(mode="json")
        return dict(value)
    except Exception as exc:
        what = output_cls.__name__ if output_cls is not None else "structured_output_fn"
        warnings.warn(
            f"The structured output ({what}) could not be made: {type(exc).__name__}: {exc}. "
            "The answer is still in .response and .structured_response is None; to fix it, "
            "make the model's fields ones the LLM can fill from the conversation (or fix the "
            "function).",
            StructuredOutputWarning,
            stacklevel=2,
        )
        return None


__all__ = [
    "RUN_OUTPUT_CLS",
    "StructuredOutputWarning",
    "import_path",
    "make_structured_output",
    "remember_output_cls",
    "resolve_output_cls",
    "run_output_cls_path",
    "structured_response",
]
