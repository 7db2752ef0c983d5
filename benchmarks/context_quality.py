"""Context quality: does the assembled memory context hold what the question needs, and little else?

Generates multi-session stories (templated, every one distinct). Each user has
the memories its last question needs, one from every tier:

* a critical fact (an allergy, stated in the first session);
* a superseded fact (the user moved: the new city is needed, the old one is a distractor);
* a failure lesson (an episode that failed, with its reflection);
* a tool warning (an endpoint that answers ``410 Gone``);
* a strategy (registered for the user's project);
* an earlier conversation turn (where the project's staging cluster is);

and hundreds of plausible, distinct distractors: hobby and possession facts,
routine episodes (some about other deployments), successful and failing uses of
other tools, other strategies, small-talk turns. Every user's memories live in
one store, so each question also runs among other users' memories.

Each story is written over two sessions through ``TieredMemory.open(path)``,
closed and reopened between them, and asked in a third session at every budget
with both packings (``"utility"``, the default, and ``"sections"``), in one run.
Printed per packing and budget: needed-recall (needed memories whose key phrase
is in ``ctx.text``), distractor share (memory lines that are not needed, over
all memory lines), tokens used (median, and median share of the budget), and
build_memory_context p50 / p99 ms. ``--sweep`` also prints the relevance floor
sweep that chose ``DEFAULT_RELEVANCE_FLOOR``.

Run:
    python -m benchmarks.context_quality --stories 32 --sweep
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from benchmarks._common import environment, format_table, percentile
from langchain_tiered_memory import (
    AssemblyConfig,
    Episode,
    Outcome,
    TieredMemory,
    ToolUsageRecord,
)
from langchain_tiered_memory.assembly.assembler import Packing
from langchain_tiered_memory.assembly.items import MemoryContext
from langchain_tiered_memory.testing.fakes import FakeClock, HashingEmbeddings
from langchain_tiered_memory.tiers.episodic.models import TrajectoryStep

BUDGETS = (200, 400, 1000, 2000)
PACKINGS: tuple[Packing, ...] = ("utility", "sections")

ALLERGENS = ["peanuts", "shellfish", "penicillin", "sesame", "latex", "walnuts", "soy", "eggs"]
CITIES = [
    "Lyon", "Berlin", "Porto", "Oslo", "Turin", "Ghent", "Krakow", "Bilbao", "Leeds", "Graz",
    "Malmo", "Utrecht", "Seville", "Tampere", "Brno", "Cork",
]  # fmt: skip
PROJECTS = [
    "payments-api", "ledger-sync", "invoice-worker", "search-gateway", "billing-cron",
    "auth-proxy", "media-encoder", "report-builder", "catalog-indexer", "quota-service",
    "email-relay", "geo-router", "fraud-scorer", "inventory-feed", "pricing-engine",
    "session-store",
]  # fmt: skip
PROBLEMS = [
    ("CrashLoopBackOff", "a missing DATABASE_URL secret after the config map rename"),
    ("ImagePullBackOff", "an expired registry token in the pull secret"),
    ("OOMKilled restarts", "an unbounded cache filling the heap"),
    ("readiness probe timeouts", "the probe hitting a slow migration endpoint"),
]
SERVICES = [
    "orders",
    "shipments",
    "refunds",
    "invoices",
    "tickets",
    "accounts",
    "payouts",
    "quotes",
]
CLUSTERS = ["kestrel", "osprey", "heron", "falcon", "merlin", "plover", "curlew", "avocet"]
HOBBIES = [
    "cycling", "yoga", "chess", "pottery", "climbing", "sailing", "baking", "birdwatching",
    "running", "knitting", "photography", "gardening", "surfing", "painting", "fishing",
    "skiing", "rowing", "archery", "juggling", "calligraphy", "origami", "woodworking",
    "tennis", "swimming", "hiking",
]  # fmt: skip
THINGS = [
    "a drone", "a kayak", "a vintage camera", "a road bike", "an espresso machine", "a telescope",
    "a 3D printer", "a synthesizer", "a sewing machine", "a record player", "a canoe",
    "a smartwatch", "a tent", "an e-reader", "a projector", "a violin",
]  # fmt: skip
FACT_TEMPLATES = [
    "Enjoys {hobby} {when} with {who}",
    "Owns {thing} bought in {year}",
    "Took a {hobby} course in {year}",
    "Wants to try {hobby} in {place}",
    "Keeps {thing} in the {room}",
    "Watches {hobby} videos {when}",
    "Lent {thing} to {who} in {year}",
]
WHEN = ["before work", "on Sundays", "after dinner", "at lunch", "on holidays", "every morning"]
WHO = ["a club", "a cousin", "old friends", "a neighbour", "colleagues", "a brother"]
PLACES = ["the Alps", "Iceland", "Brittany", "the Dolomites", "Crete", "Norway"]
ROOMS = ["garage", "attic", "hallway", "study", "basement", "shed"]
TOOLS_OK = ["calendar_lookup", "weather_now", "unit_convert", "currency_rate", "doc_search"]


@dataclass
class Needed:
    """A memory the question needs, found in the context by its key phrase."""

    kind: str
    phrase: str


@dataclass
class Story:
    """One user's sessions and question."""

    user: str
    project: str
    service: str
    cluster: str
    allergen: str
    old_city: str
    new_city: str
    problem: str
    cause: str
    question: str
    needed: list[Needed] = field(default_factory=list)


def make_story(n: int, rng: random.Random) -> Story:
    """Story ``n``: the needed memories are distinct for every story."""
    project = f"{PROJECTS[n % len(PROJECTS)]}{'' if n < len(PROJECTS) else '-' + str(n)}"
    service = SERVICES[n % len(SERVICES)]
    cluster = f"{CLUSTERS[n % len(CLUSTERS)]}-{n}"
    problem, cause = PROBLEMS[n % len(PROBLEMS)]
    old_city, new_city = rng.sample(CITIES, 2)
    allergen = ALLERGENS[n % len(ALLERGENS)]
    question = (
        f"{project} pods show {problem} again after the deploy: which staging cluster do we "
        f"use, what did we learn last time, and can the {service} endpoint still be called? "
        f"Also book the team dinner near where I live."
    )
    return Story(
        user=f"user{n:03d}",
        project=project,
        service=service,
        cluster=cluster,
        allergen=allergen,
        old_city=old_city,
        new_city=new_city,
        problem=problem,
        cause=cause,
        question=question,
        needed=[
            Needed("critical fact", f"Allergic to {allergen}"),
            Needed("superseded fact", f"Lives in {new_city}"),
            Needed("failure lesson", cause),
            Needed("tool warning", f"use {service}_v2"),
            Needed("strategy", f"{project} rollout checklist"),
            Needed("earlier turn", cluster),
        ],
    )


def distractor_facts(rng: random.Random, count: int) -> list[str]:
    """``count`` distinct hobby and possession facts."""
    facts: set[str] = set()
    while len(facts) < count:
        facts.add(
            rng.choice(FACT_TEMPLATES).format(
                hobby=rng.choice(HOBBIES),
                thing=rng.choice(THINGS),
                when=rng.choice(WHEN),
                who=rng.choice(WHO),
                year=rng.randint(2005, 2025),
                place=rng.choice(PLACES),
                room=rng.choice(ROOMS),
            )
        )
    return sorted(facts)


def distractor_episodes(story: Story, rng: random.Random, count: int) -> list[Episode]:
    """Routine episodes, a few about deploying other projects."""
    episodes = []
    for i in range(count):
        if i % 10 == 0:
            other = rng.choice([p for p in PROJECTS if p not in story.project])
            task = f"Deploy {other} frontend build {i} to production"
            lesson = f"Build {i} of {other} went out cleanly after the usual smoke tests"
        else:
            hobby = rng.choice(HOBBIES)
            task = f"Answer a question about {hobby} number {i}"
            lesson = f"The user liked short answers about {hobby} with one example ({i})"
        episodes.append(
            Episode(
                task_description=task,
                outcome=Outcome.SUCCESS,
                reflection=lesson,
                trajectory=[TrajectoryStep(action="respond", observation="ok")],
                importance=rng.choice([0.2, 0.3, 0.5]),
            )
        )
    return episodes


def write_session_one(memory: TieredMemory, story: Story, rng: random.Random, facts: int) -> None:
    """Session 1: the critical fact, the first city, distractors, the failed deploy."""
    user = memory.for_user(story.user)
    user.remember(f"I'm allergic to {story.allergen}.")
    user.remember(f"I live in {story.old_city}.")
    for fact in distractor_facts(rng, facts):
        user.semantic.store_fact(story.user, fact, confidence=rng.choice([0.7, 0.8, 0.9]))
    user.episodic.record(
        Episode(
            task_description=f"Fix {story.project} deployment: pods in {story.problem}",
            outcome=Outcome.FAILURE,
            reflection=(
                f"Restarting did not help; root cause was {story.cause}. Check the pod logs "
                "and secrets first."
            ),
            trajectory=[
                TrajectoryStep(
                    action="tool_call: kubectl_rollout_restart", observation="no change"
                ),
            ],
            importance=0.9,
        )
    )
    for episode in distractor_episodes(story, rng, 60):
        user.episodic.record(episode)
    user.turns.add_turns(
        "s1",
        [
            {"speaker": story.user, "text": "Morning! Busy day ahead.", "time": memory.clock()},
            {
                "speaker": story.user,
                "text": f"For the record, {story.project} staging runs on cluster {story.cluster}.",
                "time": memory.clock(),
            },
            *(
                {
                    "speaker": story.user,
                    "text": f"Did you see the {rng.choice(HOBBIES)} results from "
                    f"{rng.choice(PLACES)} ({k})?",
                    "time": memory.clock(),
                }
                for k in range(30)
            ),
        ],
    )


def write_session_two(memory: TieredMemory, story: Story, rng: random.Random) -> None:
    """Session 2: the move, the failing endpoint, the strategy, more distractors."""
    user = memory.for_user(story.user)
    user.remember(f"I moved to {story.new_city}.")
    proc = user.procedural
    proc.record_tool_use(
        ToolUsageRecord(
            tool_name=f"{story.service}_v1",
            parameters={"id": "A-1"},
            context=f"Look up {story.service}",
            success=False,
            error_message=f"410 Gone: use {story.service}_v2",
        )
    )
    for k in range(40):
        tool = rng.choice(TOOLS_OK)
        ok = k % 8 != 0
        proc.record_tool_use(
            ToolUsageRecord(
                tool_name=tool,
                parameters={"k": k},
                context=f"routine {tool} call",
                success=ok,
                error_message="" if ok else f"timeout after {k} s",
            )
        )
    proc.register_strategy(
        f"{story.project} rollout checklist",
        f"Before any {story.project} deploy, verify secrets and config maps, then watch pods",
        conditions=f"deploying {story.project} or pods in {story.problem}",
        procedure="kubectl get secrets; diff config maps; kubectl logs on the first crash",
    )
    for hobby in rng.sample(HOBBIES, 12):
        proc.register_strategy(
            f"{hobby} tips",
            f"Give {hobby} advice with one concrete drill",
            conditions=f"questions about {hobby}",
        )
    for episode in distractor_episodes(story, rng, 60):
        user.episodic.record(episode)
    user.turns.add_turns(
        "s2",
        [
            {
                "speaker": story.user,
                "text": f"Back from {rng.choice(PLACES)}, the {rng.choice(HOBBIES)} was great "
                f"({k}).",
                "time": memory.clock(),
            }
            for k in range(30)
        ],
    )


@dataclass
class Result:
    """One context's figures."""

    recall: float
    distractor_lines: int
    lines: int
    tokens: int
    ms: float


def judge(story: Story, ctx: MemoryContext, ms: float) -> Result:
    """Needed-recall and distractor lines of one context."""
    found = sum(1 for need in story.needed if need.phrase in ctx.text)
    needed_lines = sum(
        1 for item in ctx.items if any(need.phrase in item.text for need in story.needed)
    )
    return Result(
        recall=found / len(story.needed),
        distractor_lines=len(ctx.items) - needed_lines,
        lines=len(ctx.items),
        tokens=ctx.tokens,
        ms=ms,
    )


def ask(
    path: Path,
    stories: Sequence[Story],
    config: AssemblyConfig,
    budgets: Sequence[int],
    repeat: int,
    clock: FakeClock,
) -> dict[int, list[Result]]:
    """Session 3: every story's question at every budget (reopened with ``config``)."""
    memory = TieredMemory.open(path, embeddings=HashingEmbeddings(), clock=clock, assembly=config)
    results: dict[int, list[Result]] = {b: [] for b in budgets}
    try:
        for _ in range(repeat):
            for story in stories:
                user = memory.for_user(story.user)
                for budget in budgets:
                    start = time.perf_counter()
                    ctx = user.build_memory_context(story.question, token_budget=budget)
                    ms = (time.perf_counter() - start) * 1000
                    results[budget].append(judge(story, ctx, ms))
    finally:
        memory.close()
    return results


def summarise(results: Sequence[Result], budget: int) -> list[str]:
    """One table row's figures."""
    lines = sum(r.lines for r in results)
    share = sum(r.distractor_lines for r in results) / lines if lines else 0.0
    tokens = statistics.median(r.tokens for r in results)
    ms = [r.ms for r in results]
    return [
        f"{statistics.mean(r.recall for r in results):.3f}",
        f"{share:.3f}",
        f"{tokens:.0f}",
        f"{tokens / budget:.2f}",
        f"{percentile(ms, 50):.1f}",
        f"{percentile(ms, 99):.1f}",
    ]


def build(path: Path, stories: Sequence[Story], facts: int, seed: int, clock: FakeClock) -> None:
    """Write both sessions of every story, closing and reopening in between."""
    rng = random.Random(seed)
    for session in (write_session_one, write_session_two):
        memory = TieredMemory.open(path, embeddings=HashingEmbeddings(), clock=clock)
        try:
            for story in stories:
                if session is write_session_one:
                    write_session_one(memory, story, rng, facts)
                else:
                    write_session_two(memory, story, rng)
                clock.advance(hours=1)
        finally:
            memory.close()
        clock.advance(days=7)


def main(argv: Sequence[str] | None = None) -> None:
    """Run the suite and print its tables."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--stories", type=int, default=32)
    p.add_argument("--facts", type=int, default=150, help="distractor facts per user")
    p.add_argument("--budgets", type=int, nargs="+", default=list(BUDGETS))
    p.add_argument("--repeat", type=int, default=2, help="times each question is asked")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--sweep", action="store_true", help="also sweep the relevance floor")
    p.add_argument("--path", default=None, help="memory directory (default: a temporary one)")
    args = p.parse_args(argv)

    rng = random.Random(args.seed)
    stories = [make_story(n, rng) for n in range(args.stories)]
    clock = FakeClock(datetime(2026, 1, 5, 9, tzinfo=timezone.utc))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(args.path or tmp) / "memory"
        start = time.perf_counter()
        build(path, stories, args.facts, args.seed, clock)
        per_user = args.facts + 2 + 121 + 41 + 13 + 62 + 3
        print(
            f"# context quality: {len(stories)} stories, about {per_user} memories per user "
            f"({per_user * len(stories)} in the store), written in "
            f"{time.perf_counter() - start:.0f} s; {environment()}"
        )
        clock.advance(days=1)
        rows = []
        for packing in PACKINGS:
            res = ask(
                path, stories, AssemblyConfig(packing=packing), args.budgets, args.repeat, clock
            )
            rows += [[packing, str(b), *summarise(res[b], b)] for b in args.budgets]
        print(
            format_table(
                [
                    "packing",
                    "budget",
                    "needed-recall",
                    "distractor share",
                    "tokens p50",
                    "tokens/budget",
                    "p50 ms",
                    "p99 ms",
                ],
                rows,
            )
        )
        if args.sweep:
            sweep = []
            for floor in (0.0, 0.1, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6):
                cfg = AssemblyConfig(relevance_floor=floor)
                res = ask(path, stories, cfg, (400, 1000), 1, clock)
                for b in (400, 1000):
                    s = summarise(res[b], b)
                    sweep.append([f"{floor:.2f}", str(b), s[0], s[1], s[2]])
            print()
            print("# relevance floor sweep (utility packing)")
            print(
                format_table(
                    ["floor", "budget", "needed-recall", "distractor share", "tokens p50"], sweep
                )
            )


if __name__ == "__main__":
    main()
