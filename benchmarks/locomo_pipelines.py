"""Retrieval pipelines compared by benchmarks/locomo.py.

Each pipeline ingests one conversation (``ingest``) and returns, per question, the
dialog ids of its top hits best first (``search``). Memories that are not turns
(session summaries, extracted facts) carry the ids of the turns they came from and
are expanded to those ids in the ranking.
"""

from __future__ import annotations

import re
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import timedelta

import numpy as np
from locomo_data import Conversation, Question, Turn
from locomo_embed import EmbedFn

from langchain_tiered_memory.retrieval import (
    DEFAULT_CANDIDATES,
    DEFAULT_DENSE_ENRICH,
    DEFAULT_FUSION,
    DEFAULT_LEXICAL_ENRICH,
    DEFAULT_TIME_BOOST,
)
from langchain_tiered_memory.retrieval.enrich import EnrichConfig, Utterance, index_texts
from langchain_tiered_memory.retrieval.fusion import FusionConfig, fuse
from langchain_tiered_memory.retrieval.lexical import BM25Index, analyze
from langchain_tiered_memory.retrieval.rerank import TimeBoost, apply_time_boost
from langchain_tiered_memory.retrieval.temporal import parse_time_expressions

TOP = 20


def plain_text(t: Turn) -> str:
    return f"[{t.date_text}] {t.speaker}: {t.text}"


def utterances(conv: Conversation) -> list[Utterance]:
    return [Utterance(t.speaker, t.text, t.session, t.date, t.caption) for t in conv.turns]


def reference_date(conv: Conversation):  # type: ignore[no-untyped-def]
    """ "Now" for a conversation's questions: the day after its last session."""
    return max(t.date for t in conv.turns) + timedelta(days=1)


@dataclass
class Memory:
    """One indexed item: its lexical and dense texts and the turn ids it stands for."""

    lexical: str
    dense: str
    sources: tuple[str, ...]
    plain: str
    date: object = None


def expand(ranked: Sequence[Memory], limit: int = TOP) -> list[str]:
    out: list[str] = []
    seen: set[str] = set()
    for m in ranked:
        for dia in m.sources:
            if dia not in seen:
                seen.add(dia)
                out.append(dia)
        if len(out) >= limit:
            break
    return out[:limit]


class QueryVectors:
    """Question embeddings computed once, live, one question at a time (timed)."""

    def __init__(self, embed: EmbedFn) -> None:
        self.embed = embed
        self.vecs: dict[str, np.ndarray] = {}
        self.ms: dict[str, float] = {}

    def get(self, text: str) -> tuple[np.ndarray, float]:
        if text not in self.vecs:
            t0 = time.perf_counter()
            self.vecs[text] = self.embed([text])[0]
            self.ms[text] = (time.perf_counter() - t0) * 1000
        return self.vecs[text], self.ms[text]


# --------------------------------------------------------------------------- baselines
class PlainBM25:
    name = "BM25 (rank-bm25, plain)"
    uses_dense = False

    def ingest(self, conv: Conversation, embed_docs: EmbedFn) -> None:
        from rank_bm25 import BM25Okapi

        self.ids = [t.dia_id for t in conv.turns]
        self.texts = [plain_text(t) for t in conv.turns]
        self.bm = BM25Okapi([analyze(x, stemming=False) for x in self.texts])

    def scores(self, q: Question) -> np.ndarray:
        return np.asarray(self.bm.get_scores(analyze(q.text, stemming=False)))

    def search(self, q: Question, qvec: np.ndarray | None) -> list[str]:
        order = np.argsort(-self.scores(q), kind="stable")[:TOP]
        return [self.ids[i] for i in order]


class PlainDense:
    name = "dense MiniLM (plain)"
    uses_dense = True

    def ingest(self, conv: Conversation, embed_docs: EmbedFn) -> None:
        self.ids = [t.dia_id for t in conv.turns]
        self.texts = [plain_text(t) for t in conv.turns]
        self.mat = embed_docs(self.texts)

    def search(self, q: Question, qvec: np.ndarray | None) -> list[str]:
        assert qvec is not None
        order = np.argsort(-(self.mat @ qvec), kind="stable")[:TOP]
        return [self.ids[i] for i in order]


class PlainRRF:
    name = "RRF of the two (k=60)"
    uses_dense = True

    def ingest(self, conv: Conversation, embed_docs: EmbedFn) -> None:
        self.bm, self.de = PlainBM25(), PlainDense()
        self.bm.ingest(conv, embed_docs)
        self.de.ingest(conv, embed_docs)
        self.ids, self.texts = self.bm.ids, self.bm.texts

    def search(self, q: Question, qvec: np.ndarray | None) -> list[str]:
        assert qvec is not None
        n = len(self.ids)
        f = np.zeros(n)
        ranks = 1.0 / (60 + np.arange(1, n + 1))
        f[np.argsort(-self.bm.scores(q), kind="stable")] += ranks
        f[np.argsort(-(self.de.mat @ qvec), kind="stable")] += ranks
        return [self.ids[i] for i in np.argsort(-f, kind="stable")[:TOP]]


# --------------------------------------------------------------------------- tiered
@dataclass(frozen=True)
class TieredConfig:
    """The library's recommended retrieval, as switches for the ablation."""

    lexical_enrich: EnrichConfig = DEFAULT_LEXICAL_ENRICH
    dense_enrich: EnrichConfig = DEFAULT_DENSE_ENRICH
    stemming: bool = True
    fusion: FusionConfig = DEFAULT_FUSION
    candidates: int = DEFAULT_CANDIDATES
    time_boost: TimeBoost | None = DEFAULT_TIME_BOOST
    write: str = "turns"  # "turns", "turns+summaries", "turns+facts"
    lexical_only: bool = False
    dense_only: bool = False


class Tiered:
    """Candidates from BM25 (enriched text) and dense (turn text), fused, time-boosted."""

    uses_dense = True

    def __init__(self, name: str, config: TieredConfig) -> None:
        self.name = name
        self.cfg = config
        self.uses_dense = not config.lexical_only

    def ingest(self, conv: Conversation, embed_docs: EmbedFn) -> None:
        cfg = self.cfg
        utts = utterances(conv)
        lex = index_texts(utts, cfg.lexical_enrich)
        den = index_texts(utts, cfg.dense_enrich)
        self.items = [
            Memory(lx, dn, (t.dia_id,), plain_text(t), t.date)
            for t, lx, dn in zip(conv.turns, lex, den, strict=True)
        ]
        if "summaries" in cfg.write:
            from locomo_write import session_summaries

            self.items += session_summaries(conv)
        if "facts" in cfg.write:
            from locomo_write import extracted_facts

            self.items += extracted_facts(conv)
        self.texts = [m.plain for m in self.items]
        self.ref = reference_date(conv)
        self.bm = BM25Index([analyze(m.lexical, stemming=cfg.stemming) for m in self.items])
        self.mat = None if cfg.lexical_only else embed_docs([m.dense for m in self.items])

    def search(self, q: Question, qvec: np.ndarray | None) -> list[str]:
        cfg = self.cfg
        per: dict[str, dict[int, float]] = {}
        if not cfg.dense_only:
            s = self.bm.scores(analyze(q.text, stemming=cfg.stemming))
            top = np.argsort(-s, kind="stable")[: cfg.candidates]
            per["lexical"] = {int(i): float(s[i]) for i in top if s[i] > 0}
        if self.mat is not None and not cfg.lexical_only:
            assert qvec is not None
            d = self.mat @ qvec
            top = np.argsort(-d, kind="stable")[: cfg.candidates]
            per["dense"] = {int(i): float(d[i]) for i in top}
        per = {k: v for k, v in per.items() if v}
        weights = cfg.fusion.weights
        fcfg = replace(cfg.fusion, weights={k: w for k, w in (weights or {}).items() if k in per})
        fused = fuse(per, fcfg)
        if cfg.time_boost is not None:
            ranges = parse_time_expressions(q.text, self.ref)
            if ranges:
                fused = apply_time_boost(
                    fused, {i: self.items[i].date for i, _ in fused}, ranges, cfg.time_boost
                )
        return expand([self.items[i] for i, _ in fused])


# --------------------------------------------------------------------------- store
class StorePipeline:
    """The project's QdrantMemoryStore (embedded engine) and LocalEmbeddings.

    Each turn is a memory ``{"text": turn, "context": previous turns, "dia_id": ...}``
    under ``("locomo", sample_id)``, indexed on ``["text", "context"]`` (one dense
    sub-vector per field, MaxSim; BM25 over both). ``mode="store"`` uses the store's own
    hybrid search; ``mode="fused"`` asks the store for lexical and dense candidates and
    fuses them with ``retrieval.fusion`` (the recommended default).
    """

    uses_dense = False  # the store embeds queries itself

    def __init__(self, name: str, mode: str, embeddings, config: TieredConfig) -> None:  # type: ignore[no-untyped-def]
        self.name = name
        self.mode = mode
        self.embeddings = embeddings
        self.cfg = config
        self.tmp = tempfile.TemporaryDirectory(prefix="ltm-locomo-store-")
        self.store = None

    def _open(self):  # type: ignore[no-untyped-def]
        from langchain_tiered_memory.stores import QdrantMemoryStore

        index = {"dims": 384, "embed": self.embeddings, "fields": ["text", "context"]}
        self.store = QdrantMemoryStore.embedded(self.tmp.name, index=index, retrieval="hybrid")
        self.store.setup()

    def ingest(self, conv: Conversation, embed_docs: EmbedFn) -> None:
        if self.store is None:
            self._open()
        assert self.store is not None
        self.ns = ("locomo", conv.sample_id)
        self.ref = reference_date(conv)
        utts = utterances(conv)
        own = index_texts(utts, replace(self.cfg.dense_enrich, include_date=True))
        ctx_cfg = EnrichConfig(context_before=2, include_date=False)
        ctx = [
            t.rsplit(ctx_cfg.separator, 1)[0] if "\n" in t else ""
            for t in index_texts(utts, ctx_cfg)
        ]
        self.texts = []
        self.dates = {}
        from langgraph.store.base import PutOp

        ops = []
        for t, o, c in zip(conv.turns, own, ctx, strict=True):
            value = {"text": o, "dia_id": t.dia_id, "date": t.date.isoformat()}
            if c:
                value["context"] = c
            ops.append(PutOp(self.ns, t.dia_id, value))
            self.dates[t.dia_id] = t.date
        for start in range(0, len(ops), 256):
            self.store.batch(ops[start : start + 256])
        self.texts = [plain_text(t) for t in conv.turns]

    def search(self, q: Question, qvec: np.ndarray | None) -> list[str]:
        assert self.store is not None
        if self.mode == "store":
            hits = self.store.search(self.ns, query=q.text, limit=TOP)
            return [h.key for h in hits]
        n = self.cfg.candidates
        lex = self.store.search(self.ns, query=q.text, limit=n, retrieval="lexical")
        den = self.store.search(self.ns, query=q.text, limit=n, retrieval="dense")
        per = {
            "lexical": {h.key: float(h.score or 0.0) for h in lex},
            "dense": {h.key: float(h.score or 0.0) for h in den},
        }
        per = {k: v for k, v in per.items() if v}
        weights = self.cfg.fusion.weights or {}
        fused = fuse(per, replace(self.cfg.fusion, weights={k: weights[k] for k in per}))
        if self.cfg.time_boost is not None:
            ranges = parse_time_expressions(q.text, self.ref)
            if ranges:
                fused = apply_time_boost(
                    fused, {k: self.dates[k] for k, _ in fused}, ranges, self.cfg.time_boost
                )
        return [k for k, _ in fused[:TOP]]

    def close(self) -> None:
        if self.store is not None:
            self.store.close()
        self.tmp.cleanup()


_WS = re.compile(r"\s+")
