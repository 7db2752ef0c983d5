"""How often each episode was retrieved: :class:`~.record_access.RecordAccess` over episodes.

A retrieval (``retrieve_similar`` and the other reads of :class:`~.episodic.EpisodicMemory`)
adds one access per returned episode to an in-process buffer, with no store I/O;
the buffer is written later as append-only events (see :mod:`.record_access`).

Namespaces: ``(..., "episodic", "access", "log")`` for the events,
``(..., "episodic", "access", "folded")`` and ``(..., "folded_events")`` for
the heads and bodies of their segments; each event names its episode in
``episode_id``.

Examples:
    >>> from langgraph.store.memory import InMemoryStore
    >>> from langchain_tiered_memory.tiers.episodic.models import Episode
    >>> from langchain_tiered_memory.tiers.common.records import run_plan
    >>> from langchain_tiered_memory.tiers.common.scope import MemoryScope
    >>> from langchain_tiered_memory.testing.fakes import FakeClock
    >>> store, ep = InMemoryStore(), Episode(task_description="t", outcome="success")
    >>> access = EpisodeAccess(store, MemoryScope("alice"), FakeClock(), flush_seconds=None)
    >>> access.touch([ep]), access.touch([ep])  # in memory; True would mean "write now"
    (False, False)
    >>> [e.access_count for e in run_plan(store, access.fill_plan([ep]))]
    [2]
    >>> run_plan(store, access.flush_plan())  # one coalesced event
    1
    >>> [e.access_count for e in run_plan(store, access.fill_plan([ep]))]
    [2]
"""

from __future__ import annotations

from langchain_tiered_memory.tiers.common.access import RecordAccess
from langchain_tiered_memory.tiers.episodic.models import Episode

__all__ = ["EpisodeAccess"]


class EpisodeAccess(RecordAccess[Episode]):
    """Records and reads the access statistics of one scope's episodes.

    Takes the arguments of :class:`~.record_access.RecordAccess` (store, scope,
    clock, flush and compaction settings).
    """

    tier = "episodic"
    group_field = "episode_id"
    flush_hint = "EpisodicMemory.flush_access"
