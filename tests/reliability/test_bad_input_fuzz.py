"""Bad input, fuzzed: public constructors and methods fail cleanly and store nothing.

Hypothesis feeds huge strings, empty strings, control characters, lone
surrogates, NaN and infinite numbers, naive and aware datetimes and values of
the wrong type to the public API on the embedded store. A call may succeed;
if it fails, it raises a ``TieredMemoryError`` subclass, ``ValueError`` or
``TypeError`` (pydantic's ``ValidationError`` is a ``ValueError``) with a
message, and the user's export is exactly what it was before the call.
"""

from __future__ import annotations

import math
import shutil
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reliability_helpers import fast_dir, open_memory

from langchain_tiered_memory import (
    Episode,
    TieredMemory,
    TieredMemoryError,
    ToolUsageRecord,
    TrajectoryStep,
)
from langchain_tiered_memory.tiers.procedural import Strategy

ALLOWED = (TieredMemoryError, ValueError, TypeError)

huge = st.sampled_from(["x" * 300_000, "word " * 250_000, "é" * 600_000])
weird_text = st.one_of(
    st.just(""),
    st.just("   "),
    st.text(st.characters(max_codepoint=0x1F), min_size=1, max_size=20),
    st.sampled_from(["\ud800", "a\x00b", "a.b", "*", "\u2028", "\x1f", "🙂" * 10]),
    st.text(max_size=40),
)
numbers = st.one_of(
    st.sampled_from([math.nan, math.inf, -math.inf, -1.0, 2.0, 0.0, 1e308, -0.0]),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.booleans(),
)
datetimes = st.one_of(
    st.datetimes(),  # naive
    st.datetimes(timezones=st.just(timezone.utc)),
    st.datetimes(timezones=st.just(timezone(timedelta(hours=-11)))),
    st.sampled_from([datetime.min, datetime.max]),
)
wrong = st.one_of(
    st.none(),
    st.binary(max_size=8),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.just(object()),
)
junk = st.one_of(weird_text, numbers, datetimes, wrong, huge)


def _record(d: dict[str, Any]) -> dict[str, Any]:
    return d


CALLS: dict[str, Callable[[TieredMemory, list[Any]], Any]] = {
    "for_user": lambda m, a: m.for_user(a[0], a[1]),
    "remember": lambda m, a: m.for_user("fuzz").remember(a[0], a[1]),
    "search": lambda m, a: m.for_user("fuzz").search(a[0], a[1]),
    "build_memory_context": lambda m, a: m.for_user("fuzz").build_memory_context(a[0], a[1]),
    "forget": lambda m, a: m.for_user("fuzz").forget(a[0], min_overlap=a[1]),
    "store_fact": lambda m, a: m.for_user("fuzz").semantic.store_fact(
        a[0], a[1], confidence=a[2], attribute=a[3], value=a[4]
    ),
    "store_fact_confidence": lambda m, a: m.for_user("fuzz").semantic.store_fact(
        "fuzz", "Likes green tea", confidence=a[0]
    ),
    "upsert_entity": lambda m, a: m.for_user("fuzz").semantic.upsert_entity(
        a[0], entity_type=a[1], name=a[2]
    ),
    "add_relation": lambda m, a: m.for_user("fuzz").semantic.add_relation("fuzz", a[0], a[1]),
    "get_facts": lambda m, a: m.for_user("fuzz").semantic.get_facts(a[0], as_of=a[1]),
    "semantic_search": lambda m, a: m.for_user("fuzz").semantic.semantic_search(a[0], top_k=a[1]),
    "entity_context": lambda m, a: m.for_user("fuzz").semantic.retrieve_entity_context(a[0], a[1]),
    "record_episode": lambda m, a: m.for_user("fuzz").episodic.record(
        _record(
            {
                "task_description": a[0],
                "outcome": a[1],
                "created_at": a[2],
                "importance": a[3],
                "tags": a[4],
            }
        )
    ),
    "record_episode_model": lambda m, a: m.for_user("fuzz").episodic.record(
        Episode(
            task_description="Plan a trip",
            outcome="success",
            created_at=a[0],
            trajectory=[TrajectoryStep(action=a[1], observation=a[2])],
            reflection=a[3],
        )
    ),
    "retrieve_similar": lambda m, a: m.for_user("fuzz").episodic.retrieve_similar(
        a[0], a[1], max_age_hours=a[2]
    ),
    "retrieve_recent": lambda m, a: m.for_user("fuzz").episodic.retrieve_recent(a[0]),
    "episodes_in_range": lambda m, a: m.for_user("fuzz").episodic.get_episodes_in_range(a[0], a[1]),
    "record_tool_use": lambda m, a: m.for_user("fuzz").procedural.record_tool_use(
        {
            "tool_name": a[0],
            "success": a[1],
            "execution_time_ms": a[2],
            "timestamp": a[3],
            "parameters": a[4],
        }
    ),
    "tool_use_model": lambda m, a: m.for_user("fuzz").procedural.record_tool_use(
        ToolUsageRecord(tool_name="search", success=True, error_message=a[0], hint=a[1])
    ),
    "register_strategy": lambda m, a: m.for_user("fuzz").procedural.register_strategy(
        a[0], a[1], a[2], a[3]
    ),
    "strategy_outcome": lambda m, a: m.for_user("fuzz").procedural.update_strategy_outcome(
        "known", a[0]
    ),
    "set_preference": lambda m, a: m.for_user("fuzz").procedural.set_preference(a[0], a[1]),
    "tool_guidance": lambda m, a: m.for_user("fuzz").procedural.get_tool_guidance(a[0]),
    "applicable_strategies": lambda m, a: m.for_user("fuzz").procedural.get_applicable_strategies(
        a[0], top_k=a[1], min_confidence=a[2]
    ),
    "export_user": lambda m, a: list(m.export_user(a[0])),
    "queue_episode": lambda m, a: m.for_user("fuzz").queue_episode(a[0]),
    "TieredMemory": lambda m, a: TieredMemory(a[0]),
    "Episode": lambda m, a: Episode(task_description=a[0], outcome=a[1], importance=a[2]),
    "Strategy": lambda m, a: Strategy(name=a[0], description=a[1], success_count=a[2]),
}


@pytest.fixture(scope="module")
def fuzz_memory() -> Iterator[TieredMemory]:
    path = fast_dir()
    memory = open_memory("embedded", path / "store")
    user = memory.for_user("fuzz")
    user.remember("I live in Lyon.")
    user.procedural.register_strategy("known", "A strategy that exists")
    try:
        yield memory
    finally:
        memory.close()
        shutil.rmtree(path, ignore_errors=True)


def snapshot(memory: TieredMemory) -> list[Any]:
    return sorted(
        (tuple(r["namespace"]), r["key"], repr(r["value"]))
        for r in memory.export_user("fuzz")
        if "access" not in r["namespace"]  # reads bump access statistics by design
    )


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.function_scoped_fixture,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
    ],
)
@given(name=st.sampled_from(sorted(CALLS)), args=st.lists(junk, min_size=6, max_size=6))
def test_bad_input_fails_cleanly_and_stores_nothing(
    fuzz_memory: TieredMemory, name: str, args: list[Any]
) -> None:
    before = snapshot(fuzz_memory)
    try:
        CALLS[name](fuzz_memory, args)
    except ALLOWED as exc:
        assert str(exc).strip(), f"{name} raised {type(exc).__name__} without a message"
        after = snapshot(fuzz_memory)
        assert after == before, f"{name} raised {type(exc).__name__} but stored something"
