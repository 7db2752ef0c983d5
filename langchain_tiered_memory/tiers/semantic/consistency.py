"""Judging whether a new fact restates, contradicts, or is unrelated to a stored one.

* :class:`HeuristicConsistencyJudge` (no model), rules in order:

  1. Both facts name an attribute: different attributes or slots (two allergies)
     are ``unrelated``; the same slot is ``same`` with equal normalised values,
     else ``contradicts``.
  2. Otherwise the sets of content words (:func:`~langchain_tiered_memory.text.analyze`
     terms, ``n't`` expanded, negations and the entity's id removed) with a Jaccard
     overlap of at least ``same_threshold`` (0.8) are ``same``, or ``contradicts``
     when exactly one side is negated; less overlap is ``unrelated``.

* :class:`LLMConsistencyJudge` asks a chat model for a :class:`ConsistencyVerdict`
  (cases rule 1 settles are not sent); on a model failure the heuristic verdict is
  used and the error is reported on the judgement.

Examples:
    >>> from datetime import datetime, timezone
    >>> from langchain_tiered_memory.tiers.semantic.models import Fact
    >>> t = datetime(2026, 1, 1, tzinfo=timezone.utc)
    >>> def fact(text):
    ...     return Fact(fact_id=text, entity_id="al", content=text, confidence=0.8,
    ...                 first_observed=t, last_confirmed=t, valid_from=t)
    >>> judge = HeuristicConsistencyJudge()
    >>> judge.judge(fact("Likes green tea"), fact("likes green tea!")).relation
    'same'
    >>> judge.judge(fact("Likes green tea"), fact("Does not like green tea")).relation
    'contradicts'
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal, Protocol

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from langchain_tiered_memory.chat_models import (
    DEFAULT_LLM_TIMEOUT,
    ainvoke_with_timeout,
    check_timeout,
    invoke_with_timeout,
)
from langchain_tiered_memory.plans import Plan, arun_plan, run_plan
from langchain_tiered_memory.text import analyze, words
from langchain_tiered_memory.tiers.semantic.models import Fact, normalize_value

__all__ = [
    "Consistency",
    "ConsistencyJudge",
    "ConsistencyVerdict",
    "HeuristicConsistencyJudge",
    "Judgement",
    "LLMConsistencyJudge",
    "content_tokens",
]

logger = logging.getLogger(__name__)


Consistency = Literal["same", "contradicts", "unrelated"]

_NEGATIONS = frozenset({"not", "no", "never", "none", "nor", "neither", "nobody", "nothing"})


class ConsistencyVerdict(BaseModel):
    """The structured answer an LLM judge fills."""

    relation: Consistency = Field(
        description=(
            "'same': the new statement says the same thing as the stored one; "
            "'contradicts': both cannot be true at once (e.g. a different value for "
            "the same attribute, or a negation); 'unrelated': they are about different things."
        )
    )
    reason: str = Field(default="", description="One short sentence explaining the verdict.")


@dataclass(frozen=True)
class Judgement:
    """A verdict plus who gave it and any error met on the way."""

    relation: Consistency
    judged_by: str
    reason: str = ""
    error: str | None = None


class ConsistencyJudge(Protocol):
    """Decides how a new fact relates to a stored one."""

    def judge(self, existing: Fact, new: Fact) -> Judgement:
        """Judge synchronously."""
        ...

    async def ajudge(self, existing: Fact, new: Fact) -> Judgement:
        """Judge asynchronously."""
        ...


def content_tokens(text: str, *, ignore: frozenset[str] = frozenset()) -> tuple[set[str], bool]:
    """Content words of ``text`` and whether it is negated.

    Examples:
        >>> sorted(content_tokens("User doesn't eat apples")[0]), content_tokens("no")[1]
        (['apple', 'eat'], True)
    """
    expanded = text.lower().replace("\u2019", "'").replace("n't", " not")
    negated = any(w in _NEGATIONS for w in words(expanded))
    return set(analyze(expanded)) - _NEGATIONS - ignore, negated


def _slot_rule(existing: Fact, new: Fact) -> Judgement | None:
    """Rule 1: settle facts that both name an attribute; ``None`` if it does not apply."""
    if existing.attribute is None or new.attribute is None:
        return None
    if existing.attribute != new.attribute:
        return Judgement("unrelated", "slot", "different attributes")
    if existing.slot_key != new.slot_key:
        return Judgement("unrelated", "slot", "different values of a multi-valued attribute")
    if existing.value is None or new.value is None:
        return None
    if normalize_value(existing.value) == normalize_value(new.value):
        return Judgement("same", "slot", "same value in the same slot")
    return Judgement("contradicts", "slot", "different value in the same slot")


@dataclass(frozen=True)
class HeuristicConsistencyJudge:
    """The documented no-model judge (see the module docstring for its rules).

    Args:
        same_threshold: Jaccard overlap of content words at which two texts are
            taken to say the same thing.

    Examples:
        >>> HeuristicConsistencyJudge().same_threshold
        0.8
    """

    same_threshold: float = 0.8

    def judge(self, existing: Fact, new: Fact) -> Judgement:
        """Judge by the slot rule, then by content-word overlap and negation."""
        ruled = _slot_rule(existing, new)
        if ruled is not None:
            return ruled
        ignore = frozenset(analyze(existing.entity_id, stopwords=None))
        a, neg_a = content_tokens(existing.content, ignore=ignore)
        b, neg_b = content_tokens(new.content, ignore=ignore)
        if not a or not b:
            return Judgement("unrelated", "heuristic", "no content words to compare")
        overlap = len(a & b) / len(a | b)
        if overlap < self.same_threshold:
            return Judgement("unrelated", "heuristic", f"word overlap {overlap:.2f}")
        if neg_a != neg_b:
            return Judgement("contradicts", "heuristic", "same words, one side negated")
        return Judgement("same", "heuristic", f"word overlap {overlap:.2f}")

    async def ajudge(self, existing: Fact, new: Fact) -> Judgement:
        """Same as :meth:`judge` (no I/O)."""
        return self.judge(existing, new)


_JUDGE_SYSTEM = (
    "You maintain a memory of facts about people and things. Compare a stored fact "
    "with a newly stated one about the same entity and answer with the relation: "
    "'same' if the new statement restates the stored fact (possibly in other words), "
    "'contradicts' if both cannot be true at the same time, 'unrelated' otherwise. "
    "Facts with similar wording about different things are 'unrelated'."
)
_WHAT = "the consistency judge model"


def _fact_line(fact: Fact) -> str:
    slot = f" [attribute {fact.attribute}={fact.value}]" if fact.attribute else ""
    return f"{fact.content}{slot}"


class LLMConsistencyJudge:
    """A judge backed by a chat model's structured output, with a heuristic fallback.

    Args:
        llm: Any chat model supporting ``with_structured_output``.
        fallback: Used when the model fails (default: :class:`HeuristicConsistencyJudge`).
        timeout: Seconds one model call may take (``None``: no limit); a slower
            call fails like any other: the fallback's verdict is used and the
            error is reported on the judgement.

    Raises:
        ConfigurationError: ``timeout`` is not a positive number or ``None``.

    Examples:
        >>> from datetime import datetime, timezone
        >>> from langchain_tiered_memory.testing.fakes import ScriptedChatModel
        >>> from langchain_tiered_memory.tiers.semantic.models import Fact
        >>> t = datetime(2026, 1, 1, tzinfo=timezone.utc)
        >>> a = Fact(fact_id="a", entity_id="al", content="Lives in NYC", confidence=0.8,
        ...          first_observed=t, last_confirmed=t, valid_from=t)
        >>> b = a.model_copy(update={"fact_id": "b", "content": "Based in New York City"})
        >>> judge = LLMConsistencyJudge(ScriptedChatModel(responses=[{"relation": "same"}]))
        >>> judge.judge(a, b).relation
        'same'
    """

    def __init__(
        self,
        llm: BaseChatModel,
        *,
        fallback: ConsistencyJudge | None = None,
        timeout: float | None = DEFAULT_LLM_TIMEOUT,
    ) -> None:
        self.llm = llm
        self.fallback: ConsistencyJudge = fallback or HeuristicConsistencyJudge()
        self.timeout = check_timeout(timeout)

    @cached_property
    def _structured(self) -> Any:
        return self.llm.with_structured_output(ConsistencyVerdict)

    @staticmethod
    def messages(existing: Fact, new: Fact) -> list[BaseMessage]:
        """The prompt sent to the model."""
        return [
            SystemMessage(content=_JUDGE_SYSTEM),
            HumanMessage(
                content=(
                    f"Entity: {existing.entity_id}\n"
                    f"Stored fact: {_fact_line(existing)}\n"
                    f"New statement: {_fact_line(new)}"
                )
            ),
        ]

    def _judge_plan(self, existing: Fact, new: Fact) -> Plan[Judgement]:
        """Yields the prompt, receives the model's answer; the fallback judges on a failure."""
        ruled = _slot_rule(existing, new)
        if ruled is not None and ruled.relation != "contradicts":
            return ruled  # settled without the model (a different value may be a synonym)
        try:
            raw = yield self.messages(existing, new)
            if raw is None:
                raise ValueError("the model returned no structured output")
            verdict = ConsistencyVerdict.model_validate(raw)
        except Exception as exc:
            message = f"LLM consistency judge failed ({type(exc).__name__}: {exc}); used fallback"
            logger.warning(message)
            fallback = self.fallback.judge(existing, new)
            return Judgement(fallback.relation, fallback.judged_by, fallback.reason, message)
        return Judgement(verdict.relation, "llm", verdict.reason)

    def judge(self, existing: Fact, new: Fact) -> Judgement:
        """Judge with the model (slot-rule cases are settled without it)."""
        return run_plan(
            self._judge_plan(existing, new),
            lambda m: invoke_with_timeout(self._structured, m, self.timeout, what=_WHAT),
        )

    async def ajudge(self, existing: Fact, new: Fact) -> Judgement:
        """Async twin of :meth:`judge`."""
        return await arun_plan(
            self._judge_plan(existing, new),
            lambda m: ainvoke_with_timeout(self._structured, m, self.timeout, what=_WHAT),
        )
