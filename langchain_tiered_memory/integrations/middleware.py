"""Tiered memory for LangChain 1.x ``create_agent``: a drop-in ``AgentMiddleware``.

:class:`TieredMemoryMiddleware` does for any ``create_agent`` agent what the
nodes of :func:`~langchain_tiered_memory.integrations.agent.create_memory_agent`
do (its hooks: docs/how-to/middleware.md).
``langchain`` is an optional extra: without it, importing this module raises
:class:`ConfigurationError` naming ``pip install "langchain-tiered-memory[agents]"``.

Examples:
    >>> import tempfile
    >>> from langchain.agents import create_agent
    >>> from langchain_tiered_memory import TieredMemory
    >>> from langchain_tiered_memory.testing.fakes import HashingEmbeddings
    >>> from langchain_tiered_memory.testing.offline_model import OfflineChatModel
    >>> memory = TieredMemory.open(tempfile.mkdtemp(), embeddings=HashingEmbeddings())
    >>> agent = create_agent(OfflineChatModel(), middleware=[TieredMemoryMiddleware(memory)])
    >>> alice = {"configurable": {"user_id": "alice"}}
    >>> _ = agent.invoke({"messages": [("user", "I'm allergic to shellfish")]}, alice)
    >>> memory.flush()
    >>> out = agent.invoke({"messages": [("user", "Recommend a restaurant for dinner")]}, alice)
    >>> "shellfish" in out["messages"][-1].content
    True
    >>> memory.close()
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, Any

from langchain_core.messages import SystemMessage
from langchain_core.runnables import RunnableConfig
from typing_extensions import NotRequired

from langchain_tiered_memory.errors import ConfigurationError
from langchain_tiered_memory.integrations.nodes.consolidate import ConsolidationScheduler
from langchain_tiered_memory.integrations.nodes.generate import MEMORY_MESSAGE_ID
from langchain_tiered_memory.integrations.nodes.reflect import ReflectNode
from langchain_tiered_memory.integrations.nodes.retrieve import RetrieveNode
from langchain_tiered_memory.integrations.nodes.state import PendingWrites, resolve_user
from langchain_tiered_memory.integrations.nodes.tools import (
    atime_tool_call,
    create_memory_tools,
    time_tool_call,
)
from langchain_tiered_memory.integrations.nodes.writeback import (
    aqueue_turn_writes,
    queue_turn_writes,
)

try:
    from langchain.agents.middleware.types import (
        AgentMiddleware,
        AgentState,
        ModelRequest,
        ModelResponse,
        OmitFromInput,
    )
except ImportError as exc:  # pragma: no cover - exercised by a test that hides the module
    raise ConfigurationError(
        "TieredMemoryMiddleware needs the optional langchain 1.x package: "
        'pip install "langchain-tiered-memory[agents]"'
    ) from exc

if TYPE_CHECKING:
    from langgraph.prebuilt.tool_node import ToolCallRequest
    from langgraph.runtime import Runtime

    from langchain_tiered_memory.memory import TieredMemory
    from langchain_tiered_memory.user_memory import UserMemory

__all__ = ["TieredMemoryMiddleware", "TieredMemoryState"]


class TieredMemoryState(AgentState[Any]):
    """``AgentState`` plus what the middleware keeps for the run (not part of the input)."""

    user_id: NotRequired[Annotated[str, OmitFromInput]]
    agent_id: NotRequired[Annotated[str | None, OmitFromInput]]
    memory_context: NotRequired[Annotated[str, OmitFromInput]]
    memory_items: NotRequired[Annotated[list[dict[str, Any]], OmitFromInput]]
    memory_tokens: NotRequired[Annotated[int, OmitFromInput]]
    memory_errors: NotRequired[Annotated[list[str], OmitFromInput]]
    consolidation_status: NotRequired[Annotated[str, OmitFromInput]]


def _run_config() -> RunnableConfig | None:
    from langgraph.config import get_config

    try:
        return get_config()
    except RuntimeError:  # outside a run, or Python 3.10 inside a task
        return None


class TieredMemoryMiddleware(AgentMiddleware[TieredMemoryState, Any, Any]):
    """Long-term memory for ``langchain.agents.create_agent`` (see the module docs).

    Args:
        memory: The memory to read and write.
        token_budget: Tokens of memory injected per run.
        memory_tools: Add ``search_memory``, ``remember_fact`` and ``forget_memory``.
        consolidate_every: Turns per user between background consolidations
            (``None`` or 0: never from here).
        consolidation: A :class:`ConsolidationScheduler` to share or ``wait()`` on.
    """

    state_schema = TieredMemoryState

    def __init__(
        self,
        memory: TieredMemory,
        *,
        token_budget: int = 2000,
        memory_tools: bool = True,
        consolidate_every: int | None = 20,
        consolidation: ConsolidationScheduler | None = None,
    ) -> None:
        super().__init__()
        self.memory = memory
        self.retriever = RetrieveNode(memory, token_budget=token_budget)
        self.reflector = ReflectNode(clock=memory.clock)
        self.tools = create_memory_tools(memory) if memory_tools else []
        self.consolidation = consolidation or ConsolidationScheduler(
            memory, every=consolidate_every
        )

    def before_agent(
        self, state: TieredMemoryState, runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """Assemble the memory context for the run's last user message."""
        return self.retriever(state, _run_config())

    async def abefore_agent(
        self, state: TieredMemoryState, runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """Async twin of :meth:`before_agent`."""
        return await self.retriever.acall(state, _run_config())

    @staticmethod
    def _with_memory(request: ModelRequest[Any]) -> ModelRequest[Any]:
        context = request.state.get("memory_context")
        if not context:
            return request
        message = SystemMessage(str(context), id=MEMORY_MESSAGE_ID)
        return request.override(messages=[message, *request.messages])

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> Any:
        """Call the model with the memory context after the system prompt."""
        return handler(self._with_memory(request))

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> Any:
        """Async twin of :meth:`wrap_model_call`."""
        return await handler(self._with_memory(request))

    def wrap_tool_call(self, request: ToolCallRequest, handler: Callable[..., Any]) -> Any:
        """Run the tool, recording ``execution_time_ms`` on its message."""
        return time_tool_call(request, handler)

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[..., Awaitable[Any]]
    ) -> Any:
        """Async twin of :meth:`wrap_tool_call`."""
        return await atime_tool_call(request, handler)

    def _after(
        self, state: TieredMemoryState, runtime: Runtime[Any]
    ) -> tuple[UserMemory, PendingWrites]:
        config = _run_config()
        user_id, agent_id = resolve_user(getattr(runtime, "context", None), config, state)
        writes = self.reflector(state, config)["pending_writes"]
        return self.memory.for_user(user_id, agent_id), writes

    def _turn_update(
        self, user: UserMemory, state: TieredMemoryState, errors: list[str]
    ) -> dict[str, Any]:
        status = self.consolidation.note_turn(user)
        return {
            "memory_errors": [*(state.get("memory_errors") or []), *errors],
            "consolidation_status": status,
        }

    def after_agent(self, state: TieredMemoryState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Queue the run's episode, facts and tool records; maybe start a consolidation."""
        user, writes = self._after(state, runtime)
        return self._turn_update(user, state, queue_turn_writes(user, writes))

    async def aafter_agent(
        self, state: TieredMemoryState, runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """Async twin of :meth:`after_agent`."""
        user, writes = self._after(state, runtime)
        return self._turn_update(user, state, await aqueue_turn_writes(user, writes))
