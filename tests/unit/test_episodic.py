# ruff: noqa: F811  (pytest fixtures imported from test_episodic_support are redefined as arguments)
from datetime import datetime, timedelta, timezone

import pytest
from langgraph.store.base import BaseStore, SearchOp
from langgraph.store.memory import InMemoryStore
from pydantic import ValidationError
from test_episodic_support import (  # noqa: F401 (fixtures)
    RecordingStore,
    fake_clock,
    hashing_index,
    qdrant_store,
    scope,
    store,
)

from langchain_tiered_memory.errors import ConfigurationError, InvalidInputError
from langchain_tiered_memory.testing.fakes import FakeClock
from langchain_tiered_memory.tiers.common.ranking import RankingConfig
from langchain_tiered_memory.tiers.common.scope import MemoryScope
from langchain_tiered_memory.tiers.episodic.memory import EpisodicConfig, EpisodicMemory
from langchain_tiered_memory.tiers.episodic.models import Episode, Outcome, TrajectoryStep
from langchain_tiered_memory.tiers.episodic.payload import episodes_namespace


def ep(task: str, outcome: str = "success", *, hours_ago: float = 0.0, **kw: object) -> Episode:
    when = FakeClock()() - timedelta(hours=hours_ago)
    return Episode(task_description=task, outcome=outcome, created_at=when, **kw)  # type: ignore[arg-type]


def tasks(results: list) -> list[str]:
    return [getattr(r, "episode", r).task_description for r in results]


# --------------------------------------------------------------------------- models


def test_episode_defaults_and_normalisation() -> None:
    a = Episode(task_description="  Deploy  ", outcome="SUCCESS", tags=["Deploy", "deploy", " CI "])
    b = Episode(task_description="Deploy", outcome=Outcome.FAILURE, context={"session_id": "s9"})
    assert a.episode_id != b.episode_id and a.episode_id
    assert a.task_description == "Deploy" and a.outcome is Outcome.SUCCESS
    assert a.tags == ["deploy", "ci"]
    assert a.created_at.tzinfo is not None
    assert b.session_id == "s9"
    naive = Episode(task_description="x", outcome="partial", created_at=datetime(2026, 1, 1))
    assert naive.created_at == datetime(2026, 1, 1, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"task_description": "  ", "outcome": "success"}, "task_description is empty"),
        ({"task_description": "x", "outcome": "won"}, "outcome 'won' is unknown"),
        ({"task_description": "x", "outcome": "success", "duration_seconds": -1}, "greater"),
        ({"task_description": "x", "outcome": "success", "importance": 1.5}, "less than"),
        ({"task_description": "x", "outcome": "success", "tags": "deploy"}, "list of strings"),
    ],
)
def test_bad_episode_fields_are_refused(fields: dict, problem: str) -> None:
    with pytest.raises(ValidationError, match=problem):
        Episode(**fields)


def test_summary_keeps_the_design_format() -> None:
    e = Episode(
        task_description="Fix CI",
        outcome="partial",
        trajectory=[TrajectoryStep(action="run tests"), TrajectoryStep(action="pin deps")],
        reflection="Pin dependencies.",
    )
    assert e.to_summary() == (
        "Task: Fix CI\nOutcome: partial\n"
        "Steps: [run tests] -> [pin deps]\nLesson: Pin dependencies."
    )


# --------------------------------------------------------------------------- record / get


def test_record_round_trips_every_field(store: BaseStore, scope: MemoryScope) -> None:
    memory = EpisodicMemory(store, scope)
    original = Episode(
        task_description="Migrate the orders table",
        outcome="partial",
        trajectory=[TrajectoryStep(thought="t", action="tool_call: psql", observation="lock")],
        reflection="Take a lock timeout.",
        duration_seconds=7200.5,
        context={"env": "prod", "nested": {"n": 1}},
        tags=["db", "migration"],
        session_id="s1",
        importance=0.8,
    )
    stored = memory.record(original)
    fetched = memory.get(original.episode_id)
    assert fetched is not None
    assert fetched.model_dump() == stored.model_dump()
    assert fetched.reflection_status.value == "done"  # it came with a reflection
    assert memory.get("missing") is None


@pytest.mark.parametrize(
    "bad",
    [
        {"task_description": "", "outcome": "success"},
        {"task_description": "x", "outcome": "exploded"},
        {"task_description": "x", "outcome": "success", "duration_seconds": -3},
        {"outcome": "success"},
        "not an episode",
    ],
)
def test_invalid_input_stores_nothing(store: BaseStore, scope: MemoryScope, bad: object) -> None:
    memory = EpisodicMemory(store, scope)
    with pytest.raises(InvalidInputError, match=r"nothing was stored|must be"):
        memory.record(bad)  # type: ignore[arg-type]
    assert store.search(scope.prefix, limit=10) == []


def test_bad_query_arguments_are_refused(store: BaseStore, scope: MemoryScope) -> None:
    memory = EpisodicMemory(store, scope)
    for kwargs in (
        {"query": " "},
        {"query": "x", "top_k": 0},
        {"query": "x", "outcome": "won"},
        {"query": "x", "max_age_hours": -1},
        {"query": "x", "tags": ["a"], "tag_mode": "some"},
    ):
        with pytest.raises(InvalidInputError):
            memory.retrieve_similar(**kwargs)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="swap"):
        memory.get_episodes_in_range(FakeClock()(), FakeClock()() - timedelta(days=1))


# --------------------------------------------------------------------------- similarity


def test_retrieve_similar_ranks_relevant_episodes_with_a_breakdown(
    store: BaseStore, scope: MemoryScope, fake_clock: FakeClock
) -> None:
    memory = EpisodicMemory(store, scope, clock=fake_clock)
    memory.record(ep("Deploy the billing API to production", reflection="Run migrations first"))
    memory.record(ep("Bake sourdough bread"))
    memory.record(ep("Water the garden plants"))
    results = memory.retrieve_similar("deploy billing API", top_k=2)
    assert tasks(results)[0] == "Deploy the billing API to production"
    top = results[0].score
    assert top.relevance == 1.0 and top.raw_similarity is not None
    assert top.total == pytest.approx(sum(top.contributions().values()))
    assert results[0].score.total >= results[1].score.total


def test_filters(store: BaseStore, scope: MemoryScope, fake_clock: FakeClock) -> None:
    memory = EpisodicMemory(store, scope, clock=fake_clock)
    memory.record(ep("deploy api v1", "failure", hours_ago=100, tags=["deploy"], session_id="a"))
    memory.record(ep("deploy api v2", "success", hours_ago=10, tags=["deploy", "ci/cd"]))
    memory.record(ep("deploy api v3", "success", hours_ago=1, tags=["ci/cd"], session_id="a"))
    memory.record(ep("deploy api v4", "abandoned", hours_ago=2, session_id="b"))
    q = "deploy api"
    assert tasks(memory.retrieve_similar(q, outcome="failure")) == ["deploy api v1"]
    assert sorted(tasks(memory.retrieve_similar(q, outcome="SUCCESS"))) == [
        "deploy api v2",
        "deploy api v3",
    ]
    assert sorted(tasks(memory.retrieve_similar(q, max_age_hours=5))) == [
        "deploy api v3",
        "deploy api v4",
    ]
    assert sorted(tasks(memory.retrieve_similar(q, tags=["deploy"]))) == [
        "deploy api v1",
        "deploy api v2",
    ]
    any_tag = memory.retrieve_similar(q, tags=["DEPLOY", "ci/cd"], top_k=10)
    assert sorted(tasks(any_tag)) == ["deploy api v1", "deploy api v2", "deploy api v3"]
    both = memory.retrieve_similar(q, tags=["deploy", "ci/cd"], tag_mode="all")
    assert tasks(both) == ["deploy api v2"]
    assert sorted(tasks(memory.retrieve_similar(q, session_id="a"))) == [
        "deploy api v1",
        "deploy api v3",
    ]
    combined = memory.retrieve_similar(q, session_id="a", outcome="success", max_age_hours=50)
    assert tasks(combined) == ["deploy api v3"]
    assert memory.retrieve_similar(q, tags=["nope"]) == []


def test_filters_run_inside_the_store(scope: MemoryScope, fake_clock: FakeClock) -> None:
    spy = RecordingStore(InMemoryStore(index=hashing_index()))
    memory = EpisodicMemory(spy, scope, clock=fake_clock)
    for i in range(300):
        memory.record(ep(f"routine task {i}", "success"))
    memory.record(ep("routine task failed", "failure", tags=["rare"]))
    spy.ops.clear()
    spy.items_returned = 0
    results = memory.retrieve_similar("routine task", outcome="failure", tags=["rare"])
    assert tasks(results) == ["routine task failed"]
    searches = [
        op for op in spy.ops if isinstance(op, SearchOp) and op.namespace_prefix == memory.namespace
    ]
    assert searches and all(
        op.filter and op.filter["outcome"] == {"$eq": "failure"} for op in searches
    )
    assert spy.items_returned == 1  # the store filtered; Python never saw the other 300


def test_recency_and_importance_reorder_equally_similar_episodes(
    store: BaseStore, scope: MemoryScope, fake_clock: FakeClock
) -> None:
    memory = EpisodicMemory(store, scope, clock=fake_clock)
    memory.record(ep("rotate the TLS certificates", hours_ago=24 * 90, importance=0.5))
    memory.record(ep("rotate the TLS certificates", hours_ago=1, importance=0.5))
    memory.record(ep("rotate the TLS certificates", hours_ago=24 * 90, importance=1.0))
    first, second, third = memory.retrieve_similar("rotate TLS certificates", top_k=3)
    assert first.score.recency > 0.99 and first.score.importance == 0.5
    assert second.score.importance == 1.0 and second.score.total > third.score.total
    relevance_only = EpisodicConfig(ranking=RankingConfig(recency_weight=0, importance_weight=0))
    flat = EpisodicMemory(store, scope, config=relevance_only, clock=fake_clock)
    for r in flat.retrieve_similar("rotate TLS certificates", top_k=3):
        assert r.score.total == pytest.approx(r.score.relevance)


def test_access_counts_are_recorded_on_retrieval(
    store: BaseStore, scope: MemoryScope, fake_clock: FakeClock
) -> None:
    memory = EpisodicMemory(store, scope, clock=fake_clock)
    e = memory.record(ep("archive old logs"))
    assert memory.get(e.episode_id).access_count == 0  # type: ignore[union-attr]
    memory.retrieve_similar("archive logs", top_k=1)
    fake_clock.advance(hours=1)
    (hit,) = memory.retrieve_similar("archive logs", top_k=1)
    assert hit.episode.access_count == 0  # results skip the read unless asked (below)
    got = memory.get(e.episode_id)
    assert got is not None and got.access_count == 2 and got.last_accessed == fake_clock()
    again = EpisodicMemory(store, scope).get(e.episode_id)  # another instance, same store
    assert again is not None and again.access_count == 2
    counting = EpisodicConfig(access_counts_in_results=True)
    with_counts = EpisodicMemory(store, scope, config=counting, clock=fake_clock)
    fake_clock.advance(hours=1)
    (hit,) = with_counts.retrieve_similar("archive logs", top_k=1)
    assert hit.episode.access_count == 3 and hit.episode.last_accessed == fake_clock()
    (recent,) = with_counts.retrieve_recent(1)
    assert recent.access_count == 4


def test_store_without_index_gives_a_clear_error(scope: MemoryScope) -> None:
    memory = EpisodicMemory(InMemoryStore(), scope)
    memory.record(ep("anything"))
    with pytest.raises(ConfigurationError, match="no vector index"):
        memory.retrieve_similar("anything")


# --------------------------------------------------------------------------- time and sessions


def test_recent_range_and_session(
    store: BaseStore, scope: MemoryScope, fake_clock: FakeClock
) -> None:
    memory = EpisodicMemory(store, scope, clock=fake_clock)
    hours = [24 * 800, 24 * 40, 30, 5, 0.5]  # inserted out of order on purpose below
    for h in (hours[2], hours[0], hours[4], hours[1], hours[3]):
        memory.record(
            ep(
                f"task {h}h",
                hours_ago=h,
                tags=["old"] if h > 100 else ["new"],
                context={"session_id": "s-old" if h > 100 else "s-new"},
            )
        )
    assert tasks(memory.retrieve_recent(2)) == ["task 0.5h", "task 5h"]
    # Windows grow until enough are found, down to the two-year-old one.
    assert tasks(memory.retrieve_recent(10)) == [f"task {h}h" for h in reversed(hours)]
    assert tasks(memory.retrieve_recent(5, outcome="failure")) == []
    now = fake_clock()
    in_range = memory.get_episodes_in_range(now - timedelta(hours=30), now - timedelta(hours=5))
    assert tasks(in_range) == ["task 30h", "task 5h"]  # inclusive, oldest first
    tagged = memory.get_episodes_in_range(now - timedelta(days=1000), now, tags=["old"])
    assert tasks(tagged) == ["task 19200h", "task 960h"]
    assert tasks(memory.get_session_episodes("s-new")) == ["task 30h", "task 5h", "task 0.5h"]
    assert memory.get_session_episodes("none") == []


def test_delete_removes_episode_and_its_statistics(store: BaseStore, scope: MemoryScope) -> None:
    memory = EpisodicMemory(store, scope)
    e = memory.record(ep("temporary"))
    memory.retrieve_similar("temporary")
    memory.delete(e.episode_id)
    assert memory.get(e.episode_id) is None
    assert store.search(scope.prefix, limit=10) == []


async def test_async_twins_match_sync(
    store: BaseStore, scope: MemoryScope, fake_clock: FakeClock
) -> None:
    memory = EpisodicMemory(store, scope, clock=fake_clock)
    e = await memory.arecord(ep("index the docs", session_id="s", tags=["docs"]))
    await memory.arecord(ep("cook pasta", session_id="s", hours_ago=1))
    assert (await memory.aget(e.episode_id)) is not None
    similar = await memory.aretrieve_similar("index docs", top_k=1, tags=["docs"])
    assert tasks(similar) == ["index the docs"]
    assert tasks(await memory.aretrieve_recent(1)) == ["index the docs"]
    assert tasks(await memory.aget_session_episodes("s")) == ["cook pasta", "index the docs"]
    now = fake_clock()
    ranged = await memory.aget_episodes_in_range(now - timedelta(minutes=1), now)
    assert tasks(ranged) == ["index the docs"]
    await memory.adelete(e.episode_id)
    assert await memory.aget(e.episode_id) is None


# --------------------------------------------------------------------------- isolation


def test_one_users_episodes_never_reach_another(store: BaseStore, fake_clock: FakeClock) -> None:
    alice = EpisodicMemory(store, MemoryScope("alice-iso"), clock=fake_clock)
    bob = EpisodicMemory(store, MemoryScope("bob-iso"), clock=fake_clock)
    planner = EpisodicMemory(store, MemoryScope("alice-iso", agent_id="planner"), clock=fake_clock)
    secret = alice.record(ep("alice's secret medical appointment", session_id="shared"))
    bob.record(ep("bob's groceries", session_id="shared"))
    assert tasks(bob.retrieve_similar("secret medical appointment", top_k=10)) == [
        "bob's groceries"
    ]
    assert tasks(bob.retrieve_recent(10)) == ["bob's groceries"]
    assert tasks(bob.get_session_episodes("shared")) == ["bob's groceries"]
    assert bob.get(secret.episode_id) is None
    assert planner.retrieve_recent(10) == []
    assert tasks(alice.retrieve_recent(10)) == ["alice's secret medical appointment"]


def test_store_and_scope_types_are_checked() -> None:
    with pytest.raises(ConfigurationError, match="BaseStore"):
        EpisodicMemory({}, MemoryScope("a"))  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="MemoryScope"):
        EpisodicMemory(InMemoryStore(), "alice")  # type: ignore[arg-type]


def test_namespaces_are_per_scope() -> None:
    assert episodes_namespace(MemoryScope("a")) == (
        "tiered_memory",
        "a",
        "_",
        "episodic",
        "episodes",
    )


def test_an_age_limit_older_than_the_calendar_means_no_limit(scope: MemoryScope) -> None:
    memory = EpisodicMemory(InMemoryStore(index=hashing_index()), scope)
    memory.record(ep("ancient task", hours_ago=24 * 365 * 20))
    for hours in (17_758_765, 1e12, 1e300):
        assert tasks(memory.retrieve_similar("ancient task", max_age_hours=hours)) == [
            "ancient task"
        ]
