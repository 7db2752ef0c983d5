"""The ``consolidate`` node: start consolidation in the background, never block the turn.

Every ``every`` turns of a user (counted in this process), or when the input
sets ``consolidate_now: True``, :meth:`UserMemory.consolidate` starts in a
background thread; a request while the user's consolidation runs is skipped. A
failure is counted in ``memory.stats()["errors"]``, kept in
:attr:`ConsolidationScheduler.failures` and shown as the next ``consolidation_status``.

Examples:
    >>> import tempfile
    >>> from langchain_tiered_memory import TieredMemory
    >>> from langchain_tiered_memory.testing.fakes import HashingEmbeddings
    >>> memory = TieredMemory.open(tempfile.mkdtemp(), embeddings=HashingEmbeddings())
    >>> scheduler = ConsolidationScheduler(memory, every=2)
    >>> node = create_consolidate_node(memory, scheduler=scheduler)
    >>> config = {"configurable": {"user_id": "alice"}}
    >>> node.invoke({}, config)["consolidation_status"]
    'idle'
    >>> node.invoke({}, config)["consolidation_status"]
    'started'
    >>> scheduler.wait(timeout=60)
    True
    >>> scheduler.status("alice")
    'done'
    >>> memory.close()
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from langchain_core.runnables import RunnableConfig, RunnableLambda

from langchain_tiered_memory.consolidation.consolidator import ConsolidationReport
from langchain_tiered_memory.errors import ConfigurationError
from langchain_tiered_memory.integrations.nodes.state import resolve_user, runtime_context
from langchain_tiered_memory.tiers.common.scope import MemoryScope
from langchain_tiered_memory.types import utcnow

if TYPE_CHECKING:
    from langchain_tiered_memory.memory import TieredMemory
    from langchain_tiered_memory.user_memory import UserMemory

__all__ = [
    "ConsolidateNode",
    "ConsolidationFailure",
    "ConsolidationScheduler",
    "create_consolidate_node",
]


@dataclass(frozen=True)
class ConsolidationFailure:
    """A background consolidation that raised."""

    user_id: str
    agent_id: str | None
    error: str
    at: datetime


class ConsolidationScheduler:
    """Counts turns per user and runs consolidations in background threads.

    Args:
        memory: The memory to consolidate (used to count failures in its stats).
        every: Start a consolidation every this many turns of a user; ``None``
            or 0 for on demand only.

    Examples:
        >>> from langgraph.store.memory import InMemoryStore
        >>> from langchain_tiered_memory import TieredMemory
        >>> memory = TieredMemory(InMemoryStore())
        >>> scheduler = ConsolidationScheduler(memory, every=None)
        >>> scheduler.note_turn(memory.for_user("bob"))
        'idle'
        >>> scheduler.note_turn(memory.for_user("bob"), force=True)
        'started'
        >>> scheduler.wait(10), scheduler.status("bob")
        (True, 'done')
    """

    def __init__(self, memory: TieredMemory, *, every: int | None = 20) -> None:
        if every is not None and (isinstance(every, bool) or every < 0):
            raise ConfigurationError(
                f"consolidate_every must be a positive number of turns, 0 or None, got {every!r}"
            )
        self.memory = memory
        self.every = every or 0
        self.failures: list[ConsolidationFailure] = []
        self.reports: dict[MemoryScope, ConsolidationReport] = {}
        self._turns: Counter[MemoryScope] = Counter()
        self._running: dict[MemoryScope, threading.Thread] = {}
        self._status: dict[MemoryScope, str] = {}
        self._lock = threading.Lock()

    def status(self, user_id: str, agent_id: str | None = None) -> str:
        """``"idle"``, ``"running"``, ``"done"`` or ``"failed: <error>"`` for a user."""
        scope = MemoryScope(user_id, agent_id)
        with self._lock:
            if scope in self._running:
                return "running"
            return self._status.get(scope, "idle")

    def note_turn(self, user: UserMemory, *, force: bool = False) -> str:
        """Count a turn of ``user``; start a consolidation if one is due (or ``force``).

        Returns:
            ``"started"`` when one was started now, else the user's :meth:`status`.
        """
        scope = user.scope
        with self._lock:
            self._turns[scope] += 1
            due = force or (self.every > 0 and self._turns[scope] % self.every == 0)
            if scope in self._running:
                return "running"
            if not due:
                return self._status.get(scope, "idle")
            thread = threading.Thread(
                target=self._run,
                args=(user,),
                name=f"tiered-memory-consolidate-{scope.user_id}",
            )
            self._running[scope] = thread
        thread.start()
        return "started"

    def _run(self, user: UserMemory) -> None:
        scope = user.scope
        try:
            report = user.consolidate()
        except Exception as exc:
            self.memory.runtime.record_error("consolidation", exc)
            error = f"{type(exc).__name__}: {exc}"
            with self._lock:
                failure = ConsolidationFailure(scope.user_id, scope.agent_id, error, utcnow())
                self.failures.append(failure)
                self._status[scope] = f"failed: {error}"
                del self._running[scope]
            return
        with self._lock:
            self.reports[scope] = report
            self._status[scope] = "done" if report.ok else f"failed: {'; '.join(report.errors)}"
            del self._running[scope]

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for running consolidations; True when none is left running."""
        with self._lock:
            threads = list(self._running.values())
        for thread in threads:
            thread.join(timeout)
        with self._lock:
            return not self._running


class ConsolidateNode:
    """Tells the scheduler about the turn; see :func:`create_consolidate_node`."""

    def __init__(self, memory: TieredMemory, scheduler: ConsolidationScheduler) -> None:
        self.memory = memory
        self.scheduler = scheduler

    def __call__(self, state: Any, config: RunnableConfig | None = None) -> dict[str, Any]:
        """Run the node: ``{"consolidation_status": ..., "consolidate_now": False}``."""
        user_id, agent_id = resolve_user(runtime_context(config), config, state)
        force = bool(state.get("consolidate_now")) if isinstance(state, dict) else False
        status = self.scheduler.note_turn(self.memory.for_user(user_id, agent_id), force=force)
        return {"consolidation_status": status, "consolidate_now": False}

    async def acall(self, state: Any, config: RunnableConfig | None = None) -> dict[str, Any]:
        """Async twin of :meth:`__call__` (it only starts a thread)."""
        return self(state, config)


def create_consolidate_node(
    memory: TieredMemory,
    *,
    every: int | None = 20,
    scheduler: ConsolidationScheduler | None = None,
    name: str = "consolidate",
) -> RunnableLambda[Any, dict[str, Any]]:
    """Create the ``consolidate`` node (sync and async).

    Args:
        memory: The memory to consolidate.
        every: Turns per user between consolidations (ignored when ``scheduler`` is given).
        scheduler: Share one scheduler between graphs, or keep it to call ``wait()``.
        name: The runnable's name.
    """
    node = ConsolidateNode(memory, scheduler or ConsolidationScheduler(memory, every=every))
    return RunnableLambda(node.__call__, afunc=node.acall, name=name)
