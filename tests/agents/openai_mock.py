"""Build OpenAI chat-completions HTTP responses for respx (plain JSON and SSE streams)."""

from __future__ import annotations

import json
from typing import Any

import httpx

CHAT_URL = "https://api.openai.com/v1/chat/completions"


def completion(
    text: str | None = None, tool_calls: list[tuple[str, str, dict]] | None = None
) -> httpx.Response:
    """A non-streamed chat completion: text and/or tool calls ``(id, name, arguments)``."""
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if tool_calls:
        message["tool_calls"] = [
            {
                "id": cid,
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            for cid, name, args in tool_calls
        ]
    body = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 1700000000,
        "model": "gpt-4o-mini",
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if tool_calls else "stop",
                "logprobs": None,
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }
    return httpx.Response(200, json=body)


def _chunk(delta: dict[str, Any], finish: str | None = None) -> str:
    body = {
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
    }
    return f"data: {json.dumps(body)}\n\n"


def stream(
    pieces: list[str], tool_calls: list[tuple[str, str, dict]] | None = None
) -> httpx.Response:
    """A streamed chat completion (server-sent events): one chunk per text piece."""
    events = [_chunk({"role": "assistant", "content": ""})]
    events += [_chunk({"content": piece}) for piece in pieces]
    for i, (cid, name, args) in enumerate(tool_calls or []):
        events.append(
            _chunk(
                {
                    "tool_calls": [
                        {
                            "index": i,
                            "id": cid,
                            "type": "function",
                            "function": {"name": name, "arguments": json.dumps(args)},
                        }
                    ]
                }
            )
        )
    events.append(_chunk({}, "tool_calls" if tool_calls else "stop"))
    events.append("data: [DONE]\n\n")
    return httpx.Response(
        200, headers={"content-type": "text/event-stream"}, content="".join(events).encode()
    )


def error(status: int, message: str = "boom") -> httpx.Response:
    """An OpenAI API error response."""
    return httpx.Response(
        status, json={"error": {"message": message, "type": "test_error", "code": str(status)}}
    )


def sent_messages(request: httpx.Request) -> list[dict[str, Any]]:
    """The messages of a recorded chat-completions request."""
    return json.loads(request.content)["messages"]


def sent_body(request: httpx.Request) -> dict[str, Any]:
    """The JSON body of a recorded request."""
    return json.loads(request.content)
