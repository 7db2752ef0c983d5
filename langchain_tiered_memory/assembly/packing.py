"""Fill a token budget with framed memory sections, trimming to fit.

:func:`pack_by_utility` (the default) takes memories by utility per token
until the budget or the relevance floor stops it; :func:`pack_items` fills the
sections in :data:`SECTION_ORDER`. Both trim a memory that does not fit whole
when the room left is worth having, report everything left out, and count the
final text as a whole, so ``tokens <= budget`` holds exactly.

Examples:
    >>> from langchain_tiered_memory.tokens import TokenCounter
    >>> from langchain_tiered_memory.assembly.items import MemoryItem
    >>> items = [MemoryItem("semantic", "profile", "f1", "Allergic to shellfish")]
    >>> ctx = pack_items(items, budget=200, counter=TokenCounter())
    >>> ctx.tokens <= 200 and "shellfish" in ctx.text
    True
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace

from langchain_tiered_memory.assembly.framing import (
    frame_close,
    frame_memories,
    frame_open,
    make_nonce,
    render_heading,
    render_line,
    render_section,
    sanitize,
)
from langchain_tiered_memory.assembly.items import DroppedItem, MemoryContext, MemoryItem
from langchain_tiered_memory.errors import TokenBudgetError
from langchain_tiered_memory.tokens import TokenCounter

__all__ = [
    "FLOOR_REASON",
    "SECTION_ORDER",
    "check_budget",
    "pack_by_utility",
    "pack_items",
    "priority",
]

FLOOR_REASON = "below relevance floor"
"""The ``DroppedItem.reason`` of a memory left out for lack of relevance."""

SECTION_ORDER: tuple[str, ...] = (
    "warnings",
    "strategies",
    "profile",
    "knowledge",
    "experiences",
    "conversation",
)


def check_budget(budget: int) -> None:
    """Raise :class:`TokenBudgetError` unless ``budget`` is an int >= 0."""
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
        raise TokenBudgetError(f"token_budget must be a non-negative int, got {budget!r}")


def pack_items(
    items: Sequence[MemoryItem],
    *,
    budget: int,
    counter: TokenCounter,
    min_trim_tokens: int = 24,
) -> MemoryContext:
    """Pack ranked items into at most ``budget`` tokens.

    Args:
        items: Candidates; within a section, earlier (or higher ``score``) first.
        budget: Maximum tokens of the resulting text.
        counter: Token counter used for every figure.
        min_trim_tokens: Trim an item that does not fit only if at least this
            many tokens of room are left for it; otherwise drop it.

    Raises:
        TokenBudgetError: ``budget`` is negative or not an int.
    """
    check_budget(budget)
    by_section: dict[str, list[MemoryItem]] = {s: [] for s in SECTION_ORDER}
    dropped: list[DroppedItem] = []
    for item in items:
        if item.section not in by_section:
            dropped.append(DroppedItem(item, f"unknown section {item.section!r}"))
        else:
            by_section[item.section].append(item)
    ranked = [
        (item, counter.count(render_line(item.text)) + 1)
        for s in SECTION_ORDER
        for item in sorted(by_section[s], key=lambda i: -i.score)
    ]
    return _fill(ranked, dropped, budget, counter, min_trim_tokens, make_room=False)


def priority(item: MemoryItem, tokens: int, token_cost_weight: float) -> float:
    """Utility per token cost: ``utility / (1 + token_cost_weight * tokens / 100)``.

    With the default weight 0.25, a 100-token memory needs 25% more utility
    than a very short one to be taken first.
    """
    return item.score / (1.0 + token_cost_weight * tokens / 100.0)


def _make_room(
    order: Sequence[MemoryItem],
    costs: Sequence[int],
    short: int,
    gain: float,
    counter: TokenCounter,
    min_trim_tokens: int,
) -> tuple[int, MemoryItem, int] | None:
    """Trim the taken memory that loses least to free ``short`` tokens, if it loses under ``gain``.

    A memory trimmed to a share ``f`` of its tokens keeps ``sqrt(f)`` of its
    utility (its beginning carries most of it); critical and trimmed memories,
    and cuts below ``min_trim_tokens``, are never made.

    Returns:
        ``(position in order, trimmed memory, its new cost)``, or ``None``.
    """
    best: tuple[float, int, MemoryItem, int] | None = None
    prefix = counter.count("- ") + 1
    for n, (taken, old) in enumerate(zip(order, costs, strict=True)):
        keep = old - short - prefix
        if taken.critical or taken.trimmed or keep < max(min_trim_tokens, old // 2):
            continue
        text = counter.truncate(sanitize(taken.text), keep)
        new = counter.count(render_line(text)) + 1 if text else old
        if old - new < short:
            continue
        loss = taken.score * (1.0 - math.sqrt(new / old))
        if loss < gain and (best is None or loss < best[0]):
            best = (loss, n, replace(taken, text=text, trimmed=True), new)
    return None if best is None else best[1:]


def pack_by_utility(
    items: Sequence[MemoryItem],
    *,
    budget: int,
    counter: TokenCounter,
    relevance_floor: float = 0.0,
    section_floors: Mapping[str, float] | None = None,
    token_cost_weight: float = 0.25,
    min_trim_tokens: int = 24,
) -> MemoryContext:
    """Pack items by utility (``item.score``) into at most ``budget`` tokens.

    Critical items (``item.critical``) come first and skip the floor; every
    other item below ``relevance_floor`` (its ``score_breakdown["relevance"]``)
    is left out with the reason :data:`FLOOR_REASON`, even when budget is left
    (``section_floors`` replaces the floor for the sections it names).
    The rest are taken by :func:`priority` while they fit. A memory that does
    not fit whole is trimmed when at least ``min_trim_tokens`` of room are
    left, unless trimming a memory already taken to make room for it loses
    less (:func:`_make_room`). Sections only decide where each memory is shown.

    Raises:
        TokenBudgetError: ``budget`` is negative or not an int.
    """
    check_budget(budget)
    dropped: list[DroppedItem] = []
    ranked: list[tuple[float, MemoryItem, int]] = []
    floors = section_floors or {}
    for item in items:
        floor = floors.get(item.section, relevance_floor)
        if item.section not in SECTION_ORDER:
            dropped.append(DroppedItem(item, f"unknown section {item.section!r}"))
        elif not item.critical and item.score_breakdown.get("relevance", 0.0) < floor:
            dropped.append(DroppedItem(item, FLOOR_REASON))
        else:
            cost = counter.count(render_line(item.text)) + 1
            key = 2.0 + item.score if item.critical else priority(item, cost, token_cost_weight)
            ranked.append((key, item, cost))
    ranked.sort(key=lambda r: -r[0])
    taken = [(item, cost) for _, item, cost in ranked]
    return _fill(taken, dropped, budget, counter, min_trim_tokens, make_room=True)


def _fill(
    ranked: Sequence[tuple[MemoryItem, int]],
    dropped: list[DroppedItem],
    budget: int,
    counter: TokenCounter,
    min_trim_tokens: int,
    *,
    make_room: bool,
) -> MemoryContext:
    """Take ``(item, cost)`` in order while they fit, trimming (or making room, by utility)."""
    nonce = make_nonce(i.text for i, _ in ranked)
    # The frame (preamble, delimiters, joins) is paid once; a heading line when its section opens.
    frame = counter.count(frame_open(nonce)) + counter.count(frame_close(nonce)) + 2
    headings = {s: counter.count(render_heading(s)) + 1 for s in SECTION_ORDER}
    used = 0
    chosen: dict[str, list[MemoryItem]] = {}
    order: list[MemoryItem] = []
    costs: list[int] = []
    for item, cost in ranked:
        section = item.section
        opening = (0 if chosen else frame) + (0 if section in chosen else headings[section])
        if used + opening + cost <= budget:
            taken, spent = item, cost
        else:
            left = budget - used - opening
            room = left - counter.count("- ") - 1
            text = counter.truncate(sanitize(item.text), room) if room >= min_trim_tokens else ""
            spent = counter.count(render_line(text)) + 1 if text else cost
            made = None
            if make_room:
                own_loss = item.score * (1.0 - math.sqrt(spent / cost)) if text else item.score
                short = used + opening + cost - budget
                made = _make_room(order, costs, short, own_loss, counter, min_trim_tokens)
            if made is not None:  # trimming another memory loses less than trimming this one
                n, cut, cut_cost = made
                chosen[cut.section][chosen[cut.section].index(order[n])] = cut
                used -= costs[n] - cut_cost
                order[n], costs[n] = cut, cut_cost
                taken, spent = item, cost
            elif text:
                taken = replace(item, text=text, trimmed=True)
            else:
                dropped.append(DroppedItem(item, f"token budget: needs {cost} tokens, {left} left"))
                continue
        used += opening + spent
        chosen.setdefault(section, []).append(taken)
        order.append(taken)
        costs.append(spent)

    if make_room:
        for section_items in chosen.values():
            section_items.sort(key=lambda i: (not i.critical, -i.score))
    # Render, dropping from the end of ``order`` until the whole text fits.
    while True:  # line joins can tokenize differently from the parts
        shown = [(s, [i.text for i in chosen[s]]) for s in SECTION_ORDER if chosen.get(s)]
        text = frame_memories(shown, nonce=nonce)
        tokens = counter.count(text)
        if tokens <= budget:
            break
        removed = order.pop()
        chosen[removed.section].remove(removed)
        if not chosen[removed.section]:
            del chosen[removed.section]
        dropped.append(DroppedItem(removed, "token budget: did not fit after final count"))
    return MemoryContext(
        text=text,
        tokens=tokens,
        budget=budget,
        items=[i for s in SECTION_ORDER for i in chosen.get(s, [])],
        dropped=dropped,
        section_tokens={s: counter.count(render_section(s, texts)) for s, texts in shown},
    )
