"""Lexical matching: an analyzer (tokens, stopwords, light stemming) and a BM25 index.

The analyzer is what makes keyword search robust to inflection and filler words:
``"painted"``, ``"painting"`` and ``"paints"`` meet at ``"paint"``, and ``"what did
she do"`` does not outweigh the one content word of a question. ``BM25Index`` is a
small exact Okapi BM25 over a fixed list of documents (pure Python + numpy), used
where a store has no lexical index of its own and by the benchmarks.

Examples:
    >>> from langchain_tiered_memory.tiers.turns.lexical import BM25Index, analyze
    >>> analyze("Melanie painted two sunsets!")
    ['melanie', 'paint', 'two', 'sunset']
    >>> index = BM25Index([analyze(t) for t in ["I paint sunsets", "I run marathons"]])
    >>> [round(float(s), 3) for s in index.scores(analyze("painting"))]
    [0.693, 0.0]
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

__all__ = ["STOPWORDS", "BM25Index", "analyze", "stem"]

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")

_STOPWORD_TEXT = """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its
    itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves
    also am yeah yes oh hey hi wow really got get gets getting like just thanks thank s t d ll m
    re ve im i'm it's that's you're i've i'll i'd don't didn't doesn't can't won't
"""

STOPWORDS: frozenset[str] = frozenset(_STOPWORD_TEXT.split())
"""Function words and chat filler that carry no topic (English)."""

_STEP1 = (
    ("sses", "ss"),
    ("ies", "y"),
    ("ied", "y"),
    ("ss", "ss"),
    ("us", "us"),
    ("is", "is"),
    ("s", ""),
)
_STEP2 = ("ingly", "edly", "ing", "ed", "ly")
_VOWEL = re.compile(r"[aeiouy]")


def stem(word: str) -> str:
    """Strip common English inflections (plural, -ing, -ed, -ly), conservatively.

    A light stemmer in the spirit of Porter's step 1: enough to join the inflected
    forms of a word, without the over-stemming of the full algorithm.

    Examples:
        >>> [stem(w) for w in ["paintings", "hiking", "adopted", "stories", "glass"]]
        ['paint', 'hike', 'adopt', 'story', 'glass']
    """
    if len(word) <= 3 or not word.isalpha():
        return word
    for suffix, repl in _STEP1:
        if word.endswith(suffix):
            word = word[: len(word) - len(suffix)] + repl
            break
    for suffix in _STEP2:
        if word.endswith(suffix):
            root = word[: -len(suffix)]
            if len(root) < 3 or not _VOWEL.search(root):
                break
            if len(root) >= 2 and root[-1] == root[-2] and root[-1] not in "lsz":
                root = root[:-1]  # running -> run, stopped -> stop
            elif suffix in ("ing", "ed") and _needs_e(root):
                root += "e"  # hiking -> hike, baked -> bake
            word = root
            break
    return word


def _needs_e(root: str) -> bool:
    """A short consonant-vowel-consonant root lost a final ``e`` (hik-ing, bak-ed)."""
    if len(root) < 3 or len(root) > 5:
        return False
    c1, v, c2 = root[-3], root[-2], root[-1]
    vowels = "aeiou"
    return (
        c1 not in vowels
        and v in vowels
        and c2 not in vowels + "wxy"
        and not (len(root) > 3 and root[-4] in vowels)
    )


def analyze(
    text: str,
    *,
    stopwords: frozenset[str] | None = STOPWORDS,
    stemming: bool = True,
) -> list[str]:
    """Split text into lowercase search terms, dropping stopwords and stemming.

    Args:
        text: Any text.
        stopwords: Words to drop (after lowercasing, before stemming); None keeps all.
        stemming: Apply :func:`stem` to each remaining word.

    Returns:
        The terms in text order (repeats kept, as BM25 counts them).
    """
    out = []
    for word in _WORD.findall(text.lower().replace("\u2019", "'")):
        if stopwords is not None and word in stopwords:
            continue
        if "'" in word:
            word = word.split("'", 1)[0]
            if stopwords is not None and word in stopwords:
                continue
        out.append(stem(word) if stemming else word)
    return out


@dataclass
class BM25Index:
    """Okapi BM25 over pre-analyzed documents.

    Args:
        documents: One list of terms per document (see :func:`analyze`).
        k1: Term-frequency saturation.
        b: Length normalisation.

    Examples:
        >>> idx = BM25Index([["cat", "sat"], ["dog"]])
        >>> int(idx.scores(["dog"]).argmax())
        1
    """

    documents: Sequence[Sequence[str]]
    k1: float = 1.2
    b: float = 0.75
    _postings: dict[str, list[tuple[int, int]]] = field(init=False, repr=False)
    _idf: dict[str, float] = field(init=False, repr=False)
    _norm: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        n = len(self.documents)
        lengths = np.array([len(d) for d in self.documents], dtype=np.float64)
        avg = float(lengths.mean()) if n and lengths.sum() else 1.0
        self._norm = self.k1 * (1 - self.b + self.b * lengths / avg)
        self._postings = {}
        for i, doc in enumerate(self.documents):
            for term, tf in Counter(doc).items():
                self._postings.setdefault(term, []).append((i, tf))
        # Lucene's idf: always positive, so very common terms still count a little.
        self._idf = {
            t: math.log(1 + (n - len(p) + 0.5) / (len(p) + 0.5)) for t, p in self._postings.items()
        }

    def __len__(self) -> int:
        return len(self.documents)

    def scores(self, query: Iterable[str]) -> np.ndarray:
        """BM25 score of every document for the query terms (0 where none match)."""
        out = np.zeros(len(self.documents), dtype=np.float64)
        for term, qtf in Counter(query).items():
            postings = self._postings.get(term)
            if not postings:
                continue
            idx = np.fromiter((i for i, _ in postings), dtype=np.int64, count=len(postings))
            tf = np.fromiter((f for _, f in postings), dtype=np.float64, count=len(postings))
            out[idx] += qtf * self._idf[term] * tf * (self.k1 + 1) / (tf + self._norm[idx])
        return out
