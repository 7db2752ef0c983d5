"""The LoCoMo and embeddings benchmarks run end to end on tiny inputs.

The real LoCoMo data (``../shared/data/locomo``) never enters the repository: the
LoCoMo test writes a tiny conversation in its format, with the fields the loader reads.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

TURNS = [
    ("Caroline", "I went to the LGBTQ support group yesterday and it was powerful."),
    ("Melanie", "That sounds inspiring! I painted a sunrise over the lake last week."),
    ("Caroline", "I am thinking about a career in counseling for trans youth."),
    ("Melanie", "My kids loved the camping trip to the mountains in June."),
]


def _session(number: int, turns: list[tuple[str, str]]) -> list[dict[str, str]]:
    return [
        {"speaker": who, "dia_id": f"D{number}:{i}", "text": text}
        for i, (who, text) in enumerate(turns, start=1)
    ]


def _sample() -> dict[str, object]:
    return {
        "sample_id": "conv-smoke",
        "conversation": {
            "speaker_a": "Caroline",
            "speaker_b": "Melanie",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": _session(1, TURNS[:2]),
            "session_2_date_time": "7:55 pm on 9 June, 2023",
            "session_2": _session(2, TURNS[2:]),
        },
        "qa": [
            {
                "question": "What career is Caroline considering?",
                "category": 4,
                "evidence": ["D2:1"],
                "answer": "counseling",
            },
            {
                "question": "When did Caroline go to the support group?",
                "category": 2,
                "evidence": ["D1:1"],
                "answer": "7 May 2023",
            },
            {
                "question": "What did Melanie paint?",
                "category": 4,
                "evidence": ["D1:2"],
                "answer": "a sunrise",
            },
            {"question": "Unanswerable: no evidence", "category": 5, "evidence": []},
        ],
    }


def test_locomo_benchmark_runs_on_a_tiny_conversation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from benchmarks import locomo
    from benchmarks.locomo_data import load_locomo

    data = tmp_path / "locomo-smoke.json"
    data.write_text(json.dumps([_sample()]), encoding="utf-8")
    (conv,) = load_locomo(data)
    assert len(conv.turns) == 4 and len(conv.questions) == 3  # the one without evidence is left out

    locomo.main(["--data", str(data), "--rows", "project,store", "--cache-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert "LoCoMo: 1 conversations, 4 turns, 3 questions with valid evidence" in out
    for row in ("BM25", "S1 ", "S2 QdrantMemoryStore hybrid", "S3 QdrantMemoryStore hybrid"):
        assert row in out, out
    assert list(tmp_path.glob("*.npz")), "document vectors were cached for the next run"


def test_embeddings_benchmark_quick_run(capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks import embeddings

    embeddings.main(["--n", "8", "--queries", "4", "--repeats", "1", "--cold-runs", "1"])
    out = capsys.readouterr().out
    for row in (
        "| LocalEmbeddings (defaults) |",
        '| LocalEmbeddings (thread_spinning="always") |',
        "| LocalEmbeddings (num_threads=1) |",
        "| HashingEmbeddings (baseline) |",
    ):
        assert row in out, out
    sanity = out.split("Sanity check (cosine):")[1]
    # The paraphrase check for the model, against the baseline that knows no meaning.
    assert "- LocalEmbeddings (defaults):" in sanity and "- HashingEmbeddings (baseline):" in sanity


def test_timed_packings_each_embed_their_query(tmp_path: Path) -> None:
    """Interleaved packings do not share a cached query embedding: each call embeds."""
    from benchmarks.assembly import measure_packings
    from langchain_tiered_memory import TieredMemory
    from langchain_tiered_memory.testing.fakes import HashingEmbeddings

    class Counting(HashingEmbeddings):
        queries: list[str] = []

        def embed_query(self, text: str) -> list[float]:
            self.queries.append(text)
            return super().embed_query(text)

    embeddings = Counting()
    with TieredMemory.open(tmp_path / "m", embeddings=embeddings) as memory:
        memory.for_user("target").semantic.store_fact("target", "likes green tea")
        embeddings.queries.clear()
        times = measure_packings(memory, ["q one", "q two"], 500, ["sections", "utility"])
    assert {p: len(t) for p, t in times.items()} == {"sections": 2, "utility": 2}
    assert embeddings.queries.count("q one") == 2 and embeddings.queries.count("q two") == 2
