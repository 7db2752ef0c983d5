"""The durable outbox: an SQLite (WAL) queue of writes that survives a crash.

A write is committed to ``<path>/outbox.sqlite3`` before :meth:`Outbox.enqueue`
returns; concurrent submitters share one commit (group commit). Rows move
``pending -> applied`` only after their handler returned (so handlers must be
idempotent: a crash in between replays the write) and ``pending -> dead`` after
the last failed attempt. A lock file keeps a second process out; a state file
lets an open detect a damaged, missing, rolled-back or WAL-less outbox, refused
with an :class:`~langchain_tiered_memory.errors.OutboxDamagedError` naming the
repair (docs/reliability.md, "How damage is detected").

Examples:
    >>> import tempfile, pathlib
    >>> from langchain_tiered_memory.writeback.ops import WriteOp
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> outbox = Outbox(folder / "outbox.sqlite3")
    >>> [receipt] = outbox.enqueue([WriteOp.put(("m",), "k", {"v": 1})])
    >>> [row.op for row in outbox.next_batch(10)]
    ['store.put']
    >>> outbox.settle([receipt.seq]); outbox.stats().applied
    1
    >>> outbox.close()
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any

from langchain_tiered_memory.errors import (
    OutboxDamagedError,
    StoreDamagedError,
    StoreLockedError,
    WriteBackError,
)
from langchain_tiered_memory.stores.edge.integrity import replace_file
from langchain_tiered_memory.types import Namespace
from langchain_tiered_memory.writeback.ops import (
    DeadLetter,
    WriteBackStats,
    WriteOp,
    WriteReceipt,
    canonical_json,
)

__all__ = ["OUTBOX_FILENAME", "Failure", "Outbox", "OutboxRow", "check_outbox"]

logger = logging.getLogger(__name__)

OUTBOX_FILENAME = "outbox.sqlite3"
_DAMAGE_CODES = frozenset({11, 26})  # SQLITE_CORRUPT, SQLITE_NOTADB
_SCHEMA_VERSION = 1
_RESTORE = (
    "restore it from a backup; to accept the loss of the writes it held, move it away and open "
    "again"
)
_SCHEMA = """
CREATE TABLE IF NOT EXISTS writes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    idem_key TEXT NOT NULL UNIQUE,
    derived INTEGER NOT NULL,
    op TEXT NOT NULL,
    payload TEXT NOT NULL,
    namespace TEXT,
    target TEXT,
    status TEXT NOT NULL CHECK (status IN ('pending', 'applied', 'dead', 'superseded')),
    attempts INTEGER NOT NULL DEFAULT 0,
    failures INTEGER NOT NULL DEFAULT 0,
    next_attempt_at REAL NOT NULL DEFAULT 0,
    last_error TEXT,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS writes_status_seq ON writes (status, seq);
CREATE INDEX IF NOT EXISTS writes_target_seq ON writes (target, seq) WHERE target IS NOT NULL;
"""


@dataclass(frozen=True)
class OutboxRow:
    """A pending write as the worker sees it."""

    seq: int
    idempotency_key: str
    op: str
    payload_json: str
    attempts: int
    next_attempt_at: float

    @property
    def payload(self) -> dict[str, Any]:
        """The decoded JSON payload."""
        value: dict[str, Any] = json.loads(self.payload_json)
        return value


@dataclass(frozen=True)
class Failure:
    """A failed attempt to record: which write, the error, and when to retry (None: never)."""

    seq: int
    error: str
    retry_at: float | None


@dataclass
class _Submission:
    ops: Sequence[WriteOp]
    receipts: list[WriteReceipt] = field(default_factory=list)
    error: BaseException | None = None
    done: bool = False


def _lock_file(path: Path) -> IO[str]:
    """Lock the outbox ``path`` (exclusive, non-blocking); the OS drops it when we die."""
    lock = path.with_name(path.name + ".lock")
    handle = open(lock, "a+", encoding="utf-8")  # noqa: SIM115 - held until close()
    try:
        if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
            import msvcrt

            msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)
        else:
            import fcntl

            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        handle.seek(0)
        holder = handle.read().strip() or "unknown"
        handle.close()
        raise StoreLockedError(
            f"outbox {path} is already open (held by process {holder}): "
            "close the other DurableMemoryWriter, or give each process its own memory path"
        ) from exc
    handle.seek(0)
    handle.truncate()
    handle.write(str(os.getpid()))
    handle.flush()
    return handle


def _is_damage(exc: BaseException) -> bool:
    """Whether an SQLite error means the file is damaged (not busy, full or locked)."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return int(code) & 0xFF in _DAMAGE_CODES
    text = str(exc)
    return "malformed" in text or "not a database" in text


def _read_state(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise OutboxDamagedError(
            f"the outbox state file {path} is damaged ({exc}): delete it only if the outbox "
            "next to it is intact (it is rewritten on the next open)"
        ) from exc
    return data if isinstance(data, dict) else None


def _check_files(path: Path, state: dict[str, Any] | None) -> None:
    """Refuse an outbox whose file or ``-wal`` is missing while it may hold pending writes."""
    if state is None:
        return
    fix = (
        f"restore {path.name} (and its -wal file) from a backup; to accept the loss of the "
        f"writes it held, delete {path.name}.state and open again"
    )
    if not path.exists():
        if state.get("clean") and not state.get("pending"):
            return  # closed cleanly with nothing pending: nothing acknowledged is lost
        held = (
            f"{state.get('pending')} pending write(s)"
            if state.get("clean")
            else "writes acknowledged before the last unclean stop"
        )
        raise OutboxDamagedError(f"the outbox {path} is missing but held {held}: {fix}")
    wal = path.with_name(path.name + "-wal")
    if not state.get("clean") and state.get("wal") and not wal.exists():
        raise OutboxDamagedError(
            f"the outbox's write-ahead log {wal} is missing after an unclean stop: writes "
            f"acknowledged since the last checkpoint may be lost: {fix}"
        )


def _high_water(conn: sqlite3.Connection) -> int:
    """The highest sequence number ever handed out (kept by AUTOINCREMENT; 0 for none)."""
    try:
        row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'writes'").fetchone()
    except sqlite3.OperationalError:  # a new file: no table has been created yet
        return 0
    return int(row[0]) if row else 0


def _check_integrity(path: Path, conn: sqlite3.Connection, state: dict[str, Any] | None) -> None:
    problems = [row[0] for row in conn.execute("PRAGMA quick_check(5)").fetchall()]
    if problems != ["ok"]:
        raise OutboxDamagedError(
            f"the outbox {path} is damaged ({'; '.join(map(str, problems))}): {_RESTORE}"
        )
    seq, recorded = _high_water(conn), int((state or {}).get("seq") or 0)
    if seq < recorded:
        raise OutboxDamagedError(
            f"the outbox {path} has handed out writes up to {seq}, but it had reached write "
            f"{recorded}: it was replaced by an older copy or lost commits; restore it and its "
            f"-wal file from a backup, or delete {path.name}.state to accept the loss"
        )


def check_outbox(path: Path) -> None:
    """Check an outbox that is not open, read-only: its files, ``quick_check`` and sequence.

    Raises:
        OutboxDamagedError: Naming the file and the repair.
    """
    state = _read_state(path.with_name(path.name + ".state"))
    _check_files(path, state)
    if not path.exists():
        return
    try:
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
            _check_integrity(path, conn, state)
    except sqlite3.Error as exc:
        raise OutboxDamagedError(f"the outbox {path} is damaged ({exc}): {_RESTORE}") from exc


class Outbox:
    """A crash-safe FIFO of :class:`WriteOp` rows in one SQLite file.

    Args:
        path: The SQLite file (created with its folder when missing).
        fsync: ``True`` (default) commits with ``synchronous=FULL``: an acknowledged
            write survives power loss. ``False`` uses ``synchronous=NORMAL``: it
            survives the process being killed but not an OS crash, and is faster.
        clock: Wall-clock seconds since the epoch (injectable for tests).

    Raises:
        StoreLockedError: Another process (or writer) holds this outbox.
        WriteBackError: The file cannot be opened as an outbox.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        fsync: bool = True,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.path = Path(path)
        self._clock = clock
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._state_path = self.path.with_name(self.path.name + ".state")
        self._lock_handle: IO[str] | None = _lock_file(self.path)
        conn: sqlite3.Connection | None = None
        try:
            state = _read_state(self._state_path)
            _check_files(self.path, state)
            conn = sqlite3.connect(
                self.path, isolation_level=None, check_same_thread=False, timeout=30.0
            )
            _check_integrity(self.path, conn, state)
            (version,) = conn.execute("PRAGMA user_version").fetchone()
            if version > _SCHEMA_VERSION:  # checked before anything is changed in the file
                raise WriteBackError(
                    f"cannot open outbox {self.path}: its schema version {version} is newer "
                    f"than this library's ({_SCHEMA_VERSION}); upgrade langchain-tiered-memory "
                    "to apply its pending writes, and keep the file"
                )
            mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                logger.warning("outbox %s: WAL unsupported here, using journal mode %s", path, mode)
            conn.execute(f"PRAGMA synchronous={'FULL' if fsync else 'NORMAL'}")
            conn.executescript(_SCHEMA)
            conn.execute(f"PRAGMA user_version={_SCHEMA_VERSION}")
            self._wal = str(mode).lower() == "wal"
            state = {"clean": False, "seq": _high_water(conn), "wal": self._wal}
            replace_file(self._state_path, json.dumps(state, sort_keys=True))
        except (StoreDamagedError, WriteBackError, sqlite3.Error) as exc:
            if conn is not None:
                conn.close()
            self._release_lock()
            if not isinstance(exc, sqlite3.Error):
                raise
            if _is_damage(exc):
                raise OutboxDamagedError(
                    f"cannot open outbox {self.path}: it is damaged ({exc}); {_RESTORE}"
                ) from exc
            raise WriteBackError(
                f"cannot open outbox {self.path} ({exc}): check the path is writable and is "
                "an outbox file (or delete it if it is not)"
            ) from exc
        self._conn = conn
        self._damage: str | None = None
        self._fsync = fsync
        self._db = threading.RLock()
        self._group = threading.Condition()
        self._waiting: list[_Submission] = []
        self._committing = False
        self._closed = False

    # ------------------------------------------------------------------ plumbing
    def _intact(self) -> bool:
        """After a failed write: whether SQLite's ``quick_check`` still passes."""
        try:
            rows = self._conn.execute("PRAGMA quick_check(1)").fetchall()
        except sqlite3.DatabaseError as exc:
            return not _is_damage(exc)
        return [row[0] for row in rows] == ["ok"]

    def _damaged(self, exc: object) -> OutboxDamagedError:
        """Remember that SQLite found the file damaged; every later call is refused."""
        self._damage = str(exc)
        return OutboxDamagedError(
            f"the outbox {self.path} is damaged ({exc}): no write is acknowledged until it is "
            "repaired; close the writer and restore the outbox from a backup"
        )

    def _check_healthy(self) -> None:
        if self._closed:
            raise WriteBackError(f"outbox {self.path} is closed: open a new writer")
        if self._damage is not None:
            raise self._damaged(self._damage)

    @contextmanager
    def _transaction(self, *, sync: bool = True) -> Iterator[sqlite3.Connection]:
        """One write transaction; ``sync=False`` skips the fsync for bookkeeping.

        Losing an unsynced "applied" mark to power loss only replays an
        idempotent write; the WAL is append-only, so the next synced commit
        persists it anyway.
        """
        with self._db:
            self._check_healthy()
            relax = self._fsync and not sync
            try:
                if relax:
                    self._conn.execute("PRAGMA synchronous=NORMAL")
                try:
                    self._conn.execute("BEGIN IMMEDIATE")
                    try:
                        yield self._conn
                    except BaseException:
                        if self._conn.in_transaction:
                            self._conn.execute("ROLLBACK")
                        raise
                    self._conn.execute("COMMIT")
                finally:
                    if relax:
                        self._conn.execute("PRAGMA synchronous=FULL")
            except sqlite3.DatabaseError as exc:
                if _is_damage(exc) or not self._intact():
                    raise self._damaged(exc) from exc
                raise

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        with self._db:
            self._check_healthy()
            try:
                return self._conn.execute(sql, params).fetchall()
            except sqlite3.DatabaseError as exc:
                if _is_damage(exc):
                    raise self._damaged(exc) from exc
                raise

    def _release_lock(self) -> None:
        if self._lock_handle is not None:
            self._lock_handle.close()  # closing the descriptor drops the lock
            self._lock_handle = None

    def close(self) -> None:
        """Close the database and release the lock; safe to call twice."""
        with self._db:
            if not self._closed:
                state = None
                if self._damage is None:
                    try:
                        [(pending,)] = self._conn.execute(
                            "SELECT COUNT(*) FROM writes WHERE status = 'pending'"
                        ).fetchall()
                        seq = _high_water(self._conn)
                        state = {"clean": True, "seq": seq, "pending": pending, "wal": self._wal}
                    except sqlite3.Error as exc:  # the state file keeps "unclean"
                        logger.warning("outbox %s: could not read its state: %r", self.path, exc)
                self._closed = True
                self._conn.close()
                if state is not None:
                    try:
                        replace_file(self._state_path, json.dumps(state, sort_keys=True))
                    except OSError as exc:  # the next open checks as after a crash
                        logger.warning("outbox %s: could not record its state: %r", self.path, exc)
            self._release_lock()

    # ------------------------------------------------------------------ enqueue
    def enqueue(self, ops: Sequence[WriteOp]) -> list[WriteReceipt]:
        """Store ``ops`` durably, in order, and return one receipt per op.

        Concurrent callers are committed together in one transaction (group
        commit); each call returns only once its own ops are committed.

        Raises:
            WriteBackError: The outbox could not commit (disk full, closed, ...).
        """
        submission = _Submission(ops)
        with self._group:
            self._waiting.append(submission)
            while not submission.done:
                if self._committing:
                    self._group.wait()
                    continue
                self._committing = True
                batch, self._waiting = self._waiting, []
                self._group.release()
                try:
                    self._commit_group(batch)
                finally:
                    self._group.acquire()
                    self._committing = False
                    self._group.notify_all()
        if isinstance(submission.error, StoreDamagedError):
            raise OutboxDamagedError(str(submission.error)) from submission.error
        if submission.error is not None:
            raise WriteBackError(
                f"could not queue {len(ops)} write(s) in outbox {self.path}: "
                f"{submission.error}; nothing from this call was stored"
            ) from submission.error
        return submission.receipts

    def _commit_group(self, batch: list[_Submission]) -> None:
        now = self._clock()
        try:
            with self._transaction() as conn:
                receipts = [[self._insert(conn, op, now) for op in sub.ops] for sub in batch]
        except BaseException as exc:
            for sub in batch:  # every waiter learns the outcome, whatever it was
                sub.error, sub.done = exc, True
            if not isinstance(exc, (sqlite3.Error, WriteBackError, StoreDamagedError)):
                raise
            return
        for sub, sub_receipts in zip(batch, receipts, strict=True):
            sub.receipts, sub.done = sub_receipts, True

    @staticmethod
    def _insert(conn: sqlite3.Connection, op: WriteOp, now: float) -> WriteReceipt:
        key = op.idempotency_key
        row = conn.execute(
            "SELECT seq, target, status FROM writes WHERE idem_key = ?", (key,)
        ).fetchone()
        if row is not None:
            seq, target, status = row
            superseded = (
                op.key_was_derived
                and target is not None
                and conn.execute(
                    "SELECT 1 FROM writes WHERE target = ? AND seq > ? LIMIT 1", (target, seq)
                ).fetchone()
                is not None
            )
            # A dead write never took effect, and a derived-key write that a later
            # write to the same item replaced is no longer a witness: queue it anew.
            if not superseded and status not in ("dead", "superseded"):
                return WriteReceipt(seq=seq, idempotency_key=key, duplicate=True)
            conn.execute("DELETE FROM writes WHERE seq = ?", (seq,))
        namespace = None if op.namespace is None else canonical_json(list(op.namespace))
        cursor = conn.execute(
            "INSERT INTO writes (idem_key, derived, op, payload, namespace, target, status,"
            " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?)",
            (
                key,
                int(op.key_was_derived),
                op.name,
                op.payload_json,
                namespace,
                op.target,
                now,
                now,
            ),
        )
        return WriteReceipt(seq=int(cursor.lastrowid or 0), idempotency_key=key)

    # ------------------------------------------------------------------ worker side
    def next_batch(self, limit: int) -> list[OutboxRow]:
        """The first ``limit`` pending writes in submission order."""
        rows = self._query(
            "SELECT seq, idem_key, op, payload, attempts, next_attempt_at FROM writes"
            " WHERE status = 'pending' ORDER BY seq LIMIT ?",
            (limit,),
        )
        return [OutboxRow(*row) for row in rows]

    def settle(self, applied: Sequence[int], failure: Failure | None = None) -> None:
        """In one transaction, mark ``applied`` writes applied and record ``failure``.

        Call only after the handlers of ``applied`` have returned. A failure with
        ``retry_at=None`` makes that write a dead letter.
        """
        now = self._clock()
        with self._transaction(sync=False) as conn:
            conn.executemany(
                "UPDATE writes SET status = 'applied', attempts = attempts + 1, updated_at = ?"
                " WHERE seq = ? AND status = 'pending'",
                [(now, seq) for seq in applied],
            )
            if failure is not None:
                conn.execute(
                    "UPDATE writes SET status = ?, attempts = attempts + 1,"
                    " failures = failures + 1, last_error = ?, next_attempt_at = ?,"
                    " updated_at = ? WHERE seq = ? AND status = 'pending'",
                    (
                        "dead" if failure.retry_at is None else "pending",
                        failure.error,
                        failure.retry_at or 0.0,
                        now,
                        failure.seq,
                    ),
                )

    def pending_through(self, seq: int) -> int:
        """How many writes with ``seq`` at most ``seq`` are still pending."""
        [(count,)] = self._query(
            "SELECT COUNT(*) FROM writes WHERE status = 'pending' AND seq <= ?", (seq,)
        )
        return int(count)

    def last_seq(self) -> int:
        """The highest ``seq`` handed out so far (0 for an empty outbox)."""
        [(seq,)] = self._query("SELECT COALESCE(MAX(seq), 0) FROM writes")
        return int(seq)

    # ------------------------------------------------------------------ inspection
    def dead_letters(self, limit: int | None = None) -> list[DeadLetter]:
        """Dead letters, oldest first."""
        rows = self._query(
            "SELECT seq, idem_key, op, payload, namespace, attempts, last_error, created_at,"
            " updated_at FROM writes WHERE status = 'dead' ORDER BY seq LIMIT ?",
            (-1 if limit is None else limit,),
        )
        return [
            DeadLetter(
                seq=seq,
                idempotency_key=key,
                op=op,
                payload=json.loads(payload),
                namespace=None if namespace is None else tuple(json.loads(namespace)),
                attempts=attempts,
                error=error or "",
                created_at=datetime.fromtimestamp(created, tz=timezone.utc),
                failed_at=datetime.fromtimestamp(updated, tz=timezone.utc),
            )
            for seq, key, op, payload, namespace, attempts, error, created, updated in rows
        ]

    def requeue_dead(self, seqs: Sequence[int] | None = None) -> tuple[list[int], list[int]]:
        """Put dead letters back in the queue at their original position.

        A dead ``store.put``/``store.delete`` whose item a later write already
        replaced is marked superseded instead, so a retry never reverts newer data.

        Returns:
            The re-queued seqs and the superseded seqs.
        """
        now = self._clock()
        requeued: list[int] = []
        superseded: list[int] = []
        with self._transaction() as conn:
            rows = conn.execute(
                "SELECT seq, target FROM writes WHERE status = 'dead' ORDER BY seq"
            ).fetchall()
            wanted = None if seqs is None else set(seqs)
            for seq, target in rows:
                if wanted is not None and seq not in wanted:
                    continue
                newer = (
                    target is not None
                    and conn.execute(
                        "SELECT 1 FROM writes WHERE target = ? AND seq > ? AND status IN"
                        " ('pending', 'applied') LIMIT 1",
                        (target, seq),
                    ).fetchone()
                )
                status = "superseded" if newer else "pending"
                conn.execute(
                    "UPDATE writes SET status = ?, attempts = 0, next_attempt_at = 0,"
                    " updated_at = ? WHERE seq = ?",
                    (status, now, seq),
                )
                (superseded if newer else requeued).append(seq)
        return requeued, superseded

    def stats(self) -> WriteBackStats:
        """Counts by status, failed attempts, and the oldest pending write's age."""
        counts = dict(self._query("SELECT status, COUNT(*) FROM writes GROUP BY status"))
        [(failures, retrying, oldest)] = self._query(
            "SELECT COALESCE(SUM(failures), 0),"
            " COALESCE(SUM(status = 'pending' AND failures > 0), 0),"
            " MIN(CASE WHEN status = 'pending' THEN created_at END) FROM writes"
        )
        last = self._query(
            "SELECT last_error FROM writes WHERE last_error IS NOT NULL"
            " ORDER BY updated_at DESC LIMIT 1"
        )
        return WriteBackStats(
            pending=counts.get("pending", 0),
            retrying=int(retrying),
            applied=counts.get("applied", 0),
            dead_letters=counts.get("dead", 0),
            superseded=counts.get("superseded", 0),
            failed_attempts=int(failures),
            oldest_pending_age=None if oldest is None else max(0.0, self._clock() - oldest),
            last_error=last[0][0] if last else None,
        )

    # ------------------------------------------------------------------ deletion
    def purge(self, namespace_prefix: Namespace) -> int:
        """Delete every row (any status) whose namespace starts with ``namespace_prefix``.

        Deleted content is overwritten (``secure_delete``) and the WAL is
        checkpointed and truncated, so the payloads do not linger on disk.
        """
        prefix = list(namespace_prefix)

        def doomed(conn: sqlite3.Connection) -> list[int]:
            rows = conn.execute(
                "SELECT seq, namespace FROM writes WHERE namespace IS NOT NULL"
            ).fetchall()
            return [seq for seq, ns in rows if json.loads(ns)[: len(prefix)] == prefix]

        return self._erase(doomed)

    def discard(self, seqs: Sequence[int]) -> int:
        """Delete the writes ``seqs`` (any status) as :meth:`purge` does: nothing lingers.

        For queued writes refused because their user was erased after they were
        submitted.
        """
        wanted = list(seqs)
        return self._erase(lambda conn: wanted) if wanted else 0

    def _erase(self, select: Callable[[sqlite3.Connection], list[int]]) -> int:
        """Delete the rows ``select`` names, overwriting their content, WAL truncated."""
        with self._db:
            self._conn.execute("PRAGMA secure_delete=ON")
            try:
                with self._transaction() as conn:
                    doomed = [(seq,) for seq in select(conn)]
                    conn.executemany("DELETE FROM writes WHERE seq = ?", doomed)
                self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            finally:
                self._conn.execute("PRAGMA secure_delete=OFF")
        return len(doomed)

    def prune_applied(self, older_than: float) -> int:
        """Forget applied/superseded rows last updated before ``older_than`` (epoch seconds).

        They stop de-duplicating resubmissions of the same idempotency key.
        """
        with self._transaction() as conn:
            cursor = conn.execute(
                "DELETE FROM writes WHERE status IN ('applied', 'superseded') AND updated_at < ?",
                (older_than,),
            )
        return int(cursor.rowcount)
