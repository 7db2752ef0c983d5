"""The context-quality benchmark and LoCoMo's context mode run end to end on tiny inputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration


def test_locomo_context_mode_reports_evidence_and_tokens(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from benchmarks import locomo

    turns = [
        {"speaker": "Caroline", "dia_id": "D1:1", "text": "I went to the support group."},
        {"speaker": "Melanie", "dia_id": "D1:2", "text": "I painted a sunrise over the lake."},
    ]
    sample = {
        "sample_id": "conv-smoke",
        "conversation": {
            "speaker_a": "Caroline",
            "speaker_b": "Melanie",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": turns,
        },
        "qa": [
            {"question": "What did Melanie paint?", "category": 4, "evidence": ["D1:2"]},
            {"question": "Where did Caroline go?", "category": 4, "evidence": ["D1:1"]},
        ],
    }
    data = tmp_path / "locomo-smoke.json"
    data.write_text(json.dumps([sample]), encoding="utf-8")
    locomo.main(["--data", str(data), "--context", "--convs", "1", "--budgets", "300"])
    out = capsys.readouterr().out
    assert "LoCoMo through the context: 1 conversations, 2 questions" in out
    assert "| utility | 300 |" in out and "| sections | 300 |" in out


@pytest.mark.slow
def test_context_quality_prints_both_packings(capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks import context_quality

    context_quality.main(["--stories", "1", "--facts", "10", "--budgets", "400", "--repeat", "1"])
    out = capsys.readouterr().out
    assert "| utility | 400 |" in out and "| sections | 400 |" in out
