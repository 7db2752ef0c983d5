"""Child process of the forget crash tests (run as a script, SIGKILLed by the parent).

``python _child_forget.py <dir> <user> <stage>`` opens ``TieredMemory.open(dir)``
and calls ``forget_user(user)``, printing ``at <stage>`` (flushed) when the
erasure reaches ``stage``:

* ``delete``: after the first batch of the user's deletions was applied; the
  child then waits to be killed (more of the user's records are still stored);
* ``purge``: as the store starts rewriting its files without the deleted
  records; the rewrite goes on until the parent kills the child.

It prints ``done <records>`` if ``forget_user`` returns first.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from langchain_tiered_memory import TieredMemory
from langchain_tiered_memory.testing.fakes import HashingEmbeddings


def main(directory: str, user: str, stage: str) -> None:
    memory = TieredMemory.open(directory, embeddings=HashingEmbeddings(size=64))
    store: Any = memory.store
    batch, purge = store.batch, store.purge_deleted

    def batch_then_wait(ops: Any) -> Any:
        ops = list(ops)
        result = batch(ops)
        deletes = [op for op in ops if getattr(op, "value", 0) is None]
        if stage == "delete" and any(user in op.namespace[1:2] for op in deletes):
            print("at delete", flush=True)
            while True:
                time.sleep(1)
        return result

    def purge_reported(timeout: float | None = None) -> Any:
        if stage == "purge":
            print("at purge", flush=True)
        return purge(timeout)

    store.batch, store.purge_deleted = batch_then_wait, purge_reported
    print("ready", flush=True)
    print(f"done {memory.forget_user(user)}", flush=True)
    memory.close()


if __name__ == "__main__":
    main(*sys.argv[1:4])
