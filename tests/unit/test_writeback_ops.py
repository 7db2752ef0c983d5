"""RetryPolicy backoff and WriteOp keys: the pure parts of durable write-back."""

from __future__ import annotations

import random

import pytest
from langgraph.types import RetryPolicy as LangGraphRetryPolicy

from langchain_tiered_memory.errors import ConfigurationError, InvalidInputError
from langchain_tiered_memory.writeback.ops import RetryPolicy, WriteOp, default_retry_on

NS = ("tiered_memory", "alice")


def test_backoff_grows_exponentially_and_is_capped() -> None:
    policy = RetryPolicy(initial_interval=0.5, backoff_factor=3, max_interval=5, jitter=False)
    assert [policy.delay(n) for n in range(1, 6)] == [0.5, 1.5, 4.5, 5.0, 5.0]


def test_jitter_stays_within_the_upper_half_of_the_interval() -> None:
    policy = RetryPolicy(initial_interval=1.0, max_interval=100, jitter=True)
    rng = random.Random(7)
    for attempt in range(1, 7):
        full = 2.0 ** (attempt - 1)
        samples = [policy.delay(attempt, rng) for _ in range(200)]
        assert all(full / 2 <= s <= full for s in samples)
        assert len(set(samples)) > 100  # actually random


def test_should_retry_counts_attempts_and_honours_retry_on() -> None:
    policy = RetryPolicy(max_attempts=3)
    assert policy.should_retry(ConnectionError(), 1)
    assert policy.should_retry(OSError(), 2)
    assert not policy.should_retry(ConnectionError(), 3)
    assert not policy.should_retry(InvalidInputError("bad"), 1)
    only_timeouts = RetryPolicy(retry_on=TimeoutError)
    assert only_timeouts.should_retry(TimeoutError(), 1)
    assert not only_timeouts.should_retry(KeyError(), 1)
    several = RetryPolicy(retry_on=(TimeoutError, KeyError))
    assert several.should_retry(KeyError(), 1)
    predicate = RetryPolicy(retry_on=lambda exc: "transient" in str(exc))
    assert predicate.should_retry(RuntimeError("transient glitch"), 1)
    assert not predicate.should_retry(RuntimeError("broken"), 1)
    assert default_retry_on(ValueError("store said no"))


def test_langgraph_policy_is_accepted() -> None:
    lg = LangGraphRetryPolicy(
        initial_interval=0.1, backoff_factor=4, max_interval=9, max_attempts=7
    )
    policy = RetryPolicy.from_langgraph(lg)
    assert (policy.initial_interval, policy.backoff_factor, policy.max_interval) == (0.1, 4, 9)
    assert policy.max_attempts == 7 and policy.retry_on is lg.retry_on


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_attempts": 0},
        {"initial_interval": -1},
        {"max_interval": float("nan")},
        {"backoff_factor": 0.5},
    ],
)
def test_impossible_policies_are_rejected(kwargs: dict[str, float]) -> None:
    with pytest.raises(ConfigurationError, match="RetryPolicy"):
        RetryPolicy(**kwargs)  # type: ignore[arg-type]


def test_derived_key_depends_on_content_only() -> None:
    a = WriteOp.put(NS, "k", {"x": 1, "y": [1, 2]})
    b = WriteOp.put(NS, "k", {"y": [1, 2], "x": 1})  # same content, other order
    c = WriteOp.put(NS, "k", {"x": 2, "y": [1, 2]})
    assert a.idempotency_key == b.idempotency_key != c.idempotency_key
    assert a.key_was_derived
    assert WriteOp.delete(NS, "k").idempotency_key != a.idempotency_key
    given = WriteOp.put(NS, "k", {"x": 1}, idempotency_key="turn-1")
    assert given.idempotency_key == "turn-1" and not given.key_was_derived


def test_named_op_validation() -> None:
    with pytest.raises(InvalidInputError, match="operation name"):
        WriteOp("", {})
    with pytest.raises(InvalidInputError, match="mapping"):
        WriteOp("x", ["not", "a", "dict"])  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="idempotency key"):
        WriteOp("x", {}, key="")
    with pytest.raises(InvalidInputError, match="namespace"):
        WriteOp("x", {}, namespace=("ok", ""))
    with pytest.raises(InvalidInputError, match=r"store\.put payload"):
        WriteOp("store.put", {"namespace": ["a"], "key": "k", "value": 3})
