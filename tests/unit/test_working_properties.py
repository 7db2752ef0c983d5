"""Property tests: any conversation, any budget, any priorities."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from langchain_tiered_memory.testing.fakes import ScriptedChatModel
from langchain_tiered_memory.tiers.working import (
    SUMMARY_MESSAGE_ID,
    ContextWindowBudget,
    ConversationBuffer,
    Priority,
    PriorityTruncationBuffer,
    SlidingWindowSummaryBuffer,
    WorkingBuffer,
)
from langchain_tiered_memory.tokens import TokenCounter

COUNTER = TokenCounter()
WORDS = st.lists(st.sampled_from(["tea", "Oslo", "fix", "the", "bug", "42", "ok", "ß", "🙂"]))
PRIORITIES = st.sampled_from(list(Priority))


@dataclass
class Item:
    message: BaseMessage
    priority: Priority
    group: int


@st.composite
def conversations(draw: st.DrawFn) -> list[Item]:
    """Random turns: system, human, ai, tool-call groups (1-3 results), with ids."""
    items: list[Item] = []
    n_turns = draw(st.integers(0, 14))
    for g in range(n_turns):
        kind = draw(st.sampled_from(["system", "human", "human", "ai", "ai", "tools"]))
        text = " ".join(draw(WORDS)) * draw(st.sampled_from([1, 1, 1, 5, 40]))
        prio = draw(PRIORITIES)
        mid = f"m{len(items)}"
        if kind == "system":
            items.append(Item(SystemMessage(text, id=mid), prio, g))
        elif kind == "human":
            items.append(Item(HumanMessage(text, id=mid), prio, g))
        elif kind == "ai":
            items.append(Item(AIMessage(text, id=mid), prio, g))
        else:
            n = draw(st.integers(1, 3))
            calls = [{"name": "lookup", "args": {"q": i}, "id": f"{mid}-c{i}"} for i in range(n)]
            items.append(Item(AIMessage(text, tool_calls=calls, id=mid), prio, g))
            for i in range(n):
                result = " ".join(draw(WORDS)) * draw(st.sampled_from([1, 3, 60]))
                tool = ToolMessage(result, tool_call_id=f"{mid}-c{i}", id=f"{mid}-r{i}")
                items.append(Item(tool, draw(PRIORITIES), g))
    return items


BUDGETS = st.integers(8, 600)


def make_buffer(kind: str, budget: int, model_fails: bool) -> WorkingBuffer:
    if kind == "fifo":
        return ConversationBuffer(max_tokens=budget)
    if kind == "priority":
        return PriorityTruncationBuffer(max_tokens=budget)
    reply: object = RuntimeError("down") if model_fails else "the summary so far"
    return SlidingWindowSummaryBuffer(
        ScriptedChatModel(default=reply), max_tokens=budget, recent_window=3, timeout=None
    )


def check_invariants(buffer: WorkingBuffer, items: list[Item]) -> None:
    ctx = buffer.get_context()
    out = ctx.messages
    # 1. Never over budget, and the reported count is the real one.
    assert ctx.tokens == COUNTER.count_messages(out)
    assert ctx.tokens <= buffer.max_tokens
    # 2. Original order kept (the summary is the only message not from the input).
    position = {it.message.id: i for i, it in enumerate(items)}
    ids = [m.id for m in out if m.id != SUMMARY_MESSAGE_ID]
    assert [position[i] for i in ids] == sorted(position[i] for i in ids)
    assert len(set(ids)) == len(ids)
    # 3. Tool calls and their results are never separated.
    for k, message in enumerate(out):
        if isinstance(message, AIMessage) and message.tool_calls:
            n = len(message.tool_calls)
            follow = out[k + 1 : k + 1 + n]
            assert [getattr(m, "tool_call_id", None) for m in follow] == [
                c["id"] for c in message.tool_calls
            ]
        if isinstance(message, ToolMessage):
            owner = next(m for m in reversed(out[:k]) if m.type != "tool")
            assert isinstance(owner, AIMessage)
            assert message.tool_call_id in {c["id"] for c in owner.tool_calls}
    # 4. System messages survive, untrimmed, when they fit.
    systems = [it.message for it in items if it.message.type == "system"]
    if systems and COUNTER.count_messages(systems) <= buffer.max_tokens:
        kept = {m.id: m for m in out}
        for system in systems:
            if system.id in {m.id for m in buffer.messages}:
                assert kept[system.id].content == system.content
    # 5. Something is always sent when there is anything valid to send and room for it.
    if any(m.type != "system" for m in buffer.messages) and buffer.max_tokens >= 60:
        assert out


@given(
    items=conversations(),
    budget=BUDGETS,
    kind=st.sampled_from(["fifo", "priority", "summary"]),
    model_fails=st.booleans(),
)
def test_context_invariants(items: list[Item], budget: int, kind: str, model_fails: bool) -> None:
    buffer = make_buffer(kind, budget, model_fails)
    for it in items:
        buffer.add(it.message, priority=it.priority)
    check_invariants(buffer, items)
    if kind == "summary" and model_fails:
        assert len(buffer) == len(items)  # a failing model never loses messages


def _groups(items: list[Item]) -> dict[int, list[Item]]:
    groups: dict[int, list[Item]] = {}
    for it in items:
        groups.setdefault(it.group, []).append(it)
    return groups


@given(items=conversations(), budget=BUDGETS)
def test_priority_drops_lower_ranked_groups_first(items: list[Item], budget: int) -> None:
    buffer = PriorityTruncationBuffer(max_tokens=budget)
    for it in items:
        buffer.add(it.message, priority=it.priority)
    ctx = buffer.get_context()
    kept_ids = {m.id for m in ctx.messages}
    trimmed_ids = {
        m.id for m in ctx.messages for it in items if it.message.id == m.id and m != it.message
    }
    groups = [g for g in _groups(items).values() if g[0].message.type != "system"]
    if not groups:
        return
    newest = groups[-1]

    def rank(g: list[Item]) -> tuple[int, int]:
        return (max(it.priority for it in g), g[0].group)

    def size(g: list[Item]) -> int:
        return sum(COUNTER.count_message(it.message) for it in g)

    kept = [g for g in groups if g[0].message.id in kept_ids and g is not newest]
    kept = [g for g in kept if not any(it.message.id in trimmed_ids for it in g)]
    dropped = [g for g in groups if g[0].message.id not in kept_ids and g is not newest]
    for d in dropped:
        for k in kept:
            if rank(d) > rank(k):
                # A higher-ranked group is dropped only if it was too big to fit where
                # a lower-ranked one did.
                assert size(d) > size(k)


@given(
    sizes=st.lists(st.integers(0, 400), min_size=6, max_size=6),
    total=st.integers(200, 20_000),
    n_recent=st.integers(0, 12),
)
def test_layout_never_exceeds_the_window(sizes: list[int], total: int, n_recent: int) -> None:
    budget = ContextWindowBudget(total=total)
    layout = budget.fit(
        system_prompt="rule " * sizes[0],
        running_summary="past " * sizes[1],
        retrieved_memories=["memory " * sizes[2], "another " * sizes[3]],
        recent_messages=[HumanMessage("turn " * sizes[4]) for _ in range(n_recent)],
        current_query="why " * sizes[5],
    )
    assert layout.tokens + layout.max_output_tokens == total
    assert layout.tokens == COUNTER.count_messages(layout.messages)
    assert layout.max_output_tokens >= budget.allocations()["output_reserve"]
    for usage in layout.sections.values():
        assert usage.used <= max(0, usage.available)
