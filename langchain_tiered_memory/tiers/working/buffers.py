"""Token-budgeted conversation buffers: FIFO and priority truncation.

:meth:`get_context` counts with the real offline tokenizer (per-message overhead
included), trims a message larger than the budget, keeps tool calls with their results,
and costs time in proportion to the messages it keeps or scans, never re-tokenising.

Examples:
    >>> buffer = ConversationBuffer(max_tokens=60)
    >>> buffer.add("system", "You are terse.")
    >>> for i in range(20):
    ...     buffer.add("user", f"message number {i}")
    >>> ctx = buffer.get_context()
    >>> ctx.messages[0].content, ctx.messages[-1].content, ctx.tokens <= 60
    ('You are terse.', 'message number 19', True)
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.messages import BaseMessage, message_to_dict

from langchain_tiered_memory.errors import InvalidInputError
from langchain_tiered_memory.tiers.working.messages import (
    CounterLike,
    Group,
    MessageLike,
    MessageLog,
    Priority,
    as_priority,
    as_token_counter,
    check_max_tokens,
    to_message,
)
from langchain_tiered_memory.tiers.working.select import select_groups

__all__ = [
    "ConversationBuffer",
    "PriorityTruncationBuffer",
    "SummaryStatus",
    "WorkingBuffer",
    "WorkingContext",
]

SummaryStatus = Literal["none", "ok", "failed", "timeout"]
"""State of the last summarisation: never run, succeeded, raised, or timed out."""


@dataclass
class WorkingContext:
    """What a buffer returns for the next model call.

    Attributes:
        messages: The messages to send, in conversation order.
        tokens: Their cost as one chat request (overhead and reply priming included).
        max_tokens: The budget they were fitted to; ``tokens <= max_tokens``.
        kept: Stored messages that made it into ``messages``.
        dropped: Stored messages left out to fit the budget.
        trimmed: Messages whose content was cut to fit.
        invalid: Messages left out because their tool-call group is incomplete
            (a call still waiting for results, or a result with no call).
        summary: The running summary included (sliding-window buffer only).
        summary_status: Outcome of the last summarisation.
        error: Why the last summarisation failed, if it did.
    """

    messages: list[BaseMessage]
    tokens: int
    max_tokens: int
    kept: int
    dropped: int
    trimmed: int = 0
    invalid: int = 0
    summary: str = ""
    summary_status: SummaryStatus = "none"
    error: str | None = None

    def as_dicts(self) -> list[dict[str, Any]]:
        """The messages as plain dicts ``{"role", "content", ...}``."""
        role = {"human": "user", "ai": "assistant"}
        out = []
        for message in self.messages:
            data = message_to_dict(message)["data"]
            item = {"role": role.get(message.type, message.type), "content": message.content}
            for key in ("tool_calls", "tool_call_id", "name"):
                if data.get(key):
                    item[key] = data[key]
            out.append(item)
        return out


class WorkingBuffer(ABC):
    """Base class of the buffers: storage, cached token counts, and the add API.

    Subclasses implement :meth:`get_context`. ``add`` accepts a ``BaseMessage``,
    a ``{"role", "content"}`` dict, or the ``add(role, content)`` form.

    Args:
        max_tokens: Budget of the whole context, as a chat request.
        counter: A :class:`~langchain_tiered_memory.tokens.TokenCounter` or any
            ``Callable[[str], int]``; the offline ``o200k_base`` one by default.
    """

    def __init__(self, max_tokens: int = 8000, *, counter: CounterLike | None = None) -> None:
        self.max_tokens = check_max_tokens(max_tokens)
        self.counter = as_token_counter(counter)
        self._log = MessageLog(self.counter)

    def __len__(self) -> int:
        return self._log.size

    @property
    def messages(self) -> list[BaseMessage]:
        """Every stored message (not only those that fit the budget)."""
        return self._log.messages()

    @property
    def total_tokens(self) -> int:
        """Tokens of every stored message, overhead included."""
        return self._log.tokens

    def add(
        self,
        message: MessageLike,
        content: str | None = None,
        *,
        priority: Priority | int | str | None = None,
    ) -> None:
        """Store one message: ``add(HumanMessage(...))`` or ``add("user", "text")``.

        Args:
            message: A message, a dict ``{"role", "content"}``, or a role name
                when ``content`` is given.
            content: The text, in the ``add(role, content)`` form.
            priority: Used by :class:`PriorityTruncationBuffer`; by default
                system is CRITICAL, tool calls and results HIGH, the rest MEDIUM.
        """
        self._store([self._coerce(message, content)], priority)

    def add_messages(
        self,
        messages: Iterable[MessageLike],
        *,
        priority: Priority | int | str | None = None,
    ) -> None:
        """Store several messages (same ``priority`` for all, if given)."""
        self._store([to_message(m) for m in messages], priority)

    async def aadd(
        self,
        message: MessageLike,
        content: str | None = None,
        *,
        priority: Priority | int | str | None = None,
    ) -> None:
        """Async :meth:`add` (summarising buffers call their model asynchronously)."""
        await self._astore([self._coerce(message, content)], priority)

    async def aadd_messages(
        self,
        messages: Iterable[MessageLike],
        *,
        priority: Priority | int | str | None = None,
    ) -> None:
        """Async :meth:`add_messages`."""
        await self._astore([to_message(m) for m in messages], priority)

    def clear(self) -> None:
        """Forget every stored message."""
        self._log = MessageLog(self.counter)

    @abstractmethod
    def get_context(self) -> WorkingContext:
        """The messages to send next, fitted to ``max_tokens``."""

    async def aget_context(self) -> WorkingContext:
        """Async :meth:`get_context` (no I/O: same result)."""
        return self.get_context()

    def get_messages(self) -> list[BaseMessage]:
        """Shortcut for ``get_context().messages``."""
        return self.get_context().messages

    # Hooks for subclasses -------------------------------------------------

    @staticmethod
    def _coerce(message: MessageLike, content: str | None) -> BaseMessage:
        if content is not None:
            if not isinstance(message, str):
                raise InvalidInputError(
                    "add(role, content) needs a role string as first argument, got "
                    f"{type(message).__name__}: pass either a message or (role, content)"
                )
            return to_message({"role": message, "content": content})
        return to_message(message)

    def _store(
        self, messages: Sequence[BaseMessage], priority: Priority | int | str | None
    ) -> None:
        prio = None if priority is None else as_priority(priority)
        for message in messages:
            self._log.add(message, prio)

    async def _astore(
        self, messages: Sequence[BaseMessage], priority: Priority | int | str | None
    ) -> None:
        self._store(messages, priority)

    def _fit(
        self,
        candidates: Iterable[Group],
        *,
        contiguous: bool,
        extra_system: Group | None = None,
        **info: Any,
    ) -> WorkingContext:
        """Select the system groups (and ``extra_system``), then ``candidates``, within budget."""
        systems = [*self._log.systems, extra_system] if extra_system else self._log.systems
        selection = select_groups(
            systems, candidates, self.max_tokens, self.counter, contiguous=contiguous
        )
        kept = sum(len(g.messages) for g in selection.groups if g.kind != "summary")
        return WorkingContext(
            messages=selection.messages,
            tokens=selection.tokens,
            max_tokens=self.max_tokens,
            kept=kept,
            dropped=self._log.size - kept,
            trimmed=selection.trimmed,
            invalid=selection.invalid,
            **info,
        )


class ConversationBuffer(WorkingBuffer):
    """Full conversation history with FIFO truncation that keeps system messages.

    The context is the system messages plus the longest run of most recent
    messages that fits. The newest message is always included (trimmed if it
    alone exceeds the budget). Costs O(messages kept): counts are cached.

    Examples:
        >>> from langchain_core.messages import HumanMessage
        >>> buffer = ConversationBuffer(max_tokens=40)
        >>> buffer.add_messages([HumanMessage("first"), HumanMessage("second")])
        >>> [m.content for m in buffer.get_messages()]
        ['first', 'second']
    """

    def get_context(self) -> WorkingContext:
        """The system messages and the most recent messages that fit ``max_tokens``."""
        return self._fit(reversed(self._log.chat), contiguous=True)


def _ranked(log: MessageLog) -> Iterator[Group]:
    """Newest complete group first (pinned), then by priority, newest first within one (lazily)."""
    newest = next((g for g in reversed(log.chat) if g.complete), None)
    if newest is not None:
        yield newest
    for level in sorted(Priority, reverse=True):
        for group in reversed(log.by_priority[level]):
            if group is not newest:
                yield group


class PriorityTruncationBuffer(WorkingBuffer):
    """Token-aware buffer that drops low-priority messages first, keeping order.

    When over budget, LOW groups go first, then MEDIUM, then HIGH, then
    CRITICAL; within one priority the oldest go first. A group that does not
    fit is skipped and smaller ones may still fill the room. System messages
    and the newest message are always kept (trimmed if needed). The kept
    messages stay in their original order.

    Examples:
        >>> buffer = PriorityTruncationBuffer(max_tokens=30)
        >>> buffer.add("user", "I am allergic to shellfish.", priority="critical")
        >>> buffer.add("assistant", "Noted!", priority=Priority.LOW)
        >>> buffer.add("user", "Thanks, what should I cook tonight?")
        >>> [m.content for m in buffer.get_messages()]
        ['I am allergic to shellfish.', 'Thanks, what should I cook tonight?']
    """

    def get_context(self) -> WorkingContext:
        """The highest-priority messages that fit ``max_tokens``, in original order."""
        return self._fit(_ranked(self._log), contiguous=False)
