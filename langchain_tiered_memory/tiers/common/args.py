"""Constructor arguments every tier takes: a store, a scope and a clock, checked once.

:func:`tier_args` validates them with the same messages for every tier (what
was wrong and what to pass instead) and turns ``clock=None`` into the UTC wall
clock; :meth:`TierArgs.now` reads the clock as an aware datetime.

Examples:
    >>> from langgraph.store.memory import InMemoryStore
    >>> from langchain_tiered_memory.testing.fakes import FakeClock
    >>> args = tier_args(InMemoryStore(), MemoryScope("alice"), FakeClock())
    >>> args.now().isoformat()
    '2026-01-01T00:00:00+00:00'
    >>> tier_args(InMemoryStore(), "alice", None)
    Traceback (most recent call last):
    ...
    langchain_tiered_memory.errors.ConfigurationError: scope must be a MemoryScope, got str: \
pass e.g. MemoryScope('alice')
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from langgraph.store.base import BaseStore

from langchain_tiered_memory.errors import ConfigurationError
from langchain_tiered_memory.stores.serialized import thread_safe
from langchain_tiered_memory.tiers.common.scope import MemoryScope
from langchain_tiered_memory.types import ensure_aware, utcnow

__all__ = ["Clock", "TierArgs", "tier_args"]

Clock = Callable[[], datetime]
"""Returns "now"; naive results are taken as UTC."""


@dataclass(frozen=True)
class TierArgs:
    """A tier's checked store, scope and clock."""

    store: BaseStore
    scope: MemoryScope
    clock: Clock

    def now(self) -> datetime:
        """The clock's current time, timezone-aware."""
        return ensure_aware(self.clock())


def tier_args(store: object, scope: object, clock: object) -> TierArgs:
    """Check a tier's constructor arguments.

    Args:
        store: Must be a LangGraph ``BaseStore``.
        scope: Must be a :class:`MemoryScope`.
        clock: A callable returning "now", or ``None`` for the UTC wall clock.

    Raises:
        ConfigurationError: An argument has the wrong type (the message names it
            and shows what to pass).
    """
    if not isinstance(store, BaseStore):
        raise ConfigurationError(
            f"store must be a langgraph BaseStore, got {type(store).__name__}: "
            "pass e.g. InMemoryStore() or QdrantMemoryStore.embedded(path)"
        )
    if not isinstance(scope, MemoryScope):
        raise ConfigurationError(
            f"scope must be a MemoryScope, got {type(scope).__name__}: "
            "pass e.g. MemoryScope('alice')"
        )
    if clock is not None and not callable(clock):
        raise ConfigurationError(
            f"clock must be a callable returning a datetime, got {type(clock).__name__}: "
            "pass e.g. FakeClock() in tests, or leave it out for the wall clock"
        )
    # Tiers write from threads of their own (buffered accesses): one lock per unsafe store.
    return TierArgs(thread_safe(store), scope, clock or utcnow)  # type: ignore[arg-type]
