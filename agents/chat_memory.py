"""``ChatMemory``: the default memory of an AgentWorkflow run, token-limited and serializable.

It is a llama-index ``BaseMemory`` (``get``/``aget``, ``put``/``aput``, ``put_messages``,
``get_all``, ``set``, ``reset``), so code written for llama-index memories works with it, and
any llama-index memory (``Memory``, ``ChatMemoryBuffer``) can be passed instead with
``run(memory=...)``.

Why our own and not ``ChatMemoryBuffer``: a run keeps its memory in ``ctx.store``, and the
store must serialize for snapshots, durable runs and human-in-the-loop across processes;
``ChatMemoryBuffer`` does not (its chat store's serializer fails under pydantic 2.11+). And
``ChatMemoryBuffer.get()`` re-tokenizes the whole history on every call, which makes a long
agent loop quadratic; here each message is counted once, when it is added, and the window of
kept messages only moves forward.

The window: the newest messages whose token counts add up to at most ``token_limit``, starting
at a user (or system) message so no tool result is shown without the call that asked for it.
The newest message is always kept. Older messages stay in :meth:`get_all`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from batonflow.core import Context
from batonflow.core.serialization import register_type
from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.memory import BaseMemory
from llama_index.core.utils import get_tokenizer
from pydantic import Field

from .errors import AgentInputError

#: The state key of a run's memory (every agent class keeps its conversation there).
MEMORY = "memory"

#: llama-index's rule for the default token limit: this share of the LLM's context window.
TOKEN_LIMIT_RATIO = 0.75
#: The token limit when the LLM's context window is not known.
DEFAULT_TOKEN_LIMIT = 3000

_STARTS = (MessageRole.USER, MessageRole.SYSTEM)


def _count(message: ChatMessage, tokenize: Callable[[str], list[Any]]) -> int:
    text = " ".join(
        str(getattr(block, "text", "") or getattr(block, "tool_kwargs", "") or "")
        for block in message.blocks
    )
    # A few tokens of overhead per message (role, separators), as chat formats add them.
    return len(tokenize(text)) + 4


class ChatMemory(BaseMemory):
    """A chat history with a token-limited window (see the module docs).

    Args:
        token_limit: The most tokens :meth:`get` returns (``from_defaults`` derives it from
            the LLM's context window).
        messages: Messages to start with.
    """

    token_limit: int = Field(default=DEFAULT_TOKEN_LIMIT, gt=0)
    messages: list[ChatMessage] = Field(default_factory=list)
    # Token count of each message, counted once when it is added.
    counts: list[int] = Field(default_factory=list)
    # Index of the first message of the window, and the token total from there on.
    start: int = 0
    window_tokens: int = 0

    def model_post_init(self, context: Any, /) -> None:
        """Count messages given at construction."""
        if len(self.counts) != len(self.messages):
            given = list(self.messages)
            self.messages, self.counts, self.start, self.window_tokens = [], [], 0, 0
            for message in given:
                self.put(message)

    @classmethod
    def class_name(cls) -> str:
        return "BatonflowChatMemory"

    @classmethod
    def from_defaults(  # type: ignore[override]
        cls,
        chat_history: list[ChatMessage] | None = None,
        llm: Any = None,
        token_limit: int | None = None,
        **kwargs: Any,
    ) -> ChatMemory:
        """A memory whose limit is ``token_limit``, else 3/4 of ``llm``'s context window.

        Args:
            chat_history: Messages to start with.
            llm: The LLM the messages go to (its ``metadata.context_window`` sets the limit).
            token_limit: The limit in tokens.
        """
        if token_limit is None:
            window = getattr(getattr(llm, "metadata", None), "context_window", None)
            token_limit = (
                int(window * TOKEN_LIMIT_RATIO)
                if isinstance(window, int) and window > 0
                else DEFAULT_TOKEN_LIMIT
            )
        return cls(token_limit=token_limit, messages=list(chat_history or []))

    # -- reading -------------------------------------------------------------------------

    def get(self, input: str | None = None, **kwargs: Any) -> list[ChatMessage]:
        """The messages of the window, oldest first."""
        return self.messages[self.start :]

    def get_all(self) -> list[ChatMessage]:
        """Every message, trimmed or not."""
        return list(self.messages)

    # BaseMemory's async methods run the sync ones in a worker thread; these are a few list
    # operations, far cheaper than the thread hop, so they run inline.
    async def aget(self, input: str | None = None, **kwargs: Any) -> list[ChatMessage]:
        """Async :meth:`get` (runs inline)."""
        return self.get(input, **kwargs)

    async def aget_all(self) -> list[ChatMessage]:
        """Async :meth:`get_all` (runs inline)."""
        return self.get_all()

    async def aput(self, message: ChatMessage) -> None:
        """Async :meth:`put` (runs inline)."""
        self.put(message)

    async def aput_messages(self, messages: list[ChatMessage]) -> None:
        """Async :meth:`put_messages` (runs inline)."""
        self.put_messages(messages)

    async def aset(self, messages: list[ChatMessage]) -> None:
        """Async :meth:`set` (runs inline)."""
        self.set(messages)

    async def areset(self) -> None:
        """Async :meth:`reset` (runs inline)."""
        self.reset()

    # -- writing -------------------------------------------------------------------------

    def put(self, message: ChatMessage) -> None:
        """Add a message; older messages leave the window when it is over the limit."""
        count = _count(message, get_tokenizer())
        self.messages.append(message)
        self.counts.append(count)
        self.window_tokens += count
        self._trim()

    def put_messages(self, messages: list[ChatMessage]) -> None:
        """Add several messages."""
        for message in messages:
            self.put(message)

    def set(self, messages: list[ChatMessage]) -> None:
        """Replace the history."""
        self.reset()
        self.put_messages(messages)

    def reset(self) -> None:
        """Forget every message."""
        self.messages, self.counts, self.start, self.window_tokens = [], [], 0, 0

    def _trim(self) -> None:
        last = len(self.messages) - 1
        while self.window_tokens > self.token_limit and self.start < last:
            self._drop_first()
        # Start at a user or system message: no orphan tool result or tool call.
        while self.start < last and self.messages[self.start].role not in _STARTS:
            self._drop_first()

    def _drop_first(self) -> None:
        self.window_tokens -= self.counts[self.start]
        self.start += 1


# A run keeps its memory (and its turn's messages, in "scratchpad") in ctx.store: another
# process restoring the run's snapshot or checkpoint must trust these classes by name.
register_type(ChatMemory, ChatMessage)


async def run_memory(
    ctx: Context, given: Any, owner: str, get_llm: Callable[[], Any]
) -> BaseMemory:
    """The memory of a run: ``run(memory=...)``, else the context's, else a new :class:`ChatMemory`.

    A given memory is used as it is (llama-index's ``Memory`` and ``ChatMemoryBuffer`` keep
    their own token limits); a new one gets llama-index's default limit from the LLM's context
    window. The memory is kept in ``ctx.store["memory"]``.

    Args:
        ctx: The run's context.
        given: The ``memory=`` run argument, or ``None``.
        owner: The class name for error messages.
        get_llm: Returns the LLM the messages go to (may raise when none is configured yet:
            the default token limit applies then).

    Raises:
        AgentInputError: ``given`` is not a llama-index memory.
    """
    if given is not None and not isinstance(given, BaseMemory):
        raise AgentInputError(
            f"{owner}.run(memory=...) needs a llama-index memory, got {type(given).__name__}; "
            "pass Memory.from_defaults(token_limit=...) or ChatMemoryBuffer.from_defaults(...) "
            "(from llama_index.core.memory), or batonflow.agents.ChatMemory.from_defaults()."
        )
    memory: BaseMemory | None = given or await ctx.store.get(MEMORY, default=None)
    if memory is None:
        try:
            llm = get_llm()
        except Exception:  # no LLM configured yet: the default token limit applies
            llm = None
        memory = ChatMemory.from_defaults(llm=llm)
    await ctx.store.set(MEMORY, memory)
    return memory


__all__ = ["DEFAULT_TOKEN_LIMIT", "MEMORY", "TOKEN_LIMIT_RATIO", "ChatMemory", "run_memory"]
