"""Sliding window with a running summary that a chat model keeps up to date.

Past ``summary_trigger_ratio`` of the budget, all but the last ``recent_window`` messages
(whole tool-call groups) are folded into the summary by the model. If the model fails or
times out the messages stay, the error is kept in ``last_error`` and the context says
``summary_status="failed"`` (or ``"timeout"``) while FIFO truncation keeps it in budget.

Examples:
    >>> from langchain_tiered_memory.testing.fakes import ScriptedChatModel
    >>> model = ScriptedChatModel(default="The user plans a trip to Oslo.")
    >>> buffer = SlidingWindowSummaryBuffer(model, max_tokens=200, recent_window=2)
    >>> for i in range(12):
    ...     buffer.add("user", f"Tell me more about Oslo, part {i}, please.")
    >>> ctx = buffer.get_context()
    >>> ctx.summary, ctx.summary_status, ctx.tokens <= 200
    ('The user plans a trip to Oslo.', 'ok', True)
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage

from langchain_tiered_memory.errors import ConfigurationError
from langchain_tiered_memory.tiers.working.buffers import (
    SummaryStatus,
    WorkingBuffer,
    WorkingContext,
)
from langchain_tiered_memory.tiers.working.messages import (
    CounterLike,
    Group,
    MessageLog,
    Priority,
    summary_message,
)
from langchain_tiered_memory.tiers.working.summary import (
    SummarizationTimeoutError,
    Summarizer,
    SummaryOutcome,
)
from langchain_tiered_memory.tokens import REPLY_PRIMING_TOKENS, TokenCounter

__all__ = [
    "CompressionPlan",
    "SlidingWindowSummaryBuffer",
    "atry_summarize",
    "check_summary_settings",
    "failure_status",
    "plan_compression",
    "summary_group",
    "try_summarize",
]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class CompressionPlan:
    """Which conversation groups to fold into the summary and which to keep."""

    older: list[Group]
    keep: list[Group]

    @property
    def older_messages(self) -> list[BaseMessage]:
        """The messages to summarise, in order."""
        return [m for g in self.older for m in g.messages]


def plan_compression(
    log: MessageLog, summary_tokens: int, *, trigger_tokens: int, recent_window: int
) -> CompressionPlan | None:
    """What to summarise: all but the newest ``recent_window`` messages; ``None`` under the trigger.

    Whole groups are kept, so a tool call stays with its results; system messages never go.
    """
    if REPLY_PRIMING_TOKENS + log.tokens + summary_tokens <= trigger_tokens:
        return None
    kept_messages = 0
    cut = len(log.chat)
    while cut > 0 and kept_messages < recent_window:
        cut -= 1
        kept_messages += len(log.chat[cut].messages)
    if cut == 0:
        return None
    return CompressionPlan(older=log.chat[:cut], keep=log.chat[cut:])


def summary_group(
    summary: str, log: MessageLog, counter: TokenCounter, tokens: int | None = None
) -> Group | None:
    """The running summary as a group before the conversation (``tokens``: its known count)."""
    if not summary:
        return None
    message = summary_message(summary)
    start = log.chat[0].start if log.chat else log.size
    count = counter.count_message(message) if tokens is None else tokens
    return Group(start, [message], [count], Priority.CRITICAL, "summary")


def failure_status(exc: BaseException) -> SummaryStatus:
    """``"timeout"`` for a timeout, else ``"failed"``."""
    return "timeout" if isinstance(exc, (SummarizationTimeoutError, TimeoutError)) else "failed"


def try_summarize(
    summarizer: Summarizer, summary: str, plan: CompressionPlan
) -> SummaryOutcome | Exception:
    """The updated summary, or the exception the model raised (the caller records it)."""
    try:
        return summarizer.summarize(summary, plan.older_messages)
    except Exception as exc:
        return exc


async def atry_summarize(
    summarizer: Summarizer, summary: str, plan: CompressionPlan
) -> SummaryOutcome | Exception:
    """Async twin of :func:`try_summarize`."""
    try:
        return await summarizer.asummarize(summary, plan.older_messages)
    except Exception as exc:
        return exc


def check_summary_settings(
    max_tokens: int, recent_window: int, trigger_ratio: float, summary_max_tokens: int | None
) -> int:
    """The summary's budget, after checking the summarising settings.

    Raises:
        ConfigurationError: The trigger ratio is outside ``(0, 1]``, ``recent_window``
            is negative, or the summary's budget is not below ``max_tokens``.
    """
    if not 0 < trigger_ratio <= 1:
        raise ConfigurationError(f"summary_trigger_ratio must be in (0, 1], got {trigger_ratio}")
    if recent_window < 0:
        raise ConfigurationError(f"recent_window must be >= 0, got {recent_window}")
    summary_budget = summary_max_tokens or max(1, max_tokens // 10)
    if summary_budget >= max_tokens:
        raise ConfigurationError(
            f"summary_max_tokens ({summary_budget}) must be smaller than max_tokens ({max_tokens})"
        )
    return summary_budget


class SlidingWindowSummaryBuffer(WorkingBuffer):
    """Sliding window plus a running summary updated by any LangChain chat model.

    Args:
        llm: The chat model that writes the summary (any ``BaseChatModel``).
        max_tokens: Budget of the whole context, summary included.
        recent_window: Messages kept verbatim when older ones are summarised.
        summary_trigger_ratio: Summarise when stored tokens pass this share of
            ``max_tokens``.
        summary_max_tokens: The summary's own budget; ``max_tokens // 10`` by
            default (800 of 8000, as in the default layout).
        counter: Token counter or ``Callable[[str], int]``.
        timeout: Seconds to wait for the model; ``None`` waits forever.
        max_prompt_tokens: Budget of one summarisation prompt (``max_tokens`` by default).

    Attributes:
        running_summary: The current summary ("" before the first one).
        summary_status: Outcome of the last attempt (``"none"``, ``"ok"``,
            ``"failed"``, ``"timeout"``).
        last_error: The exception of the last failed attempt, else ``None``.

    Examples:
        >>> from langchain_tiered_memory.testing.fakes import ScriptedChatModel
        >>> buffer = SlidingWindowSummaryBuffer(ScriptedChatModel(), max_tokens=500)
        >>> buffer.add("user", "hello")
        >>> buffer.running_summary, len(buffer)
        ('', 1)
    """

    def __init__(
        self,
        llm: BaseChatModel,
        max_tokens: int = 8000,
        recent_window: int = 6,
        summary_trigger_ratio: float = 0.75,
        *,
        summary_max_tokens: int | None = None,
        counter: CounterLike | None = None,
        timeout: float | None = 30.0,
        max_prompt_tokens: int | None = None,
    ) -> None:
        super().__init__(max_tokens, counter=counter)
        summary_budget = check_summary_settings(
            max_tokens, recent_window, summary_trigger_ratio, summary_max_tokens
        )
        self.recent_window = recent_window
        self.summary_trigger = int(max_tokens * summary_trigger_ratio)
        self.summarizer = Summarizer(
            llm,
            counter=self.counter,
            max_summary_tokens=summary_budget,
            max_prompt_tokens=max_prompt_tokens or max_tokens,
            timeout=timeout,
        )
        self.running_summary = ""
        self.summary_token_count = 0
        self.summary_status: SummaryStatus = "none"
        self.last_error: BaseException | None = None

    @property
    def llm(self) -> BaseChatModel:
        """The summarising model."""
        return self.summarizer.model

    def clear(self) -> None:
        """Forget the messages and the summary."""
        super().clear()
        self.running_summary = ""
        self.summary_token_count = 0
        self.summary_status = "none"
        self.last_error = None

    # Shared steps of the sync and async paths ------------------------------

    def _plan(self) -> CompressionPlan | None:
        return plan_compression(
            self._log,
            self.summary_token_count,
            trigger_tokens=self.summary_trigger,
            recent_window=self.recent_window,
        )

    def _apply(self, plan: CompressionPlan, outcome: SummaryOutcome | Exception) -> bool:
        """Take the new summary (True), or keep the messages and record the failure."""
        if isinstance(outcome, Exception):
            self.summary_status = failure_status(outcome)
            self.last_error = outcome
            logger.warning(
                "summarising %d older messages failed (%s: %s); they are kept and the context "
                "falls back to FIFO truncation",
                len(plan.older_messages),
                type(outcome).__name__,
                outcome,
            )
            return False
        kept = sorted([*self._log.systems, *plan.keep], key=lambda g: g.start)
        self._log = self._log.rebuilt(kept)
        self.running_summary = outcome.summary
        group = summary_group(outcome.summary, self._log, self.counter)
        self.summary_token_count = group.total if group else 0
        self.summary_status = "ok"
        self.last_error = None
        return True

    # Sync and async twins --------------------------------------------------

    def compress(self) -> bool:
        """Summarise older messages if over the trigger; return whether it happened.

        Never raises for a model failure: see :attr:`last_error`.
        """
        plan = self._plan()
        if plan is None:
            return False
        return self._apply(plan, try_summarize(self.summarizer, self.running_summary, plan))

    async def acompress(self) -> bool:
        """Async :meth:`compress`."""
        plan = self._plan()
        if plan is None:
            return False
        outcome = await atry_summarize(self.summarizer, self.running_summary, plan)
        return self._apply(plan, outcome)

    def _store(
        self, messages: Sequence[BaseMessage], priority: Priority | int | str | None
    ) -> None:
        super()._store(messages, priority)
        self.compress()

    async def _astore(
        self, messages: Sequence[BaseMessage], priority: Priority | int | str | None
    ) -> None:
        super()._store(messages, priority)
        await self.acompress()

    def get_context(self) -> WorkingContext:
        """System messages, the running summary, then the recent messages that fit."""
        summary = summary_group(
            self.running_summary, self._log, self.counter, self.summary_token_count
        )
        return self._fit(
            reversed(self._log.chat),
            contiguous=True,
            extra_system=summary,
            summary=self.running_summary,
            summary_status=self.summary_status,
            error=None
            if self.last_error is None
            else f"{type(self.last_error).__name__}: {self.last_error}",
        )
