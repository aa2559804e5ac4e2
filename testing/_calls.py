"""LLM and tool calls as JSON values, and back: what a cassette holds for each call.

A request is what decides the answer: the LLM class and model, its temperature, the call
(``chat`` or ``complete``, streamed or not), the messages (or prompt), the tools offered and the
other keyword arguments. A message made only of text is written ``{"role", "content"}``; one with
tool calls or images keeps llama-index's full form (``blocks``), which rebuilds it exactly. The
LLM's other settings are written next to the request (``settings``) to be read, not compared.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from llama_index.core.base.llms.types import (
    ChatMessage,
    ChatResponse,
    CompletionResponse,
    TextBlock,
)
from llama_index.core.tools import ToolOutput
from pydantic import BaseModel
from pydantic_core import to_jsonable_python

#: Settings written to ``request`` (compared on replay) rather than to ``settings``, when set.
_COMPARED_SETTINGS = ("model", "temperature", "max_tokens", "system_prompt", "additional_kwargs")
#: Settings that say nothing about the answer (the client's plumbing), never written.
_PLUMBING = {"callback_manager", "class_name", "output_parser", "pydantic_program_mode"}


def plain(value: Any) -> Any:
    """``value`` as JSON values; what JSON cannot hold becomes ``<TypeName>``."""
    return to_jsonable_python(
        value, fallback=lambda v: f"<{type(v).__name__}>", serialize_unknown=False
    )


def message_to_json(message: ChatMessage) -> dict[str, Any]:
    """A chat message as JSON values: ``{"role", "content"}`` when it is only text."""
    text_only = all(isinstance(b, TextBlock) for b in message.blocks)
    if text_only and not message.additional_kwargs:
        return {"role": message.role.value, "content": message.content or ""}
    dumped: dict[str, Any] = plain(message.model_dump(mode="json"))
    return dumped


def message_from_json(data: Mapping[str, Any]) -> ChatMessage:
    """The chat message :func:`message_to_json` wrote."""
    if "blocks" in data:
        return ChatMessage.model_validate(data)
    return ChatMessage(role=data["role"], content=data.get("content"))


def llm_settings(llm: Any) -> dict[str, Any]:
    """The LLM's settings as JSON values (secrets are redacted later, with everything else)."""
    try:
        settings = dict(llm.to_dict())
    except Exception:  # an LLM that cannot describe itself still records its calls
        settings = {}
    return {k: plain(v) for k, v in settings.items() if k not in _PLUMBING}


def llm_request(
    llm: Any, call: str, stream: bool, args: Sequence[Any], kwargs: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(request, settings)`` for one call of ``llm``: what is compared, what is only kept."""
    settings = llm_settings(llm)
    request: dict[str, Any] = {"llm": type(llm).__name__, "call": call, "stream": stream}
    for name in _COMPARED_SETTINGS:
        value = settings.pop(name, None)
        if value not in (None, {}, []):
            request[name] = value
    rest = dict(kwargs)
    if call == "chat":
        messages = args[0] if args else rest.pop("messages", [])
        request["messages"] = [message_to_json(m) for m in messages]
    else:
        request["prompt"] = args[0] if args else rest.pop("prompt", "")
        request["formatted"] = bool(args[1] if len(args) > 1 else rest.pop("formatted", False))
    if "tools" in rest:
        request["tools"] = plain(rest.pop("tools"))
    if rest:
        request["kwargs"] = plain(rest)
    return request, settings


def _raw(raw: Any) -> Any:
    return plain(raw.model_dump() if isinstance(raw, BaseModel) else raw)


def usage_of(response: ChatResponse | CompletionResponse) -> dict[str, Any] | None:
    """The token usage the provider reported for ``response``, if it did."""
    raw = response.raw
    usage = raw.get("usage") if isinstance(raw, Mapping) else getattr(raw, "usage", None)
    if usage is not None:
        found: dict[str, Any] | None = _raw(usage)
        return found
    counts = {
        k: v
        for k, v in response.additional_kwargs.items()
        if k in ("prompt_tokens", "completion_tokens", "total_tokens")
    }
    return plain(counts) or None


def response_to_json(response: ChatResponse | CompletionResponse) -> dict[str, Any]:
    """An LLM's response as JSON values (its provider's ``raw`` response as JSON too)."""
    if isinstance(response, ChatResponse):
        data: dict[str, Any] = {"message": message_to_json(response.message)}
    else:
        data = {"text": response.text}
    if response.additional_kwargs:
        data["additional_kwargs"] = plain(response.additional_kwargs)
    if response.raw is not None:
        data["raw"] = _raw(response.raw)
    return data


def empty_response(call: str) -> ChatResponse | CompletionResponse:
    """What a stream that yielded nothing answered: an empty message or text."""
    if call == "chat":
        return ChatResponse(message=ChatMessage(role="assistant", content=""))
    return CompletionResponse(text="")


def chat_response_from_json(data: Mapping[str, Any], stream: bool) -> ChatResponse:
    """The chat response :func:`response_to_json` wrote; a streamed one carries its whole text
    as its delta."""
    message = message_from_json(data["message"])
    return ChatResponse(
        message=message,
        raw=data.get("raw"),
        additional_kwargs=dict(data.get("additional_kwargs", {})),
        delta=(message.content or "") if stream else None,
    )


def completion_response_from_json(data: Mapping[str, Any], stream: bool) -> CompletionResponse:
    """The completion response :func:`response_to_json` wrote."""
    return CompletionResponse(
        text=data["text"],
        raw=data.get("raw"),
        additional_kwargs=dict(data.get("additional_kwargs", {})),
        delta=data["text"] if stream else None,
    )


def tool_arguments(args: Sequence[Any], kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """A tool call's arguments as JSON values (a run's ``Context`` becomes ``"<Context>"``)."""
    found: dict[str, Any] = plain(dict(kwargs))
    if args:
        found["*args"] = plain(list(args))
    return found


def tool_result_to_json(output: ToolOutput) -> dict[str, Any]:
    """A tool's output as JSON values."""
    return {
        "content": output.content,
        "is_error": output.is_error,
        "raw_output": plain(output.raw_output),
    }


def tool_result_from_json(
    name: str, arguments: Mapping[str, Any], data: Mapping[str, Any]
) -> ToolOutput:
    """The tool output :func:`tool_result_to_json` wrote."""
    return ToolOutput(
        content=str(data["content"]),
        tool_name=name,
        raw_input=dict(arguments),
        raw_output=data.get("raw_output"),
        is_error=bool(data.get("is_error", False)),
    )
