"""How often each fact was retrieved: the episodes' access counting, applied to facts.

:class:`FactAccess` is :class:`~.record_access.RecordAccess` over facts: a
retrieval (``semantic_search``, ``retrieve_entity_context``) adds one access
per returned fact to an in-process buffer, with no store I/O; the buffer is
written as one batch of append-only events later (timer, size, explicit
flush, ``TieredMemory.close``, exit). Reads of ``access_count`` /
``last_accessed`` are exact, buffered accesses included.

Namespaces: ``(..., "semantic", "access", "log")`` for the events,
``(..., "semantic", "access", "folded")`` and ``(..., "folded_events")`` for
their compacted segments; each event names its fact in ``fact_id``.

Examples:
    >>> from datetime import datetime, timezone
    >>> from langgraph.store.memory import InMemoryStore
    >>> from langchain_tiered_memory.testing.fakes import FakeClock
    >>> from langchain_tiered_memory.tiers.common.records import run_plan
    >>> from langchain_tiered_memory.tiers.common.scope import MemoryScope
    >>> t = datetime(2026, 1, 1, tzinfo=timezone.utc)
    >>> fact = Fact(fact_id="f1", entity_id="bob", content="Is vegan", confidence=0.9,
    ...             first_observed=t, last_confirmed=t)
    >>> store = InMemoryStore()
    >>> access = FactAccess(store, MemoryScope("bob"), FakeClock(), flush_seconds=None)
    >>> access.touch([fact])  # in memory only
    False
    >>> [f.access_count for f in run_plan(store, access.fill_plan([fact]))]
    [1]
"""

from __future__ import annotations

from langchain_tiered_memory.tiers.common.access import RecordAccess
from langchain_tiered_memory.tiers.semantic.models import Fact

__all__ = ["FactAccess"]


class FactAccess(RecordAccess[Fact]):
    """Records and reads the access statistics of one scope's facts.

    Takes the arguments of :class:`~.record_access.RecordAccess` (store, scope,
    clock, flush and compaction settings).
    """

    tier = "semantic"
    group_field = "fact_id"
    flush_hint = "SemanticMemory.flush_access"
