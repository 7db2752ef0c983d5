"""How often each episode was retrieved: :class:`~.record_access.RecordAccess` over episodes.

A retrieval (``retrieve_similar`` and the other reads of :class:`~.episodic.EpisodicMemory`)
adds one access per returned episode to an in-process buffer, with no store I/O;
the buffer is written later as append-only events (see :mod:`.record_access`).

Namespaces: ``(..., "episodic", "access", "log")`` for the events,
``(..., "episodic", "access", "folded")`` and ``(..., "folded_events")`` for
the heads and bodies of their segments; each event names its episode in
``episode_id``.

Example:
    >>> from langgraph.store.memory import InMemoryStore
    >>> from langchain_tiered_memory.tiers.episodic_models import Episode
    >>> from langchain_tiered_memory.tiers.records import run_plan
    >>> from langchain_tiered_memory.tiers.scope import MemoryScope
    >>> from langchain_tiered_memory.fakes import FakeClock
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

from langgraph.store.base import BaseStore

from langchain_tiered_memory.tiers.episodic_models import Episode
from langchain_tiered_memory.tiers.record_access import RecordAccess, access_log
from langchain_tiered_memory.tiers.scope import MemoryScope
from langchain_tiered_memory.tiers.tier_args import Clock

__all__ = ["EpisodeAccess"]


def _episode_id(episode: Episode) -> str:
    return episode.episode_id


class EpisodeAccess(RecordAccess[Episode]):
    """Records and reads the access statistics of one scope's episodes.

    Args:
        store: The episodes' store.
        scope: Whose episodes.
        clock: Returns "now".
        flush_size: Buffered episodes that make a retrieval write the buffer itself.
        flush_seconds: Delay of the background write after the first buffered
            access (``None``: no timer thread; writes happen at ``flush_size``, on
            :meth:`flush_plan` and at exit).
        compact_after: An episode with more events than this is compacted when
            read (``None``: only :meth:`compact_plan` compacts).
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
            access_log(scope, "episodic", "episode_id"),
            _episode_id,
            clock,
            flush_size=flush_size,
            flush_seconds=flush_seconds,
            compact_after=compact_after,
            flush_hint="EpisodicMemory.flush_access",
        )
