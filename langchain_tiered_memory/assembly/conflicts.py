"""Resolve conflicts between memories about the same thing.

Two memories are about the same thing when they share a ``group_key`` (for
example ``"alice|lives_in"``) or their texts are near-duplicates (word-set
Jaccard similarity). The most trusted source wins (:attr:`MemoryConflictResolver.PRIORITY`),
then the newer, more confident, better scored memory; losers are reported.

Examples:
    >>> from langchain_tiered_memory.assembly.items import MemoryItem
    >>> a = MemoryItem("semantic", "profile", "f1", "Lives in Paris", group_key="alice|lives_in")
    >>> b = MemoryItem("working", "profile", "m9", "Lives in Lyon", group_key="alice|lives_in")
    >>> kept, dropped = MemoryConflictResolver().resolve([a, b])
    >>> [i.text for i in kept], dropped[0].reason.startswith("conflict")
    (['Lives in Lyon'], True)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta, timezone

from langchain_tiered_memory.assembly.items import DroppedItem, MemoryItem
from langchain_tiered_memory.text import words
from langchain_tiered_memory.types import ensure_aware, utcnow

__all__ = ["MemoryConflictResolver", "word_set_similarity"]

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _words(text: str) -> frozenset[str]:
    return frozenset(words(text))


def _jaccard(a: str, wa: frozenset[str], b: str, wb: frozenset[str]) -> float:
    if not wa or not wb:
        return 1.0 if a.strip().lower() == b.strip().lower() else 0.0
    return len(wa & wb) / len(wa | wb)


def word_set_similarity(a: str, b: str) -> float:
    """Jaccard similarity of the lower-cased word sets of ``a`` and ``b``."""
    return _jaccard(a, _words(a), b, _words(b))


class MemoryConflictResolver:
    """Keeps one memory per topic, preferring the most trusted source.

    Args:
        duplicate_threshold: Word-set similarity at or above which two texts
            count as the same memory.
        recent_days: Episodes newer than this rank as ``episodic_recent``.
        clock: Returns "now" (aware datetime); injectable for tests.
    """

    PRIORITY: dict[str, int] = {
        "working": 4,
        "procedural": 3,
        "episodic_recent": 3,
        "semantic": 2,
        "episodic_old": 1,
    }

    def __init__(
        self,
        *,
        duplicate_threshold: float = 0.8,
        recent_days: float = 7.0,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        if not 0.0 < duplicate_threshold <= 1.0:
            raise ValueError(f"duplicate_threshold must be in (0, 1], got {duplicate_threshold!r}")
        self.duplicate_threshold = duplicate_threshold
        self.recent_days = recent_days
        self.clock = clock

    def source_type(self, item: MemoryItem) -> str:
        """The source type of an item (splits episodes by age)."""
        if item.tier != "episodic":
            return item.tier
        if item.timestamp is None:
            return "episodic_old"
        age = self.clock() - ensure_aware(item.timestamp)
        return "episodic_recent" if age <= timedelta(days=self.recent_days) else "episodic_old"

    def _rank(self, item: MemoryItem) -> tuple[int, datetime, float, float]:
        return (
            self.PRIORITY.get(self.source_type(item), 0),
            ensure_aware(item.timestamp) if item.timestamp else _EPOCH,
            item.confidence if item.confidence is not None else 0.0,
            item.score,
        )

    def group(self, items: Sequence[MemoryItem]) -> list[list[int]]:
        """Indices of ``items`` grouped by topic (union-find over both relations)."""
        parent = list(range(len(items)))

        def find(i: int) -> int:
            while parent[i] != i:
                parent[i] = parent[parent[i]]
                i = parent[i]
            return i

        first_with_key: dict[str, int] = {}
        for i, item in enumerate(items):
            if item.group_key is not None:
                parent[find(i)] = find(first_with_key.setdefault(item.group_key, i))
        words = [_words(item.text) for item in items]  # once per item, not per pair
        for i in range(len(items)):
            for j in range(i + 1, len(items)):
                if find(i) != find(j) and (
                    _jaccard(items[i].text, words[i], items[j].text, words[j])
                    >= self.duplicate_threshold
                ):
                    parent[find(j)] = find(i)
        groups: dict[int, list[int]] = {}
        for i in range(len(items)):
            groups.setdefault(find(i), []).append(i)
        return list(groups.values())

    def resolve(self, items: Sequence[MemoryItem]) -> tuple[list[MemoryItem], list[DroppedItem]]:
        """Keep the best item of each topic group, in the input order.

        Returns:
            ``(kept, dropped)``; each dropped item names the item that won.
        """
        keep: set[int] = set()
        dropped: list[DroppedItem] = []
        for members in self.group(items):
            winner = max(members, key=lambda i: self._rank(items[i]))
            keep.add(winner)
            w = items[winner]
            reason = (
                f"conflict: same topic as {w.key} ({self.source_type(w)}), "
                "which is more trusted or newer"
            )
            dropped += [DroppedItem(items[i], reason) for i in members if i != winner]
        return [items[i] for i in sorted(keep)], dropped
