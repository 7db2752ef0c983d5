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

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "ConversationIndex": "langchain_tiered_memory.tiers.episodic.conversations",
        "Episode": "langchain_tiered_memory.tiers.episodic.models",
        "EpisodeReflector": "langchain_tiered_memory.tiers.episodic.reflection",
        "EpisodicConfig": "langchain_tiered_memory.tiers.episodic.memory",
        "EpisodicMemory": "langchain_tiered_memory.tiers.episodic.memory",
        "Outcome": "langchain_tiered_memory.tiers.episodic.models",
        "Reflection": "langchain_tiered_memory.tiers.episodic.models",
        "ReflectionRetryResult": "langchain_tiered_memory.tiers.episodic.memory",
        "ScoredEpisode": "langchain_tiered_memory.tiers.episodic.models",
        "TrajectoryStep": "langchain_tiered_memory.tiers.episodic.models",
    },
)
