"""Child process of the damaged-file and disk-full tests (run as a script).

Modes (``python _child_disk.py <mode> <dir> [args]``); every line printed is
flushed at once so the parent can react to it:

* ``store <dir> <n> <clean|kill>``: put items ``k0 .. k<n-1>`` into the embedded
  store at ``dir``, then close it, or end the process at once without closing
  (the store's write-ahead log then holds writes its segments never flushed).
* ``outbox <dir> <n>``: queue ``n`` writes in a durable writer whose worker is
  not started, then end the process without closing (an unclean stop).
* ``fill <dir>``: open ``TieredMemory.open(dir)``, print ``ready``, wait for a
  line on stdin, then write until the disk is full: direct puts (printing
  ``put <i>`` after each acknowledged batch) until a ``DiskFullError``, then
  queued writes (``queued <i>``) (up to 300) for as long as the outbox acknowledges them.
  It prints ``full``, waits for a second line (space was freed), flushes the
  writer, prints ``flushed`` and closes.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from reliability_helpers import make_store

from langchain_tiered_memory import TieredMemory
from langchain_tiered_memory.errors import DiskFullError, WriteBackError
from langchain_tiered_memory.testing.fakes import HashingEmbeddings
from langchain_tiered_memory.writeback.writer import DurableMemoryWriter

NAMESPACE = ("disk", "items")


def store(path: str, n: int, how: str) -> None:
    st = make_store("embedded", Path(path))
    for i in range(n):
        st.put(NAMESPACE, f"k{i}", {"text": f"item number {i}"})
    if how == "kill":
        os._exit(0)
    st.close()


def outbox(path: str, n: int) -> None:
    from langgraph.store.memory import InMemoryStore

    writer = DurableMemoryWriter(InMemoryStore(), path, start=False)
    for i in range(n):
        writer.submit_put(NAMESPACE, f"q{i}", {"text": f"queued {i}"})
    os._exit(0)


def fill(path: str) -> None:
    memory = TieredMemory.open(path, embeddings=HashingEmbeddings(size=64))
    st, writer = memory.store, memory.writer
    assert writer is not None
    print("ready", flush=True)
    sys.stdin.readline()
    text = "x" * 2000
    i = 0
    try:
        while i < 200_000:
            for j in range(i, i + 20):
                st.put(NAMESPACE, f"p{j}", {"text": f"{text} {j}"})
            i += 20
            print(f"put {i}", flush=True)
    except DiskFullError as exc:
        print(f"refused {type(exc).__name__}", flush=True)
    q = 0
    try:
        while q < 300:
            writer.submit_put(NAMESPACE, f"q{q}", {"text": f"{text} queued {q}"})
            q += 1
            print(f"queued {q}", flush=True)
    except WriteBackError as exc:
        print(f"queue refused {type(exc).__name__}", flush=True)
    print("full", flush=True)
    sys.stdin.readline()
    writer.flush(timeout=120)
    print("flushed", flush=True)
    memory.close()
    print("closed", flush=True)


if __name__ == "__main__":
    mode, directory, *rest = sys.argv[1:]
    if mode == "store":
        store(directory, int(rest[0]), rest[1])
    elif mode == "outbox":
        outbox(directory, int(rest[0]))
    elif mode == "fill":
        fill(directory)
    else:  # pragma: no cover
        raise SystemExit(f"unknown mode {mode}")
