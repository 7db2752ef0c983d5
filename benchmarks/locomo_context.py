"""LoCoMo through the assembled context: how much evidence reaches the model, at what cost.

Each conversation is one user of ``TieredMemory.open``; its sessions are added
with ``turns.add_turns`` (speaker, session date, caption, the dialog id as turn
id). Each question asks ``build_memory_context(question, token_budget=B)`` and
is scored by the share of its evidence turns shown in the context (a turn is
shown when its item is in ``ctx.items``, trimmed or whole), and by the tokens
used, per category, for every budget and both packings in one run.

Published anchors (tokens per question): mem0 1,764, Zep 3,911, the full
conversation about 26,000.

Run (the data stays outside the repository):
    python benchmarks/locomo.py --data ../shared/data/locomo/locomo10.json --context
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from benchmarks._common import format_table, percentile
from benchmarks.locomo_data import CATEGORIES, Conversation, load_locomo
from langchain_tiered_memory import AssemblyConfig, TieredMemory
from langchain_tiered_memory.testing.fakes import HashingEmbeddings
from langchain_tiered_memory.tiers.turns.models import ConversationTurn

__all__ = ["ANCHORS", "run_context"]

ANCHORS = {"mem0": 1764, "Zep": 3911, "full context": 26000}
"""Published tokens per question on LoCoMo."""


def _ingest(memory: TieredMemory, conv: Conversation) -> None:
    user = memory.for_user(conv.sample_id)
    sessions: dict[int, list[ConversationTurn]] = defaultdict(list)
    for t in conv.turns:
        sessions[t.session].append(
            ConversationTurn(
                speaker=t.speaker, text=t.text, time=t.date, caption=t.caption, turn_id=t.dia_id
            )
        )
    for session, turns in sessions.items():
        user.turns.add_turns(f"session-{session}", turns)


def run_context(
    data: str,
    *,
    budgets: Sequence[int] = (500, 1000, 2000),
    convs: Sequence[int] | None = None,
    turns_top_k: int = 30,
    embeddings: str = "hashing",
    floor: float | None = None,
    packings: Sequence[str] = ("utility", "sections"),
) -> str:
    """Run the context mode and return its tables (printed by ``locomo.py --context``)."""
    conversations = load_locomo(data)
    if convs is not None:
        conversations = [conversations[i] for i in convs]
    emb = HashingEmbeddings() if embeddings == "hashing" else None
    # rows[(packing, budget, category)] = [(evidence share, tokens, ms)]
    rows: dict[tuple[str, int, int], list[tuple[float, int, float]]] = defaultdict(list)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "memory"
        memory = TieredMemory.open(path, embeddings=emb) if emb else TieredMemory.open(path)
        for conv in conversations:
            _ingest(memory, conv)
        memory.close()
        for packing in packings:
            config = AssemblyConfig(packing=packing, turns_top_k=turns_top_k)  # type: ignore[arg-type]
            if floor is not None:  # the contexts hold only turns: set their floor too
                config = replace(
                    config, relevance_floor=floor, section_floors={"conversation": floor}
                )
            memory = (
                TieredMemory.open(path, assembly=config, embeddings=emb)
                if emb
                else TieredMemory.open(path, assembly=config)
            )
            try:
                for conv in conversations:
                    user = memory.for_user(conv.sample_id)
                    for q in conv.questions:
                        for budget in budgets:
                            start = time.perf_counter()
                            ctx = user.build_memory_context(q.text, token_budget=budget)
                            ms = (time.perf_counter() - start) * 1000
                            shown = {i.id for i in ctx.items if i.section == "conversation"}
                            share = len(q.evidence & shown) / len(q.evidence)
                            rows[(packing, budget, q.category)].append((share, ctx.tokens, ms))
            finally:
                memory.close()
    table = []
    for packing in packings:
        for budget in budgets:
            cells: list[str] = [packing, str(budget)]
            every: list[tuple[float, int, float]] = []
            for cat in sorted(CATEGORIES):
                got = rows.get((packing, budget, cat), [])
                every += got
                cells.append(
                    f"{statistics.mean(s for s, _, _ in got):.2f} / "
                    f"{statistics.mean(t for _, t, _ in got):.0f}"
                    if got
                    else "-"
                )
            cells.append(
                f"{statistics.mean(s for s, _, _ in every):.3f} / "
                f"{statistics.mean(t for _, t, _ in every):.0f}"
            )
            cells.append(f"{percentile([m for _, _, m in every], 50):.1f}")
            table.append(cells)
    n = sum(len(c.questions) for c in conversations)
    head = (
        f"# LoCoMo through the context: {len(conversations)} conversations, {n} questions, "
        f"embeddings {embeddings}, turns_top_k {turns_top_k}, relevance floor "
        f"{'default' if floor is None else floor}; cells are evidence share / "
        f"tokens per question; anchors (tokens per question): "
        + ", ".join(f"{k} {v:,}" for k, v in ANCHORS.items())
    )
    headers = [
        "packing",
        "budget",
        *(f"{c} {CATEGORIES[c]}" for c in sorted(CATEGORIES)),
        "overall",
        "p50 ms",
    ]
    return head + "\n" + format_table(headers, table)


def add_arguments(ap: argparse.ArgumentParser) -> None:
    """The context mode's flags on ``locomo.py``."""
    ap.add_argument(
        "--context",
        action="store_true",
        help="measure evidence in build_memory_context at --budgets instead of retrieval",
    )
    ap.add_argument("--budgets", type=int, nargs="+", default=[500, 1000, 2000])
    ap.add_argument("--turns-top-k", type=int, default=30, help="turns asked for (context mode)")
    ap.add_argument(
        "--context-floor", type=float, default=None,
        help="relevance floor, also for conversation turns (default: AssemblyConfig's)",
    )  # fmt: skip
    ap.add_argument(
        "--context-packings", nargs="+", choices=["utility", "sections"],
        default=["utility", "sections"],
    )  # fmt: skip
    ap.add_argument(
        "--context-embeddings", choices=["hashing", "local"], default="hashing",
        help="embeddings of the context mode (hashing: deterministic, offline, fast)",
    )  # fmt: skip
