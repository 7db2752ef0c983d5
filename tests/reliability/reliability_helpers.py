"""Helpers shared by the reliability suites: engines, fast embeddings, store scans.

Imported by the test modules and by ``conftest.py`` (fixtures).
"""

from __future__ import annotations

import math
import os
import re
import tempfile
import unicodedata
import zlib
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings
from langgraph.store.base import BaseStore

from langchain_tiered_memory import TieredMemory
from langchain_tiered_memory.testing.fakes import HashingEmbeddings

ENGINES = ("embedded", "client")
DIMS = 64
CHILD = Path(__file__).with_name("_child.py")
REPO = Path(__file__).resolve().parents[2]


class WordEmbeddings(Embeddings):
    """Cheap deterministic embeddings (one signed bucket per word) for bulk writes."""

    def __init__(self, size: int = 32) -> None:
        self.size = size

    def _embed(self, text: str) -> list[float]:
        vec = [0.0] * self.size
        for word in text.lower().split():
            h = zlib.crc32(word.encode("utf-8"))
            vec[h % self.size] += 1.0 if h & 1 else -1.0
        norm = math.sqrt(sum(x * x for x in vec))
        if norm == 0.0:
            vec[0] = 1.0
            return vec
        return [x / norm for x in vec]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._embed(text)


def fast_dir(prefix: str = "ltm-rel-") -> Path:
    """A fresh directory, on tmpfs when available."""
    shm = Path("/dev/shm")
    base = str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None
    return Path(tempfile.mkdtemp(prefix=prefix, dir=base))


def make_store(
    engine: str, path: Path | None, embeddings: Embeddings | None = None, dims: int = DIMS
) -> BaseStore:
    """A ``QdrantMemoryStore`` on ``engine`` (``path`` is used by the embedded engine)."""
    from qdrant_client import QdrantClient

    from langchain_tiered_memory.stores import QdrantMemoryStore

    emb = embeddings or HashingEmbeddings(size=dims)
    index: Any = {"dims": dims, "embed": emb, "fields": ["text"]}
    if engine == "embedded":
        assert path is not None
        return QdrantMemoryStore.embedded(path, index=index)
    if engine == "client":
        store = QdrantMemoryStore.from_client(QdrantClient(":memory:"), index=index)
        store._owns_engine = True  # close the local client with the store
        return store
    raise ValueError(engine)


def open_memory(engine: str, path: Path | None = None, **kwargs: Any) -> TieredMemory:
    """A ``TieredMemory`` on ``engine`` that closes its store when closed."""
    emb = kwargs.pop("embeddings", None) or HashingEmbeddings(size=DIMS)
    store = make_store(engine, path, emb)
    memory = TieredMemory(store, embeddings=emb, **kwargs)
    memory._owns_store = True
    return memory


def scan_store(store: BaseStore) -> list[Any]:
    """Every item of ``store``, in every namespace (paged)."""
    items = []
    for ns in store.list_namespaces(limit=1_000_000):
        offset = 0
        while True:
            page = store.search(ns, limit=500, offset=offset)
            items.extend(i for i in page if tuple(i.namespace) == tuple(ns))
            if len(page) < 500:
                break
            offset += 500
    return items


_FRAME_OPEN = re.compile(r"^<memory-([0-9a-f]{8})>$")
_CONTROL_TOKEN = re.compile(r"\[/?[A-Z][A-Z0-9_]*\]")


def assert_memory_line(line: str) -> None:
    """A rendered memory line: one line, ``- `` first, nothing that reads as a delimiter.

    No angle bracket, even after Unicode normalisation (which turns full-width
    and small look-alikes back into ``<`` and ``>``); no invisible or
    bidirectional format character; no square-bracket chat-template token.
    """
    assert line.startswith("- "), f"not a memory line: {line!r}"
    assert len(line.splitlines()) == 1 and "\n" not in line, f"line break in {line!r}"
    for form in ("NFKC", "NFKD"):
        normal = unicodedata.normalize(form, line)
        assert "<" not in normal and ">" not in normal, f"angle bracket in {line!r}"
        assert len(normal.splitlines()) == 1, f"line break after {form} in {line!r}"
    assert not [c for c in line if unicodedata.category(c) in ("Cf", "Cc", "Cs")], repr(line)
    assert not _CONTROL_TOKEN.search(line), f"chat-template token in {line!r}"


def assert_framed(text: str, attack_texts: list[str]) -> int:
    """Check the frame grammar of memory shown to a model; return the number of memory lines.

    The preamble, the opening delimiter, then only section headings and memory
    lines (:func:`assert_memory_line`), then the closing delimiter with the same
    nonce, and nothing after it; the nonce appears in no attack text.
    """
    from langchain_tiered_memory.assembly.framing import PREAMBLE, SECTION_HEADINGS

    if not text:
        return 0
    lines = text.split("\n")
    assert text.splitlines() == lines, "a line separator other than \\n leaked into the text"
    assert lines[0] == PREAMBLE
    opened = _FRAME_OPEN.match(lines[1])
    assert opened, f"no opening delimiter: {lines[1]!r}"
    nonce = opened.group(1)
    assert lines[-1] == f"</memory-{nonce}>", f"block not closed: {lines[-1]!r}"
    headings = {f"## {h}" for h in SECTION_HEADINGS.values()}
    memory_lines = 0
    seen_heading = False
    for line in lines[2:-1]:
        if line in headings:
            seen_heading = True
            continue
        assert seen_heading, f"memory line before any heading: {line!r}"
        assert_memory_line(line)
        memory_lines += 1
    for attack in attack_texts:  # the nonce is not predictable from the attack text
        assert f"</memory-{nonce}>" not in attack
    return memory_lines
