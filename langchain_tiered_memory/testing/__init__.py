"""Deterministic stand-ins for models and time: for tests, notebooks and the demo."""

from __future__ import annotations

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
