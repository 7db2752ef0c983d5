from datetime import datetime, timedelta, timezone

import pytest
from langgraph.store.memory import InMemoryStore

from langchain_tiered_memory.consolidation import ForgettingPolicy, MemoryTrash, RetentionCandidate
from langchain_tiered_memory.errors import ConfigurationError
from langchain_tiered_memory.testing.fakes import FakeClock
from langchain_tiered_memory.tiers.common.scope import MemoryScope

NOW = datetime(2026, 6, 1, tzinfo=timezone.utc)


def days_ago(n: float) -> datetime:
    return NOW - timedelta(days=n)


@pytest.mark.parametrize(
    ("outcome", "reflected", "age", "forget"),
    [
        ("abandoned", False, 8, True),
        ("abandoned", False, 6, False),
        ("failure", True, 91, True),
        ("failure", True, 89, False),
        ("success", True, 200, False),  # reflected successes live 3x longer
        ("success", True, 271, True),
        ("partial", False, 91, True),
    ],
)
def test_episode_verdicts(outcome: str, reflected: bool, age: float, forget: bool) -> None:
    verdict = ForgettingPolicy().episode_verdict(
        outcome=outcome, has_reflection=reflected, created_at=days_ago(age), now=NOW
    )
    assert (verdict is not None) is forget


def test_pinned_is_never_forgotten() -> None:
    policy = ForgettingPolicy()
    assert (
        policy.episode_verdict(
            outcome="abandoned",
            has_reflection=False,
            created_at=days_ago(999),
            now=NOW,
            pinned=True,
        )
        is None
    )
    assert (
        policy.fact_verdict(
            confidence=0.01,
            last_confirmed=days_ago(999),
            contradiction_count=99,
            now=NOW,
            pinned=True,
        )
        is None
    )
    cands = [RetentionCandidate(f"k{i}", days_ago(100), pinned=True) for i in range(5)]
    assert ForgettingPolicy(max_items_per_user=2).select_for_removal(cands, NOW) == []


def test_fact_verdicts() -> None:
    policy = ForgettingPolicy()
    assert "confidence" in (
        policy.fact_verdict(confidence=0.2, last_confirmed=NOW, contradiction_count=0, now=NOW)
        or ""
    )
    assert (
        policy.fact_verdict(
            confidence=0.5, last_confirmed=days_ago(61), contradiction_count=0, now=NOW
        )
        is not None
    )
    assert (
        policy.fact_verdict(
            confidence=0.9, last_confirmed=days_ago(61), contradiction_count=0, now=NOW
        )
        is None
    )
    assert (
        policy.fact_verdict(confidence=0.9, last_confirmed=NOW, contradiction_count=4, now=NOW)
        is not None
    )


def test_size_cap_forgets_lowest_value_first() -> None:
    policy = ForgettingPolicy(max_items_per_user=3)
    cands = [
        RetentionCandidate("old-unused", days_ago(300), access_count=0, importance=0.1),
        RetentionCandidate("old-used", days_ago(300), access_count=900, importance=0.5),
        RetentionCandidate("new", days_ago(0), importance=0.5),
        RetentionCandidate("important", days_ago(200), importance=1.0),
        RetentionCandidate("pinned-junk", days_ago(400), importance=0.0, pinned=True),
    ]
    removed = policy.select_for_removal(cands, NOW)
    # 5 memories, cap 3: the two lowest-value unpinned ones go, least valuable first.
    assert [k for k, _ in removed] == ["old-unused", "important"]
    assert all("size cap" in why for _, why in removed)


def test_bad_policy_config() -> None:
    with pytest.raises(ConfigurationError):
        ForgettingPolicy(max_episode_age_days=-1)
    with pytest.raises(ConfigurationError):
        ForgettingPolicy(max_items_per_user=-3)


def test_trash_roundtrip_and_audit() -> None:
    store, scope, clock = InMemoryStore(), MemoryScope("alice"), FakeClock(NOW)
    ns = scope.namespace("episodic")
    store.put(ns, "e1", {"text": "deploy failed"})
    trash = MemoryTrash(store, scope, clock=clock)
    assert trash.soft_delete(ns, "e1", reason="old") is True
    assert trash.soft_delete(ns, "missing", reason="old") is False
    assert store.get(ns, "e1") is None
    assert trash.restore(ns, "e1") is True
    assert store.get(ns, "e1").value == {"text": "deploy failed"}  # type: ignore[union-attr]
    trash.soft_delete(ns, "e1", reason="old again")
    clock.advance(days=10)
    assert trash.purge_expired(grace_period_days=30) == 0
    clock.advance(days=21)
    assert trash.purge_expired(grace_period_days=30) == 1
    assert trash.list_trashed() == []
    log = trash.audit_log()
    assert [r.action for r in log] == ["soft_delete", "restore", "soft_delete", "purge"]
    # The audit trail keeps a hash, never the content.
    for item in store.search(trash.audit_namespace, limit=100):
        assert "deploy failed" not in str(item.value)


async def test_async_trash_matches_sync() -> None:
    store, scope, clock = InMemoryStore(), MemoryScope("bob"), FakeClock(NOW)
    ns = scope.namespace("semantic", "facts")
    await store.aput(ns, "f1", {"content": "x"})
    trash = MemoryTrash(store, scope, clock=clock)
    assert await trash.asoft_delete(ns, "f1", reason="low confidence")
    assert len(await trash.alist_trashed()) == 1
    assert await trash.arestore(ns, "f1")
    await trash.asoft_delete(ns, "f1", reason="again")
    clock.advance(days=31)
    assert await trash.apurge_expired(30) == 1
    assert await store.aget(ns, "f1") is None
    log = await trash.aaudit_log()
    assert [r.action for r in log] == ["soft_delete", "restore", "soft_delete", "purge"]
    assert log == trash.audit_log()
