"""Progressive summarisation of older messages by any LangChain chat model.

One generator yields prompts and receives replies; the sync and async
:class:`Summarizer` methods only run it. It asks for an updated summary (the transcript
cut to fit ``max_prompt_tokens``), asks once to shorten a reply longer than
``max_summary_tokens``, and truncates it if still too long.

Examples:
    >>> from langchain_core.messages import HumanMessage
    >>> from langchain_tiered_memory.testing.fakes import ScriptedChatModel
    >>> summarizer = Summarizer(ScriptedChatModel(responses=["User likes tea."]))
    >>> summarizer.summarize("", [HumanMessage("I like tea")]).summary
    'User likes tea.'
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from langchain_tiered_memory.chat_models import (
    LLMTimeoutError,
    ainvoke_with_timeout,
    check_timeout,
    invoke_with_timeout,
)
from langchain_tiered_memory.errors import ConfigurationError, ExtractionError
from langchain_tiered_memory.plans import arun_plan, run_plan
from langchain_tiered_memory.tiers.working.messages import CounterLike, as_token_counter
from langchain_tiered_memory.tokens import TokenCounter, message_text

__all__ = [
    "SummarizationTimeoutError",
    "Summarizer",
    "SummaryOutcome",
    "build_shorten_prompt",
    "build_summary_prompt",
    "parse_summary",
    "render_transcript",
]

SUMMARY_INSTRUCTIONS = (
    "You are a conversation summarizer. Produce a concise summary that preserves ALL "
    "of the following:\n"
    "- Key facts and decisions\n"
    "- User preferences and constraints\n"
    "- Unresolved questions or pending tasks\n"
    "- Important context for continuing the conversation\n"
    "Write at most {max_tokens} tokens. Reply with the summary only."
)
SHORTEN_INSTRUCTIONS = (
    "Shorten this conversation summary to at most {max_tokens} tokens. Keep every fact, "
    "decision, preference, constraint and open task; drop wording, not content. Reply "
    "with the summary only."
)
_MIN_LINE_TOKENS = 16
_WHAT = "the summarisation model"

Plan = Generator[list[BaseMessage], BaseMessage, "SummaryOutcome"]


class SummarizationTimeoutError(LLMTimeoutError):
    """The chat model did not return a summary within the configured timeout."""


@dataclass(frozen=True)
class SummaryOutcome:
    """A summary that fits its budget, and how it was obtained.

    Attributes:
        summary: The new running summary.
        tokens: Its token count (content only), ``<= max_summary_tokens``.
        fitted: ``"as_is"``, ``"shortened"`` (asked the model again) or
            ``"truncated"`` (cut with the tokenizer).
        calls: Number of model calls made.
    """

    summary: str
    tokens: int
    fitted: Literal["as_is", "shortened", "truncated"]
    calls: int


def render_transcript(
    messages: Sequence[BaseMessage], counter: TokenCounter, max_tokens: int
) -> str:
    """Messages as ``role: text`` lines, each truncated to an equal share of ``max_tokens``."""
    if not messages:
        return ""
    share = max(_MIN_LINE_TOKENS, max_tokens // len(messages))
    lines: list[str] = []
    for message in messages:
        label = message.type if not message.name else f"{message.type} ({message.name})"
        text = message_text(message)
        calls = getattr(message, "tool_calls", None)
        if calls:
            text += " [called " + ", ".join(str(c.get("name")) for c in calls) + "]"
        lines.append(f"{label}: {counter.truncate(text, share)}")
    return "\n".join(lines)


def build_summary_prompt(
    previous_summary: str,
    messages: Sequence[BaseMessage],
    *,
    counter: TokenCounter,
    max_summary_tokens: int,
    max_prompt_tokens: int,
) -> list[BaseMessage]:
    """The prompt asking for an updated summary, within its token budget."""
    instructions = SUMMARY_INSTRUCTIONS.format(max_tokens=max_summary_tokens)
    previous = counter.truncate(previous_summary, max_summary_tokens) or "(none)"
    fixed = counter.count(instructions) + counter.count(previous) + 32
    transcript = render_transcript(messages, counter, max(0, max_prompt_tokens - fixed))
    body = (
        f"Previous summary:\n{previous}\n\n"
        f"New messages to incorporate:\n{transcript}\n\n"
        "Updated summary:"
    )
    return [SystemMessage(instructions), HumanMessage(body)]


def build_shorten_prompt(summary: str, *, max_summary_tokens: int) -> list[BaseMessage]:
    """The prompt asking the model to shorten an over-long summary."""
    return [
        SystemMessage(SHORTEN_INSTRUCTIONS.format(max_tokens=max_summary_tokens)),
        HumanMessage(summary),
    ]


def parse_summary(reply: BaseMessage) -> str:
    """Extract the summary text from a model reply.

    Raises:
        ExtractionError: The reply has no text.
    """
    text = message_text(reply).strip()
    for prefix in ("Updated summary:", "Summary:"):
        if text.lower().startswith(prefix.lower()):
            text = text[len(prefix) :].strip()
    if not text:
        raise ExtractionError(
            "the summarisation model returned an empty summary: check the model, or use a "
            "model that follows instructions"
        )
    return text


class Summarizer:
    """Turns a previous summary plus new messages into an updated, budgeted summary.

    Args:
        model: Any LangChain chat model.
        counter: Token counter (offline ``o200k_base`` by default) or ``Callable[[str], int]``.
        max_summary_tokens: The summary's own budget.
        max_prompt_tokens: Budget of one summarisation prompt.
        timeout: Seconds to wait for each model call; ``None`` waits forever.

    Raises:
        ConfigurationError: A budget or the timeout is not positive.

    Examples:
        >>> from langchain_core.messages import HumanMessage
        >>> from langchain_tiered_memory.testing.fakes import ScriptedChatModel
        >>> model = ScriptedChatModel(responses=["word " * 50, "Short."])
        >>> outcome = Summarizer(model, max_summary_tokens=10).summarize("", [HumanMessage("hi")])
        >>> outcome.summary, outcome.fitted
        ('Short.', 'shortened')
    """

    def __init__(
        self,
        model: BaseChatModel,
        *,
        counter: CounterLike | None = None,
        max_summary_tokens: int = 800,
        max_prompt_tokens: int = 6000,
        timeout: float | None = 30.0,
    ) -> None:
        if max_summary_tokens <= 0 or max_prompt_tokens <= 0:
            raise ConfigurationError(
                f"max_summary_tokens ({max_summary_tokens}) and max_prompt_tokens "
                f"({max_prompt_tokens}) must be positive"
            )
        self.model = model
        self.counter = as_token_counter(counter)
        self.max_summary_tokens = max_summary_tokens
        self.max_prompt_tokens = max_prompt_tokens
        self.timeout = check_timeout(timeout)

    def _plan(self, previous_summary: str, messages: Sequence[BaseMessage]) -> Plan:
        """The summarisation steps as a generator (yield a prompt, receive the reply)."""
        limit, counter = self.max_summary_tokens, self.counter
        reply = yield build_summary_prompt(
            previous_summary,
            messages,
            counter=counter,
            max_summary_tokens=limit,
            max_prompt_tokens=self.max_prompt_tokens,
        )
        text = parse_summary(reply)
        tokens = counter.count(text)
        if tokens <= limit:
            return SummaryOutcome(text, tokens, "as_is", 1)
        reply = yield build_shorten_prompt(text, max_summary_tokens=limit)
        shorter = parse_summary(reply)
        shorter_tokens = counter.count(shorter)
        if shorter_tokens <= limit:
            return SummaryOutcome(shorter, shorter_tokens, "shortened", 2)
        cut = counter.truncate(min(text, shorter, key=counter.count), limit)
        return SummaryOutcome(cut, counter.count(cut), "truncated", 2)

    def _timeout_error(self) -> SummarizationTimeoutError:
        return SummarizationTimeoutError(
            f"{_WHAT} did not answer within {self.timeout}s: raise timeout= "
            "or use a faster model; the messages were kept"
        )

    def _invoke(self, prompt: list[BaseMessage]) -> BaseMessage:
        reply: BaseMessage = invoke_with_timeout(
            self.model, prompt, self.timeout, what=_WHAT, on_timeout=self._timeout_error
        )
        return reply

    async def _ainvoke(self, prompt: list[BaseMessage]) -> BaseMessage:
        reply: BaseMessage = await ainvoke_with_timeout(
            self.model, prompt, self.timeout, what=_WHAT, on_timeout=self._timeout_error
        )
        return reply

    def summarize(self, previous_summary: str, messages: Sequence[BaseMessage]) -> SummaryOutcome:
        """Return the updated summary.

        Raises:
            SummarizationTimeoutError: A model call took longer than ``timeout``.
            ExtractionError: The model returned no text.
            Exception: Whatever the model raised, unchanged.
        """
        return run_plan(self._plan(previous_summary, messages), self._invoke)

    async def asummarize(
        self, previous_summary: str, messages: Sequence[BaseMessage]
    ) -> SummaryOutcome:
        """Async :meth:`summarize`."""
        return await arun_plan(self._plan(previous_summary, messages), self._ainvoke)
