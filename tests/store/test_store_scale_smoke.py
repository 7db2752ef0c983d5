"""Keeps benchmarks/store_scale.py from rotting: a tiny run of the real script."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _benchmarks_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the repository's ``benchmarks`` package importable in every test here."""
    if str(ROOT) not in sys.path:
        monkeypatch.syspath_prepend(str(ROOT))


def test_store_scale_quick_run(
    store_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from benchmarks import store_scale

    out = tmp_path / "rows.json"
    work = store_dir / "work"
    store_scale.main(
        [
            "--quick",
            "--sizes", "300",
            "--namespaces", "10",
            "--queries", "12",
            "--client-queries", "5",
            "--in-process",
            "--workdir", str(work),
            "--json", str(out),
            "--full-scan-points", "none",
        ]
    )  # fmt: skip
    printed = capsys.readouterr().out
    rows = json.loads(out.read_text())
    assert [r["engine"] for r in rows] == ["embedded", "client", "inmemory"]
    for row in rows:
        assert row["points"] == 300
        assert row["upsert_per_s"] > 0
        assert row["ns_p50_ms"] <= row["ns_p99_ms"]
        # 30 points per namespace: every engine must find the exact top-10.
        assert row["recall_ns"] >= 0.99, row
        assert row["recall_time"] >= 0.99, row
        if row["engine"] != "inmemory":
            assert row["reopen_s"] is not None and row["reopen_s"] > 0
    (walk,) = rows[0]["walks"]  # the embedded store again, the engine choosing its walk
    assert walk["full_scan_points"] == "None" and walk["recall_ns"] >= 0.99, walk
    assert "| embedded (Qdrant Edge), same store with full_scan_points=None | 300 |" in printed
    assert "| embedded (Qdrant Edge) | 300 |" in printed
    assert "| InMemoryStore | 300 |" in printed
    assert not any(work.iterdir()), "the benchmark left store files behind"


def test_store_scale_keeps_the_store_when_asked(store_dir: Path) -> None:
    from benchmarks import store_scale

    work = store_dir / "kept"
    args = ["--sizes", "200", "--namespaces", "4", "--queries", "4", "--engines", "embedded"]
    store_scale.main([*args, "--in-process", "--no-optimize", "--workdir", str(work), "--keep"])
    assert (work / "embedded-200" / "memories").is_dir()
    with pytest.raises(SystemExit):  # a kept store needs a directory that is not deleted
        store_scale.main([*args, "--keep"])


def test_hnsw_links_quick_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks import hnsw_links

    rows = hnsw_links.main(["--points", "400", "--queries", "8", "--workdir", str(tmp_path)])
    assert [r[0] for r in rows] == ["current", "no namespace layout", "every index linked"]
    for row in rows:
        assert row[1] == "400"
        assert row[6] == "1.000 / 1.000", row  # 4 points per namespace: exact either way
    assert "| every index linked | 400 |" in capsys.readouterr().out
    args = ["--points", "200", "--queries", "4", "--namespaces", "2", "--workdir", str(tmp_path)]
    rows = hnsw_links.main([*args, "--layouts", "no namespace layout"])
    assert [r[0] for r in rows] == ["no namespace layout"]
    assert not any(tmp_path.iterdir()), "the benchmark left store files behind"


def _target_facts(path: Path, facts: list[str]) -> None:
    """A memory directory where user ``target`` holds ``facts`` (384-d hashing embeddings)."""
    from langchain_tiered_memory import TieredMemory
    from langchain_tiered_memory.testing.fakes import HashingEmbeddings

    memory = TieredMemory.open(path, embeddings=HashingEmbeddings(size=384), durable_writes=False)
    for fact in facts:
        memory.for_user("target").semantic.store_fact("target", fact, confidence=0.9)
    memory.close()


def test_search_walk_quick_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks import search_walk

    _target_facts(
        tmp_path / "mem", [f"note {i} about {w}" for i, w in enumerate(search_walk.WORDS)]
    )
    search_walk.main([str(tmp_path / "mem" / "store"), "--queries", "4", "--rounds", "2"])
    printed = capsys.readouterr().out
    for rule in search_walk.RULES:
        assert f"| {rule} | 8 |" in printed
    # 16 current facts: the share rule never asks for ACORN and finds what "never" finds.
    assert "| share rule (the store's) | 8 |" in printed
    line = next(x for x in printed.splitlines() if x.startswith("| share rule"))
    assert line.split("|")[5:7] == [" 0 ", " 8 "], line


def test_assembly_ab_quick_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks import assembly_ab

    _target_facts(tmp_path / "mem", ["likes tea"])
    args = [str(tmp_path / "mem"), "--block", "2", "--blocks", "2", "--embeddings", "hashing"]
    rows = assembly_ab.main(args)
    assert [r[0] for r in rows] == list(assembly_ab.SETTINGS)
    assert all(r[1] == 4 and r[2] <= r[3] for r in rows), rows
    assert '| "auto" + lexical_idf="global" | 4 |' in capsys.readouterr().out


def test_assembly_ab_adds_an_arm_without_namespace_versions(tmp_path: Path) -> None:
    from benchmarks import assembly_ab

    _target_facts(tmp_path / "mem", ["likes tea"])
    args = [str(tmp_path / "mem"), "--block", "2", "--blocks", "2", "--embeddings", "hashing"]
    rows = assembly_ab.main([*args, "--unversioned"])
    assert [r[0] for r in rows] == [*assembly_ab.SETTINGS, assembly_ab.UNVERSIONED]
    with pytest.raises(SystemExit):
        assembly_ab.main([*args, "--unversioned", "--versus", str(tmp_path / "mem")])


def test_assembly_ab_adds_an_arm_with_spinning_embedding_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from benchmarks import assembly_ab
    from langchain_tiered_memory import LocalEmbeddings

    _target_facts(tmp_path / "mem", ["likes tea"])
    used: list[str] = []
    embed = LocalEmbeddings.embed_query

    def spy(self: LocalEmbeddings, text: str) -> list[float]:
        used.append(self.thread_spinning)
        return embed(self, text)

    monkeypatch.setattr(LocalEmbeddings, "embed_query", spy)
    args = [str(tmp_path / "mem"), "--block", "2", "--blocks", "2"]
    rows = assembly_ab.main([*args, "--spinning"])
    assert [r[0] for r in rows] == [*assembly_ab.SETTINGS, assembly_ab.SPINNING]
    # Each arm's 4 timed contexts embed their query once, with that arm's model threads
    # (the warm-up queries are the same for every arm: only the first arm embeds them).
    assert used.count("always") == 4
    assert used.count("run") >= 3 * 4
    with pytest.raises(SystemExit):
        assembly_ab.main([*args, "--spinning", "--embeddings", "hashing"])


def test_assembly_ab_times_two_stores_and_each_tier(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from benchmarks import assembly_ab

    _target_facts(tmp_path / "one", ["likes tea"])
    _target_facts(tmp_path / "two", ["likes coffee"])
    args = [str(tmp_path / "one"), "--versus", str(tmp_path / "two"), "--tiers", "--engine-queries"]
    rows = assembly_ab.main([*args, "--block", "2", "--blocks", "2", "--embeddings", "hashing"])
    assert [r[0] for r in rows] == ["A: one", "B: two"]
    assert all(r[1] == 4 for r in rows), rows
    printed = capsys.readouterr().out
    for arm in ("A: one", "B: two"):  # every tier of the assembler, timed twice per store
        for tier in ("warnings", "strategies", "preferences", "profile", "knowledge"):
            assert f"| {arm} | {tier} | 2 |" in printed, printed
    # The floor: the embedding and the knowledge tier's hybrid search, query by query.
    assert "| (query embedding) | - | 2 |" in printed, printed
    assert "| knowledge | 1: dense, limit 100 | 2 |" in printed, printed
    assert "| knowledge | 2: lexical, limit 100 | 2 |" in printed, printed
    assert "|  |" not in printed, printed  # every engine query is some tier's
