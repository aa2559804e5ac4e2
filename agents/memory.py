"""Chat messages as plain dicts, so an agent's memory lives in ``ctx.store`` and serializes.

The agents keep the conversation under the state key ``"chat_history"``: a list of dicts, one
per message. A plain text message is ``{"role": "user", "content": "..."}``; a message with
tool calls or other blocks is llama-index's own JSON form (``ChatMessage.model_dump``). Both
read back with :func:`message_from_dict`.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, TextBlock

from .errors import AgentInputError


def message_to_dict(message: ChatMessage) -> dict[str, Any]:
    """A JSON-ready dict for a chat message (compact for plain text)."""
    if not message.additional_kwargs and all(isinstance(b, TextBlock) for b in message.blocks):
        return {"role": message.role.value, "content": message.content or ""}
    data: dict[str, Any] = message.model_dump(mode="json")
    return data


def message_from_dict(data: dict[str, Any] | ChatMessage) -> ChatMessage:
    """Rebuild a chat message from :func:`message_to_dict` (a ``ChatMessage`` passes through)."""
    if isinstance(data, ChatMessage):
        return data
    return ChatMessage.model_validate(data)


def messages_from_dicts(items: Iterable[dict[str, Any] | ChatMessage]) -> list[ChatMessage]:
    """Rebuild a list of chat messages."""
    return [message_from_dict(item) for item in items]


class MessageCache:
    """The ``ChatMessage`` of each history dict, built once per dict object.

    The agents keep their history as dicts in ``ctx.store`` (it serializes as it is) and send
    it to the LLM as ``ChatMessage`` objects. Rebuilding every message on every call made a run
    quadratic in its length (a 200-turn run validated 40,000 messages); here a dict already
    seen (the same object: the history list is extended, never rebuilt) gives back its message.
    A restored context has new dicts, which are converted once. Bounded: the least recently
    used entries go first.

    Args:
        size: The most messages kept.
    """

    def __init__(self, size: int = 4096) -> None:
        self.size = size
        # id(dict) -> (the dict, kept so its id is not reused while cached; its message)
        self._items: OrderedDict[int, tuple[dict[str, Any], ChatMessage]] = OrderedDict()

    def messages(self, items: Iterable[dict[str, Any] | ChatMessage]) -> list[ChatMessage]:
        """The chat messages of ``items`` (ChatMessages pass through)."""
        out: list[ChatMessage] = []
        cache = self._items
        for item in items:
            if isinstance(item, ChatMessage):
                out.append(item)
                continue
            key = id(item)
            hit = cache.get(key)
            if hit is not None and hit[0] is item:
                cache.move_to_end(key)
                out.append(hit[1])
                continue
            message = message_from_dict(item)
            cache[key] = (item, message)
            if len(cache) > self.size:
                cache.popitem(last=False)
            out.append(message)
        return out


def coerce_history(value: Any, owner: str) -> list[dict[str, Any]]:
    """Read a ``chat_history=`` start argument: ChatMessages or dicts, as dicts.

    Raises:
        AgentInputError: the value is not a list of messages.
    """
    if not isinstance(value, list | tuple):
        raise AgentInputError(
            f"{owner}.run(chat_history=...) needs a list of ChatMessage (or message dicts like "
            f"{{'role': 'user', 'content': '...'}}), got {type(value).__name__}."
        )
    out = []
    for item in value:
        if isinstance(item, ChatMessage):
            out.append(message_to_dict(item))
        elif isinstance(item, dict):
            out.append(message_to_dict(message_from_dict(item)))
        else:
            raise AgentInputError(
                f"{owner}.run(chat_history=...) holds {item!r:.60}; each message must be a "
                "ChatMessage or a dict like {'role': 'user', 'content': '...'}."
            )
    return out


__all__ = [
    "MessageCache",
    "coerce_history",
    "message_from_dict",
    "message_to_dict",
    "messages_from_dicts",
]
