"""The store peers benchmark runs end to end on a tiny store and prints its table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def test_store_peers_prints_one_row_per_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.syspath_prepend(str(ROOT))
    from benchmarks import store_peers

    out = tmp_path / "rows.json"
    store_peers.main(
        [
            "--sizes", "300",
            "--namespaces", "10",
            "--queries", "10",
            "--dims", "32",
            "--stores", "tiered,tiered-optimized,inmemory,sqlite",
            "--in-process",
            "--json", str(out),
        ]
    )  # fmt: skip
    rows = {r["store"]: r for r in json.loads(out.read_text())}
    assert set(rows) == {"tiered", "tiered-optimized", "inmemory", "sqlite"}
    for name in ("tiered", "tiered-optimized", "inmemory"):
        assert rows[name]["recall"] == 1.0, rows[name]
    assert rows["tiered"]["ingest_per_s"] > 0 and rows["tiered"]["disk_mb"] > 0
    assert rows["tiered"]["reopen_s"] is not None and "disk_mb" not in rows["inmemory"]
    sqlite = rows["sqlite"]
    assert sqlite.get("recall") == 1.0 or sqlite["skipped"].startswith("skipped")
    table = capsys.readouterr().out
    assert "| QdrantMemoryStore embedded | 300 |" in table
    assert "ingest vs SqliteStore" in table
