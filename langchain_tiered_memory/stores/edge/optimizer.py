"""Background optimisation of the embedded engine: build the new shard in a child process, swap.

``qdrant-edge``'s ``optimize()`` holds the GIL of its process from start to end
(minutes for large stores), so the build runs in a child process on a copy:

1. *copy* (writes wait): flush, copy the shard to the next generation
   (:mod:`.files`), journal every later write (:class:`~.live.LiveShard`);
2. *build* (nothing waits): the child runs :mod:`.build` on the copy;
3. *load and replay* (Edge's load holds the GIL): sync, load, replay the journal;
4. *swap* (writes and reads wait): replay the rest, commit the generation (atomic
   pointer rename), make it live;
5. *clean*: close the old shard and delete its files.

A failure before the commit deletes the new files and keeps the live shard, which
received every write; a crash at any point reopens cleanly (:mod:`.files`).

Examples:
    >>> status = OptimizationStatus.finished_without_work("the server optimizes itself")
    >>> status.result().outcome
    'skipped'
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import qdrant_edge as qe

from langchain_tiered_memory.errors import BackendError, DiskFullError
from langchain_tiered_memory.stores.edge import build as edge_build
from langchain_tiered_memory.stores.edge.files import (
    commit,
    copy_tree,
    fsync_tree,
    next_generation,
    remove_shard,
)
from langchain_tiered_memory.stores.edge.live import (
    LiveShard,
    build_bytes,
    check_build_space,
    check_free_space,
    release_freed_memory,
)
from langchain_tiered_memory.stores.edge.warm import read_files

__all__ = ["BackgroundOptimization", "OptimizationReport", "OptimizationStatus"]

Outcome = Literal["swapped", "skipped", "failed", "cancelled"]
Progress = Callable[[str], None]
_REPLAY_PASSES = 16
_SWAP_BACKLOG = 32  # replay outside the swap until at most this many writes are left
logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class OptimizationReport:
    """What one background optimisation did.

    Attributes:
        outcome: ``"swapped"`` (the optimised shard is live), ``"skipped"``
            (nothing to do on this engine), ``"failed"`` or ``"cancelled"``.
        purged: The shard was rewritten from its live points (deleted payloads
            are gone from disk; also done once, unasked, to lay out a store made
            before segments were grouped by namespace).
        optimized: Qdrant Edge reported that it changed segments (HNSW, merges).
        points: Points in the new shard after the build (before the replay).
        journaled: Writes made during the build and replayed into the new shard.
        copy_bytes: Bytes copied from the live shard.
        copy_s: Seconds writes waited while the shard was flushed and copied.
        build_s: Seconds the child process ran.
        load_s: Seconds loading the built shard took (this holds the GIL).
        pause_s: Seconds writes and reads waited for the swap.
        total_s: Seconds from start to end.
        message: A sentence for logs.

    Examples:
        >>> OptimizationReport("skipped", message="nothing to do").pause_s
        0.0
    """

    outcome: Outcome
    purged: bool = False
    optimized: bool = False
    points: int = 0
    journaled: int = 0
    copy_bytes: int = 0
    copy_s: float = 0.0
    build_s: float = 0.0
    load_s: float = 0.0
    pause_s: float = 0.0
    total_s: float = 0.0
    message: str = ""


class OptimizationStatus:
    """A handle on a background optimisation: its phase, and its report once done.

    Phases: ``waiting`` (for a previous optimisation), ``copying``, ``building``,
    ``loading``, ``replaying``, ``swapping``, ``cleaning``, then ``done``,
    ``failed``, ``cancelled`` or ``skipped``.

    Examples:
        >>> status = OptimizationStatus.finished_without_work("nothing to do")
        >>> status.done(), status.phase
        (True, 'skipped')
    """

    def __init__(self, *, purge: bool, on_cancel: Callable[[], None] | None = None) -> None:
        """A pending status (made by the engine; users get one from ``start_optimize``)."""
        self.purge = purge
        self.phase = "waiting"
        self._done = threading.Event()
        self._report: OptimizationReport | None = None
        self._error: BaseException | None = None
        self._on_cancel = on_cancel

    @classmethod
    def finished_without_work(cls, message: str) -> OptimizationStatus:
        """A status that is already done with outcome ``"skipped"``."""
        status = cls(purge=False)
        status._finish(OptimizationReport("skipped", message=message), None)
        return status

    def _finish(self, report: OptimizationReport, error: BaseException | None) -> None:
        self._report, self._error = report, error
        self.phase = {"swapped": "done"}.get(report.outcome, report.outcome)
        self._done.set()

    def done(self) -> bool:
        """True once the optimisation ended (in any outcome)."""
        return self._done.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until it ends or ``timeout`` seconds pass; True if it ended."""
        return self._done.wait(timeout)

    def result(self, timeout: float | None = None) -> OptimizationReport:
        """The report, waiting for it.

        Raises:
            TimeoutError: It did not end within ``timeout`` seconds.
            BackendError: It failed (the store kept its current shard and every write).
        """
        if not self._done.wait(timeout):
            raise TimeoutError(
                f"the background optimisation is still {self.phase} after {timeout} s: "
                "wait longer (result(timeout=None)) or cancel() it"
            )
        if self._error is not None:
            raise self._error
        assert self._report is not None
        return self._report

    async def aresult(self, timeout: float | None = None) -> OptimizationReport:
        """Async twin of :meth:`result` (waits in a worker thread)."""
        await asyncio.to_thread(self._done.wait, timeout)
        return self.result(0)

    def cancel(self) -> None:
        """Stop it if it has not swapped yet (the child process is killed); safe to repeat."""
        if self._on_cancel is not None and not self.done():
            self._on_cancel()


class _Cancelled(Exception):
    """Raised inside a run when ``cancel()`` stopped it before the swap."""


class BackgroundOptimization:
    """One background build of a new shard generation, run by a daemon thread.

    Args:
        live: The engine's live shard.
        container: The collection directory.
        spec: Build settings for :mod:`.build` (``names``, ``dims``, ``optimizers``).
        purge: Rewrite the shard from its live points instead of optimising a copy.
        after: A previous optimisation to wait for first.
        progress: Called with each phase name, from the background thread.
    """

    def __init__(
        self,
        live: LiveShard,
        container: Path,
        spec: dict[str, Any],
        *,
        purge: bool = False,
        after: OptimizationStatus | None = None,
        progress: Progress | None = None,
    ) -> None:
        self.live = live
        self.container = container
        self.spec = spec
        self.after = after
        self.progress = progress
        self.status = OptimizationStatus(purge=purge, on_cancel=self.cancel)
        self._cancelled = threading.Event()
        self._proc: subprocess.Popen[str] | None = None
        self._new: qe.EdgeShard | None = None
        self._paths: list[Path] = []
        self._swapping = False
        self._thread = threading.Thread(
            target=self._run, name=f"ltm-optimize-{container.name}", daemon=True
        )

    def start(self) -> OptimizationStatus:
        """Start the background thread; returns the status handle."""
        self._thread.start()
        return self.status

    def cancel(self) -> None:
        """Ask the build to stop before its swap (kills the child process)."""
        self._cancelled.set()
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.kill()

    def join(self, timeout: float | None = None) -> None:
        """Wait for the background thread to end."""
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout)

    # ------------------------------------------------------------------ steps
    def _enter(self, phase: str) -> None:
        if self._cancelled.is_set() and not self._swapping:
            raise _Cancelled
        self.status.phase = phase
        if self.progress is not None:
            self.progress(phase)

    def _run(self) -> None:
        started = time.perf_counter()
        try:
            if self.after is not None:
                self.after.wait()
            report = self._build(started)
        except _Cancelled:
            self._abandon()
            self.status._finish(OptimizationReport("cancelled", purged=self.status.purge), None)
        except BaseException as exc:
            self._abandon()
            error: BaseException = exc  # a DiskFullError is the caller's to fix: raised as it is
            if not isinstance(exc, DiskFullError):
                error = BackendError(
                    f"background optimisation of the store at {self.container} failed ({exc}); "
                    "the store kept its current shard and every write: see the cause, then retry"
                )
                error.__cause__ = exc
            report = OptimizationReport("failed", purged=self.status.purge, message=str(error))
            logger.warning("%s", error)  # also when nobody waits on the status (auto_optimize)
            self.status._finish(report, error)
        else:
            self.status._finish(report, None)

    def _build(self, started: float) -> OptimizationReport:
        purge = self.status.purge
        self._enter("copying")
        with self.live.write_lock:
            t0 = time.perf_counter()
            self.live.shard.flush()
            check_build_space(self.live.dir, build_bytes(self.live.dir, copies=2))
            target = next_generation(self.container)
            source = target.with_name(target.name + ".src") if purge else target
            self._paths = [target, source]
            copied = copy_tree(self.live.dir, source)
            journal = self.live.start_journal()
            copy_s = time.perf_counter() - t0
        self._enter("building")
        check_build_space(target.parent, build_bytes(source, copies=1))
        result, build_s = self._run_child(source, target, purge)
        if purge:
            shutil.rmtree(source)
        fsync_tree(target)  # the generation must be on disk before the pointer names it
        self._enter("loading")
        check_free_space(target)  # the replay writes the new shard through memory maps
        # The child's close dropped the files from the page cache: read them back in one
        # pass (the GIL is free meanwhile) so the load, which holds it, reads no disk.
        read_files(target, lazy=False)
        t0 = time.perf_counter()
        self._new = qe.EdgeShard.load(str(target))
        load_s = time.perf_counter() - t0
        self._enter("replaying")
        applied = self._replay(self._new, journal)
        self._new.flush()
        self._enter("swapping")
        self._swapping = True
        with self.live.write_lock, self.live.gate.exclusive():
            t0 = time.perf_counter()
            # The last writes are in the new shard's WAL, as durable as any write.
            for op in journal[applied:]:
                self._new.update(op)
            commit(self.container, target)  # the point of no return
            self._paths = []
            old, old_dir = self.live.swap(self._new, target)
            self._new = None
            pause_s = time.perf_counter() - t0
        try:
            self._enter("cleaning")
        except Exception as exc:  # the swap is done: a failing callback cannot undo it
            logger.warning("the progress callback failed after the swap: %r", exc)
        leftover = self._clean(old, old_dir)
        return OptimizationReport(
            "swapped",
            purged=purge,
            optimized=bool(result.get("optimized")),
            points=int(result.get("points", 0)),
            journaled=len(journal),
            copy_bytes=copied,
            copy_s=copy_s,
            build_s=build_s,
            load_s=load_s,
            pause_s=pause_s,
            total_s=time.perf_counter() - started,
            message=(
                f"{'purged and optimised' if purge else 'optimised'} {self.container} in the "
                f"background: writes waited {copy_s:.3f} s for the copy and "
                f"{pause_s:.3f} s for the swap{leftover}"
            ),
        )

    def _clean(self, old: qe.EdgeShard, old_dir: Path) -> str:
        """Close and delete the superseded shard; a failure only leaves files to the next open."""
        try:
            old.close()
            release_freed_memory()
            remove_shard(self.container, old_dir)
        except Exception as exc:  # the swap is done: the next open deletes the leftovers
            return f" (the old shard at {old_dir} is left for the next open to delete: {exc})"
        return ""

    def _run_child(self, source: Path, target: Path, purge: bool) -> tuple[dict[str, Any], float]:
        spec = {
            **self.spec,
            "mode": "rewrite" if purge else "optimize",
            "source": str(source),
            "target": str(target),
            "parent_pid": os.getpid(),
        }
        if not sys.executable:
            raise BackendError("no Python executable to run the build process (sys.executable)")
        t0 = time.perf_counter()
        self._proc = subprocess.Popen(
            [sys.executable, edge_build.__file__, json.dumps(spec)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        if self._cancelled.is_set():
            self._proc.kill()
        out, err = self._proc.communicate()
        if self._cancelled.is_set():
            raise _Cancelled
        if self._proc.returncode != 0:
            raise BackendError(
                f"the build process exited with code {self._proc.returncode}: "
                f"{err.strip()[-2000:] or 'no error output'}"
            )
        lines = out.strip().splitlines()
        result = json.loads(lines[-1]) if lines else {}
        return result, time.perf_counter() - t0

    def _replay(self, new: qe.EdgeShard, journal: list[qe.UpdateOperation]) -> int:
        """Replay the journal outside the swap while it keeps growing; returns ops applied."""
        applied = 0
        for _ in range(_REPLAY_PASSES):
            pending = len(journal)
            if pending - applied <= _SWAP_BACKLOG:
                break
            for op in journal[applied:pending]:
                new.update(op)
            applied = pending
            if self._cancelled.is_set():
                raise _Cancelled
        return applied

    def _abandon(self) -> None:
        """Undo a build that will not swap: stop the journal, drop its files."""
        self.live.stop_journal()
        new, self._new = self._new, None
        if new is not None:
            new.close()
        for path in self._paths:
            shutil.rmtree(path, ignore_errors=True)
