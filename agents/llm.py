"""LLM plumbing for the agent flows: the default LLM, and calls that fail clearly.

Every flow takes ``llm=``: any llama-index-core ``LLM`` (OpenAI from llama-index-llms-openai,
another provider, or :class:`batonflow.agents.testing.ScriptedLLM` offline). With no ``llm=``,
the flow builds ``OpenAI(model="gpt-4o-mini")`` the first time it needs it; that requires
``OPENAI_API_KEY``.

:func:`chat` makes one chat call, streaming the deltas to a callback when asked, retrying with
a :class:`~batonflow.core.retry.RetryPolicy` when one is given, and turning client errors into
an :class:`~batonflow.agents.errors.LLMCallError` that names the model, the HTTP status and
what to do.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, cast

from batonflow.core.errors import BudgetExceededError
from batonflow.core.retry import RetryPolicy
from llama_index.core.base.llms.types import ChatMessage, ChatResponse
from llama_index.core.llms import LLM
from llama_index.core.llms.function_calling import FunctionCallingLLM
from llama_index.core.tools import BaseTool

from .errors import (
    AgentConfigurationError,
    LLMCallError,
    LLMConfigurationError,
    MissingDependencyError,
)

#: The model of the default LLM.
DEFAULT_MODEL = "gpt-4o-mini"

#: Called with ``(delta, text_so_far)`` for each streamed chunk.
DeltaCallback = Callable[[str, str], Awaitable[None]]


def default_llm() -> LLM:
    """Build the default LLM, ``OpenAI(model="gpt-4o-mini")``.

    Raises:
        LLMConfigurationError: ``OPENAI_API_KEY`` is not set.
        MissingDependencyError: llama-index-llms-openai is not installed.
    """
    if not os.environ.get("OPENAI_API_KEY"):
        raise LLMConfigurationError(
            f"No llm= was given, and the default LLM (OpenAI {DEFAULT_MODEL}) needs the "
            "OPENAI_API_KEY environment variable, which is not set. Set OPENAI_API_KEY, or pass "
            "llm=... (any llama-index LLM; batonflow.agents.testing.ScriptedLLM runs offline)."
        )
    try:
        from llama_index.llms.openai import OpenAI
    except ImportError as exc:
        raise MissingDependencyError(
            "The default LLM needs llama-index-llms-openai, which is not installed. Run "
            "pip install 'batonflow[agents]', or pass llm=... (any llama-index LLM)."
        ) from exc
    return OpenAI(model=DEFAULT_MODEL)


def check_llm(llm: Any, owner: str) -> LLM | None:
    """Check that ``llm=`` is a llama-index LLM (or ``None`` for the default).

    Raises:
        AgentConfigurationError: it is something else.
    """
    if llm is None or isinstance(llm, LLM):
        return llm
    raise AgentConfigurationError(
        f"{owner}(llm=...) got {type(llm).__name__} {llm!r:.80}; it needs a llama-index LLM "
        "(a llama_index.core.llms.LLM, e.g. llama_index.llms.openai.OpenAI(model='gpt-4o-mini'))."
    )


def check_function_calling(llm: LLM, owner: str) -> FunctionCallingLLM:
    """Check that an LLM supports native tool calls.

    Raises:
        AgentConfigurationError: it does not.
    """
    if llm.metadata.is_function_calling_model and (
        isinstance(llm, FunctionCallingLLM) or _has_tool_methods(llm)
    ):
        # An LLM that is no FunctionCallingLLM but says it calls tools and has the methods
        # the agents use (llama-index accepts it on its metadata alone) is used as one.
        return cast(FunctionCallingLLM, llm)
    raise AgentConfigurationError(
        f"{owner} needs an LLM with native tool calling, and {type(llm).__name__} "
        f"(model {model_name(llm)!r}) has none. Use a function-calling model (e.g. OpenAI "
        "gpt-4o-mini) or the ReActAgent, which works with any LLM."
    )


def _has_tool_methods(llm: LLM) -> bool:
    """Whether an LLM has the tool-calling methods the agents call (streamed or not)."""
    return callable(getattr(llm, "get_tool_calls_from_response", None)) and any(
        callable(getattr(llm, name, None))
        for name in ("astream_chat_with_tools", "achat_with_tools")
    )


def model_name(llm: LLM) -> str:
    """The LLM's model name, for messages and traces."""
    name = getattr(llm, "model", None)
    if isinstance(name, str) and name:
        return name
    return str(llm.metadata.model_name)


def _hint(status: int | None) -> str:
    if status == 429:
        return (
            "The API is rate-limiting you or your quota is used up: wait and run again, or pass "
            "retry_policy=retry_policy(wait=wait_exponential()) (from batonflow.core) to retry."
        )
    if status in (401, 403):
        return "The API rejected the credentials: check OPENAI_API_KEY (or the LLM's api_key=)."
    if status is not None and status >= 500:
        return (
            "The API had a server error: run again later, or pass retry_policy=... "
            "(e.g. batonflow.core.retry_policy(...)) to retry automatically."
        )
    if status is not None:
        return "The API rejected the request: check the model name and the request options."
    return "Check the network and the LLM's settings, or pass retry_policy=... to retry."


def llm_call_error(exc: Exception, llm: LLM) -> LLMCallError:
    """Describe a failed LLM call: the model, the HTTP status if any, the cause and the fix."""
    status = getattr(exc, "status_code", None)
    if not isinstance(status, int):
        response = getattr(exc, "response", None)
        status = getattr(response, "status_code", None)
        status = status if isinstance(status, int) else None
    what = f"HTTP {status} " if status is not None else ""
    detail = str(exc).strip()
    if detail and detail[-1] not in ".!?":
        detail += "."
    from .testing import ScriptOutOfResponsesError

    # A scripted LLM that ran out of script says itself how to fix it; retrying cannot help.
    hint = "" if isinstance(exc, ScriptOutOfResponsesError) else f" {_hint(status)}"
    message = (
        f"The LLM call to {model_name(llm)!r} failed: {what}{type(exc).__name__}: {detail}{hint}"
    )
    return LLMCallError(message, status_code=status)


#: Called with each streamed chunk (a ``ChatResponse``: ``.delta``, ``.message``, ``.raw``).
ChunkCallback = Callable[[ChatResponse], Awaitable[None]]

# llama-index LLM classes whose API takes OpenAI's stream_options (the OpenAI and Azure OpenAI
# clients; OpenAILike servers may not, so they are left alone).
_USAGE_ON_STREAM = frozenset({"openai_llm", "azure_openai_llm"})


def stream_usage_kwargs(llm: LLM) -> dict[str, Any]:
    """The keyword arguments that make a streamed call report token usage, where supported.

    OpenAI sends no usage on a streamed completion unless asked with
    ``stream_options={"include_usage": True}``; its last chunk then carries it, and the traces
    record it as ``gen_ai.usage.*``. Other LLMs get nothing (they report usage themselves or
    would reject the option). An ``additional_kwargs["stream_options"]`` the user set wins.
    """
    try:
        name = llm.class_name()
    except Exception:  # a custom LLM without class_name()
        return {}
    extra = getattr(llm, "additional_kwargs", None) or {}
    if name in _USAGE_ON_STREAM and "stream_options" not in extra:
        return {"stream_options": {"include_usage": True}}
    return {}


async def _once(
    llm: LLM,
    messages: Sequence[ChatMessage],
    tools: Sequence[BaseTool] | None,
    on_delta: DeltaCallback | None,
    on_chunk: ChunkCallback | None = None,
    options: dict[str, Any] | None = None,
    allow_parallel_tool_calls: bool = True,
) -> ChatResponse:
    # Tools are only passed for LLMs checked with check_function_calling at construction.
    fc = cast(FunctionCallingLLM, llm)
    extra = dict(options or {})
    streamed_only = tools and not callable(getattr(llm, "achat_with_tools", None))
    if on_delta is None and on_chunk is None and not streamed_only:
        if tools:
            return await fc.achat_with_tools(
                list(tools),
                chat_history=list(messages),
                allow_parallel_tool_calls=allow_parallel_tool_calls,
                **extra,
            )
        return await llm.achat(list(messages), **extra)
    extra.update(stream_usage_kwargs(llm))
    if tools and not callable(getattr(llm, "astream_chat_with_tools", None)):
        # Only the unstreamed call: its response is the one chunk.
        response = await fc.achat_with_tools(
            list(tools),
            chat_history=list(messages),
            allow_parallel_tool_calls=allow_parallel_tool_calls,
            **extra,
        )
        if on_chunk is not None:
            await on_chunk(response)
        if on_delta is not None and response.message.content:
            await on_delta(response.message.content, response.message.content)
        return response
    if tools:
        gen = await fc.astream_chat_with_tools(
            list(tools),
            chat_history=list(messages),
            allow_parallel_tool_calls=allow_parallel_tool_calls,
            **extra,
        )
    else:
        gen = await llm.astream_chat(list(messages), **extra)
    last: ChatResponse | None = None
    async for chunk in gen:
        last = chunk
        if on_chunk is not None:
            await on_chunk(chunk)
        if on_delta is not None and chunk.delta:
            await on_delta(chunk.delta, chunk.message.content or "")
    if last is None:
        return ChatResponse(message=ChatMessage(role="assistant", content=""))
    return last


async def chat(
    llm: LLM,
    messages: Sequence[ChatMessage],
    *,
    tools: Sequence[BaseTool] | None = None,
    on_delta: DeltaCallback | None = None,
    retry_policy: RetryPolicy | None = None,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    on_chunk: ChunkCallback | None = None,
    options: dict[str, Any] | None = None,
    allow_parallel_tool_calls: bool = True,
) -> ChatResponse:
    """Make one chat call to ``llm``.

    Args:
        llm: The LLM.
        messages: The conversation.
        tools: Tools to offer for native tool calling (``achat_with_tools``); ``None`` for a
            plain chat.
        on_delta: When given, the call streams and this is awaited with each delta.
        on_chunk: When given, the call streams and this is awaited with each chunk.
        options: Extra keyword arguments for the LLM call (``tool_choice=...``).
        allow_parallel_tool_calls: Let the LLM ask for several tool calls in one turn.
        retry_policy: When given, a failed call is retried as long as the policy returns a
            delay (``policy.next(elapsed, attempts, error)``; ``error`` is the LLMCallError).
        sleep: The sleep used between attempts (tests pass a fake one).

    Returns:
        The (final) chat response.

    Raises:
        LLMCallError: the call failed (and the policy, if any, gave up).
        BudgetExceededError: the run's budget refused the call (``on_exceed="fail"``).
    """
    started = time.monotonic()
    attempts = 0
    while True:
        try:
            return await _once(
                llm, messages, tools, on_delta, on_chunk, options, allow_parallel_tool_calls
            )
        except BudgetExceededError:
            raise  # the run's budget refused the call (it was not made): nothing to retry
        except Exception as exc:
            error = llm_call_error(exc, llm)
            error.__cause__ = exc
            attempts += 1
            delay = (
                retry_policy.next(time.monotonic() - started, attempts, error)
                if retry_policy is not None
                else None
            )
            if delay is None:
                raise error from exc
            await sleep(delay)


async def complete(llm: LLM, prompt: str) -> str:
    """One completion call, with the same clear errors as :func:`chat`."""
    try:
        return str(await llm.acomplete(prompt))
    except Exception as exc:
        raise llm_call_error(exc, llm) from exc


__all__ = [
    "DEFAULT_MODEL",
    "ChunkCallback",
    "DeltaCallback",
    "chat",
    "check_function_calling",
    "check_llm",
    "complete",
    "default_llm",
    "llm_call_error",
    "model_name",
    "stream_usage_kwargs",
]
