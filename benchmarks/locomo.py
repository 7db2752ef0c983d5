"""LoCoMo retrieval benchmark: evidence recall of the project's memory vs BM25 and dense.

Usage (the data is CC BY-NC 4.0 and stays outside the repo; pass its path):

    python benchmarks/locomo.py --data ../shared/data/locomo/locomo10.json

Each of the 10 conversations is one user of ``TieredMemory.open`` (row S1, the
project path): its turns are stored with ``for_user(sample_id).turns.add_turns``
(speaker, session date, image caption, one call per session), and each of the 1,982
questions with valid evidence ids retrieves its top 20 with ``turns.search``, scored
against the evidence turns: R@5/10/20 (share of evidence found), All@10 (all evidence
in the top 10), MRR, NDCG@10, per category and overall, plus tokens of the top 10
(o200k), ingest time and query latency p50/p99. Baselines (plain BM25, plain dense
MiniLM, their RRF) run in the same process on the same turns. ``--convs 1-5`` and
``--convs 6-10`` run the tuning and the held-out half of the split check.

Document embeddings are cached in a temp dir (model + text hash) so reruns skip
them; ``--no-cache`` measures a cold ingest. Query embeddings are always computed
live, one question at a time, and their time is part of each dense row's latency.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: make ``benchmarks`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from langchain_core.embeddings import Embeddings

from benchmarks.locomo_context import add_arguments, run_context
from benchmarks.locomo_data import load_locomo
from benchmarks.locomo_embed import (
    CachedEmbedder,
    EmbedFn,
    project_embedder,
    standalone_minilm,
)
from benchmarks.locomo_metrics import RunResult, format_comparison, format_table
from benchmarks.locomo_pipelines import (
    PlainBM25,
    PlainDense,
    PlainRRF,
    StorePipeline,
    Tiered,
    TieredConfig,
)
from langchain_tiered_memory.stores.fusion import FusionConfig
from langchain_tiered_memory.tiers.turns.enrich import EnrichConfig
from langchain_tiered_memory.tokens import TokenCounter

REC = TieredConfig()
OLD = replace(REC, session_boost=0.0, speaker_boost=0.0)  # the rows before the two boosts
BM25_ONLY = replace(OLD, lexical_only=True, neighbour_boost=0.0)
ABLATION = [
    (
        "A1 BM25, analyzer (stopwords + stemming)",
        replace(
            BM25_ONLY,
            lexical_enrich=EnrichConfig(context_before=0, include_caption=False),
        ),
    ),
    ("A2 + image caption", replace(BM25_ONLY, lexical_enrich=EnrichConfig(context_before=0))),
    ("A3 + 2 previous turns as context", replace(BM25_ONLY, lexical_enrich=EnrichConfig())),
    ("A4 + turn weight 2", BM25_ONLY),
    (
        "A5 + dense, RRF k=60",
        replace(OLD, neighbour_boost=0.0, fusion=FusionConfig(method="rrf")),
    ),
    ("A6 + dense, weighted score fusion", replace(OLD, neighbour_boost=0.0)),
    ("A7 + neighbouring-turn boost", OLD),
    ("A8 + same-session boost", replace(REC, speaker_boost=0.0)),
    ("A9 + speaker boost (= recommended)", REC),
]
WRITE = [
    ("W1 turns + session summaries", replace(REC, write="turns+summaries")),
    ("W2 turns + extracted facts", replace(REC, write="turns+facts")),
]


class CachedLangChainEmbeddings(Embeddings):
    """LocalEmbeddings for the store, with document vectors from the benchmark cache."""

    def __init__(self, inner: Embeddings, cache: EmbedFn) -> None:
        self.inner = inner
        self.cache = cache

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [list(map(float, v)) for v in self.cache(list(texts))]

    def embed_query(self, text: str) -> list[float]:
        return self.inner.embed_query(text)

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.embed_documents(texts)

    async def aembed_query(self, text: str) -> list[float]:
        return self.inner.embed_query(text)


def run(args: argparse.Namespace) -> None:
    if args.context:  # evidence in the assembled context (benchmarks/locomo_context.py)
        lo, _, hi = (args.convs or "1-10").partition("-")
        picked = range(int(lo) - 1, int(hi or lo))
        print(
            run_context(
                args.data,
                budgets=args.budgets,
                convs=list(picked),
                turns_top_k=args.turns_top_k,
                embeddings=args.context_embeddings,
                floor=args.context_floor,
                packings=args.context_packings,
            )
        )
        return
    convs = load_locomo(args.data)
    if args.convs:
        lo, _, hi = args.convs.partition("-")
        convs = convs[int(lo) - 1 : int(hi or lo)]
    n_q = sum(len(c.questions) for c in convs)
    print(
        f"LoCoMo: {len(convs)} conversations, {sum(len(c.turns) for c in convs)} turns, "
        f"{n_q} questions with valid evidence",
        flush=True,
    )
    raw = project_embedder()
    source = "langchain_tiered_memory.embeddings.LocalEmbeddings"
    if raw is None:
        raw, source = (
            standalone_minilm(threads=args.threads),
            "standalone MiniLM (no LocalEmbeddings)",
        )
    print(f"embedder: {source}", flush=True)
    doc_embed = raw if args.no_cache else CachedEmbedder(raw, "minilm-int8-256", args.cache_dir)
    counter = TokenCounter()

    pipelines: list[Any] = [PlainBM25(), PlainDense(), PlainRRF()]
    selected = set(args.rows.split(",")) if args.rows else None
    if selected is None or "ablation" in selected:
        pipelines += [Tiered(n, c) for n, c in ABLATION]
    if selected is None or "write" in selected:
        pipelines += [Tiered(n, c) for n, c in WRITE]
    store_rows = selected is None or "store" in selected
    if (store_rows or (selected and "project" in selected)) and not args.no_store:
        try:
            from langchain_tiered_memory.embeddings import LocalEmbeddings
            from langchain_tiered_memory.stores import QdrantMemoryStore  # noqa: F401
        except ImportError as exc:
            print(f"store rows skipped: {exc}", flush=True)
        else:
            emb = LocalEmbeddings.default()
            store_emb = emb if args.no_cache else CachedLangChainEmbeddings(emb, doc_embed)
            from langchain_tiered_memory.tiers.turns.memory import TurnsConfig

            pipelines += [
                StorePipeline(
                    "S1 TieredMemory.open, for_user(conv).turns.search (project path)",
                    "project",
                    store_emb,
                    REC,
                ),
                StorePipeline(
                    "S1a project path without the session and speaker boosts",
                    "project",
                    store_emb,
                    REC,
                    turns=TurnsConfig(session_boost=0.0, speaker_boost=0.0),
                ),
            ]
            if store_rows:
                pipelines += [
                    StorePipeline(
                        "S2 QdrantMemoryStore hybrid, default fusion", "store", store_emb, REC
                    ),
                    StorePipeline(
                        "S3 QdrantMemoryStore hybrid with RRF fusion", "rrf", store_emb, REC
                    ),
                ]

    # One live embedding per question, timed, shared by every dense pipeline.
    from benchmarks.locomo_pipelines import QueryVectors

    qvecs = QueryVectors(raw)
    results = {p.name: RunResult(p.name) for p in pipelines}
    for conv in convs:
        for p in pipelines:
            t0 = time.perf_counter()
            p.ingest(conv, doc_embed)
            results[p.name].ingest_s += time.perf_counter() - t0
            if isinstance(doc_embed, CachedEmbedder):
                doc_embed.save()
            texts = {t.dia_id: f"[{t.date_text}] {t.speaker}: {t.text}" for t in conv.turns}
            r = results[p.name]
            for q in conv.questions:
                vec, embed_ms = qvecs.get(q.text) if p.uses_dense else (None, 0.0)
                t0 = time.perf_counter()
                ranked = p.search(q, vec)
                r.latencies_ms.append((time.perf_counter() - t0) * 1000 + embed_ms)
                r.add(q.category, ranked, q.evidence)
                r.tokens_top10.append(sum(counter.count(texts[d]) for d in ranked[:10]))
        print(f"  {conv.sample_id} done", flush=True)
    for p in pipelines:
        if hasattr(p, "close"):
            p.close()

    print()
    print(f"## Overall (R@10 per category; latency includes the query embedding), {n_q} questions")
    print()
    print(format_comparison(list(results.values())))
    if args.detail:
        for r in results.values():
            print()
            print(format_table(r))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data", required=True, help="path to locomo10.json")
    ap.add_argument(
        "--rows",
        default=None,
        help="comma list of row groups besides the baselines: ablation,write,store "
        "(project: only the S1 rows)",
    )
    ap.add_argument(
        "--convs",
        default=None,
        help="1-based range of conversations to run, e.g. 1-5 (tuning half) or 6-10",
    )
    ap.add_argument("--no-store", action="store_true", help="skip the QdrantMemoryStore rows")
    ap.add_argument("--no-cache", action="store_true", help="embed every document (cold ingest)")
    ap.add_argument("--cache-dir", default=None, help="embedding cache dir (default: temp dir)")
    ap.add_argument("--threads", type=int, default=1, help="onnxruntime threads (standalone)")
    ap.add_argument("--detail", action="store_true", help="also print a per-category table per row")
    add_arguments(ap)
    main_args = ap.parse_args(argv)
    run(main_args)


if __name__ == "__main__":
    main()
