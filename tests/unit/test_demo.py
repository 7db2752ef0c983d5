"""The demo's stories, runner and rendering, on fast fakes (InMemoryStore, hashing embeddings)."""

from __future__ import annotations

import pytest
from langgraph.store.memory import InMemoryStore

from langchain_tiered_memory import TieredMemory
from langchain_tiered_memory.cli.demo import (
    STORIES,
    AgentRunner,
    StoryResult,
    context_from_state,
    create_runner,
    empty_memory_like,
    render_story,
    render_table,
    run_demo,
)
from langchain_tiered_memory.testing.fakes import HashingEmbeddings
from langchain_tiered_memory.testing.offline_model import OfflineChatModel
from langchain_tiered_memory.tokens import TokenCounter

# What session 2 can only know from session 1, per story.
LESSONS = {
    "allergy": ["shellfish"],
    "deployment": ["DATABASE_URL", "Read the pod logs first", "kubectl_rollout_restart"],
    "deprecated-endpoint": ["orders_v2", "410 Gone"],
}


def fresh_memory() -> TieredMemory:
    embeddings = HashingEmbeddings(size=384)
    store = InMemoryStore(index={"dims": 384, "embed": embeddings, "fields": ["text"]})
    return TieredMemory(store, embeddings=embeddings)


@pytest.fixture(scope="module")
def results() -> list[StoryResult]:
    return run_demo(fresh_memory(), AgentRunner(OfflineChatModel()))


def test_stories_follow_the_design_in_order() -> None:
    assert [s.key for s in STORIES] == ["allergy", "deployment", "deprecated-endpoint"]
    assert [s.tier for s in STORIES] == ["semantic", "episodic", "procedural"]
    # Each story is its own user, so one story's memory cannot explain another's answer.
    assert len({s.user_id for s in STORIES}) == 3


@pytest.mark.parametrize("index", range(3))
def test_session_two_knows_what_session_one_taught(results: list[StoryResult], index: int) -> None:
    result = results[index]
    assert result.with_memory is not None and result.without_memory is not None
    for lesson in LESSONS[result.story.key]:
        assert lesson in result.with_memory.answer
        assert lesson in result.with_memory.context.text
        assert lesson not in result.without_memory.answer
    assert result.without_memory.context.tokens == 0
    assert result.without_memory.context.items == []


@pytest.mark.parametrize("index", range(3))
def test_context_respects_budget_and_reports_sections(
    results: list[StoryResult], index: int
) -> None:
    ctx = results[index].with_memory.context  # type: ignore[union-attr]
    assert 0 < ctx.tokens <= ctx.budget == 1000
    assert ctx.tokens == TokenCounter().count(ctx.text)
    assert set(ctx.section_tokens) == {item.section for item in ctx.items}
    assert sum(ctx.section_tokens.values()) < ctx.tokens


def test_each_story_is_carried_by_its_tier(results: list[StoryResult]) -> None:
    sections = [set(r.with_memory.context.section_tokens) for r in results]  # type: ignore[union-attr]
    assert "profile" in sections[0]
    assert "experiences" in sections[1]
    assert "warnings" in sections[2]


def test_consolidation_between_sessions_learns_the_failed_tools(
    results: list[StoryResult],
) -> None:
    report = results[1].consolidation
    assert report is not None and report.ok
    assert report.episodes_processed == 1
    assert report.tool_uses_recorded == 5
    warnings = results[1].with_memory.context.text  # type: ignore[union-attr]
    for tool in ("kubectl_rollout_restart", "kubectl_set_resources", "helm_rollback"):
        assert f"- {tool}: failed 1 of 1" in warnings


def test_session_one_is_described(results: list[StoryResult]) -> None:
    allergy, deployment, endpoint = (r.session1 for r in results)
    assert allergy[0] == "user: " + STORIES[0].session1_message  # type: ignore[operator]
    assert any("kubectl_logs" in line for line in deployment)
    assert any(line.startswith("outcome: success after 2 h") for line in deployment)
    assert any("410 Gone: use orders_v2" in line for line in endpoint)


def test_the_runner_writes_back_so_the_next_session_knows() -> None:
    memory = fresh_memory()
    runner = AgentRunner(OfflineChatModel(), token_budget=300)
    first = runner.turn(memory, "bo", "I'm vegan.", session_id="s1")
    assert first.answer.endswith("I have no memories that bear on this.")
    turn = runner.turn(memory, "bo", "Ideas for lunch?", session_id="s2")
    assert "vegan" in turn.answer.lower()
    assert turn.context.budget == 300 and 0 < turn.context.tokens <= 300
    assert memory.users() == ["bo"]


def test_the_demo_runs_through_the_agent_graph() -> None:
    runner = create_runner(OfflineChatModel(), token_budget=500)
    assert isinstance(runner, AgentRunner)
    memory = fresh_memory()
    graph = runner.graph(memory)
    assert graph is runner.graph(memory)
    assert {"retrieve", "generate", "reflect", "writeback"} <= set(graph.get_graph().nodes)
    assert runner.graph(empty_memory_like(memory)) is not graph


def test_context_from_state_matches_the_assembled_context() -> None:
    memory = fresh_memory()
    alice = memory.for_user("alice")
    alice.remember("I'm allergic to shellfish. I live in Lyon.")
    ctx = alice.build_memory_context("dinner in Lyon?", token_budget=400)
    state = {
        "memory_context": ctx.text,
        "memory_tokens": ctx.tokens,
        "memory_items": [
            {"tier": i.tier, "section": i.section, "id": i.id, "text": i.text, "score": i.score}
            for i in ctx.items
        ],
    }
    rebuilt = context_from_state(state, 400, memory)
    assert rebuilt.section_tokens == ctx.section_tokens
    assert (rebuilt.text, rebuilt.tokens, rebuilt.budget) == (ctx.text, ctx.tokens, 400)
    assert [i.key for i in rebuilt.items] == [i.key for i in ctx.items]
    assert context_from_state({}, 400, memory).tokens == 0


def test_empty_memory_like_shares_nothing() -> None:
    memory = fresh_memory()
    memory.for_user("alice").remember("I'm allergic to shellfish.")
    empty = empty_memory_like(memory)
    assert empty.users() == []
    assert empty.token_counter is memory.token_counter
    assert empty.for_user("alice").search("shellfish") == []


def test_render_story_shows_sections_tokens_and_both_answers(results: list[StoryResult]) -> None:
    text = render_story(results[2], 3, 3, width=120)
    ctx = results[2].with_memory.context  # type: ignore[union-attr]
    assert text.startswith("== Story 3 of 3: The deprecated endpoint (procedural memory) ")
    assert f"{ctx.tokens} of {ctx.budget}" in text
    assert f"warnings              | {ctx.section_tokens['warnings']}" in text
    header = next(line for line in text.splitlines() if line.startswith("WITH memory"))
    assert "WITHOUT memory (0 tokens of context)" in header
    assert all(len(line) <= 120 for line in text.splitlines())


def test_render_table_wraps_long_cells_within_width() -> None:
    table = render_table(["a", "b"], [["x" * 10, "word " * 30]], width=40)
    lines = table.splitlines()
    assert lines[0].startswith("a ")
    assert len(lines) > 3
    assert all(len(line) <= 40 for line in lines)
    assert " ".join(line.split(" | ")[1].strip() for line in lines[2:]) == ("word " * 30).strip()


def test_render_table_keeps_line_breaks_inside_cells() -> None:
    table = render_table(["answer"], [["first\n- second"]], width=60)
    assert table.splitlines()[2:] == ["first", "- second"]
