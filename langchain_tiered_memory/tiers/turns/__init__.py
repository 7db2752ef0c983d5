"""The conversation-turn tier: every turn of a conversation, searchable."""

from __future__ import annotations

from typing import TYPE_CHECKING

from langchain_tiered_memory.lazy import lazy_exports

if TYPE_CHECKING:
    from langchain_tiered_memory.tiers.turns.memory import AddTurnsResult, ConversationTurns
    from langchain_tiered_memory.tiers.turns.models import ConversationTurn, TurnHit, TurnsConfig

__all__ = [
    "AddTurnsResult",
    "ConversationTurn",
    "ConversationTurns",
    "TurnHit",
    "TurnsConfig",
]

__getattr__, __dir__ = lazy_exports(__name__)
