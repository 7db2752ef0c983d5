"""Working memory as a LangGraph node or pre-model hook over ``MessagesState``.

The node fits ``state["messages"]`` to a token budget; with a chat model it also folds
older messages into a running summary kept in the graph state (``summary``), so a
checkpointer persists it per thread. Without one it only trims (FIFO).

Output modes: ``"messages"`` (default) rewrites the thread's messages to the fitted
context (``RemoveMessage(REMOVE_ALL_MESSAGES)``, then the summary and kept messages);
``"llm_input_messages"`` leaves them alone and returns the context as
``llm_input_messages`` (what a ``pre_model_hook`` returns), with ``summarized_through``.

Examples:
    >>> from langgraph.checkpoint.memory import InMemorySaver
    >>> from langgraph.graph import START, StateGraph
    >>> node = create_working_memory_node(max_tokens=100)
    >>> graph = StateGraph(WorkingMemoryState)
    >>> graph.add_node("memory", node)  # doctest: +ELLIPSIS
    <...>
    >>> graph.add_edge(START, "memory")  # doctest: +ELLIPSIS
    <...>
    >>> app = graph.compile(checkpointer=InMemorySaver())
    >>> config = {"configurable": {"thread_id": "1"}}
    >>> out = app.invoke({"messages": [("user", "hi " * 500)]}, config)
    >>> TokenCounter().count_messages(out["messages"]) <= 100
    True
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, RemoveMessage
from langchain_core.runnables import RunnableLambda
from langgraph.graph import MessagesState
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from langchain_tiered_memory.errors import ConfigurationError
from langchain_tiered_memory.tiers.working.messages import (
    SUMMARY_MESSAGE_ID,
    CounterLike,
    Group,
    MessageLog,
    MessageTokenCache,
    as_token_counter,
    check_max_tokens,
    summary_message,
    to_messages,
)
from langchain_tiered_memory.tiers.working.select import select_groups
from langchain_tiered_memory.tiers.working.summary import Summarizer, SummaryOutcome
from langchain_tiered_memory.tiers.working.window import (
    CompressionPlan,
    atry_summarize,
    check_summary_settings,
    failure_status,
    plan_compression,
    summary_group,
    try_summarize,
)
from langchain_tiered_memory.tokens import TokenCounter

__all__ = ["WorkingMemoryNode", "WorkingMemoryState", "create_working_memory_node"]

logger = logging.getLogger(__name__)

OutputMode = Literal["messages", "llm_input_messages"]


class WorkingMemoryState(MessagesState, total=False):
    """``MessagesState`` plus the keys the working-memory node keeps per thread.

    Attributes:
        summary: The running summary of messages no longer kept verbatim.
        summarized_through: Id of the last summarised message
            (``"llm_input_messages"`` mode only).
        summary_status: ``"none"``, ``"ok"``, ``"failed"`` or ``"timeout"``.
        summary_error: Why the last summarisation failed ("" when it did not).
        llm_input_messages: The fitted context (``"llm_input_messages"`` mode).
    """

    summary: str
    summarized_through: str
    summary_status: str
    summary_error: str
    llm_input_messages: list[BaseMessage]


@dataclass
class _Prepared:
    original: list[BaseMessage]
    log: MessageLog
    summary: str
    plan: CompressionPlan | None


class WorkingMemoryNode:
    """Fits a thread's messages to a budget, summarising older ones with ``model``.

    Use :func:`create_working_memory_node` to get it as a runnable node (sync
    and async). Token counts are cached across calls by message content.

    Args:
        model: Chat model that writes the running summary; ``None`` only trims.
        max_tokens: Budget of the fitted context (summary included).
        recent_window: Messages kept verbatim when summarising.
        summary_trigger_ratio: Summarise when the thread passes this share of ``max_tokens``.
        summary_max_tokens: The summary's own budget (``max_tokens // 10`` by default).
        counter: Token counter or ``Callable[[str], int]``.
        timeout: Seconds to wait for the model; ``None`` waits forever.
        output: ``"messages"`` or ``"llm_input_messages"`` (see the module docs).
        summary_key: State key of the running summary.

    Raises:
        ConfigurationError: A setting is out of range (the same checks as
            :class:`~.window.SlidingWindowSummaryBuffer`).

    Examples:
        >>> node = WorkingMemoryNode(max_tokens=50)
        >>> update = node({"messages": [("user", "hello")]})
        >>> update["messages"], update["summary"]
        ([], '')
    """

    def __init__(
        self,
        model: BaseChatModel | None = None,
        *,
        max_tokens: int = 8000,
        recent_window: int = 6,
        summary_trigger_ratio: float = 0.75,
        summary_max_tokens: int | None = None,
        counter: CounterLike | None = None,
        timeout: float | None = 30.0,
        output: OutputMode = "messages",
        summary_key: str = "summary",
    ) -> None:
        self.max_tokens = check_max_tokens(max_tokens)
        if output not in ("messages", "llm_input_messages"):
            raise ConfigurationError(
                f"output must be 'messages' or 'llm_input_messages', got {output!r}"
            )
        summary_budget = check_summary_settings(
            max_tokens, recent_window, summary_trigger_ratio, summary_max_tokens
        )
        self.trigger_tokens = int(max_tokens * summary_trigger_ratio)
        self.counter: TokenCounter = as_token_counter(counter)
        self._cache = MessageTokenCache(self.counter)
        self.recent_window = recent_window
        self.output = output
        self.summary_key = summary_key
        self.summarizer: Summarizer | None = None
        if model is not None:
            self.summarizer = Summarizer(
                model,
                counter=self.counter,
                max_summary_tokens=summary_budget,
                max_prompt_tokens=max_tokens,
                timeout=timeout,
            )

    # Shared pure steps -----------------------------------------------------

    def _prepare(self, state: Any) -> _Prepared:
        original = to_messages(_get(state, "messages") or [])
        messages = [m for m in original if m.id != SUMMARY_MESSAGE_ID]
        if self.output == "llm_input_messages":
            through = _get(state, "summarized_through")
            ids = [m.id for m in messages]
            if through and through in ids:
                messages = messages[ids.index(through) + 1 :]
        log = MessageLog(self.counter, self._cache)
        log.extend(messages)
        summary = _get(state, self.summary_key) or ""
        plan = None
        if self.summarizer is not None:
            group = self._summary_group(summary, log)
            plan = plan_compression(
                log,
                group.total if group else 0,
                trigger_tokens=self.trigger_tokens,
                recent_window=self.recent_window,
            )
        return _Prepared(original, log, summary, plan)

    def _summary_group(self, summary: str, log: MessageLog) -> Group | None:
        tokens = self._cache(summary_message(summary)) if summary else 0
        return summary_group(summary, log, self.counter, tokens)

    def _state_update(
        self,
        prep: _Prepared,
        outcome: SummaryOutcome | Exception | None,
    ) -> dict[str, Any]:
        log, summary = prep.log, prep.summary
        update: dict[str, Any] = {}
        if isinstance(outcome, Exception):
            update["summary_status"] = failure_status(outcome)
            update["summary_error"] = f"{type(outcome).__name__}: {outcome}"
            logger.warning(
                "working-memory summarisation failed (%s); messages kept, trimming instead",
                update["summary_error"],
            )
        elif prep.plan is not None and outcome is not None:
            log = log.rebuilt(sorted([*log.systems, *prep.plan.keep], key=lambda g: g.start))
            summary = outcome.summary
            last_id = prep.plan.older_messages[-1].id
            if self.output == "llm_input_messages" and last_id:
                update["summarized_through"] = last_id
            update["summary_status"], update["summary_error"] = "ok", ""
        group = self._summary_group(summary, log)
        systems = [*log.systems, group] if group else log.systems
        selection = select_groups(
            systems, reversed(log.chat), self.max_tokens, self.counter, contiguous=True
        )
        update[self.summary_key] = summary
        if self.output == "llm_input_messages":
            update["llm_input_messages"] = selection.messages
            return update
        if selection.messages == prep.original:
            update["messages"] = []
        else:
            update["messages"] = [RemoveMessage(id=REMOVE_ALL_MESSAGES), *selection.messages]
        return update

    # Sync and async twins --------------------------------------------------

    def __call__(self, state: Any) -> dict[str, Any]:
        """Run the node on ``state`` and return the state update."""
        prep = self._prepare(state)
        if prep.plan is None or self.summarizer is None:
            return self._state_update(prep, None)
        return self._state_update(prep, try_summarize(self.summarizer, prep.summary, prep.plan))

    async def acall(self, state: Any) -> dict[str, Any]:
        """Async :meth:`__call__`."""
        prep = self._prepare(state)
        if prep.plan is None or self.summarizer is None:
            return self._state_update(prep, None)
        outcome = await atry_summarize(self.summarizer, prep.summary, prep.plan)
        return self._state_update(prep, outcome)


def _get(state: Any, key: str) -> Any:
    if isinstance(state, dict):
        return state.get(key)
    return getattr(state, key, None)


def create_working_memory_node(
    model: BaseChatModel | None = None,
    *,
    max_tokens: int = 8000,
    recent_window: int = 6,
    summary_trigger_ratio: float = 0.75,
    summary_max_tokens: int | None = None,
    counter: CounterLike | None = None,
    timeout: float | None = 30.0,
    output: OutputMode = "messages",
    summary_key: str = "summary",
    name: str = "working_memory",
) -> RunnableLambda[Any, dict[str, Any]]:
    """Create a working-memory node (or ``pre_model_hook``) for a LangGraph graph.

    Arguments are those of :class:`WorkingMemoryNode`; ``name`` names the
    runnable. Use a state with a ``summary`` key (:class:`WorkingMemoryState`)
    so a checkpointer keeps the summary per thread: LangGraph silently drops
    updates to keys a state does not declare.

    Examples:
        >>> from langchain_tiered_memory.testing.fakes import ScriptedChatModel
        >>> node = create_working_memory_node(ScriptedChatModel(default="S"), max_tokens=2000)
        >>> node.invoke({"messages": [("user", "hi")]})["summary"]
        ''
    """
    node = WorkingMemoryNode(
        model,
        max_tokens=max_tokens,
        recent_window=recent_window,
        summary_trigger_ratio=summary_trigger_ratio,
        summary_max_tokens=summary_max_tokens,
        counter=counter,
        timeout=timeout,
        output=output,
        summary_key=summary_key,
    )
    return RunnableLambda(node.__call__, afunc=node.acall, name=name)
