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

Example:
    >>> from datetime import datetime, timezone
    >>> from langgraph.store.memory import InMemoryStore
    >>> from langchain_tiered_memory.fakes import FakeClock
    >>> from langchain_tiered_memory.tiers.records import run_plan
    >>> from langchain_tiered_memory.tiers.scope import MemoryScope
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

from langgraph.store.base import BaseStore

from langchain_tiered_memory.tiers.record_access import RecordAccess, access_log
from langchain_tiered_memory.tiers.scope import MemoryScope
from langchain_tiered_memory.tiers.semantic_models import Fact
from langchain_tiered_memory.tiers.tier_args import Clock

__all__ = ["FactAccess"]


def _fact_id(fact: Fact) -> str:
    return fact.fact_id


class FactAccess(RecordAccess[Fact]):
    """Records and reads the access statistics of one scope's facts.

    Args:
        store: The facts' store.
        scope: Whose facts.
        clock: Returns "now".
        flush_size: Buffered facts that make a retrieval write the buffer itself.
        flush_seconds: Delay of the background write after the first buffered
            access (``None``: no timer thread).
        compact_after: A fact with more events than this is compacted when read
            (``None``: only :meth:`compact_plan` compacts).
    """

    def __init__(
        self,
        store: BaseStore,
        scope: MemoryScope,
        clock: Clock,
        *,
        flush_size: int = 256,
        flush_seconds: float | None = 1.0,
        compact_after: int | None = 32,
    ) -> None:
        super().__init__(
            store,
            access_log(scope, "semantic", "fact_id"),
            _fact_id,
            clock,
            flush_size=flush_size,
            flush_seconds=flush_seconds,
            compact_after=compact_after,
            flush_hint="SemanticMemory.flush_access",
        )
