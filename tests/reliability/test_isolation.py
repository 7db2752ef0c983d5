"""Tenant isolation, property-based, on both Qdrant engines.

Hypothesis draws scopes (user ids that are prefixes of each other, unicode,
separators such as ``/``, ``:``, ``.`` and ``%``, percent-encoding look-alikes
such as ``a.b`` / ``a%2eb``, spaces, case variants; optional agent ids)
and writes memories of every tier for each of them into ONE shared store. Every
memory carries a canary word derived from its scope. Each scope then queries
every public read path with text made of the *other* scopes' canaries (so
lexical and dense search both pull towards the wrong tenant), and the test
asserts that no result contains a canary of another scope.

What counts as "the same user" (documented by ``test_id_normalisation_*``):
``normalize_id`` applies Unicode NFC, strips, folds tabs/newlines and runs of
spaces into one space and lower-cases, so ``"Alice"``, ``" alice "``,
``"ALICE"`` and ``"a\\tb"``/``"a b"`` are one user each, while ``"al"`` and
``"alice"``, ``"a/b"`` and ``"a"``, ``"a b"`` and ``"ab"``, ``"a.b"`` and
``"a%2eb"`` are different users. Other control characters (including the
information separators U+001C-U+001F) and the wildcard ``"*"`` are rejected.

The default run does a few hundred queries per engine; the ``slow`` test does
10,000 per engine.
"""

from __future__ import annotations

import hashlib
import string
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from reliability_helpers import fast_dir, open_memory

from langchain_tiered_memory import (
    Episode,
    InvalidInputError,
    TieredMemory,
    ToolUsageRecord,
    TrajectoryStep,
)
from langchain_tiered_memory.tiers.common.scope import MemoryScope, id_to_label, normalize_id

SESSION = "shared-session"  # every user uses the same session id, tool and strategy names
TOOL = "search"
STRATEGY = "retry with backoff"

TRICKY_IDS = [
    "al",
    "alice",
    "alice2",
    "Alice",
    " ALICE ",
    "a l",
    "a  l",
    "a/b",
    "a",
    "a:b",
    "a:",
    ":b",
    "a b",
    "ab",
    "_",
    "__",
    "tiered_memory",
    "**",
    "a*",
    "%",
    "a.b",
    "a%2eb",
    "A%2Eb",
    "alice.smith@example.com",
    ".",
    "%2e",
    "%25",
    '"',
    "[]",
    "é",
    "É",
    "日本語",
    "日本",
    "Ωmega",
    "user-1",
    "user-10",
    "x" * 256,
]
_ID_ALPHABET = st.characters(blacklist_categories=("Cs", "Cc", "Cf", "Zl", "Zp"))


def _valid_id(value: str) -> bool:
    try:
        normalize_id(value)  # "*" (LangGraph's namespace wildcard) is rejected here
        return True
    except InvalidInputError:
        return False


user_ids = st.one_of(
    st.sampled_from(TRICKY_IDS),
    st.text(_ID_ALPHABET, min_size=1, max_size=12).filter(_valid_id),
)
agent_ids = st.one_of(st.none(), st.sampled_from(["planner", "Planner", "plan", "a/b", "ü"]))


@dataclass(frozen=True)
class Scope:
    user: str  # as the caller typed it
    agent: str | None

    @property
    def key(self) -> tuple[str, str | None]:
        s = MemoryScope(self.user, self.agent)
        return s.user_id, s.agent_id


def canary(key: tuple[str, str | None]) -> str:
    """A word only this scope's memories contain (letters only: survives extraction)."""
    digest = hashlib.sha256(repr(key).encode()).digest()
    return "qz" + "".join(string.ascii_lowercase[b % 26] for b in digest[:10])


@dataclass
class World:
    """Every canary ever written into one store, by scope; and counters."""

    memory: TieredMemory
    canaries: dict[tuple[str, str | None], str] = field(default_factory=dict)
    queries: int = 0
    checked_items: int = 0

    def owner_of(self, text: str) -> set[tuple[str, str | None]]:
        low = text.lower()
        return {k for k, c in self.canaries.items() if c in low}


def write_scope(memory: TieredMemory, scope: Scope, word: str, others: list[str]) -> None:
    """Memories of every tier for ``scope``; some about other users' entity ids."""
    c = canary(scope.key)
    user = memory.for_user(scope.user, scope.agent)
    uid = user.user_id
    user.semantic.store_fact(uid, f"{c} likes {word}", confidence=0.9)
    for other in others[:2]:  # facts about another user's entity id, in this scope
        user.semantic.store_fact(other, f"{c} met {other} about {word}", entity_type="person")
    user.remember(f"I live in {c}ville and I love {word}.")
    user.episodic.record(
        Episode(
            task_description=f"{c} booked {word} tickets",
            outcome="failure",
            reflection=f"{c} should check {word} first",
            session_id=SESSION,
            tags=["shared"],
            trajectory=[TrajectoryStep(action=f"tool_call: {TOOL}", observation=f"error {c}")],
        )
    )
    user.procedural.record_tool_use(
        ToolUsageRecord(
            tool_name=TOOL, success=False, context=f"{c} {word}", error_message=f"{c} timeout"
        )
    )
    user.procedural.register_strategy(STRATEGY, f"{c} {word} strategy", f"{c} conditions")
    user.procedural.set_preference("tone", f"{c} {word}")


def read_paths(
    memory: TieredMemory, scope: Scope, query: str, entity_ids: list[str]
) -> list[tuple[str, Callable[[], Any]]]:
    """Every public read path of one scope, as (name, call)."""
    u = memory.for_user(scope.user, scope.agent)
    paths: list[tuple[str, Callable[[], Any]]] = [
        ("search", lambda: u.search(query, top_k=20)),
        ("build_memory_context", lambda: u.build_memory_context(query, 4000).text),
        ("retrieve_similar", lambda: u.episodic.retrieve_similar(query, top_k=20)),
        ("retrieve_recent", lambda: u.episodic.retrieve_recent(50)),
        ("get_session_episodes", lambda: u.episodic.get_session_episodes(SESSION)),
        ("semantic_search", lambda: u.semantic.semantic_search(query, top_k=20)),
        ("list_entities", lambda: u.semantic.list_entities(limit=100)),
        ("get_tool_guidance", lambda: u.procedural.get_tool_guidance(TOOL)),
        ("get_applicable_strategies", lambda: u.procedural.get_applicable_strategies(query)),
        ("get_context_injection", lambda: u.procedural.get_context_injection(query)),
        ("get_preferences", lambda: u.procedural.get_preferences()),
        ("trash", lambda: u.trash.list_trashed()),
    ]
    for eid in entity_ids:
        paths.append(
            (f"entity_context({eid!r})", lambda e=eid: u.semantic.retrieve_entity_context(e))
        )
        paths.append((f"get_facts({eid!r})", lambda e=eid: u.semantic.get_facts(e)))
    return paths


def check_world(world: World, scopes: list[Scope], word: str) -> None:
    memory = world.memory
    keys = {s.key for s in scopes}
    for scope in scopes:
        world.canaries[scope.key] = canary(scope.key)
    uids = sorted({k[0] for k in keys})
    for scope in scopes:
        write_scope(memory, scope, word, [u for u in uids if u != scope.key[0]])
    for scope in scopes:
        me = scope.key
        foreign = [c for k, c in world.canaries.items() if k != me]
        query = " ".join([word, *foreign[-6:]])
        for name, call in read_paths(memory, scope, query, uids):
            result = repr(call())
            world.queries += 1
            owners = world.owner_of(result)
            assert owners <= {me}, f"{scope} read {owners - {me}} through {name}: {result[:400]}"
        # A case/space variant that normalises to the same id reads the same memories.
        variant = f"  {scope.user.upper()} "
        if _valid_id(variant) and MemoryScope(variant, scope.agent).user_id == me[0]:
            found = memory.for_user(variant, scope.agent).semantic.get_facts(me[0])
            world.queries += 1
            assert canary(me) in repr(found).lower(), f"{variant!r} does not see {scope}"
    for uid in uids:
        exported = list(memory.export_user(uid))
        world.queries += 1
        world.checked_items += len(exported)
        for record in exported:
            owners = world.owner_of(repr(record))
            assert all(o[0] == uid for o in owners), f"export_user({uid!r}) has {owners}"
            assert record["namespace"][1] == id_to_label(uid)
        assert exported, f"export_user({uid!r}) is empty"


scope_lists = st.lists(st.builds(Scope, user_ids, agent_ids), min_size=2, max_size=4)
words = st.sampled_from(["jazz", "sushi", "hiking", "chess", "opera", "tea"])


def _run_property(world: World, max_examples: int) -> None:
    @settings(
        max_examples=max_examples,
        deadline=None,
        database=None,
        phases=[Phase.explicit, Phase.generate],  # no shrinking: the failing example is printed
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(scopes=scope_lists, word=words)
    def prop(scopes: list[Scope], word: str) -> None:
        check_world(world, scopes, word)

    prop()


@pytest.mark.parametrize(("engine", "examples"), [("embedded", 8), ("client", 3)])
def test_no_scope_ever_reads_another_scopes_memory(engine: str, examples: int) -> None:
    path = fast_dir()
    memory = open_memory(engine, path / "store")
    try:
        world = World(memory)
        _run_property(world, examples)
        print({"engine": engine, "queries": world.queries})
        assert world.queries >= 100  # the property really ran
    finally:
        memory.close()
        __import__("shutil").rmtree(path, ignore_errors=True)


@pytest.mark.slow
@pytest.mark.timeout(3600)  # client local mode is a brute-force scan: about 10 minutes
@pytest.mark.parametrize("engine", ["embedded", "client"])
def test_ten_thousand_queries_zero_foreign_items(engine: str) -> None:
    total = 0
    while total < 10_000:
        path = fast_dir()
        # A fresh store every batch keeps client local mode (a brute-force scan) fast.
        memory = open_memory(engine, path / "store")
        try:
            world = World(memory)
            _run_property(world, 40)
            total += world.queries
        finally:
            memory.close()
            __import__("shutil").rmtree(path, ignore_errors=True)
    print({"engine": engine, "queries": total, "foreign_items": 0})


# ---------------------------------------------------------------- id normalisation


@pytest.mark.parametrize(
    ("a", "b"), [("Alice", "alice"), (" ALICE ", "alice"), ("a  l", "a l"), ("ÉLODIE", "élodie")]
)
def test_id_normalisation_same_user(a: str, b: str) -> None:
    assert MemoryScope(a).prefix == MemoryScope(b).prefix


@pytest.mark.parametrize(
    ("a", "b"), [("al", "alice"), ("a/b", "a"), ("a b", "ab"), ("a:b", "a"), ("user-1", "user-10")]
)
def test_id_normalisation_different_users(a: str, b: str) -> None:
    assert MemoryScope(a).prefix != MemoryScope(b).prefix


@pytest.mark.parametrize("bad", ["", "   ", "a\x00", "a\x01b", "a\x7f", "x" * 257])
def test_id_normalisation_rejects_control_characters_and_empty_ids(bad: str) -> None:
    with pytest.raises(InvalidInputError):
        MemoryScope(bad)


def test_id_normalisation_folds_tabs_and_newlines_into_spaces() -> None:
    assert MemoryScope("a\tb").prefix == MemoryScope("a\nb").prefix == MemoryScope("a b").prefix


@pytest.mark.parametrize("sep", ["\x1c", "\x1d", "\x1e", "\x1f"])
def test_information_separators_are_rejected_not_turned_into_spaces(sep: str) -> None:
    with pytest.raises(InvalidInputError):
        MemoryScope(f"org{sep}bob")


def test_canonically_equivalent_ids_are_the_same_user() -> None:
    assert MemoryScope("jos\u00e9").prefix == MemoryScope("jose\u0301").prefix


def test_email_address_user_ids_work_on_the_qdrant_store(engine: str, workdir: Path) -> None:
    memory = open_memory(engine, workdir / "store")
    try:
        alice = memory.for_user("alice.smith@example.com")
        alice.remember("I live in Lyon.")
        assert any("Lyon" in i.text for i in alice.search("Where do I live? Lyon"))
        assert memory.stats()["errors"] == {}
    finally:
        memory.close()


def test_user_star_is_rejected_so_wildcards_never_reach_the_store(memory: TieredMemory) -> None:
    # "*" is LangGraph's namespace wildcard: as a user id it would export (or forget) everyone.
    memory.for_user("alice").remember("I live in Lyon.")
    with pytest.raises(InvalidInputError, match="reserved"):
        memory.for_user("*")
    with pytest.raises(InvalidInputError, match="reserved"):
        list(memory.export_user("*"))
    assert list(memory.export_user("alice"))
