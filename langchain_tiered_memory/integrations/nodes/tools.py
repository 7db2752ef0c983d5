"""Memory tools for the model: search memory, remember a fact, forget a memory.

The tools act for the run's user (from its context or ``config["configurable"]``)
unless a fixed ``user_id`` is given. A failure never escapes: the model reads
the error text (``status="error"``) and it is counted in ``memory.stats()["errors"]``.
``remember_fact`` queues the fact on the writer (``memory.flush()`` waits for it).

Examples:
    >>> import tempfile
    >>> from langchain_tiered_memory import TieredMemory
    >>> from langchain_tiered_memory.testing.fakes import HashingEmbeddings
    >>> memory = TieredMemory.open(tempfile.mkdtemp(), embeddings=HashingEmbeddings())
    >>> tools = create_memory_tools(memory, user_id="alice")
    >>> [t.name for t in tools]
    ['search_memory', 'remember_fact', 'forget_memory']
    >>> tools[1].invoke({"fact": "I am vegetarian"})
    'Noted; I will remember: I am vegetarian'
    >>> memory.flush()
    >>> "vegetarian" in tools[0].invoke({"query": "vegetarian"}).lower()
    True
    >>> memory.close()
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from langchain_core.messages import ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from langgraph.prebuilt import ToolNode
from langgraph.prebuilt.tool_node import ToolCallRequest

from langchain_tiered_memory.assembly.framing import frame_memories
from langchain_tiered_memory.assembly.items import MemoryItem
from langchain_tiered_memory.integrations.nodes.state import resolve_user, runtime_context

if TYPE_CHECKING:
    from langchain_tiered_memory.memory import TieredMemory
    from langchain_tiered_memory.user_memory import ForgetResult, UserMemory

__all__ = [
    "FORGET_TOOL",
    "REMEMBER_TOOL",
    "SEARCH_TOOL",
    "atime_tool_call",
    "create_memory_tools",
    "create_tools_node",
    "format_search_results",
    "time_tool_call",
]

SEARCH_TOOL = "search_memory"
REMEMBER_TOOL = "remember_fact"
FORGET_TOOL = "forget_memory"

_MAX_INPUT_CHARS = 2000


def format_search_results(items: list[MemoryItem]) -> str:
    """Search hits framed as data, best first: one ``- [section] text`` line each.

    The same framing as the assembled context
    (:func:`~langchain_tiered_memory.assembly.framing.frame_memories`): a memory's
    text cannot start a line of its own, close its frame or pass for a role.
    """
    if not items:
        return "No memories match."
    return frame_memories([("search", [f"[{item.section}] {item.text}" for item in items])])


def _format_forgotten(result: ForgetResult) -> str:
    if not result:
        return "Nothing in memory matched closely enough; nothing was forgotten."
    framed = frame_memories([("forgotten", [item.text for item in result.forgotten])])
    return f"Forgot (restorable from the trash):\n\n{framed}"


def _check_text(value: str, what: str) -> str:
    text = " ".join(str(value).split())
    if not text:
        raise ToolException(f"Error: {what} is empty; pass what to {what.split()[-1]}.")
    if len(text) > _MAX_INPUT_CHARS:
        raise ToolException(
            f"Error: {what} is {len(text)} characters long; keep it under {_MAX_INPUT_CHARS}."
        )
    return text


class _MemoryToolset:
    """The three tools; each method's name and docstring are its tool's name and description."""

    def __init__(
        self, memory: TieredMemory, user_id: str | None, agent_id: str | None, top_k: int
    ) -> None:
        self.memory = memory
        self.user_id = user_id
        self.agent_id = agent_id
        self.top_k = top_k

    @contextmanager
    def reporting(
        self, action: str, value: str, what: str, config: RunnableConfig
    ) -> Iterator[tuple[UserMemory, str]]:
        """The run's user and the checked text; any failure becomes the model's error text."""
        try:
            text = _check_text(value, what)
            if self.user_id is None:  # the run's user
                try:
                    user_id, agent_id = resolve_user(runtime_context(config), config)
                except ValueError as exc:
                    raise ToolException(f"Error: {exc}") from exc
            else:
                user_id, agent_id = self.user_id, self.agent_id
            yield self.memory.for_user(user_id, agent_id), text
        except ToolException:
            raise
        except Exception as exc:
            self.memory.runtime.record_error(f"tool.{action}", exc)
            raise ToolException(
                f"Error: could not {action} ({type(exc).__name__}: {exc}). "
                "Answer without it, and tell the user if it matters."
            ) from exc

    def search_memory(self, query: str, config: RunnableConfig) -> str:
        """Search long-term memory (facts, past episodes, tool lessons) about the user."""
        with self.reporting("search memory", query, "query to search", config) as (user, text):
            return format_search_results(user.search(text, top_k=self.top_k))

    async def asearch_memory(self, query: str, config: RunnableConfig) -> str:
        """Search long-term memory (facts, past episodes, tool lessons) about the user."""
        with self.reporting("search memory", query, "query to search", config) as (user, text):
            return format_search_results(await user.asearch(text, top_k=self.top_k))

    def remember_fact(self, fact: str, config: RunnableConfig) -> str:
        """Remember a fact about the user for future sessions, e.g. 'I am vegetarian'."""
        with self.reporting("remember the fact", fact, "fact to remember", config) as (user, text):
            user.queue_remember(text)
            return f"Noted; I will remember: {text}"

    async def aremember_fact(self, fact: str, config: RunnableConfig) -> str:
        """Remember a fact about the user for future sessions, e.g. 'I am vegetarian'."""
        with self.reporting("remember the fact", fact, "fact to remember", config) as (user, text):
            await user.aqueue_remember(text)
            return f"Noted; I will remember: {text}"

    def forget_memory(self, query: str, config: RunnableConfig) -> str:
        """Forget the remembered facts that best match the description (restorable)."""
        with self.reporting("forget", query, "query to forget", config) as (user, text):
            return _format_forgotten(user.forget(text))

    async def aforget_memory(self, query: str, config: RunnableConfig) -> str:
        """Forget the remembered facts that best match the description (restorable)."""
        with self.reporting("forget", query, "query to forget", config) as (user, text):
            return _format_forgotten(await user.aforget(text))


def create_memory_tools(
    memory: TieredMemory,
    *,
    user_id: str | None = None,
    agent_id: str | None = None,
    top_k: int = 5,
) -> list[BaseTool]:
    """Create ``search_memory``, ``remember_fact`` and ``forget_memory`` for ``memory``.

    Args:
        memory: The memory the tools read and write.
        user_id: A fixed user; by default each call acts for its run's user.
        agent_id: Agent scope used with a fixed ``user_id``.
        top_k: How many memories ``search_memory`` returns.

    Returns:
        Three tools with sync and async implementations; they return error
        text (``status="error"``) instead of raising.
    """
    tools = _MemoryToolset(memory, user_id, agent_id, top_k)
    return [
        StructuredTool.from_function(
            func=getattr(tools, name),
            coroutine=getattr(tools, "a" + name),
            name=name,
            handle_tool_error=True,
        )
        for name in (SEARCH_TOOL, REMEMBER_TOOL, FORGET_TOOL)
    ]


def _timed(message: Any, started: float) -> Any:
    if isinstance(message, ToolMessage):
        elapsed = round((time.perf_counter() - started) * 1000, 3)
        message.response_metadata = {**message.response_metadata, "execution_time_ms": elapsed}
    return message


def time_tool_call(request: ToolCallRequest, execute: Callable[[ToolCallRequest], Any]) -> Any:
    """Tool-call wrapper: run the tool, add ``execution_time_ms`` to its message's metadata."""
    started = time.perf_counter()
    return _timed(execute(request), started)


async def atime_tool_call(
    request: ToolCallRequest, execute: Callable[[ToolCallRequest], Awaitable[Any]]
) -> Any:
    """Async twin of :func:`time_tool_call`."""
    started = time.perf_counter()
    return _timed(await execute(request), started)


def create_tools_node(
    tools: Sequence[BaseTool | Callable[..., Any]], *, name: str = "tools"
) -> ToolNode:
    """A ``ToolNode`` that records each call's ``execution_time_ms`` and never raises.

    A tool that raises becomes a tool message with ``status="error"`` and the
    error text (the model reads it; ``reflect`` records the failure).
    """
    return ToolNode(
        tools,
        name=name,
        handle_tool_errors=True,
        wrap_tool_call=time_tool_call,
        awrap_tool_call=atime_tool_call,
    )
