"""Working memory: token-budgeted buffers, running summary, context-window layout.

Buffers (:class:`ConversationBuffer`, :class:`SlidingWindowSummaryBuffer`,
:class:`PriorityTruncationBuffer`) return a :class:`WorkingContext`;
:class:`ContextWindowBudget` lays out a context window; :func:`create_working_memory_node`
applies the same policy as a LangGraph node.

Examples:
    >>> from langchain_tiered_memory.tiers.working import ConversationBuffer
    >>> buffer = ConversationBuffer(max_tokens=100)
    >>> buffer.add({"role": "user", "content": "hello"})
    >>> buffer.get_context().as_dicts()
    [{'role': 'user', 'content': 'hello'}]
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from langchain_tiered_memory.lazy import lazy_exports

if TYPE_CHECKING:
    from langchain_tiered_memory.tiers.working.buffers import (
        ConversationBuffer,
        PriorityTruncationBuffer,
        SummaryStatus,
        WorkingBuffer,
        WorkingContext,
    )
    from langchain_tiered_memory.tiers.working.graph import (
        WorkingMemoryNode,
        WorkingMemoryState,
        create_working_memory_node,
    )
    from langchain_tiered_memory.tiers.working.layout import (
        ContextLayout,
        ContextWindowBudget,
        SectionUsage,
    )
    from langchain_tiered_memory.tiers.working.messages import (
        SUMMARY_MESSAGE_ID,
        CounterLike,
        MessageLike,
        Priority,
    )
    from langchain_tiered_memory.tiers.working.summary import (
        SummarizationTimeoutError,
        Summarizer,
        SummaryOutcome,
    )
    from langchain_tiered_memory.tiers.working.window import (
        SlidingWindowSummaryBuffer,
    )

__all__ = [
    "SUMMARY_MESSAGE_ID",
    "ContextLayout",
    "ContextWindowBudget",
    "ConversationBuffer",
    "CounterLike",
    "MessageLike",
    "Priority",
    "PriorityTruncationBuffer",
    "SectionUsage",
    "SlidingWindowSummaryBuffer",
    "SummarizationTimeoutError",
    "Summarizer",
    "SummaryOutcome",
    "SummaryStatus",
    "WorkingBuffer",
    "WorkingContext",
    "WorkingMemoryNode",
    "WorkingMemoryState",
    "create_working_memory_node",
]

__getattr__, __dir__ = lazy_exports(__name__)
