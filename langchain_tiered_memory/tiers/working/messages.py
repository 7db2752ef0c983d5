"""Messages, priorities and atomic groups: the data the working-memory buffers keep.

A conversation is stored as *groups* (a system message, a chat message, or a tool-call
message with its results) that buffers keep or drop whole, so no chat API ever sees a
tool result without its call; each message's tokens are counted once, when added.

Examples:
    >>> from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    >>> log = MessageLog(as_token_counter(None))
    >>> log.add(HumanMessage("weather in Oslo?"))
    >>> call = {"name": "weather", "args": {"city": "Oslo"}, "id": "c1"}
    >>> log.add(AIMessage("", tool_calls=[call]))
    >>> log.add(ToolMessage("4 C, rain", tool_call_id="c1"))
    >>> [len(g.messages) for g in log.groups], log.groups[-1].complete
    ([1, 2], True)
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any, Literal, TypeAlias

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    SystemMessage,
    ToolMessage,
    convert_to_messages,
)

from langchain_tiered_memory.errors import InvalidInputError, TokenBudgetError
from langchain_tiered_memory.tokens import REPLY_PRIMING_TOKENS, TokenCounter

__all__ = [
    "SUMMARY_MESSAGE_ID",
    "CounterLike",
    "Group",
    "MessageLike",
    "MessageLog",
    "MessageTokenCache",
    "Priority",
    "as_priority",
    "as_token_counter",
    "check_max_tokens",
    "summary_message",
    "to_message",
    "to_messages",
]

MessageLike: TypeAlias = BaseMessage | Mapping[str, Any] | tuple[str, str] | str
"""A LangChain message, a plain dict ``{"role", "content"}``, a
``(role, content)`` pair, or a plain string (taken as a human message)."""

CounterLike: TypeAlias = TokenCounter | Callable[[str], int]
"""A :class:`TokenCounter`, or any callable returning the token count of a text."""

SUMMARY_MESSAGE_ID = "working-memory-summary"
"""Id of the system message that carries the running summary in a context."""


class Priority(IntEnum):
    """How much a message matters when the budget is tight."""

    LOW = 1
    """Greetings, acknowledgements, filler."""
    MEDIUM = 2
    """Regular conversation turns."""
    HIGH = 3
    """Tool results, important context."""
    CRITICAL = 4
    """System prompt, user constraints, key decisions."""


def as_priority(value: Priority | int | str) -> Priority:
    """Return ``value`` as a :class:`Priority` (accepts ``"high"``, ``3``, ``Priority.HIGH``).

    Raises:
        InvalidInputError: Not a known priority.
    """
    try:
        if isinstance(value, str):
            return Priority[value.strip().upper()]
        return Priority(value)
    except (KeyError, ValueError) as exc:
        raise InvalidInputError(
            f"unknown priority {value!r}: use one of {[p.name for p in Priority]}"
        ) from exc


def as_token_counter(counter: CounterLike | None) -> TokenCounter:
    """Return a :class:`TokenCounter`; wrap a plain ``Callable[[str], int]``.

    ``None`` gives the default offline tiktoken counter (``o200k_base``).
    """
    if counter is None:
        return TokenCounter()
    if isinstance(counter, TokenCounter):
        return counter
    if callable(counter):
        return TokenCounter(count_text=counter)
    raise InvalidInputError(
        f"counter must be a TokenCounter or a callable str -> int, got {type(counter).__name__}"
    )


def check_max_tokens(max_tokens: int, *, what: str = "max_tokens") -> int:
    """Validate a token budget: an int larger than the reply priming a request always costs.

    Raises:
        TokenBudgetError: Not an int, or too small to hold any message.
    """
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int):
        raise TokenBudgetError(f"{what} must be an int, got {type(max_tokens).__name__}")
    if max_tokens <= REPLY_PRIMING_TOKENS:
        raise TokenBudgetError(
            f"{what}={max_tokens} cannot hold any message (a request costs "
            f"{REPLY_PRIMING_TOKENS} tokens before its first message): use a larger budget"
        )
    return max_tokens


def to_message(value: MessageLike) -> BaseMessage:
    """Convert one message-like value to a LangChain ``BaseMessage``.

    Raises:
        InvalidInputError: The value is not a message LangChain can convert.
    """
    if isinstance(value, BaseMessage):
        return value
    try:
        return convert_to_messages([value])[0]  # type: ignore[list-item]
    except (ValueError, TypeError, KeyError, NotImplementedError) as exc:
        raise InvalidInputError(
            f"cannot turn {value!r} into a chat message: pass a BaseMessage, a dict "
            "{'role': 'user', 'content': '...'} or a (role, content) pair"
        ) from exc


def to_messages(values: Iterable[MessageLike]) -> list[BaseMessage]:
    """Convert message-like values to ``BaseMessage`` objects (see :func:`to_message`)."""
    return [to_message(v) for v in values]


def summary_message(summary: str) -> SystemMessage:
    """The system message that carries a running summary into a context."""
    return SystemMessage("Summary of earlier conversation:\n" + summary, id=SUMMARY_MESSAGE_ID)


@dataclass(slots=True)
class Group:
    """Messages that are kept or dropped together.

    Attributes:
        start: Position of the first message in the conversation.
        messages: The messages, in order.
        tokens: Token count of each message (overhead included).
        priority: The highest priority of the members.
        kind: ``"system"``, ``"chat"``, ``"tools"`` (a tool-call message and its
            results) or ``"summary"`` (the running summary).
        pending: Tool-call ids still waiting for a result.
        orphan: A tool result with no matching call just before it.
        trimmed: Content was cut to fit a budget.
    """

    start: int
    messages: list[BaseMessage]
    tokens: list[int]
    priority: Priority
    kind: Literal["system", "chat", "tools", "summary"]
    pending: set[str] = field(default_factory=set)
    orphan: bool = False
    trimmed: bool = False

    @property
    def total(self) -> int:
        """Tokens of all members."""
        return sum(self.tokens)

    @property
    def complete(self) -> bool:
        """Safe to send to a chat API: no unanswered tool call, no orphan tool result."""
        return not self.pending and not self.orphan


class MessageTokenCache:
    """Bounded cache of per-message token counts keyed by content, for fresh message objects.

    Examples:
        >>> from langchain_core.messages import HumanMessage
        >>> cache = MessageTokenCache(TokenCounter())
        >>> cache(HumanMessage("hi")) == cache(HumanMessage("hi"))
        True
    """

    def __init__(self, counter: TokenCounter, maxsize: int = 50_000) -> None:
        self.counter = counter
        self.maxsize = maxsize
        self._cache: OrderedDict[tuple[Any, ...], int] = OrderedDict()

    @staticmethod
    def _key(message: BaseMessage) -> tuple[Any, ...]:
        # isinstance, not getattr: a missing attribute on a pydantic model is slow.
        content = message.content if isinstance(message.content, str) else repr(message.content)
        extra: str | None = None
        if isinstance(message, AIMessage) and message.tool_calls:
            extra = repr(message.tool_calls)
        elif isinstance(message, ToolMessage):
            extra = message.tool_call_id
        return (message.type, content, message.name, extra)

    def __call__(self, message: BaseMessage) -> int:
        """Token count of ``message`` (overhead included), from the cache when possible."""
        key = self._key(message)
        cached = self._cache.get(key)
        if cached is not None:
            self._cache.move_to_end(key)
            return cached
        tokens = self.counter.count_message(message)
        self._cache[key] = tokens
        if len(self._cache) > self.maxsize:
            self._cache.popitem(last=False)
        return tokens


class MessageLog:
    """An append-only conversation split into atomic groups, with cached token counts.

    Adding a message is O(1): it joins the open tool-call group it answers, or starts one.

    Args:
        counter: Counts a new message's tokens.
        count_message: Optional replacement for ``counter.count_message`` (a cache).
    """

    def __init__(
        self,
        counter: TokenCounter,
        count_message: Callable[[BaseMessage], int] | None = None,
    ) -> None:
        self.counter = counter
        self._count = count_message or counter.count_message
        self.groups: list[Group] = []
        self.systems: list[Group] = []
        self.chat: list[Group] = []
        self.by_priority: dict[Priority, list[Group]] = {p: [] for p in Priority}
        self.size = 0
        self.tokens = 0

    def add(
        self,
        message: BaseMessage,
        priority: Priority | None = None,
        tokens: int | None = None,
    ) -> None:
        """Append one message (its tokens are counted here unless given)."""
        count = self._count(message) if tokens is None else tokens
        calls = message.tool_calls if isinstance(message, AIMessage) else []
        if priority is None:  # system messages are CRITICAL below
            priority = Priority.HIGH if message.type == "tool" or calls else Priority.MEDIUM
        position = self.size
        self.size += 1
        self.tokens += count
        if isinstance(message, ToolMessage):
            call_id = str(message.tool_call_id or "")
            last = self.groups[-1] if self.groups else None  # the open tool-call group?
            if last is not None and last.kind == "tools" and call_id in last.pending:
                last.messages.append(message)
                last.tokens.append(count)
                last.pending.discard(call_id)
                if priority > last.priority:
                    # The open group is the newest of its bucket: move it up a level.
                    self.by_priority[last.priority].pop()
                    last.priority = priority
                    self.by_priority[priority].append(last)
                return
        kind: Literal["system", "chat", "tools"] = "tools" if calls else "chat"
        if message.type == "system":
            kind, priority = "system", Priority.CRITICAL
        pending = {str(c.get("id") or "") for c in calls}
        orphan = isinstance(message, ToolMessage)  # a result with no open call
        group = Group(position, [message], [count], priority, kind, pending, orphan)
        self.groups.append(group)
        if kind == "system":
            self.systems.append(group)
        else:
            self.chat.append(group)
            self.by_priority[priority].append(group)

    def extend(self, messages: Sequence[BaseMessage]) -> None:
        """Append several messages (default priorities)."""
        for message in messages:
            self.add(message)

    def messages(self) -> list[BaseMessage]:
        """Every stored message, in order."""
        return [m for g in self.groups for m in g.messages]

    def rebuilt(self, groups: Iterable[Group]) -> MessageLog:
        """A new log holding the messages of ``groups`` (cached counts reused, none recounted)."""
        log = MessageLog(self.counter, self._count)
        for group in groups:
            for message, tokens in zip(group.messages, group.tokens, strict=True):
                log.add(message, group.priority, tokens)
        return log
