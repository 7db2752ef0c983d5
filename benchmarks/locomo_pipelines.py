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
from typing import TYPE_CHECKING

import numpy as np

from benchmarks.bm25 import BM25Index
from benchmarks.locomo_data import Conversation, Question, Turn
from benchmarks.locomo_embed import EmbedFn
from langchain_tiered_memory.stores.fusion import FusionConfig, fuse
from langchain_tiered_memory.text import analyze
from langchain_tiered_memory.tiers.turns.defaults import (
    DEFAULT_CANDIDATES,
    DEFAULT_DENSE_ENRICH,
    DEFAULT_FUSION,
    DEFAULT_LEXICAL_ENRICH,
    DEFAULT_NEIGHBOUR_BOOST,
    DEFAULT_SESSION_BOOST,
    DEFAULT_SPEAKER_BOOST,
)
from langchain_tiered_memory.tiers.turns.enrich import EnrichConfig, Utterance, index_texts
from langchain_tiered_memory.tiers.turns.rerank import apply_neighbour_boost, apply_session_boost
from langchain_tiered_memory.tiers.turns.speakers import apply_speaker_boost

if TYPE_CHECKING:
    from langgraph.store.base import IndexConfig

    from langchain_tiered_memory import TieredMemory
    from langchain_tiered_memory.stores import QdrantMemoryStore

TOP = 20


def plain_text(t: Turn) -> str:
    return f"[{t.date_text}] {t.speaker}: {t.text}"


def utterances(conv: Conversation) -> list[Utterance]:
    return [Utterance(t.speaker, t.text, t.session, t.date, t.caption) for t in conv.turns]


@dataclass
class Memory:
    """One indexed item: its lexical and dense texts and the turn ids it stands for."""

    lexical: str
    dense: str
    sources: tuple[str, ...]
    plain: str
    speaker: str = ""


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
    neighbour_boost: float = DEFAULT_NEIGHBOUR_BOOST
    session_boost: float = DEFAULT_SESSION_BOOST
    speaker_boost: float = DEFAULT_SPEAKER_BOOST
    write: str = "turns"  # "turns", "turns+summaries", "turns+facts"
    lexical_only: bool = False
    dense_only: bool = False


class Tiered:
    """Candidates from BM25 (enriched text) and dense (turn text), fused, boosted."""

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
            Memory(lx, dn, (t.dia_id,), plain_text(t), t.speaker)
            for t, lx, dn in zip(conv.turns, lex, den, strict=True)
        ]
        if "summaries" in cfg.write:
            from benchmarks.locomo_write import session_summaries

            self.items += session_summaries(conv)
        if "facts" in cfg.write:
            from benchmarks.locomo_write import extracted_facts

            self.items += extracted_facts(conv)
        self.texts = [m.plain for m in self.items]
        n = len(conv.turns)  # turns come first in self.items; summaries and facts have none
        self.sessions = {i: t.session for i, t in enumerate(conv.turns)}
        same = [conv.turns[i].session == conv.turns[i + 1].session for i in range(n - 1)]
        self.adjacent: dict[int, list[int]] = {i: [] for i in range(n)}
        for i, linked in enumerate(same):
            if linked:
                self.adjacent[i].append(i + 1)
                self.adjacent[i + 1].append(i)
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
        if cfg.neighbour_boost:
            fused = apply_neighbour_boost(fused, self.adjacent, cfg.neighbour_boost)
        if cfg.session_boost:
            sessions = {i: self.sessions[i] for i, _ in fused if i in self.sessions}
            fused = apply_session_boost(fused, sessions, cfg.session_boost)
        if cfg.speaker_boost:
            speakers = {i: self.items[i].speaker for i, _ in fused}
            fused = apply_speaker_boost(fused, speakers, q.text, cfg.speaker_boost)
        return expand([self.items[i] for i, _ in fused])


# --------------------------------------------------------------------------- store
class StorePipeline:
    """The project's QdrantMemoryStore (embedded engine) and LocalEmbeddings.

    Modes:

    * ``"project"``: the path an agent uses. ``TieredMemory.open`` (embedded store,
      ``lexical_fields=[LEXICAL_FIELD]``), one user per conversation, each session
      added with ``for_user(sample_id).turns.add_turns`` (speaker, session date,
      image caption, the dialog id as turn id) and each question answered by
      ``turns.search``: one hybrid store search for 100 candidates, then the
      neighbouring-turn, same-session and speaker boosts of ``TurnsConfig``;
    * ``"store"``: a raw ``QdrantMemoryStore`` (``lexical_fields=["context"]``), each
      turn ``{"text": dense enrichment, "context": lexical enrichment}`` under
      ``("locomo", sample_id)``; the store's default fusion alone (one search of the
      top 20);
    * ``"rrf"``: the same with ``FusionConfig(method="rrf")`` (the old default).
    """

    uses_dense = False  # the store embeds queries itself

    def __init__(  # type: ignore[no-untyped-def]
        self, name: str, mode: str, embeddings, config: TieredConfig, turns=None
    ) -> None:
        self.name = name
        self.mode = mode
        self.embeddings = embeddings
        self.cfg = config
        self.turns_config = turns  # a TurnsConfig for "project" (None: the defaults)
        self.tmp = tempfile.TemporaryDirectory(prefix="ltm-locomo-store-")
        self.store: QdrantMemoryStore | None = None
        self.memory: TieredMemory | None = None

    def _open(self) -> None:
        from langchain_tiered_memory.stores import QdrantMemoryStore
        from langchain_tiered_memory.stores.fusion import FusionConfig

        if self.mode == "project":
            from langchain_tiered_memory import TieredMemory

            self.memory = TieredMemory.open(
                self.tmp.name,
                embeddings=self.embeddings,
                durable_writes=False,
                turns=self.turns_config,
            )
            return
        index: IndexConfig = {"dims": 384, "embed": self.embeddings, "fields": ["text"]}
        fusion = FusionConfig(method="rrf") if self.mode == "rrf" else self.cfg.fusion
        self.store = QdrantMemoryStore.embedded(
            self.tmp.name, index=index, fusion=fusion, lexical_fields=["context"]
        )

    def ingest(self, conv: Conversation, embed_docs: EmbedFn) -> None:
        if self.store is None and self.memory is None:
            self._open()
        self.texts = [plain_text(t) for t in conv.turns]
        if self.memory is not None:
            self._ingest_turns(conv)
            return
        from langgraph.store.base import PutOp

        assert self.store is not None
        self.ns = ("locomo", conv.sample_id)
        utts = utterances(conv)
        dense = index_texts(utts, self.cfg.dense_enrich)
        lexical = index_texts(utts, self.cfg.lexical_enrich)
        ops = [
            PutOp(self.ns, t.dia_id, {"text": d, "context": lx, "date": t.date.isoformat()})
            for t, d, lx in zip(conv.turns, dense, lexical, strict=True)
        ]
        for start in range(0, len(ops), 256):
            self.store.batch(ops[start : start + 256])

    def _ingest_turns(self, conv: Conversation) -> None:
        from langchain_tiered_memory.tiers.turns.memory import ConversationTurn

        assert self.memory is not None
        self.user = self.memory.for_user(conv.sample_id)
        sessions: dict[int, list[ConversationTurn]] = {}
        for t in conv.turns:
            sessions.setdefault(t.session, []).append(
                ConversationTurn(
                    speaker=t.speaker, text=t.text, time=t.date, caption=t.caption, turn_id=t.dia_id
                )
            )
        for session, turns in sessions.items():
            self.user.turns.add_turns(f"session-{session}", turns)

    def search(self, q: Question, qvec: np.ndarray | None) -> list[str]:
        if self.memory is not None:
            return [h.turn_id for h in self.user.turns.search(q.text, top_k=TOP)]
        assert self.store is not None
        hits = self.store.search(self.ns, query=q.text, limit=TOP)
        return [h.key for h in hits]

    def close(self) -> None:
        if self.memory is not None:
            self.memory.close()
        if self.store is not None:
            self.store.close()
        self.tmp.cleanup()


_WS = re.compile(r"\s+")
