"""The append-only event log: compaction never loses or double-counts an event.

The interleaving tests drive several plans (writers, compactions, compactions
that crash half-way) one store batch at a time, in an order hypothesis picks,
against one store: every schedule BaseStore allows between batches is tried.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langgraph.store.base import PutOp
from langgraph.store.memory import InMemoryStore

from langchain_tiered_memory.errors import BackendError
from langchain_tiered_memory.tiers.common.event_fold import CompactEvent, EventKind, pack
from langchain_tiered_memory.tiers.common.event_log import EventLog
from langchain_tiered_memory.tiers.common.records import Plan, StoreOps, run_plan


class IdTally:
    """Counts how often each event id was folded (so double counting shows)."""

    def __init__(self, seen: dict[str, int] | None = None) -> None:
        self.seen: Counter[str] = Counter(seen or {})

    def add(self, event_id: str, event: CompactEvent) -> None:
        self.seen[event_id] += 1

    def merge(self, other: IdTally) -> None:
        self.seen.update(other.seen)

    def to_json(self) -> dict[str, int]:
        return dict(self.seen)

    @property
    def exact(self) -> bool:
        return all(n == 1 for n in self.seen.values())


KIND = EventKind("group", lambda key, value: [value["ts"]], IdTally, IdTally)
EVENTS, FOLDED, BODIES = ("log", "events"), ("log", "folded"), ("log", "bodies")


def make_log(budget: int = 400_000) -> EventLog[IdTally]:
    return EventLog(KIND, EVENTS, FOLDED, BODIES, segment_budget=budget)


def write(store: InMemoryStore, ids: list[str], group: str = "g", ts: float = 1.0) -> None:
    store.batch([PutOp(EVENTS, i, {"group": group, "ts": ts}, index=False) for i in ids])


def tally(store: InMemoryStore, log: EventLog[IdTally], group: str = "g") -> IdTally:
    return run_plan(store, log.read_plan([group])).view(group).tally


def items(store: InMemoryStore, namespace: tuple[str, ...]) -> list[Any]:
    return store.search(namespace, limit=10_000)


# --------------------------------------------------------------------------- basics


def test_compaction_keeps_the_tally_and_deletes_the_events() -> None:
    store, log = InMemoryStore(), make_log()
    write(store, [f"e{i}" for i in range(20)], ts=5.0)
    write(store, ["other"], group="h")
    result = run_plan(store, log.compact_plan(run_plan(store, log.read_plan(None))))
    assert (result.groups, result.events_folded, result.segments_written) == (2, 21, 2)
    assert items(store, EVENTS) == []
    t = tally(store, log)
    assert set(t.seen) == {f"e{i}" for i in range(20)} and t.exact
    assert set(tally(store, log, "h").seen) == {"other"}
    write(store, ["late"], ts=0.5)  # older than everything folded: range checks must cope
    view = run_plan(store, log.read_plan(["g"])).view("g")
    assert view.tally.exact and len(view.tally.seen) == 21 and view.pending == 1


def test_an_event_written_again_after_it_was_folded_counts_once() -> None:
    store, log = InMemoryStore(), make_log()
    write(store, ["a", "b"])
    run_plan(store, log.compact_plan(run_plan(store, log.read_plan(["g"]))))
    write(store, ["a"])  # e.g. a consolidation pass re-run with deterministic ids
    read = run_plan(store, log.read_plan(["g"]))
    view = read.view("g")
    assert view.tally.to_json() == {"a": 1, "b": 1} and [e.key for e in view.leftovers] == ["a"]
    result = run_plan(store, log.compact_plan(read))
    assert (result.events_folded, result.segments_written, result.raw_deleted) == (0, 0, 1)
    assert items(store, EVENTS) == []


def test_a_crash_between_the_segment_and_the_deletes_counts_nothing_twice() -> None:
    store, log = InMemoryStore(), make_log()
    write(store, ["a", "b", "c"])
    plan = log.compact_plan(run_plan(store, log.read_plan(["g"])))
    body = next(plan)
    assert isinstance(body, StoreOps)
    head = plan.send(store.batch(body.ops))
    assert isinstance(head, StoreOps)
    store.batch(head.ops)  # the segment (body, then head) is written ...
    plan.close()  # ... and the process dies before deleting the events
    assert len(items(store, EVENTS)) == 3 and len(items(store, FOLDED)) == 1
    assert tally(store, log).to_json() == {"a": 1, "b": 1, "c": 1}
    run_plan(store, log.compact_plan(run_plan(store, log.read_plan(["g"]))))
    assert items(store, EVENTS) == [] and tally(store, log).to_json() == {"a": 1, "b": 1, "c": 1}


def test_overlapping_segments_of_concurrent_compactions_count_each_event_once() -> None:
    store, log = InMemoryStore(), make_log()
    write(store, ["a", "b", "c"])
    first = run_plan(store, log.read_plan(["g"]))  # compaction 1 reads a, b, c
    write(store, ["d"])
    second = run_plan(store, log.read_plan(["g"]))  # compaction 2 reads a, b, c, d
    run_plan(store, log.compact_plan(first))
    run_plan(store, log.compact_plan(second))
    view = run_plan(store, log.read_plan(["g"])).view("g")
    assert len(view.segments) == 2 and view.overlapping
    assert view.tally.to_json() == {"a": 1, "b": 1, "c": 1, "d": 1}
    run_plan(store, log.compact_plan(run_plan(store, log.read_plan(["g"]))))
    view = run_plan(store, log.read_plan(["g"])).view("g")
    assert len(view.segments) == 1 and not view.overlapping
    assert view.tally.to_json() == {"a": 1, "b": 1, "c": 1, "d": 1}


def test_segments_stay_under_the_budget_and_are_deterministic() -> None:
    events = {f"event-{i:04d}": [float(i % 7)] for i in range(300)}
    packed = pack(KIND, "g", events, budget=2_000)
    assert len(packed) > 3
    assert all(len(body["ids"]) + len(body["events"]) <= 2_400 for _, body in packed)
    assert all(head["size"] == len(body["ids"]) + len(body["events"]) for head, body in packed)
    assert sum(head["count"] for head, _ in packed) == 300
    assert pack(KIND, "g", dict(reversed(list(events.items()))), budget=2_000) == packed
    held = [i for _, body in packed for i in json.loads(body["ids"])]
    assert sorted(held) == sorted(events)


def test_small_segments_are_merged_and_full_ones_left_alone() -> None:
    store, log = InMemoryStore(), make_log(budget=3_000)
    for round_ in range(12):
        write(store, [f"r{round_}-{i}" for i in range(10)], ts=float(round_))
        run_plan(store, log.compact_plan(run_plan(store, log.read_plan(["g"]))))
    view = run_plan(store, log.read_plan(["g"])).view("g")
    small = [s for s in view.segments if s.size < log.segment_budget // 2]
    assert len(small) <= 1 and len(view.segments) < 12
    assert len(view.tally.seen) == 120 and view.tally.exact


def test_delete_groups_removes_events_and_segments() -> None:
    store, log = InMemoryStore(), make_log()
    write(store, ["a"])
    run_plan(store, log.compact_plan(run_plan(store, log.read_plan(["g"]))))
    write(store, ["b"])
    write(store, ["keep"], group="h")
    assert run_plan(store, log.delete_groups_plan(["g"])) == 3  # event, head, body
    assert tally(store, log).seen == Counter()
    assert set(tally(store, log, "h").seen) == {"keep"}


# --------------------------------------------------------------------------- interleavings


@dataclass
class Actor:
    plan: Generator[Any, Any, Any]
    pending: StoreOps | None = None
    done: bool = False
    crash_after: int | None = None
    steps: int = 0

    def start(self) -> None:
        self._advance(None)

    def _advance(self, value: Any) -> None:
        try:
            self.pending = self.plan.send(value)
        except StopIteration:
            self.done, self.pending = True, None

    def step(self, store: InMemoryStore) -> None:
        assert self.pending is not None
        result = store.batch(self.pending.ops)
        self.steps += 1
        if self.crash_after is not None and self.steps >= self.crash_after:
            self.plan.close()
            self.done, self.pending = True, None
            return
        self._advance(result)


def writer_plan(ids: list[str]) -> Plan[None]:
    yield StoreOps(tuple(PutOp(EVENTS, i, {"group": "g", "ts": float(len(i))}) for i in ids))


def compactor_plan(log: EventLog[IdTally]) -> Plan[None]:
    read = yield from log.read_plan(None)
    yield from log.compact_plan(read)


ACTIONS = st.lists(
    st.tuples(
        st.sampled_from(["write", "write", "compact", "compact", "crash", "step", "step", "read"]),
        st.integers(0, 50),
    ),
    min_size=5,
    max_size=60,
)


@settings(max_examples=150, deadline=None)
@given(actions=ACTIONS, budget=st.sampled_from([120, 400, 400_000]))
def test_no_interleaving_of_writers_and_compactions_loses_or_repeats_an_event(
    actions: list[tuple[str, int]], budget: int
) -> None:
    store, log = InMemoryStore(), make_log(budget)
    actors: list[Actor] = []
    written: set[str] = set()
    for action, n in actions:
        live = [a for a in actors if not a.done]
        if action == "write":
            ids = [uuid.uuid4().hex[: 4 + n % 5] for _ in range(1 + n % 4)]
            actors.append(Actor(writer_plan(ids)))
            actors[-1].start()
            written.update(ids)  # counted as written once its batch runs (below)
            actors[-1].step(store)
        elif action in ("compact", "crash"):
            actor = Actor(compactor_plan(log), crash_after=1 + n % 3 if action == "crash" else None)
            actor.start()
            actors.append(actor)
        elif action == "step" and live:
            live[n % len(live)].step(store)
        elif action == "read":
            view = run_plan(store, log.read_plan(["g"])).view("g")
            assert view.tally.exact and set(view.tally.seen) == written
    for actor in actors:  # let everything still running finish
        while not actor.done:
            actor.step(store)
    view = run_plan(store, log.read_plan(["g"])).view("g")
    assert view.tally.exact and set(view.tally.seen) == written
    run_plan(store, compactor_plan(log))
    view = run_plan(store, log.read_plan(["g"])).view("g")
    assert view.tally.exact and set(view.tally.seen) == written and not view.overlapping
    assert view.pending == 0


def test_reads_between_the_two_halves_of_a_compaction_are_exact() -> None:
    store, log = InMemoryStore(), make_log()
    write(store, [f"e{i}" for i in range(10)])
    actor = Actor(compactor_plan(log))
    actor.start()
    seen = []
    while not actor.done:  # read before every batch of the compaction
        seen.append(tally(store, log).to_json())
        actor.step(store)
    seen.append(tally(store, log).to_json())
    assert all(s == {f"e{i}": 1 for i in range(10)} for s in seen)


@pytest.mark.parametrize("ts", [[3.0, 1.0, 2.0], [1.0, 1.0, 1.0]])
def test_fold_order_does_not_matter(ts: list[float]) -> None:
    store, log = InMemoryStore(), make_log(budget=60)
    for i, t in enumerate(ts):
        write(store, [f"x{i}"], ts=t)
        run_plan(store, log.compact_plan(run_plan(store, log.read_plan(["g"]))))
    assert tally(store, log).to_json() == {"x0": 1, "x1": 1, "x2": 1}


class Spy(InMemoryStore):
    """Counts the gets (body loads) and runs a hook before the next batch."""

    def __init__(self) -> None:
        super().__init__()
        self.gets = 0
        self.before: list[Any] = []

    def batch(self, ops: Any) -> list[Any]:
        ops = list(ops)
        self.gets += sum(type(op).__name__ == "GetOp" for op in ops)
        if self.before:
            self.before.pop(0)()
        return super().batch(ops)


def test_reads_load_bodies_only_when_ranges_meet() -> None:
    store, log = Spy(), make_log()
    write(store, ["a", "b"], ts=1.0)
    run_plan(store, log.compact_plan(run_plan(store, log.read_plan(["g"]))))
    write(store, ["c"], ts=2.0)
    run_plan(store, log.compact_plan(run_plan(store, log.read_plan(["g"]))))
    write(store, ["d"], ts=3.0)  # newer than every segment
    store.gets = 0
    assert tally(store, log).to_json() == {"a": 1, "b": 1, "c": 1, "d": 1}
    assert store.gets == 0  # heads and tallies only
    write(store, ["a"], ts=1.0)  # inside a segment's range: its body is checked
    assert tally(store, log).to_json() == {"a": 1, "b": 1, "c": 1, "d": 1}
    assert store.gets == 1


def test_a_read_starts_again_when_a_body_it_needs_is_replaced() -> None:
    store, log = Spy(), make_log()
    plain = InMemoryStoreView(store)
    write(plain, ["x0"])
    first, second = (run_plan(plain, log.read_plan(["g"])) for _ in range(2))
    run_plan(plain, log.compact_plan(first))
    run_plan(plain, log.compact_plan(second))  # two segments holding x0: bodies needed

    def merge() -> None:  # between the read's head search and its body loads
        run_plan(plain, log.compact_plan(run_plan(plain, log.read_plan(["g"]))))

    store.before = [lambda: None, lambda: None, merge]
    assert tally(store, log).to_json() == {"x0": 1}
    assert len(items(store, FOLDED)) == 1 and store.before == []


class InMemoryStoreView(InMemoryStore):
    """The same data as ``inner`` without its hooks."""

    def __init__(self, inner: InMemoryStore) -> None:
        super().__init__()
        self._data, self._vectors = inner._data, inner._vectors


def test_a_log_that_keeps_changing_under_reads_gives_up_clearly() -> None:
    store, log = Spy(), make_log()
    write(store, ["a"], ts=1.0)
    run_plan(store, log.compact_plan(run_plan(store, log.read_plan(["g"]))))
    write(store, ["a"], ts=1.0)  # a leftover: the body is needed
    (head,) = items(store, FOLDED)

    def drop_body() -> None:
        InMemoryStoreView(store).delete(BODIES, head.key)

    store.before = [lambda: None, lambda: None, drop_body] * 10
    with pytest.raises(BackendError, match="retry"):
        tally(store, log)
