"""Child process of the background-optimisation crash test (killed by itself or the parent).

``python _child_optimize.py <dir> <start> <kill_phase>``: open the embedded
store at ``<dir>``, start a thread that writes items ``w<start>, w<start+1>,
...`` (printing ``ack <i>`` after each put returned, and every 7th item
deletes an earlier one, printing ``del <i>`` after the delete returned), then
run ``store.start_optimize()`` printing ``phase <name>`` as it goes. When the
phase named ``kill_phase`` begins the process SIGKILLs itself (``-`` never);
otherwise it prints ``optimized <outcome>`` and closes the store. Every line
is flushed at once.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from reliability_helpers import WordEmbeddings

from langchain_tiered_memory.stores import QdrantMemoryStore
from langchain_tiered_memory.stores.edge.build import EdgeOptimizers

LOCK = threading.Lock()


def say(line: str) -> None:
    with LOCK:  # one whole line at a time from any thread
        print(line, flush=True)


def open_store(path: str) -> QdrantMemoryStore:
    """The store as the test opens it (small segments get HNSW graphs)."""
    index = {"dims": 32, "embed": WordEmbeddings(), "fields": ["text"]}
    return QdrantMemoryStore.embedded(
        path,
        index=index,  # type: ignore[arg-type]
        optimizers=EdgeOptimizers(indexing_threshold_kb=10),
    )


def main(path: str, start: int, kill_phase: str) -> None:
    store = open_store(path)
    stop = threading.Event()

    def writer() -> None:
        i = start
        while not stop.is_set():
            store.put(("opt", "live"), f"w{i}", {"text": f"written during optimize {i}"})
            say(f"ack {i}")
            if i % 7 == 6:
                store.delete(("opt", "live"), f"w{i - 3}")
                say(f"del {i - 3}")
            i += 1

    def progress(phase: str) -> None:
        say(f"phase {phase}")
        if phase == kill_phase:
            os.kill(os.getpid(), signal.SIGKILL)

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    time.sleep(0.05)
    status = store.start_optimize(progress=progress)
    report = status.result(timeout=300)
    time.sleep(0.05)
    stop.set()
    thread.join()
    say(f"optimized {report.outcome}")
    store.close()
    say("closed")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
