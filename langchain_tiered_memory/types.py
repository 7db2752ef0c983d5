"""Shared records and aliases used across layers.

Kept free of any storage or tier logic so every layer can import it.

Naive datetimes: one rule everywhere. A datetime without a time zone that a
caller passes (an episode's ``created_at``, a tool use's ``timestamp``, a
conversation turn's ``time``, a fact query's ``as_of``, a strategy's times, a
clock's "now") is taken to be UTC, by :func:`ensure_aware`; it is never refused
and never read as local time. Pass an aware datetime to mean another zone.

Examples:
    >>> from langchain_tiered_memory.types import validate_namespace
    >>> validate_namespace(("memories", "alice"))
    ('memories', 'alice')
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any, TypeAlias

from langchain_tiered_memory.errors import NamespaceError

__all__ = [
    "JSONValue",
    "Namespace",
    "aware_field",
    "ensure_aware",
    "finite_field",
    "utcnow",
    "validate_namespace",
]

Namespace: TypeAlias = tuple[str, ...]
"""A hierarchical path of labels, as LangGraph's ``BaseStore`` uses."""

JSONValue: TypeAlias = Any
"""A value that ``json.dumps`` accepts without a custom encoder."""


def utcnow() -> datetime:
    """Return the current time as a timezone-aware UTC datetime."""
    return datetime.now(timezone.utc)


def ensure_aware(value: datetime) -> datetime:
    """Return ``value`` as an aware datetime; a naive one is taken to be UTC.

    The library's one rule for naive datetimes (see the module docs).

    Examples:
        >>> ensure_aware(datetime(2025, 1, 1)).isoformat()
        '2025-01-01T00:00:00+00:00'
    """
    if value.tzinfo is None or value.tzinfo.utcoffset(value) is None:
        return value.replace(tzinfo=timezone.utc)
    return value


def aware_field(value: Any) -> Any:
    """A model validator: a datetime made aware by :func:`ensure_aware`, anything else as is."""
    return ensure_aware(value) if isinstance(value, datetime) else value


def finite_field(value: float, info: Any) -> float:
    """A model validator: refuses NaN and infinities, naming the field."""
    if not math.isfinite(value):
        raise ValueError(f"{info.field_name} is {value}: use a finite number >= 0")
    return value


def validate_namespace(namespace: Sequence[str], *, allow_empty: bool = False) -> Namespace:
    """Check a namespace and return it as a tuple.

    Args:
        namespace: The labels, outermost first.
        allow_empty: Accept ``()`` (used by searches over every namespace).

    Raises:
        NamespaceError: The namespace is not a sequence of non-empty strings.
    """
    if isinstance(namespace, str) or not isinstance(namespace, Sequence):
        raise NamespaceError(
            f"namespace must be a tuple of strings, got {type(namespace).__name__} "
            f"{namespace!r}: pass e.g. ('memories', 'alice')"
        )
    ns = tuple(namespace)
    if not ns and not allow_empty:
        raise NamespaceError("namespace is empty: pass at least one label, e.g. ('memories',)")
    for i, label in enumerate(ns):
        if not isinstance(label, str):
            raise NamespaceError(
                f"namespace label {i} is {type(label).__name__} {label!r}: labels must be strings"
            )
        if not label:
            raise NamespaceError(
                f"namespace label {i} of {ns!r} is empty: labels must be non-empty strings"
            )
    return ns
