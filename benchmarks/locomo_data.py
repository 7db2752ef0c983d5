"""Load the LoCoMo-10 file into plain records (the data stays outside the repo).

Evidence ids are normalised the way the published baseline counts them: entries
such as ``"D8:6; D9:17"`` are split, ``"D30:05"`` and ``"D:11:26"`` are read as
``D30:5`` and ``D11:26``, ids that name no turn are dropped, and a question with
no remaining evidence is left out (1,982 of the 1,986 questions remain).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}

_ID = re.compile(r"D:?(\d+):(\d+)")
_DATE = re.compile(r"(\d{1,2}):(\d{2})\s*(am|pm)\s+on\s+(\d{1,2})\s+(\w+),?\s+(\d{4})", re.I)


@dataclass(frozen=True)
class Turn:
    dia_id: str
    session: int
    index: int
    speaker: str
    text: str
    caption: str | None
    date: datetime
    date_text: str


@dataclass
class Question:
    text: str
    category: int
    evidence: frozenset[str]
    answer: str


@dataclass
class Conversation:
    sample_id: str
    speakers: tuple[str, str]
    turns: list[Turn] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)


def parse_session_date(text: str) -> datetime:
    """Read LoCoMo's ``"1:56 pm on 8 May, 2023"`` as an aware UTC datetime."""
    m = _DATE.search(text)
    if m is None:
        raise ValueError(f"unrecognised session date {text!r}")
    hour, minute, ampm, day, month, year = m.groups()
    h = int(hour) % 12 + (12 if ampm.lower() == "pm" else 0)
    month_no = datetime.strptime(month[:3], "%b").month
    return datetime(int(year), month_no, int(day), h, int(minute), tzinfo=timezone.utc)


def _evidence(raw: list[str], known: set[str]) -> frozenset[str]:
    out = set()
    for entry in raw:
        for m in _ID.finditer(entry):
            dia = f"D{int(m.group(1))}:{int(m.group(2))}"
            if dia in known:
                out.add(dia)
    return frozenset(out)


def load_locomo(path: str | Path) -> list[Conversation]:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    convs = []
    for sample in data:
        conv_raw = sample["conversation"]
        conv = Conversation(sample["sample_id"], (conv_raw["speaker_a"], conv_raw["speaker_b"]))
        sessions = sorted(
            int(k.split("_")[1])
            for k, v in conv_raw.items()
            if re.fullmatch(r"session_\d+", k) and isinstance(v, list)
        )
        for s in sessions:
            date_text = conv_raw[f"session_{s}_date_time"]
            date = parse_session_date(date_text)
            for i, t in enumerate(conv_raw[f"session_{s}"]):
                conv.turns.append(
                    Turn(
                        dia_id=t["dia_id"],
                        session=s,
                        index=i,
                        speaker=t["speaker"],
                        text=t["text"],
                        caption=t.get("blip_caption"),
                        date=date,
                        date_text=date_text,
                    )
                )
        known = {t.dia_id for t in conv.turns}
        for q in sample["qa"]:
            ev = _evidence(q.get("evidence", []), known)
            if not ev:
                continue
            answer = q.get("answer", q.get("adversarial_answer", ""))
            conv.questions.append(Question(q["question"], int(q["category"]), ev, str(answer)))
        convs.append(conv)
    return convs
