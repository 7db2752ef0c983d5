"""Episodic memory: task episodes (trajectory, outcome, reflection), conversations.

Examples:
    >>> from langchain_tiered_memory.tiers.episodic import Episode, Outcome
    >>> Episode(task_description="Book a table", outcome=Outcome.SUCCESS).outcome.value
    'success'
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from langchain_tiered_memory.lazy import lazy_exports

if TYPE_CHECKING:
    from langchain_tiered_memory.tiers.episodic.conversations import ConversationIndex
    from langchain_tiered_memory.tiers.episodic.memory import (
        EpisodicConfig,
        EpisodicMemory,
        ReflectionRetryResult,
    )
    from langchain_tiered_memory.tiers.episodic.models import (
        Episode,
        Outcome,
        Reflection,
        ScoredEpisode,
        TrajectoryStep,
    )
    from langchain_tiered_memory.tiers.episodic.reflection import EpisodeReflector

__all__ = [
    "ConversationIndex",
    "Episode",
    "EpisodeReflector",
    "EpisodicConfig",
    "EpisodicMemory",
    "Outcome",
    "Reflection",
    "ReflectionRetryResult",
    "ScoredEpisode",
    "TrajectoryStep",
]

__getattr__, __dir__ = lazy_exports(__name__)
