"""The conversation-turn tier: every turn of a conversation, searchable."""

from __future__ import annotations

from langchain_tiered_memory.tiers.turns.memory import AddTurnsResult, ConversationTurns
from langchain_tiered_memory.tiers.turns.models import ConversationTurn, TurnHit, TurnsConfig

__all__ = [
    "AddTurnsResult",
    "ConversationTurn",
    "ConversationTurns",
    "TurnHit",
    "TurnsConfig",
]
