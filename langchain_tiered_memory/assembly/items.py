"""Records the assembler works on: memory items, what was dropped, the result.

Tier-neutral on purpose: each tier converts its own records into
:class:`MemoryItem` so ranking, conflict resolution, framing and budget packing
never depend on a tier's internals.

Examples:
    >>> item = MemoryItem(tier="semantic", section="profile", id="f1",
    ...                   text="Allergic to shellfish", score=0.9)
    >>> item.key
    'semantic:f1'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

__all__ = ["DroppedItem", "MemoryContext", "MemoryItem", "SectionName", "Tier"]

Tier = Literal["working", "procedural", "semantic", "episodic"]
SectionName = Literal[
    "warnings", "strategies", "profile", "knowledge", "experiences", "conversation"
]


@dataclass
class MemoryItem:
    """One memory offered to the context assembler.

    Attributes:
        tier: Which tier it came from.
        section: Which section of the injection it belongs to.
        id: The tier's id for it (fact id, episode id, tool name, ...).
        text: What the model will read.
        score: Final ranking score (higher first) within its section.
        score_breakdown: The parts of ``score`` (relevance, recency, importance, ...).
        provenance: Where it came from (source episode ids, write path, ...).
        group_key: Items with the same key are about the same thing (for
            example ``"alice|lives_in"``); only one survives conflict resolution.
        timestamp: When it was last observed or confirmed.
        confidence: For facts and strategies, their confidence.
        importance: How much the memory matters regardless of the query (an
            episode's importance, a tool's failure rate); ``None``: unknown.
        critical: Always shown whatever the query (health and safety, hard
            constraints, pinned facts); see :class:`~.critical.CriticalFactPolicy`.
        trimmed: The text was cut to fit the budget.
    """

    tier: Tier
    section: SectionName
    id: str
    text: str
    score: float = 0.0
    score_breakdown: dict[str, float] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict)
    group_key: str | None = None
    timestamp: datetime | None = None
    confidence: float | None = None
    trimmed: bool = False
    importance: float | None = None
    critical: bool = False

    @property
    def key(self) -> str:
        """A unique key across tiers: ``"<tier>:<id>"``."""
        return f"{self.tier}:{self.id}"


@dataclass
class DroppedItem:
    """A memory that was retrieved but not injected, and why."""

    item: MemoryItem
    reason: str


@dataclass
class MemoryContext:
    """The assembled memory injection.

    Attributes:
        text: The formatted injection (one data block, a heading per section).
        tokens: Tokens of ``text``; never above ``budget``.
        budget: The token budget it was built for.
        items: Every memory used, in the order it appears.
        dropped: What did not make it in, with the reason.
        section_tokens: Tokens spent per section (its heading and memory lines;
            the block's frame is counted once, in ``tokens`` only).
        errors: Tiers that failed during retrieval, with the error text; the
            context was built from the others.
        notes: What the caller should know about how the context was built,
            e.g. that the query was cut to ``MAX_QUERY_CHARS`` characters.
    """

    text: str
    tokens: int
    budget: int
    items: list[MemoryItem] = field(default_factory=list)
    dropped: list[DroppedItem] = field(default_factory=list)
    section_tokens: dict[str, int] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return self.text
