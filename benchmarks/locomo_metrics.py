"""Evidence-recall metrics and table printing for the LoCoMo benchmark."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from benchmarks.locomo_data import CATEGORIES

METRICS = ("R@5", "R@10", "R@20", "All@10", "MRR", "NDCG@10")


def score_ranking(ranked: Sequence[str], evidence: frozenset[str]) -> dict[str, float]:
    """Binary-relevance metrics of one ranked list of dialog ids (top 20 or more)."""
    n = len(evidence)
    out = {f"R@{k}": len(evidence.intersection(ranked[:k])) / n for k in (5, 10, 20)}
    out["All@10"] = float(evidence.issubset(ranked[:10]))
    rr = 0.0
    for i, dia in enumerate(ranked[:20]):
        if dia in evidence:
            rr = 1.0 / (i + 1)
            break
    out["MRR"] = rr
    dcg = sum(1.0 / math.log2(i + 2) for i, d in enumerate(ranked[:10]) if d in evidence)
    idcg = sum(1.0 / math.log2(i + 2) for i in range(min(n, 10)))
    out["NDCG@10"] = dcg / idcg
    return out


@dataclass
class RunResult:
    name: str
    per_question: list[tuple[int, dict[str, float]]] = field(default_factory=list)
    tokens_top10: list[int] = field(default_factory=list)
    latencies_ms: list[float] = field(default_factory=list)
    ingest_s: float = 0.0

    def add(self, category: int, ranked: Sequence[str], evidence: frozenset[str]) -> None:
        self.per_question.append((category, score_ranking(ranked, evidence)))

    def summary(self) -> dict[str, dict[str, float]]:
        groups: dict[str, list[dict[str, float]]] = defaultdict(list)
        for cat, m in self.per_question:
            groups[CATEGORIES[cat]].append(m)
            groups["overall"].append(m)
        return {
            g: {k: sum(m[k] for m in ms) / len(ms) for k in METRICS} | {"n": float(len(ms))}
            for g, ms in groups.items()
        }


def percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    idx = min(len(s) - 1, max(0, math.ceil(q / 100 * len(s)) - 1))
    return s[idx]


def format_table(result: RunResult) -> str:
    summ = result.summary()
    order = [CATEGORIES[c] for c in sorted(CATEGORIES)] + ["overall"]
    head = "| category | n | " + " | ".join(METRICS) + " |"
    lines = [f"### {result.name}", "", head, "|" + "---|" * (len(METRICS) + 2)]
    for g in order:
        if g not in summ:
            continue
        row = summ[g]
        vals = " | ".join(f"{row[k]:.3f}" for k in METRICS)
        lines.append(f"| {g} | {int(row['n'])} | {vals} |")
    toks = sum(result.tokens_top10) / max(len(result.tokens_top10), 1)
    lines.append("")
    lines.append(
        f"tokens of top 10 (mean): {toks:.0f} · ingest: {result.ingest_s:.1f} s · "
        f"query latency p50 {percentile(result.latencies_ms, 50):.1f} ms, "
        f"p99 {percentile(result.latencies_ms, 99):.1f} ms"
    )
    return "\n".join(lines)


def format_comparison(results: Sequence[RunResult], base: str | None = None) -> str:
    """One row per run: overall metrics, R@10 per category, and R@10 gain over ``base``."""
    cats = [CATEGORIES[c] for c in sorted(CATEGORIES)]
    head = "| run | " + " | ".join(METRICS) + " | " + " | ".join(f"R@10 {c}" for c in cats)
    head += " | tok@10 | p50 ms | p99 ms |"
    lines = [head, "|" + "---|" * (len(METRICS) + len(cats) + 4)]
    for r in results:
        s = r.summary()
        o = s["overall"]
        toks = sum(r.tokens_top10) / max(len(r.tokens_top10), 1)
        lines.append(
            f"| {r.name} | "
            + " | ".join(f"{o[k]:.3f}" for k in METRICS)
            + " | "
            + " | ".join(f"{s[c]['R@10']:.3f}" if c in s else "-" for c in cats)
            + f" | {toks:.0f} | {percentile(r.latencies_ms, 50):.1f}"
            + f" | {percentile(r.latencies_ms, 99):.1f} |"
        )
    return "\n".join(lines)
