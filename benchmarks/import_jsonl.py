"""Import benchmark: records/s of ``import_jsonl``'s read and write on the embedded store.

Writes a JSON Lines export of ``--records`` records of one user (facts,
episodes and turns under the tiers' namespaces, each with a ``text`` field),
then times :func:`~langchain_tiered_memory.export_import.read_records` and
:func:`~langchain_tiered_memory.export_import.write_records` into a fresh
``QdrantMemoryStore.embedded`` (what ``TieredMemory.import_jsonl`` runs).
Embedding is a lookup of precomputed 384-d vectors, so the figure is the
store's own write path.

Usage:
    python -m benchmarks.import_jsonl --records 10000
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run as a file: make ``benchmarks`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from langchain_core.embeddings import Embeddings

from benchmarks._common import environment
from langchain_tiered_memory.export_import import ImportTarget, read_records, write_records
from langchain_tiered_memory.stores import QdrantMemoryStore

DIMS = 384
NAMESPACES = (("semantic", "facts"), ("episodic", "episodes"), ("turns", "t"))


class TableEmbeddings(Embeddings):
    """Each text gets a fixed random unit vector (a lookup, no model)."""

    def __init__(self, size: int = 1024) -> None:
        rng = np.random.default_rng(7)
        table = rng.standard_normal((size, DIMS)).astype(np.float32)
        self.rows = (table / np.linalg.norm(table, axis=1, keepdims=True)).tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.rows[hash(t) % len(self.rows)] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.rows[hash(text) % len(self.rows)]


def write_file(path: Path, records: int) -> None:
    """An export file of ``records`` records of the user ``bench``."""
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(records):
            tier = NAMESPACES[i % len(NAMESPACES)]
            record = {
                "format": "langchain-tiered-memory/v1",
                "namespace": ["tiered_memory", "bench", "_", *tier],
                "key": f"r{i}",
                "value": {
                    "text": f"record {i} about topic {i % 97} and place {i % 13}",
                    "kind": tier[0],
                    "importance": (i % 10) / 10,
                    "tags": [f"t{i % 5}"],
                },
                "created_at": f"2026-01-{1 + i % 28:02d}T10:00:00+00:00",
                "updated_at": f"2026-02-{1 + i % 28:02d}T10:00:00+00:00",
            }
            fh.write(json.dumps(record, sort_keys=True) + "\n")


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=10_000)
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="import-bench-"))
    path = work / "export.jsonl"
    write_file(path, args.records)
    index = {"dims": DIMS, "embed": TableEmbeddings(), "fields": ["text"]}
    with QdrantMemoryStore.embedded(work / "store", index=index) as store:  # type: ignore[arg-type]
        start = time.perf_counter()
        ops = read_records(path, ImportTarget(user_id="bench"))
        read_s = time.perf_counter() - start
        write_records(store, ops)
        total_s = time.perf_counter() - start
    figures = {
        "records": float(args.records),
        "read_s": read_s,
        "write_s": total_s - read_s,
        "records_per_s": args.records / total_s,
    }
    print(f"import_jsonl: {environment()}")
    print(
        f"{args.records:,} records: read {read_s:.2f} s, write {total_s - read_s:.2f} s, "
        f"{figures['records_per_s']:,.0f} records/s"
    )
    return figures


if __name__ == "__main__":
    main()
