"""Plumbing shared by the tiers: plans, pagination, time encoding, record validation.

A tier operation is written once, as a *plan*: a generator that yields effects
(:class:`StoreOps`, one ``batch``; :class:`Call`, e.g. an LLM request) and receives
their results. :func:`run_plan` and :func:`arun_plan` drive it, so a sync method and
its async twin share every line but the driver. Each run is one call for the erasure
fence (:mod:`langchain_tiered_memory.erasure_fence`). An exception raised by an effect
is thrown back into the plan, which may handle it or let it propagate.

Examples:
    >>> from langgraph.store.base import GetOp, PutOp
    >>> from langgraph.store.memory import InMemoryStore
    >>> def plan():
    ...     yield StoreOps((PutOp(("ns",), "k", {"v": 1}),))
    ...     (item,) = yield StoreOps((GetOp(("ns",), "k"),))
    ...     return item.value["v"]
    >>> run_plan(InMemoryStore(), plan())
    1
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from itertools import chain
from typing import Any, TypeAlias, TypeVar, cast

from langgraph.store.base import BaseStore, Op, Result, SearchItem, SearchOp
from pydantic import BaseModel, ValidationError

from langchain_tiered_memory import plans
from langchain_tiered_memory.erasure_fence import awriting, call_started, put_namespaces, writing
from langchain_tiered_memory.errors import InvalidInputError
from langchain_tiered_memory.stores.payload import MAX_VALUE_BYTES
from langchain_tiered_memory.text import check_unicode
from langchain_tiered_memory.types import Namespace, ensure_aware

__all__ = [
    "Call",
    "Effect",
    "Plan",
    "StoreOps",
    "arun_plan",
    "check_stored_size",
    "from_epoch",
    "run_plan",
    "search_all",
    "to_epoch",
    "validate_model",
]

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)

PAGE_SIZE = 500
"""Items fetched per search page when a plan reads every match of a filter."""


@dataclass(frozen=True)
class StoreOps:
    """Effect: run these operations in one ``batch`` / ``abatch`` call; receive the results."""

    ops: tuple[Op, ...]


@dataclass(frozen=True)
class Call:
    """Effect: call ``sync()`` (sync driver) or ``await async_()`` (async driver)."""

    sync: Callable[[], Any]
    async_: Callable[[], Awaitable[Any]]


Effect: TypeAlias = StoreOps | Call
Plan: TypeAlias = Generator[Effect, Any, T]
"""A generator yielding effects, receiving their results, returning ``T``."""


def run_plan(store: BaseStore, plan: Plan[T]) -> T:
    """Execute ``plan`` synchronously against ``store``."""

    def execute(effect: Effect) -> Any:
        if isinstance(effect, StoreOps):
            with writing(store, put_namespaces(effect.ops)):
                return store.batch(effect.ops)
        return effect.sync()

    with call_started():
        return plans.run_plan(plan, execute)


async def arun_plan(store: BaseStore, plan: Plan[T]) -> T:
    """Execute ``plan`` asynchronously against ``store``."""

    async def execute(effect: Effect) -> Any:
        if isinstance(effect, StoreOps):
            async with awriting(store, put_namespaces(effect.ops)):
                return await store.abatch(effect.ops)
        return await effect.async_()

    with call_started():
        return await plans.arun_plan(plan, execute)


def search_all(
    namespace: Namespace, filters: Sequence[dict[str, Any] | None], *, page_size: int = PAGE_SIZE
) -> Plan[list[SearchItem]]:
    """Read every item matching any of ``filters`` (no query), one batch per page round.

    The filtering runs in the store; this only walks the pages. Several filters (an OR
    of conditions) share round trips; the items come filter by filter, without duplicate
    keys.
    """
    results: list[list[SearchItem]] = [[] for _ in filters]
    open_ix = list(range(len(filters)))
    offset = 0
    while open_ix:
        ops = tuple(SearchOp(namespace, filters[i], page_size, offset) for i in open_ix)
        pages: list[Result] = yield StoreOps(ops)
        still_open = []
        for i, page in zip(open_ix, pages, strict=True):
            items = cast("list[SearchItem]", page or [])
            results[i].extend(items)
            if len(items) == page_size:
                still_open.append(i)
        open_ix = still_open
        offset += page_size
    merged: dict[str, SearchItem] = {}
    for item in chain.from_iterable(results):
        merged.setdefault(item.key, item)  # the first filter that has a key keeps its place
    return list(merged.values())


def to_epoch(value: datetime) -> float:
    """Seconds since the epoch, the numeric form range filters compare."""
    return ensure_aware(value).timestamp()


def from_epoch(seconds: float) -> datetime:
    """The aware UTC datetime of ``seconds`` since the epoch."""
    return datetime.fromtimestamp(seconds, tz=timezone.utc)


def _given(value: object, name: str) -> bool:
    if isinstance(value, BaseModel):
        return name in value.model_fields_set
    if isinstance(value, Mapping):
        return value.get(name) is not None
    return True


def _check_strings(value: Any, where: str) -> None:
    """Raise for the first string in ``value`` that is not valid Unicode, naming its field."""
    if isinstance(value, str):
        check_unicode(value, where)
    elif isinstance(value, Mapping):
        for key, child in value.items():
            _check_strings(child, f"{where}.{key}")
    elif isinstance(value, (list, tuple)):
        for i, child in enumerate(value):
            _check_strings(child, f"{where}[{i}]")


def check_stored_size(value: Mapping[str, Any], what: str) -> None:
    """Refuse a record whose stored JSON would exceed one record's limit.

    The limit is :data:`~langchain_tiered_memory.stores.payload.MAX_VALUE_BYTES`,
    the largest value the Qdrant stores accept; the tiers apply it on every store,
    to direct and queued writes alike, before anything is stored or acknowledged.

    Raises:
        InvalidInputError: The record is too large.
    """
    size = len(json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str).encode())
    if size > MAX_VALUE_BYTES:
        raise InvalidInputError(
            f"{what} is {size:,} bytes as stored JSON, over the {MAX_VALUE_BYTES:,}-byte limit "
            "of one record, nothing was stored: keep large content (documents, tool output) "
            "elsewhere and store a reference or summary"
        )


def validate_model(
    cls: type[M],
    value: M | Mapping[str, Any],
    what: str,
    *,
    unset: Mapping[str, Any] | None = None,
) -> M:
    """A validated copy of ``value`` (an instance of ``cls`` or a dict of its fields).

    Args:
        cls: The model class.
        value: An instance of ``cls`` or a dict of its fields.
        what: How to name the record in error messages.
        unset: Values for fields the caller did not set (not passed to the model's
            constructor, or ``None`` in a dict), used instead of the model's defaults;
            tiers pass ``{"created_at": <their clock's now>}``.

    Raises:
        InvalidInputError: A field is invalid (the message lists which and why),
            or a text in it is not valid Unicode; the caller has stored nothing yet.
    """
    try:
        data = value.model_dump() if isinstance(value, BaseModel) else dict(value)
        for name, default in (unset or {}).items():
            if not _given(value, name):
                data[name] = default
        _check_strings(data, what)
        return cls.model_validate(data)
    except InvalidInputError as exc:
        raise InvalidInputError(f"invalid {what}, nothing was stored: {exc}") from None
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or what}: {err['msg']}" for err in exc.errors()
        )
        raise InvalidInputError(f"invalid {what}, nothing was stored: {problems}") from exc
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(
            f"{what} must be a {cls.__name__} or a dict of its fields, got {type(value).__name__}"
        ) from exc
