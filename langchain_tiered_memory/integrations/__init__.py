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

import importlib
from typing import TYPE_CHECKING, Any

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

_LAZY = {
    "create_memory_agent": "langchain_tiered_memory.integrations.agent",
    "BufferedChatMessageHistory": "langchain_tiered_memory.integrations.chat_history",
    "create_session_history_factory": "langchain_tiered_memory.integrations.chat_history",
    "WorkingBufferMemory": "langchain_tiered_memory.integrations.classic_memory",
    "TieredMemoryMiddleware": "langchain_tiered_memory.integrations.middleware",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
