"""Choosing which groups of a conversation fit a token budget (pure functions).

One routine (:func:`select_groups`) serves every buffer; incomplete tool-call groups and
orphan tool results are never returned, and the result never exceeds the budget.

Examples:
    >>> from langchain_core.messages import HumanMessage, SystemMessage
    >>> from langchain_tiered_memory.tiers.working.messages import MessageLog, as_token_counter
    >>> counter = as_token_counter(None)
    >>> log = MessageLog(counter)
    >>> log.extend([SystemMessage("Be brief."), HumanMessage("one"), HumanMessage("two")])
    >>> sel = select_groups(log.systems, list(reversed(log.chat)), 17, counter, contiguous=True)
    >>> [m.content for m in sel.messages], sel.tokens <= 17
    (['Be brief.', 'two'], True)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from langchain_core.messages import BaseMessage

from langchain_tiered_memory.tiers.working.messages import Group
from langchain_tiered_memory.tokens import (
    MESSAGE_OVERHEAD_TOKENS,
    REPLY_PRIMING_TOKENS,
    TokenCounter,
    message_text,
)

__all__ = ["Selection", "select_groups", "trim_group"]

_MIN_MESSAGE_TOKENS = MESSAGE_OVERHEAD_TOKENS + 1


@dataclass
class Selection:
    """The groups chosen for a context.

    Attributes:
        groups: Kept groups in conversation order.
        tokens: Tokens of the request (reply priming included); never above the budget.
        trimmed: Messages whose content was cut to fit.
        invalid: Messages skipped because their tool-call group was incomplete.
    """

    groups: list[Group]
    tokens: int
    trimmed: int
    invalid: int

    @property
    def messages(self) -> list[BaseMessage]:
        """The kept messages, in conversation order."""
        return [m for g in self.groups for m in g.messages]


def trim_group(group: Group, room: int, counter: TokenCounter) -> Group | None:
    """``group`` if it fits ``room``, a copy with its longest contents cut, or ``None``.

    ``None`` when even empty contents do not fit (tool-call arguments and overhead stay).
    """
    if group.total <= room:
        return group
    if room < _MIN_MESSAGE_TOKENS * len(group.messages):
        return None
    messages = list(group.messages)
    tokens = list(group.tokens)
    texts = [message_text(m) for m in messages]
    sizes = [counter.count(t) for t in texts]
    excess = group.total - room
    for i in sorted(range(len(messages)), key=lambda k: -sizes[k]):
        if excess <= 0:
            break
        if sizes[i] == 0:
            continue
        cut = counter.truncate(texts[i], max(0, sizes[i] - excess))
        messages[i] = messages[i].model_copy(update={"content": cut})
        new_tokens = counter.count_message(messages[i])
        excess -= tokens[i] - new_tokens
        tokens[i] = new_tokens
    if excess > 0:
        return None
    return replace(
        group, messages=messages, tokens=tokens, pending=set(group.pending), trimmed=True
    )


def _cut(original: Group, fitted: Group) -> int:
    """How many messages trimming changed."""
    return sum(a is not b for a, b in zip(original.messages, fitted.messages, strict=True))


def select_groups(
    systems: Sequence[Group],
    candidates: Iterable[Group],
    max_tokens: int,
    counter: TokenCounter,
    *,
    contiguous: bool,
) -> Selection:
    """Pick groups under ``max_tokens`` (reply priming included).

    Args:
        systems: System groups (and the summary), kept first, in order; one that
            does not fit is trimmed into the space left, later ones are dropped.
        candidates: Conversation groups in the order they should be considered;
            the first complete one is pinned (trimmed rather than dropped).
        max_tokens: The budget for the whole request.
        counter: Used only to trim.
        contiguous: Stop at the first candidate that does not fit (FIFO) instead
            of skipping it (priority).

    Returns:
        The selection; ``selection.tokens <= max_tokens`` always.
    """
    room = max_tokens - REPLY_PRIMING_TOKENS
    kept: list[Group] = []
    trimmed = invalid = 0
    for group in systems:
        fitted = trim_group(group, room, counter)
        if fitted is None:
            continue
        kept.append(fitted)
        room -= fitted.total
        trimmed += _cut(group, fitted)
    pinned = False
    for group in candidates:
        if room < _MIN_MESSAGE_TOKENS:
            break
        if not group.complete:
            invalid += len(group.messages)
            continue
        fitted = group if group.total <= room else None
        if not pinned:
            pinned = True
            fitted = trim_group(group, room, counter)
        if fitted is not None:
            kept.append(fitted)
            room -= fitted.total
            trimmed += _cut(group, fitted)
        elif contiguous:
            break
    # The summary goes just before the conversation message it replaces the past of.
    kept.sort(key=lambda g: (g.start, g.kind != "summary"))
    return Selection(kept, max_tokens - room, trimmed, invalid)
