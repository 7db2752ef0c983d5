"""Deterministic stand-ins for models and time: for tests, notebooks and the demo."""

from __future__ import annotations

from typing import TYPE_CHECKING

from langchain_tiered_memory.lazy import lazy_exports

if TYPE_CHECKING:
    from langchain_tiered_memory.testing.fakes import (
        FakeClock,
        HashingEmbeddings,
        ScriptedChatModel,
        ScriptedReply,
    )
    from langchain_tiered_memory.testing.offline_model import OfflineChatModel

__all__ = [
    "FakeClock",
    "HashingEmbeddings",
    "OfflineChatModel",
    "ScriptedChatModel",
    "ScriptedReply",
]

__getattr__, __dir__ = lazy_exports(__name__)
