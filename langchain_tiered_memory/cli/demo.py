"""The demo: three stories, two sessions each, with and without memory (docs/how-to/cli.md).

:func:`run_demo` replays each story (session 1, consolidation, session 2 with the
user's memory and with an empty one); :func:`render_story` prints it. A
:class:`SessionRunner` runs each turn: :class:`AgentRunner` through the LangGraph
memory agent.

Examples:
    >>> import tempfile
    >>> from langchain_tiered_memory import TieredMemory
    >>> from langchain_tiered_memory.testing.fakes import HashingEmbeddings
    >>> from langchain_tiered_memory.testing.offline_model import OfflineChatModel
    >>> with TieredMemory.open(tempfile.mkdtemp(), embeddings=HashingEmbeddings()) as memory:
    ...     results = run_demo(memory, AgentRunner(OfflineChatModel()))
    >>> first = results[0]
    >>> "shellfish" in first.with_memory.answer, "shellfish" in first.without_memory.answer
    (True, False)
"""

from __future__ import annotations

import shutil
import textwrap
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import zip_longest
from typing import Any, Protocol

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage
from langgraph.store.memory import InMemoryStore

from langchain_tiered_memory.assembly.framing import section_blocks
from langchain_tiered_memory.assembly.items import MemoryContext, MemoryItem
from langchain_tiered_memory.consolidation.consolidator import ConsolidationReport
from langchain_tiered_memory.memory import TieredMemory
from langchain_tiered_memory.tiers.episodic.models import Episode, Outcome, TrajectoryStep
from langchain_tiered_memory.tiers.procedural.models import ToolUsageRecord

__all__ = [
    "STORIES",
    "AgentRunner",
    "SessionRunner",
    "Story",
    "StoryResult",
    "Turn",
    "context_from_state",
    "create_runner",
    "empty_memory_like",
    "render_story",
    "render_table",
    "run_demo",
    "run_story",
]


# -- text tables -----------------------------------------------------------------------


def _wrap_cell(text: str, width: int) -> list[str]:
    lines: list[str] = []
    for paragraph in str(text).splitlines() or [""]:
        indent = " " * (len(paragraph) - len(paragraph.lstrip(" ")))
        wrapped = textwrap.wrap(
            paragraph,
            width=max(width, 1),
            subsequent_indent=indent + ("  " if paragraph.lstrip().startswith("- ") else ""),
            break_long_words=True,
            break_on_hyphens=False,
        )
        lines.extend(wrapped or [""])
    return lines


def render_table(
    headers: Sequence[str], rows: Sequence[Sequence[object]], *, width: int | None = None
) -> str:
    """A plain-text table whose long cells wrap to fit ``width`` (default: the terminal).

    Examples:
        >>> print(render_table(["tier", "items"], [["semantic", 2], ["episodic", 1]]))
        tier     | items
        ---------+------
        semantic | 2
        episodic | 1
    """
    total = width or terminal_width()
    cells = [[str(c) for c in row] for row in rows]
    widths = [
        max([len(h)] + [max(map(len, str(r[i]).splitlines() or [""])) for r in cells])
        for i, h in enumerate(headers)
    ]
    while sum(widths) > total - 3 * (len(headers) - 1) and max(widths) > 8:
        widths[widths.index(max(widths))] -= 1  # shrink the widest column until the row fits
    out = [" | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    out.append("-+-".join("-" * w for w in widths))
    for row in cells:
        wrapped = [_wrap_cell(c, w) for c, w in zip(row, widths, strict=True)]
        for line in zip_longest(*wrapped, fillvalue=""):
            out.append(" | ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip())
    return "\n".join(out)


def terminal_width() -> int:
    """The terminal's width in columns (100 when unknown), at least 60."""
    return max(60, shutil.get_terminal_size((100, 24)).columns)


# -- stories -----------------------------------------------------------------------------


def _deployment_episode() -> Episode:
    steps = [
        (
            "A bad rollout? Restart it.",
            "tool_call: kubectl_rollout_restart(deployment=checkout)",
            "restart failed: pods back in CrashLoopBackOff after 40s",
        ),
        (
            "Maybe the pods run out of memory.",
            "tool_call: kubectl_set_resources(deployment=checkout, memory=2Gi)",
            "failed: still CrashLoopBackOff, and no OOMKilled events",
        ),
        (
            "Roll back to the previous release.",
            "tool_call: helm_rollback(release=checkout, revision=41)",
            "rollback failed: another operation is in progress",
        ),
        (
            "Read what the container says before it dies.",
            "tool_call: kubectl_logs(pod=checkout-7f9c)",
            "DATABASE_URL is not set: secret checkout-db is not mounted by release 2.3",
        ),
        (
            "Mount the secret again.",
            "tool_call: kubectl_apply(file=checkout-db-secret.yaml)",
            "ok: secret mounted, 3/3 pods ready",
        ),
    ]
    return Episode(
        task_description=("Fix the checkout service deployment: pods crash-loop after release 2.3"),
        outcome=Outcome.SUCCESS,
        trajectory=[TrajectoryStep(thought=t, action=a, observation=o) for t, a, o in steps],
        reflection=(
            "Read the pod logs first: the crash loop came from the DATABASE_URL secret "
            "missing from the release; restarting, raising memory limits and helm rollback "
            "wasted two hours."
        ),
        duration_seconds=2 * 3600,
        importance=0.9,
        tags=["deployment", "checkout", "kubernetes"],
        session_id="session-1",
    )


def _endpoint_tool_uses() -> list[ToolUsageRecord]:
    context = "Look up the status of a customer's order"
    return [
        ToolUsageRecord(
            tool_name="orders_v1",
            parameters={"order_id": "A-1001"},
            context=context,
            success=False,
            execution_time_ms=180,
            error_message="410 Gone: use orders_v2",
            hint="call orders_v2 with the same order_id; the status is under data.status",
        ),
        ToolUsageRecord(
            tool_name="orders_v2",
            parameters={"order_id": "A-1001"},
            context=context,
            success=True,
            execution_time_ms=95,
        ),
    ]


@dataclass(frozen=True)
class Story:
    """One of the demo's stories, as two sessions of one user.

    Attributes:
        key: Short name (``allergy``, ``deployment``, ``deprecated-endpoint``).
        title: What the story is about.
        tier: The memory tier that carries the lesson.
        user_id: Whose memory it is.
        without_memory: What goes wrong without memory.
        session2_message: The follow-up in session 2.
        session1_message: What the user says in session 1, if anything.
        episode: Makes the episode session 1 records, if any.
        tool_uses: Make the tool uses session 1 records, if any.
    """

    key: str
    title: str
    tier: str
    user_id: str
    without_memory: str
    session2_message: str
    session1_message: str | None = None
    episode: Callable[[], Episode] | None = None
    tool_uses: Callable[[], list[ToolUsageRecord]] | None = None


STORIES: tuple[Story, ...] = (
    Story(
        key="allergy",
        title="The shellfish allergy",
        tier="semantic",
        user_id="alice",
        without_memory="no memory of the allergy; may recommend a seafood restaurant",
        session1_message="Hi! Before we plan anything: I'm allergic to shellfish.",
        session2_message="Can you recommend a restaurant for dinner tonight?",
    ),
    Story(
        key="deployment",
        title="The two-hour deployment debugging",
        tier="episodic",
        user_id="dana",
        without_memory="starts from scratch and repeats the failed approaches",
        episode=_deployment_episode,
        session2_message=(
            "The checkout deployment is crash-looping again after today's release. "
            "Where do I start?"
        ),
    ),
    Story(
        key="deprecated-endpoint",
        title="The deprecated endpoint",
        tier="procedural",
        user_id="sam",
        without_memory="calls the deprecated endpoint again: same error, same debugging",
        tool_uses=_endpoint_tool_uses,
        session2_message="Get the current status of order A-2002 for the customer.",
    ),
)
"""The three stories, in the order the design document tells them."""


# -- running a turn ------------------------------------------------------------------------


@dataclass
class Turn:
    """One turn of a session: what memory supplied and what the model answered.

    Attributes:
        answer: The model's reply.
        context: The memory context the model was given.
    """

    answer: str
    context: MemoryContext


class SessionRunner(Protocol):
    """Runs one user turn against a memory and returns the answer and its context."""

    def turn(self, memory: TieredMemory, user_id: str, message: str, *, session_id: str) -> Turn:
        """Answer ``message`` for ``user_id`` in session ``session_id``, and write back."""
        ...


class AgentRunner:
    """A turn through the LangGraph memory agent (``agent.create_memory_agent``).

    One compiled graph per memory; each session is its own thread, so what
    session 2 knows of session 1 comes from long-term memory only. The graph
    writes back after every turn (reflect, writeback); the runner waits for the
    writes so the next session sees them.

    Args:
        model: Any chat model.
        token_budget: Tokens of memory context per turn.
    """

    def __init__(self, model: BaseChatModel, *, token_budget: int = 1000) -> None:
        self.model = model
        self.token_budget = token_budget
        self._graphs: dict[TieredMemory, Any] = {}

    def graph(self, memory: TieredMemory) -> Any:
        """The compiled memory agent over ``memory`` (built once)."""
        if memory not in self._graphs:
            from langchain_tiered_memory.integrations.agent import create_memory_agent

            self._graphs[memory] = create_memory_agent(
                self.model, memory=memory, token_budget=self.token_budget, consolidate_every=None
            )
        return self._graphs[memory]

    def turn(self, memory: TieredMemory, user_id: str, message: str, *, session_id: str) -> Turn:
        """Run one turn of the agent graph for ``user_id`` in thread ``user_id/session_id``."""
        state = self.graph(memory).invoke(
            {"messages": [HumanMessage(message)]},
            {"configurable": {"thread_id": f"{user_id}/{session_id}"}},
            context={"user_id": user_id},
        )
        memory.flush()
        answer = str(state["messages"][-1].text).strip()
        return Turn(answer=answer, context=context_from_state(state, self.token_budget, memory))


def context_from_state(
    state: Mapping[str, Any], budget: int, memory: TieredMemory
) -> MemoryContext:
    """The :class:`MemoryContext` the agent's ``retrieve`` node left in the graph state."""
    text = str(state.get("memory_context") or "")
    fields = ("tier", "section", "id", "text", "score")
    items = [MemoryItem(**{f: d[f] for f in fields}) for d in state.get("memory_items") or []]
    sections = {s: memory.token_counter.count(b) for s, b in section_blocks(text).items()}
    return MemoryContext(
        text=text,
        tokens=int(state.get("memory_tokens") or 0),
        budget=budget,
        items=items,
        section_tokens=sections,
    )


def create_runner(model: BaseChatModel, *, token_budget: int = 1000) -> SessionRunner:
    """The runner the demo uses: the LangGraph memory agent over ``model``."""
    return AgentRunner(model, token_budget=token_budget)


# -- running a story -------------------------------------------------------------------------


@dataclass
class StoryResult:
    """What happened in one story.

    Attributes:
        story: The story.
        session1: Lines describing session 1 (what was said, done and written).
        consolidation: The consolidation pass run between the sessions.
        with_memory: Session 2 with the user's memory.
        without_memory: Session 2 with an empty memory.
    """

    story: Story
    session1: list[str] = field(default_factory=list)
    consolidation: ConsolidationReport | None = None
    with_memory: Turn | None = None
    without_memory: Turn | None = None


def empty_memory_like(memory: TieredMemory) -> TieredMemory:
    """A fresh, empty in-memory :class:`TieredMemory` with the same embeddings and tokenizer."""
    embeddings = memory.embeddings
    if embeddings is None:
        return TieredMemory(InMemoryStore(), token_counter=memory.token_counter)
    dims = len(embeddings.embed_query("dimension probe"))
    store = InMemoryStore(index={"dims": dims, "embed": embeddings, "fields": ["text"]})
    return TieredMemory(store, token_counter=memory.token_counter)


def _session1(memory: TieredMemory, runner: SessionRunner, story: Story) -> list[str]:
    user = memory.for_user(story.user_id)
    lines: list[str] = []
    if story.session1_message is not None:
        turn = runner.turn(memory, story.user_id, story.session1_message, session_id="session-1")
        lines += [f"user: {story.session1_message}", f"assistant: {turn.answer}"]
    if story.episode is not None:
        episode = story.episode()
        lines.append(f"task: {episode.task_description}")
        for n, step in enumerate(episode.trajectory, 1):
            lines += [f"  {n}. {step.action}", f"     -> {step.observation}"]
        hours = episode.duration_seconds / 3600
        lines += [
            f"outcome: {episode.outcome.value} after {hours:g} h",
            f"reflection: {episode.reflection}",
        ]
        user.queue_episode(episode)
    for record in story.tool_uses() if story.tool_uses is not None else []:
        status = "ok" if record.success else f"failed: {record.error_message}"
        args = ", ".join(f"{k}={v!r}" for k, v in record.parameters.items())
        lines.append(f"tool call {record.tool_name}({args}) -> {status}")
        if record.hint:
            lines.append(f"  found: {record.hint}")
        user.queue_tool_use(record)
    return lines


def run_story(
    memory: TieredMemory,
    runner: SessionRunner,
    story: Story,
    *,
    empty: TieredMemory | None = None,
    consolidate: bool = True,
) -> StoryResult:
    """Replay one story: session 1, write-back and consolidation, session 2 with and without.

    Args:
        memory: The memory both sessions share.
        runner: Runs each turn.
        story: The story.
        empty: The empty memory of the comparison run (default: a fresh one).
        consolidate: Run the user's consolidation pass between the sessions.
    """
    result = StoryResult(story)
    result.session1 = _session1(memory, runner, story)
    memory.flush()
    if consolidate:
        result.consolidation = memory.for_user(story.user_id).consolidate()
    question, uid = story.session2_message, story.user_id
    result.with_memory = runner.turn(memory, uid, question, session_id="session-2")
    blank = empty if empty is not None else empty_memory_like(memory)
    result.without_memory = runner.turn(blank, uid, question, session_id="session-2")
    return result


def run_demo(
    memory: TieredMemory,
    runner: SessionRunner,
    *,
    stories: Sequence[Story] = STORIES,
    consolidate: bool = True,
) -> list[StoryResult]:
    """Replay every story on ``memory`` (see :func:`run_story`)."""
    empty = empty_memory_like(memory)
    return [run_story(memory, runner, s, empty=empty, consolidate=consolidate) for s in stories]


# -- rendering ----------------------------------------------------------------------------------


def _context_table(context: MemoryContext, width: int) -> str:
    counts = Counter(item.section for item in context.items)
    rows: list[list[object]] = [
        [section, tokens, counts.get(section, 0)]  # type: ignore[call-overload]
        for section, tokens in context.section_tokens.items()
    ]
    rows.append(
        ["total (with preamble)", f"{context.tokens} of {context.budget}", len(context.items)]
    )
    return render_table(["section", "tokens", "memories"], rows, width=width)


def _consolidation_line(report: ConsolidationReport) -> str:
    if not (report.episodes_processed or report.facts_merged or report.forgotten):
        return "consolidation between sessions: nothing to consolidate"
    return (
        f"consolidation between sessions: {report.episodes_processed} episode(s) processed, "
        f"{report.facts_extracted} fact(s) extracted, {report.tool_uses_recorded} tool use(s) "
        f"learned, {report.facts_merged} merged, {len(report.forgotten)} forgotten"
    )


def render_story(result: StoryResult, index: int, total: int, *, width: int | None = None) -> str:
    """The story as text: session 1, the context session 2 got, both answers side by side.

    Every line fits in ``width`` columns (default: the terminal's width).
    """
    width = width or terminal_width()
    story = result.story
    text = [
        f"Without memory: {story.without_memory}.",
        "",
        f"-- Session 1 (user {story.user_id})",
        *(textwrap.indent(line, "  ") for line in result.session1),
    ]
    if result.consolidation is not None:
        text += ["", _consolidation_line(result.consolidation)]
    text += ["", f"-- Session 2 (user {story.user_id})", f"  user: {story.session2_message}", ""]
    out = [f"== Story {index} of {total}: {story.title} ({story.tier} memory) ".ljust(width, "=")]
    out += [*_wrap_cell("\n".join(text), width), ""]
    with_memory, without_memory = result.with_memory, result.without_memory
    if with_memory is not None:
        ctx = with_memory.context
        out.append(f"What session 2 knows from memory ({ctx.tokens} of {ctx.budget} tokens):")
        out += [_context_table(ctx, width), ""]
        out += _wrap_cell(ctx.text, width) if ctx.text else ["(no memory context)"]
        out.append("")
    turns = [(label, t) for label, t in (("WITH", with_memory), ("WITHOUT", without_memory)) if t]
    if turns:
        headers = [f"{label} memory ({t.context.tokens} tokens of context)" for label, t in turns]
        out.append(render_table(headers, [[t.answer for _, t in turns]], width=width))
    return "\n".join(out) + "\n"
