"""Durable write-back throughput versus writing to the store directly.

Prints acknowledged writes per second for several submit modes (each
acknowledged write is committed to the on-disk outbox first), the apply rate of
the background worker onto an InMemoryStore, and a baseline of direct
``store.put`` calls measured in the same run.

    python benchmarks/writeback/writer.py --writes 2000 --threads 8 --dir /tmp/wb-bench
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from langgraph.store.memory import InMemoryStore

from langchain_tiered_memory.writeback.ops import WriteOp
from langchain_tiered_memory.writeback.writer import DurableMemoryWriter

NS = ("tiered_memory", "bench", "_", "semantic")


def value(i: int) -> dict[str, object]:
    return {"text": f"fact number {i} about the user", "confidence": 0.9, "i": i}


def timed(fn: Callable[[], None]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def fresh(root: Path, name: str) -> Path:
    path = root / name
    shutil.rmtree(path, ignore_errors=True)
    return path


def bench_direct(n: int) -> float:
    store = InMemoryStore()

    def put_all() -> None:
        for i in range(n):
            store.put(NS, f"k{i}", value(i))

    return n / timed(put_all)


def bench_submit(root: Path, n: int, *, fsync: bool, threads: int = 1, batch: int = 1) -> float:
    """Acknowledged writes/s with the worker stopped, so only queueing is measured."""
    writer = DurableMemoryWriter(InMemoryStore(), fresh(root, "submit"), fsync=fsync, start=False)
    per_thread = n // threads

    def body(t: int) -> None:
        ops = [WriteOp.put(NS, f"t{t}-{i}", value(i)) for i in range(per_thread)]
        for j in range(0, len(ops), batch):
            writer.submit_many(ops[j : j + batch])

    def run() -> None:
        workers = [threading.Thread(target=body, args=(t,)) for t in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()

    elapsed = timed(run)
    assert writer.stats().pending == per_thread * threads
    writer.close()
    return per_thread * threads / elapsed


def bench_apply(root: Path, n: int, *, fsync: bool, batch_size: int) -> float:
    """Applied writes/s onto InMemoryStore, from a backlog already in the outbox."""
    store = InMemoryStore()
    path = fresh(root, "apply")
    writer = DurableMemoryWriter(store, path, fsync=fsync, start=False, batch_size=batch_size)
    ops = [WriteOp.put(NS, f"k{i}", value(i)) for i in range(n)]
    for j in range(0, n, 500):
        writer.submit_many(ops[j : j + 500])

    def run() -> None:
        writer.start()
        writer.flush()

    elapsed = timed(run)
    assert writer.stats().applied == n
    writer.close()
    assert len(store.search(NS, limit=n + 1)) == n
    return n / elapsed


def bench_end_to_end(root: Path, n: int, *, fsync: bool) -> float:
    """Submit one by one while the worker applies, then flush: writes/s overall."""
    writer = DurableMemoryWriter(InMemoryStore(), fresh(root, "e2e"), fsync=fsync)

    def run() -> None:
        for i in range(n):
            writer.submit_put(NS, f"k{i}", value(i))
        writer.flush()

    elapsed = timed(run)
    writer.close()
    return n / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=2000, help="writes per measurement")
    parser.add_argument("--threads", type=int, default=8, help="submitters for group commit")
    parser.add_argument("--dir", type=Path, default=None, help="where outboxes go (default: tmp)")
    args = parser.parse_args()
    root = args.dir or Path(tempfile.mkdtemp(prefix="wb-bench-"))
    root.mkdir(parents=True, exist_ok=True)
    n, t = args.writes, args.threads
    cases: list[tuple[str, Callable[[], float]]] = [
        ("baseline: direct store.put (InMemoryStore, not durable)", lambda: bench_direct(n * 10)),
        ("submit, fsync=True, 1 thread", lambda: bench_submit(root, n, fsync=True)),
        (
            f"submit, fsync=True, {t} threads (group commit)",
            lambda: bench_submit(root, n, fsync=True, threads=t),
        ),
        (
            "submit_many(100), fsync=True, 1 thread",
            lambda: bench_submit(root, n * 10, fsync=True, batch=100),
        ),
        ("submit, fsync=False, 1 thread", lambda: bench_submit(root, n, fsync=False)),
        (
            f"submit, fsync=False, {t} threads (group commit)",
            lambda: bench_submit(root, n, fsync=False, threads=t),
        ),
        (
            "apply backlog -> InMemoryStore, fsync=True, batch 64",
            lambda: bench_apply(root, n * 10, fsync=True, batch_size=64),
        ),
        (
            "apply backlog -> InMemoryStore, fsync=True, batch 1",
            lambda: bench_apply(root, n, fsync=True, batch_size=1),
        ),
        ("submit + apply + flush, fsync=True", lambda: bench_end_to_end(root, n, fsync=True)),
        ("submit + apply + flush, fsync=False", lambda: bench_end_to_end(root, n, fsync=False)),
    ]
    rows = [(name, run()) for name, run in cases]
    width = max(len(name) for name, _ in rows)
    print(f"{'mode':<{width}}  writes/s")
    print(f"{'-' * width}  --------")
    for name, rate in rows:
        print(f"{name:<{width}}  {rate:>8,.0f}")
    print(f"\nwrites per measurement: {n} (x10 for baseline, submit_many, batch-64 apply)")
    print(f"outboxes in: {root}")
    if args.dir is None:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
