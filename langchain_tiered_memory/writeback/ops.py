"""What a durable write is: serialisable operations, the retry policy, and result records.

A write is a :class:`WriteOp`: an operation name (``"store.put"``,
``"store.delete"`` or a registered handler's) plus a JSON payload, with an
idempotency key derived from the content when the caller gives none, so the
same write submitted twice is queued once.

Examples:
    >>> op = WriteOp.put(("memories", "alice"), "diet", {"text": "vegetarian"})
    >>> op.name, op.namespace
    ('store.put', ('memories', 'alice'))
    >>> op.idempotency_key == WriteOp.put(("memories", "alice"), "diet",
    ...                                   {"text": "vegetarian"}).idempotency_key
    True
    >>> RetryPolicy(initial_interval=1.0, jitter=False).delay(3)
    4.0
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any, Literal

from langchain_tiered_memory.errors import ConfigurationError, InvalidInputError
from langchain_tiered_memory.stores.payload import normalize_value
from langchain_tiered_memory.text import check_unicode
from langchain_tiered_memory.types import JSONValue, Namespace, validate_namespace

__all__ = [
    "BUILTIN_OPS",
    "DELETE",
    "PUT",
    "DeadLetter",
    "RetryPolicy",
    "WriteBackStats",
    "WriteOp",
    "WriteReceipt",
    "canonical_json",
    "default_retry_on",
]

PUT = "store.put"
"""Name of the built-in operation that calls ``store.put(namespace, key, value, index)``."""
DELETE = "store.delete"
"""Name of the built-in operation that calls ``store.delete(namespace, key)``."""
BUILTIN_OPS = frozenset({PUT, DELETE})

_MAX_NAME_LENGTH = 200
_MAX_KEY_LENGTH = 500


def canonical_json(value: Any) -> str:
    """Serialise ``value`` to deterministic JSON (sorted keys, no spaces, no NaN).

    Raises:
        InvalidInputError: The value is not JSON-serialisable (or holds NaN/inf).
    """
    try:
        return json.dumps(
            value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        )
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(
            f"write payload is not JSON-serialisable ({exc}): durable writes must hold only "
            "dicts, lists, strings, numbers (no NaN/inf), booleans and None; convert "
            "datetimes to ISO strings and objects to dicts before submitting"
        ) from exc


def _check_key(key: object, what: str) -> str:
    if not isinstance(key, str) or not key:
        raise InvalidInputError(f"{what} must be a non-empty string, got {key!r}")
    if len(key) > _MAX_KEY_LENGTH:
        raise InvalidInputError(f"{what} is {len(key)} characters long: use at most 500")
    return key


@dataclass(frozen=True)
class WriteOp:
    """One serialisable write: an operation name, a JSON payload and an idempotency key.

    Build built-in writes with :meth:`put` and :meth:`delete`; build a named
    operation with ``WriteOp("semantic.store_fact", {...})``. The payload is
    checked (JSON, valid Unicode; a put's value as ``store.put`` checks it) and
    frozen to canonical JSON on construction, so an invalid write fails here,
    before it is acknowledged or stored.

    Args:
        name: Operation name; ``"store.put"``/``"store.delete"`` or a registered handler's.
        payload: JSON-serialisable mapping passed to the handler.
        key: Idempotency key; derived from ``name`` and ``payload`` when ``None``.
        namespace: Whose data this is. Set automatically for put/delete; give it for
            named operations so :meth:`DurableMemoryWriter.purge` can find them.

    Examples:
        >>> op = WriteOp("semantic.store_fact", {"entity": "alice", "fact": "likes tea"},
        ...              namespace=("tiered_memory", "alice"))
        >>> op.key_was_derived
        True
    """

    name: str
    payload: Mapping[str, JSONValue] = field(compare=False)
    key: str | None = None
    namespace: Namespace | None = None
    payload_json: str = field(init=False, repr=False)
    idempotency_key: str = field(init=False, compare=False)
    key_was_derived: bool = field(init=False, repr=False, compare=False)
    target: str | None = field(init=False, repr=False, compare=False)
    """The store item a built-in op writes (canonical JSON of ``[namespace, key]``), else None."""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise InvalidInputError(
                f"operation name must be a non-empty string, got {self.name!r}: "
                "e.g. 'semantic.store_fact'"
            )
        if len(self.name) > _MAX_NAME_LENGTH:
            raise InvalidInputError(
                f"operation name is {len(self.name)} characters long: "
                f"use at most {_MAX_NAME_LENGTH}"
            )
        if not isinstance(self.payload, Mapping):
            raise InvalidInputError(
                f"payload of {self.name!r} must be a mapping, got {type(self.payload).__name__}"
            )
        if self.namespace is not None:
            object.__setattr__(self, "namespace", validate_namespace(self.namespace))
        target = None
        if self.name in BUILTIN_OPS:
            _validate_builtin(self.name, self.payload)
            target = canonical_json([list(self.payload["namespace"]), self.payload["key"]])
        payload_json = check_unicode(
            canonical_json(dict(self.payload)), f"the payload of {self.name!r} (as JSON)"
        )
        if self.name == PUT:  # what store.put would refuse is refused before the ack
            normalize_value(self.payload["value"])
        object.__setattr__(self, "payload_json", payload_json)
        derived = self.key is None
        if derived:
            digest = hashlib.sha256(f"{self.name}\n{payload_json}".encode()).hexdigest()
            object.__setattr__(self, "idempotency_key", f"sha256:{digest}")
        else:
            object.__setattr__(self, "idempotency_key", _check_key(self.key, "idempotency key"))
        object.__setattr__(self, "key_was_derived", derived)
        object.__setattr__(self, "target", target)

    @classmethod
    def put(
        cls,
        namespace: Sequence[str],
        key: str,
        value: Mapping[str, JSONValue],
        *,
        index: Literal[False] | list[str] | None = None,
        idempotency_key: str | None = None,
    ) -> WriteOp:
        """A write that stores ``value`` under ``(namespace, key)`` (as ``BaseStore.put``)."""
        ns = validate_namespace(namespace)
        if not isinstance(value, Mapping):
            raise InvalidInputError(
                f"value for key {key!r} must be a mapping (dict), got {type(value).__name__}"
            )
        payload = {"namespace": list(ns), "key": key, "value": dict(value), "index": index}
        return cls(PUT, payload, key=idempotency_key, namespace=ns)

    @classmethod
    def delete(
        cls, namespace: Sequence[str], key: str, *, idempotency_key: str | None = None
    ) -> WriteOp:
        """A write that deletes ``(namespace, key)`` (as ``BaseStore.delete``)."""
        ns = validate_namespace(namespace)
        return cls(DELETE, {"namespace": list(ns), "key": key}, key=idempotency_key, namespace=ns)


def _validate_builtin(name: str, payload: Mapping[str, Any]) -> None:
    validate_namespace(payload.get("namespace", ()))
    _check_key(payload.get("key"), "store key")
    if name == PUT:
        if not isinstance(payload.get("value"), Mapping):
            raise InvalidInputError("store.put payload needs a mapping under 'value'")
        index = payload.get("index")
        paths = isinstance(index, list) and all(isinstance(p, str) and p for p in index)
        if not (index is None or index is False or paths):
            raise InvalidInputError(
                f"index must be None, False or a list of non-empty field paths, got {index!r}"
            )


def default_retry_on(exc: BaseException) -> bool:
    """Retry every error except a caller's mistake (:class:`InvalidInputError`).

    Unlike LangGraph's default this retries ``OSError``, ``RuntimeError`` and
    ``ValueError``: stores and handlers raise those for transient faults too, and
    a write that still fails after all attempts is kept as a dead letter.
    """
    return not isinstance(exc, InvalidInputError)


@dataclass(frozen=True)
class RetryPolicy:
    """How the writer retries a failing write: exponential backoff with optional jitter.

    The field names mirror ``langgraph.types.RetryPolicy``; build one from a
    LangGraph policy with :meth:`from_langgraph`. Attempt ``n`` (1-based) that
    fails waits ``min(max_interval, initial_interval * backoff_factor ** (n - 1))``
    seconds before the next; with ``jitter`` the wait is drawn uniformly from
    the upper half of that interval so many writers do not retry in lockstep.

    Args:
        initial_interval: Wait before the first retry, in seconds (the base delay).
        backoff_factor: Multiplier applied to the wait after each retry.
        max_interval: Upper bound of any wait, in seconds (the max delay).
        max_attempts: Attempts in total, the first included; then the write is a dead letter.
        jitter: Randomise each wait within ``[wait / 2, wait]``.
        retry_on: Exception types, or a predicate, that deserve a retry; any other
            error makes the write a dead letter at once.

    Examples:
        >>> policy = RetryPolicy(initial_interval=0.5, max_interval=2.0, jitter=False)
        >>> [policy.delay(n) for n in (1, 2, 3, 4)]
        [0.5, 1.0, 2.0, 2.0]
    """

    initial_interval: float = 0.5
    backoff_factor: float = 2.0
    max_interval: float = 30.0
    max_attempts: int = 5
    jitter: bool = True
    retry_on: (
        type[BaseException] | Sequence[type[BaseException]] | Callable[[BaseException], bool]
    ) = default_retry_on

    def __post_init__(self) -> None:
        for name, least in (("initial_interval", 0), ("max_interval", 0), ("backoff_factor", 1)):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not math.isfinite(value) or value < least:
                raise ConfigurationError(f"RetryPolicy.{name} must be a finite number >= {least}")
        if not isinstance(self.max_attempts, int) or self.max_attempts < 1:
            raise ConfigurationError(
                f"RetryPolicy.max_attempts must be an int >= 1, got {self.max_attempts!r}"
            )

    @classmethod
    def from_langgraph(cls, policy: Any) -> RetryPolicy:
        """Build from a ``langgraph.types.RetryPolicy`` (same field names and meaning).

        LangGraph's jitter adds up to one second; here jitter scales the wait instead.
        """
        return cls(**{f.name: getattr(policy, f.name) for f in fields(cls)})

    def delay(self, attempt: int, rng: random.Random | None = None) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        base = self.initial_interval * self.backoff_factor ** max(0, attempt - 1)
        wait = min(self.max_interval, base)
        if self.jitter and wait > 0:
            wait = (rng or random).uniform(wait / 2, wait)
        return float(wait)

    def should_retry(self, exc: BaseException, attempts: int) -> bool:
        """Whether a write that has failed ``attempts`` times with ``exc`` gets another try."""
        if attempts >= self.max_attempts:
            return False
        retry_on = self.retry_on
        if isinstance(retry_on, type):
            return isinstance(exc, retry_on)
        if isinstance(retry_on, Sequence):
            return isinstance(exc, tuple(retry_on))
        return bool(retry_on(exc))


@dataclass(frozen=True)
class WriteReceipt:
    """Acknowledgement of a submitted write: it is on disk and will be applied.

    Attributes:
        seq: Position in the outbox (writes are applied in ``seq`` order).
        idempotency_key: The key the write was stored under.
        duplicate: True when a write with this key was already queued or applied,
            so nothing new was stored.
    """

    seq: int
    idempotency_key: str
    duplicate: bool = False


@dataclass(frozen=True)
class DeadLetter:
    """A write that failed on every attempt; re-queue it with ``retry_dead_letters``.

    Attributes:
        seq: Position in the outbox.
        idempotency_key: The write's idempotency key.
        op: Operation name.
        payload: The JSON payload.
        namespace: Whose data it is, when known.
        attempts: How many times it was tried.
        error: The last error, as ``"ExceptionType: message"``.
        created_at: When it was submitted.
        failed_at: When it was given up on.
    """

    seq: int
    idempotency_key: str
    op: str
    payload: dict[str, JSONValue]
    namespace: Namespace | None
    attempts: int
    error: str
    created_at: datetime
    failed_at: datetime


@dataclass(frozen=True)
class WriteBackStats:
    """Counts of the outbox's writes.

    Attributes:
        pending: Acknowledged, not yet applied (including those waiting to retry).
        retrying: Pending writes that have failed at least once.
        applied: Applied writes still kept for de-duplication.
        dead_letters: Writes that failed on every attempt.
        superseded: Dead letters dropped on retry because a later write replaced them.
        failed_attempts: Failed attempts over every kept write.
        oldest_pending_age: Seconds since the oldest pending write was submitted.
        last_error: The most recent failure, as ``"ExceptionType: message"``.
        worker_error: Set while the worker itself cannot reach the outbox.
        erased: Queued writes this writer dropped unapplied because their user
            was erased (``TieredMemory.forget_user``) after they were submitted.
    """

    pending: int
    retrying: int
    applied: int
    dead_letters: int
    superseded: int
    failed_attempts: int
    oldest_pending_age: float | None
    last_error: str | None
    worker_error: str | None = None
    erased: int = 0
