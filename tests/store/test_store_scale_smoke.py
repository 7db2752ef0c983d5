"""Keeps benchmarks/store_scale.py from rotting: a tiny run of the real script."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import import_store_class

ROOT = Path(__file__).resolve().parents[2]


def test_store_scale_quick_run(tmp_path: Path) -> None:
    import_store_class()
    out = tmp_path / "rows.json"
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "store_scale.py"),
            "--quick",
            "--sizes", "300",
            "--namespaces", "10",
            "--queries", "12",
            "--client-queries", "5",
            "--in-process",
            "--workdir", str(tmp_path / "work"),
            "--json", str(out),
        ],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = json.loads(out.read_text())
    assert [r["engine"] for r in rows] == ["embedded", "client", "inmemory"]
    for row in rows:
        assert row["points"] == 300
        assert row["upsert_per_s"] > 0
        assert row["ns_p50_ms"] <= row["ns_p99_ms"]
        # 30 points per namespace: every engine must find the exact top-10.
        assert row["recall_ns"] >= 0.99, row
        assert row["recall_time"] >= 0.99, row
    assert "| embedded (Qdrant Edge) | 300 |" in proc.stdout
    assert "| InMemoryStore | 300 |" in proc.stdout
    assert not (tmp_path / "work" / "embedded-300").exists(), "benchmark left files behind"
