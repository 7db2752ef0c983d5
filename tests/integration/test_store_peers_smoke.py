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
    assert isinstance(rows["tiered-optimized"]["rss_file_mb"], float)  # Linux: /proc
    sqlite = rows["sqlite"]
    assert sqlite.get("recall") == 1.0 or sqlite["skipped"].startswith("skipped")
    table = capsys.readouterr().out
    assert "| QdrantMemoryStore embedded | 300 |" in table
    assert "ingest vs SqliteStore" in table


def test_slow_peers_run_once_at_their_caps(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT))
    from benchmarks import store_peers

    calls: list[tuple[str, int, int]] = []

    def fake_run(_fn: object, store: str, points: int, config: object, *_: object, **__: object):  # type: ignore[no-untyped-def]
        calls.append((store, points, config.queries))  # type: ignore[attr-defined]
        return {"store": store, "points": points}

    monkeypatch.setattr(store_peers, "missing", lambda _store: None)
    monkeypatch.setattr(store_peers, "run_isolated", fake_run)
    stores = ("sqlite", "mem0", "lgqdrant")
    store_peers.run(store_peers.Config(sizes=(10_000, 100_000), stores=stores))
    assert calls == [
        ("sqlite", 10_000, 200),
        ("mem0", 10_000, 200),
        ("lgqdrant", 10_000, 200),
        ("sqlite", 100_000, 200),
    ]
    calls.clear()
    capped = store_peers.Config(
        sizes=(10_000, 100_000), stores=stores, slow_points=2_000, slow_queries=50
    )
    store_peers.run(capped)
    assert calls == [
        ("sqlite", 10_000, 200),
        ("mem0", 2_000, 50),
        ("lgqdrant", 2_000, 50),
        ("sqlite", 100_000, 200),
    ]
