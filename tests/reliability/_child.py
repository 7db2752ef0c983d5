"""Child process of the crash and lock tests (run as a script, killed by the parent).

Modes (``python _child.py <mode> <dir> [args]``); every line printed is flushed
at once so the parent can react to it:

* ``hold <dir>``: open ``TieredMemory.open(dir)``, store one fact, print
  ``ready``, then sleep until killed.
* ``consolidate <dir>``: open the memory and run ``consolidate()`` for ``alice``,
  printing ``progress <phase> <done> <total>`` lines, then ``done <json report>``.
* ``optimize <dir> <start>``: open the store, start a thread that writes items
  ``w<start>, w<start+1>, ...`` printing ``ack <i>`` after each put returned,
  then call ``store.optimize(background=False)`` (printing ``optimizing`` and ``optimized``).
"""

from __future__ import annotations

import dataclasses
import json
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from reliability_helpers import WordEmbeddings

from langchain_tiered_memory import TieredMemory
from langchain_tiered_memory.testing.fakes import HashingEmbeddings


def hold(path: str) -> None:
    memory = TieredMemory.open(path, embeddings=HashingEmbeddings(size=64))
    memory.for_user("holder").semantic.store_fact("holder", "Holds the lock", confidence=0.9)
    print("ready", flush=True)
    while True:
        time.sleep(1)


def consolidate(path: str) -> None:
    memory = TieredMemory.open(path, embeddings=WordEmbeddings(), durable_writes=False)
    print("ready", flush=True)

    def progress(phase: str, done: int, total: int) -> None:
        print(f"progress {phase} {done} {total}", flush=True)

    report = memory.for_user("alice").consolidate(progress)
    print("done " + json.dumps(dataclasses.asdict(report)), flush=True)
    memory.close()


def optimize(path: str, start: int) -> None:
    from reliability_helpers import make_store

    store = make_store("embedded", Path(path), WordEmbeddings(), dims=32)
    print("ready", flush=True)
    stop = threading.Event()
    lock = threading.Lock()

    def say(line: str) -> None:
        with lock:  # one whole line at a time from either thread
            print(line, flush=True)

    def writer() -> None:
        i = start
        while not stop.is_set():
            store.put(("opt", "live"), f"w{i}", {"text": f"written during optimize {i}"})
            say(f"ack {i}")
            i += 1

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    time.sleep(0.05)
    say("optimizing")
    result = store.optimize(background=False)
    say(f"optimized {result}")
    stop.set()
    thread.join()
    store.close()
    print("closed", flush=True)


if __name__ == "__main__":
    mode, directory, *rest = sys.argv[1:]
    if mode == "hold":
        hold(directory)
    elif mode == "consolidate":
        consolidate(directory)
    elif mode == "optimize":
        optimize(directory, int(rest[0]))
    else:
        raise SystemExit(f"unknown mode {mode!r}")
