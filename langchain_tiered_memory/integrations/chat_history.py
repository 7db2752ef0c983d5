"""A LangChain ``BaseChatMessageHistory`` backed by a working-memory buffer.

``history.messages`` is the buffer's budgeted context (system messages, running
summary, recent messages that fit), which is what ``RunnableWithMessageHistory``
puts in front of the model; new turns go into the buffer, which may summarise.

Examples:
    >>> from langchain_tiered_memory.tiers.working import ConversationBuffer
    >>> history = BufferedChatMessageHistory(ConversationBuffer(max_tokens=30))
    >>> for i in range(10):
    ...     history.add_user_message(f"message {i}")
    >>> [m.content for m in history.messages]
    ['message 7', 'message 8', 'message 9']
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import BaseMessage

from langchain_tiered_memory.tiers.working.buffers import (
    ConversationBuffer,
    WorkingBuffer,
    WorkingContext,
)

__all__ = ["BufferedChatMessageHistory", "create_session_history_factory"]


class BufferedChatMessageHistory(BaseChatMessageHistory):
    """Chat history whose ``messages`` are a working-memory buffer's fitted context.

    Args:
        buffer: Any working-memory buffer; a ``ConversationBuffer(8000)`` by default.

    Examples:
        >>> history = BufferedChatMessageHistory()
        >>> history.add_ai_message("hello")
        >>> history.context().tokens > 0
        True
    """

    def __init__(self, buffer: WorkingBuffer | None = None) -> None:
        self.buffer = buffer if buffer is not None else ConversationBuffer()

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """The buffer's context: what fits the budget, summary included."""
        return self.buffer.get_context().messages

    def context(self) -> WorkingContext:
        """The full :class:`WorkingContext` (token counts, drops, summary status)."""
        return self.buffer.get_context()

    async def aget_messages(self) -> list[BaseMessage]:
        """Async :attr:`messages`."""
        return (await self.buffer.aget_context()).messages

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Store messages (a summarising buffer may call its model here)."""
        self.buffer.add_messages(messages)

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Async :meth:`add_messages` (the model is called asynchronously)."""
        await self.buffer.aadd_messages(messages)

    def clear(self) -> None:
        """Forget every message (and the summary)."""
        self.buffer.clear()

    async def aclear(self) -> None:
        """Async :meth:`clear`."""
        self.buffer.clear()


def create_session_history_factory(
    buffer_factory: Callable[[], WorkingBuffer] = ConversationBuffer,
) -> Callable[[str], BufferedChatMessageHistory]:
    """A ``get_session_history`` for ``RunnableWithMessageHistory``: one buffer per session.

    Histories live in memory for the life of the returned function.

    Examples:
        >>> get_history = create_session_history_factory()
        >>> get_history("a") is get_history("a"), get_history("a") is get_history("b")
        (True, False)
    """
    histories: dict[str, BufferedChatMessageHistory] = {}
    lock = threading.Lock()

    def get_session_history(session_id: str) -> BufferedChatMessageHistory:
        with lock:
            if session_id not in histories:
                histories[session_id] = BufferedChatMessageHistory(buffer_factory())
            return histories[session_id]

    return get_session_history
