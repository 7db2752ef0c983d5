"""Which facts are critical: shown whatever the query, before anything else.

A fact is critical when its slot is a critical attribute (the extractors and
``SemanticMemory.store_fact(attribute=)`` set it), its text matches a critical
pattern, it is pinned, or its confidence reaches ``min_confidence`` (off by
default); see "Critical facts" in docs/assembly.md. Critical facts skip the
relevance floor and are packed first, within the token budget.

Example:
    >>> from langchain_tiered_memory.assembly.items import MemoryItem
    >>> policy = CriticalFactPolicy()
    >>> item = MemoryItem("semantic", "profile", "f1", "Allergic to shellfish",
    ...                   provenance={"attribute": "allergy"})
    >>> policy.is_critical(item), policy.is_critical(
    ...     MemoryItem("semantic", "profile", "f2", "Owns a drone bought in 2016"))
    (True, False)
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from langchain_tiered_memory.assembly.items import MemoryItem
from langchain_tiered_memory.errors import ConfigurationError

__all__ = ["CRITICAL_ATTRIBUTES", "CRITICAL_PATTERNS", "CriticalFactPolicy"]

CRITICAL_ATTRIBUTES: tuple[str, ...] = (
    "allergy",
    "diet",
    "medication",
    "accessibility",
    "constraint",
    "health",
)
"""Slots whose facts are critical by default."""

CRITICAL_PATTERNS: tuple[str, ...] = (
    r"\ballerg",
    r"\banaphyla",
    r"\bepipen\b",
    r"\bmedication\b",
    r"\bmedicine\b",
    r"\binsulin\b",
    r"\bdiabet",
    r"\bceliac\b|\bcoeliac\b",
    r"\bgluten[- ]free\b",
    r"\b(?:vegan|vegetarian|halal|kosher)\b",
    r"\bwheelchair\b",
    r"\bhearing aid\b|\bdeaf\b|\bblind\b|\bscreen reader\b",
    r"\bpregnan",
    r"\b(?:never|must not|mustn't|cannot|can't|do not|don't) (?:eat|drink|take|use|book|"
    r"schedule|share|fly|drive|contact|disclose|call)\b",
)
"""Case-insensitive patterns of health, safety and hard-constraint facts."""


@dataclass(frozen=True)
class CriticalFactPolicy:
    """Which semantic facts are critical (see the module docstring).

    Args:
        attributes: Slots whose facts are critical.
        patterns: Regular expressions (case-insensitive) that make a fact
            critical by its text; ``()`` turns text matching off.
        include_pinned: Pinned facts are critical.
        min_confidence: Facts at or above this confidence are critical
            (``None``: confidence alone never makes a fact critical).
        max_facts: Critical facts fetched and shown at most.

    Raises:
        ConfigurationError: A pattern does not compile, ``min_confidence`` is
            outside ``[0, 1]`` or ``max_facts`` is negative.
    """

    attributes: tuple[str, ...] = CRITICAL_ATTRIBUTES
    patterns: tuple[str, ...] = CRITICAL_PATTERNS
    include_pinned: bool = True
    min_confidence: float | None = None
    max_facts: int = 10

    def __post_init__(self) -> None:
        try:
            compiled = re.compile("|".join(f"(?:{p})" for p in self.patterns), re.IGNORECASE)
        except re.error as exc:
            raise ConfigurationError(
                f"CriticalFactPolicy.patterns has a bad regular expression ({exc}): "
                "fix or remove it"
            ) from exc
        object.__setattr__(self, "_regex", compiled if self.patterns else None)
        mc = self.min_confidence
        if mc is not None and (not math.isfinite(mc) or not 0.0 <= mc <= 1.0):
            raise ConfigurationError(
                f"CriticalFactPolicy.min_confidence is {mc!r}: use a number in [0, 1] or None"
            )
        if (
            isinstance(self.max_facts, bool)
            or not isinstance(self.max_facts, int)
            or self.max_facts < 0
        ):
            raise ConfigurationError(
                f"CriticalFactPolicy.max_facts is {self.max_facts!r}: use an int >= 0"
            )

    def is_critical(self, item: MemoryItem) -> bool:
        """Whether ``item`` (a semantic fact) must be shown whatever the query."""
        if item.tier != "semantic" or item.id.startswith("entity:"):
            return False
        prov = item.provenance
        if prov.get("attribute") in self.attributes:
            return True
        if self.include_pinned and prov.get("pinned"):
            return True
        if (
            self.min_confidence is not None
            and item.confidence is not None
            and item.confidence >= self.min_confidence
        ):
            return True
        regex: re.Pattern[str] | None = getattr(self, "_regex", None)
        return regex is not None and regex.search(item.text) is not None
