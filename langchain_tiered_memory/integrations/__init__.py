"""Adapters that plug the memory tiers into LangChain interfaces.

Imports are lazy: ``langchain-classic`` is an optional extra, so importing this
package never imports it. :class:`WorkingBufferMemory` (a classic
``BaseMemory``) needs ``pip install "langchain-tiered-memory[classic]"`` and
raises :class:`~langchain_tiered_memory.errors.ConfigurationError` naming that
command when the extra is missing.

Examples:
    >>> from langchain_tiered_memory.integrations import BufferedChatMessageHistory
    >>> history = BufferedChatMessageHistory()
    >>> history.add_user_message("hi")
    >>> [m.content for m in history.messages]
    ['hi']
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from langchain_tiered_memory.lazy import lazy_exports

if TYPE_CHECKING:
    from langchain_tiered_memory.integrations.agent import create_memory_agent
    from langchain_tiered_memory.integrations.chat_history import (
        BufferedChatMessageHistory,
        create_session_history_factory,
    )
    from langchain_tiered_memory.integrations.classic_memory import WorkingBufferMemory
    from langchain_tiered_memory.integrations.middleware import TieredMemoryMiddleware

__all__ = [
    "BufferedChatMessageHistory",
    "TieredMemoryMiddleware",
    "WorkingBufferMemory",
    "create_memory_agent",
    "create_session_history_factory",
]

__getattr__, __dir__ = lazy_exports(__name__)
