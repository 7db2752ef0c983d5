"""Write counters per namespace prefix: has anything under a prefix changed since?

A store that sees every write (the embedded engine: its directory lock makes one
process the only writer) counts its writes by namespace prefix. A caller reads
:meth:`NamespaceVersions.token` *before* it reads the data and may keep what it
computed under the token; an equal token later means nothing under the prefix was
put or deleted. Counters are bumped *after* a write, so a read that overlaps a
write is tagged with the older token and recomputed, never the reverse.

Examples:
    >>> versions = NamespaceVersions()
    >>> before = versions.token(("users", "alice"))
    >>> versions.bump([("users", "bob", "facts")])
    >>> versions.token(("users", "alice")) == before
    True
    >>> versions.bump([("users", "alice", "facts")])
    >>> versions.token(("users", "alice")) == before
    False
"""

from __future__ import annotations

import itertools
import threading
from collections import Counter
from collections.abc import Hashable, Iterable, Iterator
from contextlib import contextmanager

__all__ = ["NamespaceVersions"]

_EPOCHS = itertools.count()

MAX_PREFIXES = 100_000
"""Counters kept before they are all dropped at once (every token then moves)."""


class NamespaceVersions:
    """Thread-safe write counters for every prefix of the namespaces written.

    Tokens are ``(epoch, everything, prefix count)``: ``epoch`` differs between
    instances, ``everything`` moves on a write whose namespaces are unknown
    (:meth:`bump_all`) and when more than :data:`MAX_PREFIXES` counters are dropped.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._epoch = next(_EPOCHS)
        self._everything = 0
        self._counts: Counter[tuple[str, ...]] = Counter()

    def token(self, prefix: tuple[str, ...]) -> Hashable:
        """The current version of everything under ``prefix``."""
        with self._lock:
            return (self._epoch, self._everything, self._counts[tuple(prefix)])

    def bump(self, namespaces: Iterable[tuple[str, ...]]) -> None:
        """Record writes to ``namespaces`` (each of their prefixes moves once)."""
        prefixes = {tuple(ns[:i]) for ns in namespaces for i in range(len(ns) + 1)}
        if not prefixes:
            return
        with self._lock:
            if len(self._counts) + len(prefixes) > MAX_PREFIXES:
                self._counts.clear()
                self._everything += 1
            self._counts.update(prefixes)

    def bump_all(self) -> None:
        """Record a write that may have touched any namespace."""
        with self._lock:
            self._everything += 1

    @contextmanager
    def bumped_after(self, namespaces: Iterable[tuple[str, ...]] | None) -> Iterator[None]:
        """Bump ``namespaces`` (every token if None) when the block ends, also on error.

        A write that fails may still have been applied in part.
        """
        try:
            yield
        finally:
            if namespaces is None:
                self.bump_all()
            else:
                self.bump(namespaces)
