"""The payload layout of a store item: one pass over the value, the packed read fields."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from langchain_tiered_memory.errors import InvalidInputError
from langchain_tiered_memory.stores.payload import (
    item_payload,
    layout_value,
    namespace_fields,
    normalize_value,
    numeric_view,
    point_id,
    point_id_in,
    read_item,
    stamp,
    value_marks,
)


def build_payload(
    namespace: tuple[str, ...],
    key: str,
    value: dict[str, Any],
    value_json: str,
    *,
    created_at: datetime,
    updated_at: datetime,
    order_us: int,
    ttl_minutes: float | None,
) -> dict[str, Any]:
    """The payload of one item with these times (``updated_us`` is ``order_us``)."""
    layout = layout_value(value)._replace(text=value_json)
    updated = stamp(updated_at)
    return item_payload(
        namespace,
        key,
        layout,
        created=stamp(created_at),
        order_us=order_us,
        ttl_minutes=ttl_minutes,
        updated=None if updated == order_us else updated_at.isoformat(),
    )


VALUES: list[dict[str, Any]] = [
    {},
    {"text": "Alice moved to Lisbon", "year": 2021, "score": 0.5, "ok": True, "none": None},
    {"tags": ["x", 3, 2.5, None, {"deep": [1, "y"]}], "nested": {"a": {"b": -0.0, "c": []}}},
    {"big": 2**63 - 1, "small": -(2**63), "é": "ü" * 70, "empty": ""},
    {"tuple": (1, 2), "inner": {"t": ("a",)}},  # tuples read back as lists
]


@pytest.mark.parametrize("value", VALUES)
def test_one_pass_layout_matches_the_separate_steps(value: dict[str, Any]) -> None:
    layout = layout_value(value)
    normalized, text = normalize_value(value)
    assert (layout.value, layout.text) == (normalized, text)
    assert layout.marks == value_marks(normalized)
    assert layout.numbers == numeric_view(normalized)


@pytest.mark.parametrize(
    "value",
    [{"x": float("nan")}, {"x": [1, float("inf")]}, {1: "a"}, {"x": 2**64}, {"x": {1, 2}}],
)
def test_one_pass_layout_refuses_what_normalize_value_refuses(value: dict[Any, Any]) -> None:
    with pytest.raises(InvalidInputError):
        layout_value(value)


@pytest.mark.parametrize("namespace", [("a",), ("users", 'é"x\\'), ("a", "b", "c", "d", "e")])
@pytest.mark.parametrize("key", ["k", "", 'ключ \u2028 "q"'])
def test_point_ids_from_the_namespace_seed_are_the_uuid5_ids(
    namespace: tuple[str, ...], key: str
) -> None:
    assert point_id_in(namespace_fields(namespace)[2], key) == point_id(namespace, key)


def test_payload_leaves_out_empty_fields_and_reads_back_the_item() -> None:
    when = datetime(2024, 5, 1, 8, tzinfo=timezone.utc)
    value = {"text": "hi", "when": "today"}
    payload = build_payload(
        ("docs", "a"),
        "k",
        value,
        normalize_value(value)[1],
        created_at=when - timedelta(days=1),
        updated_at=when,
        order_us=1_714_550_400_000_000,
        ttl_minutes=None,
    )
    assert set(payload) == {"ns_path", "ns_prefixes", "updated_us", "value_marks", "item"}
    item, ttl = read_item(payload)
    assert (item.namespace, item.key, item.value, ttl) == (("docs", "a"), "k", value, None)
    assert (item.created_at, item.updated_at) == (when - timedelta(days=1), when)


def test_payload_of_an_item_with_a_ttl_carries_its_expiry() -> None:
    when = datetime(2024, 5, 1, tzinfo=timezone.utc)
    payload = build_payload(
        ("docs",),
        "k",
        {"n": 1},
        '{"n":1}',
        created_at=when,
        updated_at=when,
        order_us=1_000_000,
        ttl_minutes=1.5,
    )
    assert payload["expires_us"] == 1_000_000 + 90_000_000
    assert payload["value"] == {"n": 1}
    assert read_item(payload)[1] == 1.5
