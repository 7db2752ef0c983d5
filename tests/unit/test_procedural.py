# ruff: noqa: F811  (pytest fixtures imported from test_episodic_support are redefined as arguments)
import asyncio
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore
from pydantic import ValidationError
from test_episodic_support import (  # noqa: F401 (fixtures)
    fake_clock,
    hashing_index,
    open_qdrant,
    qdrant_store,
    scope,
    store,
    thread_safe,
)

from langchain_tiered_memory.errors import ConfigurationError, InvalidInputError
from langchain_tiered_memory.testing.fakes import FakeClock
from langchain_tiered_memory.tiers.common.scope import MemoryScope
from langchain_tiered_memory.tiers.procedural.memory import ProceduralConfig, ProceduralMemory
from langchain_tiered_memory.tiers.procedural.models import Strategy, ToolUsageRecord
from langchain_tiered_memory.tiers.procedural.text import (
    REDACTED,
    is_secret_name,
    normalize_error,
    redact_parameters,
)


def use(tool: str, ok: bool, ms: float = 10.0, err: str = "", **params: object) -> ToolUsageRecord:
    return ToolUsageRecord(
        tool_name=tool, success=ok, execution_time_ms=ms, error_message=err, parameters=params
    )


def all_values(store: BaseStore, scope: MemoryScope) -> str:
    return json.dumps([i.value for i in store.search(scope.prefix, limit=10_000)])


# --------------------------------------------------------------------------- secrets


@pytest.mark.parametrize(
    "name",
    ["api_key", "API-KEY", "x-api-key", "apiKey", "token", "access_token", "refresh_token",
     "password", "db_password", "secret", "client_secret", "Authorization", "AWS_SECRET_ACCESS_KEY",
     "private_key", "cookie", "auth", "passwd"],
)  # fmt: skip
def test_credential_names_are_recognised(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize("name", ["query", "max_tokens", "author", "keyword", "limit", "path"])
def test_ordinary_names_are_kept(name: str) -> None:
    assert not is_secret_name(name)


def test_secrets_never_reach_the_store(store: BaseStore, scope: MemoryScope) -> None:
    memory = ProceduralMemory(store, scope)
    parameters = {
        "url": "https://api.example.com",
        "headers": {"Authorization": "Bearer SECRET-A-123456", "X-Api-Key": "SECRET-B"},
        "auth": {"user": "u", "password": "SECRET-C"},
        "batches": [{"access_token": "SECRET-D"}],
        "note": "token=SECRET-E12345",
    }
    memory.record_tool_use(ToolUsageRecord(tool_name="http", success=True, parameters=parameters))
    memory.record_tool_use(
        ToolUsageRecord(
            tool_name="http",
            success=False,
            parameters=parameters,
            error_message="401 for api_key=SECRET-F999 with Bearer SECRET-G-abcdefgh",
            hint="use password: SECRET-H",
        )
    )
    raw = all_values(store, scope)
    for i in "ABCDEFGH":
        assert f"SECRET-{i}" not in raw
    assert "https://api.example.com" in raw and REDACTED in raw


@given(
    st.recursive(
        st.dictionaries(st.sampled_from(["q", "Api_Key", "TOKEN", "n"]), st.text(max_size=5)),
        lambda children: st.dictionaries(st.sampled_from(["inner", "Password", "x"]), children),
        max_leaves=10,
    )
)
def test_redaction_reaches_every_depth(params: dict) -> None:
    def check(value: object) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                if is_secret_name(k):
                    assert v == REDACTED
                else:
                    check(v)

    check(redact_parameters(params))


def test_error_normalisation_groups_variants_and_keeps_status_codes() -> None:
    a = normalize_error("Timeout after 3012ms reading /data/a.csv for user 'bob' (req 9f3a2b1c77)")
    b = normalize_error("Timeout after 45ms reading /data/b.csv for user 'eve' (req 00aa11bb22cc)")
    assert a == b == "Timeout after <n>ms reading <path> for user '<str>' (req <hex>)"
    assert normalize_error("410 Gone: use orders_v2") == "410 Gone: use orders_v2"
    assert normalize_error("GET https://x.io/v1/o?id=7 failed") == "GET <url> failed"


# --------------------------------------------------------------------------- tool guidance


def test_tool_guidance(store: BaseStore, scope: MemoryScope) -> None:
    memory = ProceduralMemory(store, scope)
    assert not memory.get_tool_guidance("search").known
    for i in range(4):
        memory.record_tool_use(use("search", True, ms=10 * (i + 1), limit=50, q=f"q{i}"))
    memory.record_tool_use(use("search", False, ms=100, err="Timeout after 3000 ms on shard 7"))
    memory.record_tool_use(use("search", False, ms=100, err="Timeout after 5000 ms on shard 2"))
    memory.record_tool_use(use("other", True))
    g = memory.get_tool_guidance("search")
    assert (g.known, g.total_uses, g.successes, g.failures) == (True, 6, 4, 2)
    assert g.success_rate == pytest.approx(4 / 6)
    assert g.avg_execution_time_ms == pytest.approx((10 + 20 + 30 + 40 + 200) / 6)
    assert [(e.signature, e.count) for e in g.common_errors] == [
        ("Timeout after <n> ms on shard <n>", 2)
    ]
    assert g.successful_patterns == ["limit=50 (always)"]
    assert g.last_success is False and g.last_error == "Timeout after 5000 ms on shard 2"
    assert [t.tool_name for t in memory.get_all_tool_guidance()] == ["other", "search"]


@pytest.mark.parametrize(
    "bad",
    [
        {"tool_name": "  ", "success": True},
        {"tool_name": "x", "success": True, "execution_time_ms": -1},
        {"tool_name": "x", "success": "maybe"},
        {"success": True},
    ],
)
def test_invalid_tool_use_stores_nothing(store: BaseStore, scope: MemoryScope, bad: dict) -> None:
    memory = ProceduralMemory(store, scope)
    with pytest.raises(InvalidInputError, match="nothing was stored"):
        memory.record_tool_use(bad)  # type: ignore[arg-type]
    assert store.search(scope.prefix) == []
    with pytest.raises(ValidationError):
        ToolUsageRecord(**bad)


# --------------------------------------------------------------------------- strategies


def test_wilson_confidence_matches_the_design() -> None:
    def conf(s: int, f: int) -> float:
        return Strategy(name="n", description="d", success_count=s, failure_count=f).confidence

    assert conf(0, 0) == 0.0
    assert conf(5, 0) == pytest.approx(0.5655, abs=1e-4)
    assert conf(8, 2) == pytest.approx(0.4902, abs=1e-4)
    assert conf(80, 20) > conf(8, 2)  # more evidence, same rate: more confident
    assert Strategy(name="n", description="d").success_rate == 0.5


def test_strategy_outcomes(store: BaseStore, scope: MemoryScope) -> None:
    memory = ProceduralMemory(store, scope)
    memory.register_strategy("Backoff", "Retry with exponential backoff", "HTTP 429", "sleep 2**n")
    for ok in (True, True, False):
        s = memory.update_strategy_outcome("backoff", ok)  # names are case-insensitive keys
    assert (s.success_count, s.failure_count) == (2, 1) and s.last_used is not None
    # Redefining keeps the track record.
    memory.register_strategy("Backoff", "Retry 429s with jittered backoff", "HTTP 429")
    again = memory.get_strategy("BACKOFF")
    assert again is not None and again.description == "Retry 429s with jittered backoff"
    assert again.success_count == 2
    assert memory.get_strategy("missing") is None
    with pytest.raises(InvalidInputError, match="register_strategy first"):
        memory.update_strategy_outcome("missing", True)
    with pytest.raises(InvalidInputError, match="True or False"):
        memory.update_strategy_outcome("backoff", "yes")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="nothing was stored"):
        memory.register_strategy(" ", "d")


def test_applicable_strategies_rank_by_context_and_confidence(
    store: BaseStore, scope: MemoryScope
) -> None:
    memory = ProceduralMemory(store, scope)
    memory.register_strategy(
        "backoff", "Retry rate limited API calls with exponential backoff", "API returns 429"
    )
    memory.register_strategy("sql-style", "Write SQL keywords in upper case", "writing SQL")
    for _ in range(4):
        memory.update_strategy_outcome("backoff", True)
    memory.update_strategy_outcome("backoff", False)
    for _ in range(30):
        memory.update_strategy_outcome("sql-style", True)
    in_context = memory.get_applicable_strategies("the API is rate limited, 429 errors")
    assert in_context[0].strategy.name == "backoff"
    assert in_context[0].relevance == 1.0 and in_context[0].relevance > in_context[1].relevance
    no_context = memory.get_applicable_strategies(None)
    assert [s.strategy.name for s in no_context] == ["sql-style", "backoff"]
    assert (
        memory.get_applicable_strategies(None, min_confidence=0.8)[0].strategy.name == "sql-style"
    )
    assert len(memory.get_applicable_strategies(None, min_confidence=0.99)) == 0


# --------------------------------------------------------------------------- injection


def test_context_injection(store: BaseStore, scope: MemoryScope, fake_clock: FakeClock) -> None:
    memory = ProceduralMemory(store, scope, clock=fake_clock)
    assert memory.get_context_injection() == ""
    memory.register_strategy("backoff", "Retry with backoff", "rate limited", "sleep 2**n")
    memory.register_strategy("unproven", "Something new", "anything")
    for _ in range(6):
        memory.update_strategy_outcome("backoff", True)
    for _ in range(20):
        memory.record_tool_use(use("orders", True, ms=5))
    memory.record_tool_use(
        ToolUsageRecord(
            tool_name="orders",
            success=False,
            error_message="410 Gone: use orders_v2",
            hint="call orders_v2 with the same parameters",
        )
    )
    for i in range(4):  # three failures: over warn_min_failures, though the last call worked
        memory.record_tool_use(use("flaky", i == 0, err="" if i == 0 else "503 upstream"))
    memory.record_tool_use(use("flaky", True))
    memory.record_tool_use(use("solid", True))
    memory.set_preference("language", "python")
    text = memory.get_context_injection("we are rate limited")
    lines = text.splitlines()
    assert lines[0] == "Learned strategies:"
    assert lines[1].startswith("- backoff (confidence: 61%): Retry with backoff.")
    assert "unproven" not in text and "solid" not in text
    assert (
        "- orders: 5% failure rate over 21 uses; last call failed: 410 Gone: use orders_v2" in text
    )
    assert "(hint: call orders_v2 with the same parameters)" in text
    assert "- flaky: 60% failure rate over 5 uses; most common error: 503 upstream" in text
    assert lines[-2:] == ["User preferences:", "- language: python"]


def test_preferences(store: BaseStore, scope: MemoryScope) -> None:
    memory = ProceduralMemory(store, scope)
    memory.set_preference("tone", "concise")
    memory.set_preference("units", {"distance": "km"})
    memory.set_preference("tone", "friendly")
    assert memory.get_preferences() == {"tone": "friendly", "units": {"distance": "km"}}
    memory.delete_preference("tone")
    assert memory.get_preferences() == {"units": {"distance": "km"}}
    with pytest.raises(InvalidInputError):
        memory.set_preference("", 1)


def test_config_is_checked() -> None:
    with pytest.raises(ConfigurationError):
        ProceduralConfig(relevance_weight=0, confidence_weight=0)
    with pytest.raises(ConfigurationError):
        ProceduralConfig(warn_failure_rate=2)


# --------------------------------------------------------------------------- persistence and races


def test_a_new_process_sees_the_same_statistics(tmp_path: Path) -> None:
    scope = MemoryScope("persist")
    first = open_qdrant(tmp_path / "store")
    try:
        memory = ProceduralMemory(first, scope)
        memory.record_tool_use(use("search", True))
        memory.record_tool_use(use("search", False, err="boom"))
        memory.register_strategy("s", "strategy")
        memory.update_strategy_outcome("s", True)
        memory.set_preference("k", "v")
    finally:
        first.close()
    reopened = open_qdrant(tmp_path / "store")
    try:
        again = ProceduralMemory(reopened, scope)
        g = again.get_tool_guidance("search")
        assert (g.successes, g.failures) == (1, 1)
        assert again.get_strategy("s").success_count == 1  # type: ignore[union-attr]
        assert again.get_preferences() == {"k": "v"}
    finally:
        reopened.close()


def test_parallel_writers_lose_no_counts(store: BaseStore, scope: MemoryScope) -> None:
    store = thread_safe(store)  # InMemoryStore itself is not thread-safe
    memory = ProceduralMemory(store, scope)
    memory.register_strategy("s", "strategy")

    def writer(i: int) -> None:
        other = ProceduralMemory(store, scope)  # separate instances, as separate workers
        other.record_tool_use(use("shared", i % 3 != 0))
        other.update_strategy_outcome("s", i % 2 == 0)

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(writer, range(120)))
    g = memory.get_tool_guidance("shared")
    assert (g.total_uses, g.successes, g.failures) == (120, 80, 40)
    s = memory.get_strategy("s")
    assert s is not None and (s.success_count, s.failure_count) == (60, 60)


async def test_concurrent_async_writers_lose_no_counts(
    store: BaseStore, scope: MemoryScope
) -> None:
    memory = ProceduralMemory(store, scope)
    await memory.aregister_strategy("s", "strategy")

    async def writer(i: int) -> None:
        await memory.arecord_tool_use(use("shared", i % 4 != 0))
        await memory.aupdate_strategy_outcome("s", True)

    await asyncio.gather(*(writer(i) for i in range(100)))
    g = await memory.aget_tool_guidance("shared")
    assert (g.total_uses, g.successes, g.failures) == (100, 75, 25)
    s = await memory.aget_strategy("s")
    assert s is not None and s.success_count == 100
    await memory.aset_preference("p", 1)
    assert await memory.aget_preferences() == {"p": 1}
    assert "s (confidence" in await memory.aget_context_injection()
    assert (await memory.aget_applicable_strategies("strategy"))[0].strategy.name == "s"
    assert [t.tool_name for t in await memory.aget_all_tool_guidance()] == ["shared"]
    await memory.adelete_preference("p")
    assert await memory.aget_preferences() == {}


def test_one_users_tool_statistics_never_reach_another(store: BaseStore) -> None:
    alice = ProceduralMemory(store, MemoryScope("alice-proc"))
    bob = ProceduralMemory(store, MemoryScope("bob-proc"))
    alice.record_tool_use(use("payroll", False, err="403 forbidden for alice"))
    alice.register_strategy("alice-only", "Alice's private workflow")
    alice.set_preference("diet", "vegan")
    assert not bob.get_tool_guidance("payroll").known
    assert bob.get_all_tool_guidance() == []
    assert bob.get_applicable_strategies("private workflow") == []
    assert bob.get_preferences() == {}
    assert bob.get_context_injection("payroll") == ""


def test_works_without_a_vector_index(scope: MemoryScope) -> None:
    memory = ProceduralMemory(InMemoryStore(), scope)
    memory.register_strategy("a", "first")
    memory.update_strategy_outcome("a", True)
    ranked = memory.get_applicable_strategies("anything")
    assert [s.strategy.name for s in ranked] == ["a"] and ranked[0].relevance == 0.0
