"""The context-window layout: a token budget split into sections.

Sections, in layout order, with their share of an 8000-token window::

    system_prompt 500 | running_summary 800 | retrieved_memories 2000 |
    tool_definitions 800 | recent_messages 3000 | current_query 200 | output_reserve 700

Other totals scale these shares. Sections are filled in :data:`FILL_ORDER` (the query
before the recent messages); what one leaves unused flows to the next, the output
reserve gets the rest, and the input never exceeds ``total - output_reserve``.

Examples:
    >>> budget = ContextWindowBudget(total=8000)
    >>> layout = budget.fit(system_prompt="You are helpful.", current_query="Hi!")
    >>> layout.sections["system_prompt"].used <= 500, layout.tokens + layout.max_output_tokens
    (True, 8000)
    >>> ContextWindowBudget(total=16000).allocations()["recent_messages"]
    6000
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_core.utils.function_calling import convert_to_openai_tool

from langchain_tiered_memory.errors import TokenBudgetError
from langchain_tiered_memory.tiers.working.messages import (
    CounterLike,
    Group,
    MessageLike,
    MessageLog,
    Priority,
    as_token_counter,
    check_max_tokens,
    summary_message,
    to_message,
)
from langchain_tiered_memory.tiers.working.select import select_groups, trim_group
from langchain_tiered_memory.tokens import REPLY_PRIMING_TOKENS, TokenCounter

__all__ = [
    "DEFAULT_SECTION_TOKENS",
    "FILL_ORDER",
    "SECTIONS",
    "ContextLayout",
    "ContextWindowBudget",
    "SectionUsage",
]

FILL_ORDER = (
    "system_prompt",
    "running_summary",
    "retrieved_memories",
    "tool_definitions",
    "current_query",
    "recent_messages",
    "output_reserve",
)
"""The order sections are filled in; unused tokens flow to the next one."""

DEFAULT_SECTION_TOKENS = {
    "system_prompt": 500,
    "running_summary": 800,
    "retrieved_memories": 2000,
    "tool_definitions": 800,
    "recent_messages": 3000,
    "current_query": 200,
    "output_reserve": 700,
}
"""The default layout of an 8000-token window, as the memory-architecture design draws it."""

SECTIONS = tuple(DEFAULT_SECTION_TOKENS)
"""Section names in layout order (top of the window to bottom)."""

_DEFAULT_TOTAL = sum(DEFAULT_SECTION_TOKENS.values())
MEMORIES_HEADER = "Relevant memories:"


@dataclass(frozen=True)
class SectionUsage:
    """How one section of the window was used.

    Attributes:
        name: The section.
        allocated: Its own share of the budget.
        available: Share plus what earlier sections left unused.
        used: Tokens it took (message overhead included).
        dropped: Items left out (memories, messages, or 1 for a whole text).
        trimmed: Its content was cut to fit.
    """

    name: str
    allocated: int
    available: int
    used: int
    dropped: int = 0
    trimmed: bool = False


@dataclass
class ContextLayout:
    """A filled context window.

    Attributes:
        messages: What to send: system prompt, summary, memories, recent
            messages, current query (empty sections are left out).
        sections: Usage per section, in layout order.
        tokens: Input tokens: the messages as one request plus tool definitions.
        max_output_tokens: What is left for the reply (the output reserve plus
            anything unused); ``tokens + max_output_tokens == total``.
        total: The whole window.
    """

    messages: list[BaseMessage]
    sections: dict[str, SectionUsage]
    tokens: int
    max_output_tokens: int
    total: int


@dataclass(frozen=True)
class ContextWindowBudget:
    """A context-window budget split into sections.

    Sections left as ``None`` get their default share of ``total`` (scaled from
    the default 8000-token layout); rounding remainders and anything not
    allocated go to ``recent_messages``.

    Args:
        total: The model's context window, in tokens.
        system_prompt: Tokens for the system prompt (includes the 3 tokens
            every request costs to prime the reply).
        running_summary: Tokens for the running summary.
        retrieved_memories: Tokens for episodic and semantic memories.
        tool_definitions: Tokens for tool schemas (never trimmed).
        recent_messages: Tokens for verbatim recent messages.
        current_query: Tokens for the user's current message.
        output_reserve: Tokens kept free for the reply.

    Raises:
        TokenBudgetError: A section is negative, or the sections exceed ``total``.

    Examples:
        >>> ContextWindowBudget(total=4000, tool_definitions=0).allocations()["recent_messages"]
        1900
    """

    total: int = 8000
    system_prompt: int | None = None
    running_summary: int | None = None
    retrieved_memories: int | None = None
    tool_definitions: int | None = None
    recent_messages: int | None = None
    current_query: int | None = None
    output_reserve: int | None = None

    def __post_init__(self) -> None:
        check_max_tokens(self.total, what="total")
        for f in fields(self):
            value = getattr(self, f.name)
            if value is not None and (not isinstance(value, int) or value < 0):
                raise TokenBudgetError(f"section {f.name} must be an int >= 0, got {value!r}")
        self.allocations()  # validates the sum

    def allocations(self) -> dict[str, int]:
        """Tokens allocated to each section, in layout order; they sum to ``total``."""
        alloc: dict[str, int] = {}
        for name, default in DEFAULT_SECTION_TOKENS.items():
            explicit = getattr(self, name)
            alloc[name] = default * self.total // _DEFAULT_TOTAL if explicit is None else explicit
        spare = self.total - sum(alloc.values())
        if spare < 0:
            raise TokenBudgetError(
                f"the sections add up to {sum(alloc.values())} tokens, more than total="
                f"{self.total}: lower some sections or raise total"
            )
        alloc["recent_messages"] += spare
        return alloc

    def fit(
        self,
        *,
        system_prompt: str | BaseMessage | None = None,
        running_summary: str = "",
        retrieved_memories: str | Sequence[str] = (),
        tool_definitions: Sequence[Any] = (),
        recent_messages: Sequence[MessageLike] = (),
        current_query: MessageLike | None = None,
        counter: CounterLike | None = None,
    ) -> ContextLayout:
        """Fill the window; every section is trimmed or thinned to what it may use.

        Args:
            system_prompt: The system prompt (trimmed if too long).
            running_summary: The conversation summary (trimmed if too long).
            retrieved_memories: Memory texts, most important first; kept while
                they fit, the first one that does not is trimmed, the rest dropped.
            tool_definitions: Tools (``BaseTool``, functions, or OpenAI tool
                dicts), counted by their JSON schema.
            recent_messages: The conversation so far, oldest first (FIFO-fitted,
                tool-call groups kept whole).
            current_query: The user's current message (trimmed if too long).
            counter: Token counter or ``Callable[[str], int]``.

        Raises:
            TokenBudgetError: Tool definitions exceed the room they may use
                (schemas cannot be trimmed).
        """
        filler = _Filler(as_token_counter(counter), self.allocations())
        filler.text("system_prompt", system_prompt, SystemMessage)
        filler.text("running_summary", running_summary or None, summary_message)
        filler.memories(retrieved_memories)
        filler.tools(tool_definitions)
        filler.text("current_query", current_query, HumanMessage)
        filler.recent(recent_messages)
        return filler.finish(self.total)


class _Filler:
    """Fills sections in FILL_ORDER, carrying unused tokens forward."""

    def __init__(self, counter: TokenCounter, alloc: dict[str, int]) -> None:
        self.counter = counter
        self.alloc = alloc
        self.carry = -REPLY_PRIMING_TOKENS
        self.usage: dict[str, SectionUsage] = {}
        self.parts: dict[str, list[BaseMessage]] = {}

    def _record(
        self,
        name: str,
        used: int = 0,
        messages: Sequence[BaseMessage] = (),
        dropped: int = 0,
        trimmed: bool = False,
    ) -> None:
        available = self.alloc[name] + self.carry
        self.usage[name] = SectionUsage(name, self.alloc[name], available, used, dropped, trimmed)
        self.parts[name] = list(messages)
        self.carry = available - used

    def _record_fit(self, name: str, fitted: Group | None, dropped: int) -> None:
        if fitted is None:
            self._record(name, dropped=dropped)
        else:
            self._record(name, fitted.total, fitted.messages, dropped, fitted.trimmed)

    def _room(self, name: str) -> int:
        return max(0, self.alloc[name] + self.carry)

    def _fit_one(self, message: BaseMessage, room: int) -> Group | None:
        group = Group(0, [message], [self.counter.count_message(message)], Priority.HIGH, "chat")
        return trim_group(group, room, self.counter)

    def text(self, name: str, value: Any, make: Any) -> None:
        if value is None or value == "":
            self._record(name)
            return
        message = make(value) if isinstance(value, str) else to_message(value)
        fitted = self._fit_one(message, self._room(name))
        self._record_fit(name, fitted, 1 if fitted is None else 0)

    def memories(self, memories: str | Sequence[str]) -> None:
        items = [memories] if isinstance(memories, str) else [m for m in memories if m]
        room = self._room("retrieved_memories")
        lines: list[str] = []
        fitted: Group | None = None
        for item in items:
            candidate = self._fit_one(
                SystemMessage("\n- ".join([MEMORIES_HEADER, *lines, item])), room
            )
            if candidate is None:
                break
            fitted = candidate
            lines.append(item)
            if candidate.trimmed:
                break
        self._record_fit("retrieved_memories", fitted, len(items) - len(lines))

    def tools(self, tools: Sequence[Any]) -> None:
        if not tools:
            self._record("tool_definitions")
            return
        schemas = [t if isinstance(t, dict) else convert_to_openai_tool(t) for t in tools]
        used = self.counter.count(json.dumps(schemas, sort_keys=True, ensure_ascii=False))
        room = self._room("tool_definitions")
        if used > room:
            raise TokenBudgetError(
                f"tool definitions cost {used} tokens but only {room} are available: raise "
                "tool_definitions (or total), or bind fewer tools"
            )
        self._record("tool_definitions", used)

    def recent(self, messages: Sequence[MessageLike]) -> None:
        log = MessageLog(self.counter)
        log.extend([to_message(m) for m in messages])
        room = self._room("recent_messages")
        selection = select_groups(
            [], reversed(log.chat), room + REPLY_PRIMING_TOKENS, self.counter, contiguous=True
        )
        used = selection.tokens - REPLY_PRIMING_TOKENS
        kept = len(selection.messages)
        trimmed = selection.trimmed > 0
        self._record("recent_messages", used, selection.messages, log.size - kept, trimmed)

    def finish(self, total: int) -> ContextLayout:
        self._record("output_reserve")
        return ContextLayout(
            messages=[m for name in SECTIONS for m in self.parts[name]],
            sections={name: self.usage[name] for name in SECTIONS},
            tokens=total - self.carry,
            max_output_tokens=self.carry,
            total=total,
        )
