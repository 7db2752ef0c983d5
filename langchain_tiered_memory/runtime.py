"""What the parts of one memory share: store, writer, model, clock, configs, failures, scans.

:class:`~langchain_tiered_memory.memory.TieredMemory` builds one
:class:`MemoryRuntime` and hands it to every
:class:`~langchain_tiered_memory.user_memory.UserMemory`, the consolidator, the
write-back handlers and the health figures. They read what they need from it
and record failures through it; none of them holds the facade itself.

Examples:
    >>> from langgraph.store.memory import InMemoryStore
    >>> from langchain_tiered_memory import TieredMemory
    >>> runtime = TieredMemory(InMemoryStore()).runtime
    >>> runtime.record_error("retrieval.semantic", TimeoutError("the model did not answer"))
    >>> runtime.error_counts()
    {'retrieval.semantic': 1}
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from langgraph.store.base import BaseStore, SearchItem

from langchain_tiered_memory.errors import MemoryClosedError

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from langchain_tiered_memory.assembly.assembler import AssemblyConfig
    from langchain_tiered_memory.consolidation.policy import ForgettingPolicy
    from langchain_tiered_memory.consolidation.trash import MemoryTrash
    from langchain_tiered_memory.tiers.common.scope import MemoryScope
    from langchain_tiered_memory.tiers.episodic.memory import EpisodicConfig, EpisodicMemory
    from langchain_tiered_memory.tiers.procedural.memory import ProceduralConfig, ProceduralMemory
    from langchain_tiered_memory.tiers.semantic.memory import SemanticMemory
    from langchain_tiered_memory.tiers.semantic.models import SemanticConfig
    from langchain_tiered_memory.tiers.turns.models import TurnsConfig
    from langchain_tiered_memory.tokens import TokenCounter
    from langchain_tiered_memory.writeback.writer import DurableMemoryWriter

__all__ = ["Lifecycle", "MemoryRuntime", "UserResolver", "UserTiers"]

logger = logging.getLogger(__name__)

_PAGE = 1000


@dataclass(eq=False)
class Lifecycle:
    """Whether a memory is still open, and where it lives (named in errors).

    Examples:
        >>> life = Lifecycle(path="./memory")
        >>> life.check_open("search")
        >>> life.close()
        >>> life.check_open("search")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        langchain_tiered_memory.errors.MemoryClosedError: search() was called ... after close(): ...
    """

    path: str | None = None
    closed: bool = False

    def close(self) -> None:
        """Mark the memory closed: every public method raises from now on."""
        self.closed = True

    def check_open(self, method: str) -> None:
        """Raise :class:`MemoryClosedError` naming ``method`` once the memory is closed."""
        if not self.closed:
            return
        if self.path is None:
            where, reopen = "", "TieredMemory(store)"
        else:
            where, reopen = f" at {self.path}", f"TieredMemory.open({self.path!r})"
        raise MemoryClosedError(
            f"{method}() was called on the memory{where} after close(): open it again "
            f"with {reopen} and use the new object"
        )


@dataclass(frozen=True, eq=False)
class MemoryRuntime:
    """The shared parts of one memory (see the module docstring).

    Attributes:
        store: The LangGraph store every tier reads and writes.
        writer: The durable writer for write-back, or ``None`` (writes go direct).
        llm: The chat model for extraction, judgement and reflection, or ``None``.
        clock: Returns "now" (aware).
        token_counter: Counts tokens for budgets.
        assembly: How much the context assembler asks each tier for.
        forgetting: The forgetting policy consolidation applies.
        episodic_config: Settings of the episodic tier (``None``: its defaults).
        semantic_config: Settings of the semantic tier.
        procedural_config: Settings of the procedural tier.
        turns_config: Settings of the conversation-turn tier.
        lifecycle: Whether the memory is open; every public method checks it.
    """

    store: BaseStore
    writer: DurableMemoryWriter | None
    llm: BaseChatModel | None
    clock: Callable[[], datetime]
    token_counter: TokenCounter
    assembly: AssemblyConfig
    forgetting: ForgettingPolicy
    episodic_config: EpisodicConfig | None
    semantic_config: SemanticConfig | None
    procedural_config: ProceduralConfig | None
    turns_config: TurnsConfig | None
    lifecycle: Lifecycle = field(default_factory=Lifecycle, init=False)
    _errors: Counter[str] = field(default_factory=Counter, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def record_error(self, kind: str, exc: BaseException) -> None:
        """Log a failure the memory recovered from and count it under ``kind``.

        The counts are what :meth:`TieredMemory.stats` reports under ``errors``.
        """
        logger.warning("memory %s failed: %r", kind, exc)
        with self._lock:
            self._errors[kind] += 1

    def error_counts(self) -> dict[str, int]:
        """The failures recorded so far, by kind."""
        with self._lock:
            return dict(self._errors)

    def scan(self, prefix: tuple[str, ...]) -> Iterator[SearchItem]:
        """Every item in a namespace under ``prefix``, page by page (TTLs not refreshed)."""
        for ns in self.store.list_namespaces(prefix=prefix, limit=1_000_000):
            for offset in itertools.count(0, _PAGE):
                page = self.store.search(ns, limit=_PAGE, offset=offset, refresh_ttl=False)
                yield from _own_items(page, ns)
                if len(page) < _PAGE:
                    break

    async def ascan(self, prefix: tuple[str, ...]) -> AsyncIterator[SearchItem]:
        """Async twin of :meth:`scan` (an async iterator)."""
        for ns in await self.store.alist_namespaces(prefix=prefix, limit=1_000_000):
            for offset in itertools.count(0, _PAGE):
                page = await self.store.asearch(ns, limit=_PAGE, offset=offset, refresh_ttl=False)
                for item in _own_items(page, ns):
                    yield item
                if len(page) < _PAGE:
                    break


def _own_items(page: list[SearchItem], namespace: tuple[str, ...]) -> list[SearchItem]:
    """The items of a search page that sit in ``namespace`` itself (not below it)."""
    return [item for item in page if tuple(item.namespace) == tuple(namespace)]


class UserTiers(Protocol):
    """What one user's memory is made of (a :class:`UserMemory` is one).

    The consolidator and the write-back handlers work on this, so they need
    neither the facade nor each other.

    Attributes:
        scope: Whose memory this is.
        runtime: The shared parts of the memory the user belongs to.
        episodic: The user's episodes.
        semantic: The user's entities and facts.
        procedural: The user's tool statistics, strategies and preferences.
        trash: The user's soft-deleted memories and audit trail.
    """

    scope: MemoryScope
    runtime: MemoryRuntime
    episodic: EpisodicMemory
    semantic: SemanticMemory
    procedural: ProceduralMemory
    trash: MemoryTrash


UserResolver = Callable[[str, str | None], UserTiers]
"""Gives the memory of a user and optional agent, as ``TieredMemory.for_user`` does."""
