"""Fill a token budget with framed memory sections, by priority, trimming to fit.

Sections are filled in priority order (tool warnings, strategies, the user's
profile, query-relevant knowledge, past experiences). An item that does not fit
whole is trimmed to the room left when that room is worth having, instead of
skipping the whole section; everything left out is reported.
The final text is counted once more as a whole, so ``tokens <= budget`` holds
exactly, whatever the tokenizer does at line joins.

Example:
    >>> from langchain_tiered_memory.tokens import TokenCounter
    >>> from langchain_tiered_memory.assembly.items import MemoryItem
    >>> items = [MemoryItem("semantic", "profile", "f1", "Allergic to shellfish")]
    >>> ctx = pack_items(items, budget=200, counter=TokenCounter())
    >>> ctx.tokens <= 200 and "shellfish" in ctx.text
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from langchain_tiered_memory.assembly.framing import (
    PREAMBLE,
    frame_close,
    frame_open,
    make_nonce,
    render_line,
    sanitize,
)
from langchain_tiered_memory.assembly.items import DroppedItem, MemoryContext, MemoryItem
from langchain_tiered_memory.errors import TokenBudgetError
from langchain_tiered_memory.tokens import TokenCounter

__all__ = ["SECTION_ORDER", "pack_items"]

SECTION_ORDER: tuple[str, ...] = (
    "warnings",
    "strategies",
    "profile",
    "knowledge",
    "experiences",
    "conversation",
)


def _render(chosen: dict[str, list[MemoryItem]], nonce: str) -> tuple[str, dict[str, str]]:
    blocks: dict[str, str] = {}
    for section in SECTION_ORDER:
        items = chosen.get(section)
        if items:
            lines = [frame_open(section, nonce), *(render_line(i.text) for i in items)]
            lines.append(frame_close(nonce))
            blocks[section] = "\n".join(lines)
    if not blocks:
        return "", blocks
    return PREAMBLE + "\n\n" + "\n\n".join(blocks.values()), blocks


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
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
        raise TokenBudgetError(f"token_budget must be a non-negative int, got {budget!r}")
    by_section: dict[str, list[MemoryItem]] = {s: [] for s in SECTION_ORDER}
    dropped: list[DroppedItem] = []
    for item in items:
        if item.section not in by_section:
            dropped.append(DroppedItem(item, f"unknown section {item.section!r}"))
        else:
            by_section[item.section].append(item)
    for section_items in by_section.values():
        section_items.sort(key=lambda i: -i.score)

    nonce = make_nonce(i.text for s in SECTION_ORDER for i in by_section[s])
    used = counter.count(PREAMBLE) + 1
    chosen: dict[str, list[MemoryItem]] = {}
    for section in SECTION_ORDER:
        overhead = counter.count(frame_open(section, nonce)) + counter.count(frame_close(nonce)) + 3
        for item in by_section[section]:
            opening = 0 if section in chosen else overhead
            cost = counter.count(render_line(item.text)) + 1
            if used + opening + cost <= budget:
                chosen.setdefault(section, []).append(item)
                used += opening + cost
                continue
            room = budget - used - opening - counter.count("- ") - 1
            if room >= min_trim_tokens:
                text = counter.truncate(sanitize(item.text), room)
                if text:
                    cut = replace(item, text=text, trimmed=True)
                    chosen.setdefault(section, []).append(cut)
                    used += opening + counter.count(render_line(text)) + 1
                    continue
            dropped.append(
                DroppedItem(
                    item, f"token budget: needs {cost} tokens, {budget - used - opening} left"
                )
            )

    text, blocks = _render(chosen, nonce)
    tokens = counter.count(text)
    # Line joins can tokenize differently from the parts: drop from the end until it fits.
    while tokens > budget:
        last = next(s for s in reversed(SECTION_ORDER) if chosen.get(s))
        removed = chosen[last].pop()
        if not chosen[last]:
            del chosen[last]
        dropped.append(DroppedItem(removed, "token budget: did not fit after final count"))
        text, blocks = _render(chosen, nonce)
        tokens = counter.count(text)

    used_items = [i for s in SECTION_ORDER for i in chosen.get(s, [])]
    section_tokens = {s: counter.count(b) for s, b in blocks.items()}
    return MemoryContext(
        text=text,
        tokens=tokens,
        budget=budget,
        items=used_items,
        dropped=dropped,
        section_tokens=section_tokens,
    )
