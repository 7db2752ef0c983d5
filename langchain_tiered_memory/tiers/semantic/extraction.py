"""Turning text into entities and facts: a cheap regex path and an LLM path.

:class:`HeuristicFactExtractor` maps explicit first-person statements to attribute
slots with fixed regular expressions (free, deterministic); :class:`EntityFactExtractor`
asks a chat model, told the known entities so it reuses their names, and never raises.
Both return an :class:`ExtractionResult`, so the write path treats them alike.

Examples:
    >>> result = HeuristicFactExtractor().extract("I'm allergic to shellfish. I live in Lyon.")
    >>> [(f.attribute, f.value) for f in result.output.entities[0].facts]
    [('allergy', 'shellfish'), ('lives_in', 'Lyon')]
"""

from __future__ import annotations

import logging
import re
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from langchain_tiered_memory.chat_models import (
    DEFAULT_LLM_TIMEOUT,
    ainvoke_with_timeout,
    check_timeout,
    invoke_with_timeout,
)
from langchain_tiered_memory.errors import InvalidInputError
from langchain_tiered_memory.plans import Plan, arun_plan, run_plan
from langchain_tiered_memory.tiers.common.scope import normalize_id
from langchain_tiered_memory.tiers.semantic.models import Entity

__all__ = [
    "FIRST_PERSON_NAMES",
    "KNOWN_ATTRIBUTES",
    "EntityFactExtractor",
    "ExtractedEntity",
    "ExtractedFact",
    "ExtractedRelation",
    "ExtractionOutput",
    "ExtractionResult",
    "HeuristicFactExtractor",
    "resolve_entity_id",
]

logger = logging.getLogger(__name__)


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


KNOWN_ATTRIBUTES: dict[str, str] = {
    "name": "the person's name",
    "lives_in": "city or place of residence (one value)",
    "employer": "organisation they work for (one value)",
    "occupation": "job or role (one value)",
    "diet": "dietary regime such as vegetarian (one value)",
    "allergy": "something they are allergic to (one fact per allergen)",
    "preference": "something they prefer (one fact per preference)",
    "dislike": "something they dislike (one fact per dislike)",
}
"""Slot names both extractors use; the LLM may add others when none fits."""

FIRST_PERSON_NAMES = frozenset({"user", "the user", "i", "me", "myself", "speaker"})
"""Entity names an extractor may use for the speaker; they resolve to the subject id."""


class ExtractedFact(BaseModel):
    """One fact an extractor found."""

    content: str = Field(description="Short standalone statement, e.g. 'Allergic to shellfish'.")
    attribute: str | None = Field(
        default=None,
        description="Slot the fact sets, e.g. lives_in, employer, allergy; null if none fits.",
    )
    value: str | None = Field(default=None, description="The slot's value, e.g. 'Lyon'.")
    confidence: float = Field(default=0.8, ge=0.0, le=1.0, allow_inf_nan=False)


class ExtractedRelation(BaseModel):
    """A relation from the extracted entity to another one."""

    relation_type: str = Field(description="e.g. works_at, manages, uses, member_of")
    target: str = Field(description="Name of the other entity.")
    target_type: str = Field(default="concept", description="Type of the other entity.")
    description: str = ""


class ExtractedEntity(BaseModel):
    """An entity with the facts and relations found about it."""

    entity_name: str = Field(description="Use a known entity's name when it is the same entity.")
    entity_type: str = Field(
        default="concept", description="user|project|tool|concept|organization"
    )
    facts: list[ExtractedFact] = Field(default_factory=list)
    relations: list[ExtractedRelation] = Field(default_factory=list)


class ExtractionOutput(BaseModel):
    """The structured output of an extractor."""

    entities: list[ExtractedEntity] = Field(default_factory=list)


@dataclass(frozen=True)
class ExtractionResult:
    """An extractor's answer: the output, or an error and an empty output.

    Attributes:
        output: What was found (empty when ``error`` is set).
        extractor: ``"heuristic"`` or ``"llm"``.
        error: What went wrong, or ``None``.
    """

    output: ExtractionOutput
    extractor: Literal["heuristic", "llm"]
    error: str | None = None

    @property
    def ok(self) -> bool:
        """Whether the extraction succeeded."""
        return self.error is None


def resolve_entity_id(name: str, known: Sequence[Entity], subject_id: str) -> str:
    """Map an extracted name to ``subject_id`` (first person), a known entity, or a new id.

    A known entity matches by its id, name or an alias (normalised).

    Raises:
        InvalidInputError: The name is empty.

    Examples:
        >>> resolve_entity_id("I", [], "alice")
        'alice'
    """
    key = normalize_id(name, what="entity name")
    if key in FIRST_PERSON_NAMES:
        return normalize_id(subject_id, what="subject_id")
    for entity in known:
        names = {entity.entity_id, entity.name.lower(), *(a.lower() for a in entity.aliases)}
        if key in {" ".join(n.split()) for n in names}:
            return entity.entity_id
    return key


# ---------------------------------------------------------------- heuristic path

_SENTENCE_RE = re.compile(r"(?<=[.!?])\s+|\n+|;\s*")
_CLAUSE_RE = re.compile(
    r",?\s+(?:and|but|so|because|although|though|while|also)\s+(?=(?:i|i'm|i've|my)\b)",
    re.IGNORECASE,
)
_CUT_RE = re.compile(
    r"\s+(?:but|because|since|with|for|when|where|which|who|so|although|though|while|after|"
    r"before|until|last|next|ago|now|too|these days|currently|recently|as well|if|unless|"
    r"anyway|i think|i guess)\b.*$|\s*[:(].*$|\s+-\s.*$",
    re.IGNORECASE,
)
_COMMA_RE = re.compile(r"\s*,.*$")
_PLACE_RE = re.compile(r"\s+(?:at|in|on)\s+.*$", re.IGNORECASE)
_AND_RE = re.compile(r"\s+and\s+(?=[a-z])")
_LIST_SPLIT_RE = re.compile(r"\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+", re.IGNORECASE)
_BAD_START = re.compile(
    r"^(?:it|this|that|these|those|them|they|when|how|what|to|myself|me|you|him|her|us|"
    r"home|here|there|anything|everything|nothing|something|some|any)\b",
    re.IGNORECASE,
)
_CONDITIONAL_RE = re.compile(r"\b(?:if|whether|unless|suppose|imagine|pretend)\b", re.IGNORECASE)

_I_AM = r"\b(?:i'm|i am|im)"
_ADV = r"(?:(?:very|severely|highly|mildly|extremely|seriously|really|quite|also|so|deathly)\s+)*"
_DIETS = (
    r"vegetarian|vegan|pescatarian|pescetarian|flexitarian|keto|kosher|halal|"
    r"gluten[- ]free|dairy[- ]free|lacto[- ]vegetarian"
)
_OCCUPATION_WORDS = _words(
    """
    nurse chef cook doctor student pilot architect analyst scientist engineer developer
    designer teacher lawyer consultant manager professor researcher accountant programmer
    writer artist physician dentist surgeon pharmacist mechanic electrician plumber farmer
    journalist editor librarian officer therapist psychologist founder ceo cto cfo intern
    freelancer contractor paramedic firefighter soldier carpenter baker barista waiter
    waitress veterinarian vet musician photographer translator economist lecturer tutor
    coach attorney judge cashier clerk secretary salesperson entrepreneur administrator
    technician biologist chemist physicist mathematician statistician
    """
)
_OCCUPATION_SUFFIX = re.compile(r"(?:er|or|ist|ician|eer|ant|ologist)$")
_NOT_OCCUPATION = _words(
    """
    beginner member customer user lover believer newcomer parent patient resident citizen
    person fan fanatic foreigner stranger smoker nonsmoker sleeper learner reader winner
    loser sucker owner worrier perfectionist optimist pessimist introvert extrovert
    vegetarian vegan pescatarian flexitarian
    """
)
_NOT_OCCUPATION_FIRST = _words(
    """
    big huge little bit lot great good bad fast quick slow real total complete
    """
)


def _clean_value(raw: str, *, keep_commas: bool = False) -> str:
    value = _CUT_RE.sub("", raw.strip())
    if not keep_commas:
        value = _COMMA_RE.sub("", value)
    return value.strip(" \t.,;:!?\"'")


def _single(raw: str) -> list[str]:
    """A single value: cut at ' and ' unless a capitalised word follows (Procter and Gamble)."""
    value = _AND_RE.split(_clean_value(raw), maxsplit=1)[0]
    return [value] if value else []


def _many(raw: str) -> list[str]:
    """A list of values: 'peanuts, shellfish and tree nuts' gives three."""
    return [
        v
        for v in (p.strip(" .") for p in _LIST_SPLIT_RE.split(_clean_value(raw, keep_commas=True)))
        if v
    ]


def _occupations(raw: str) -> list[str]:
    """A job title: what precedes 'at'/'in'/'on' ("a nurse at the hospital")."""
    return [v for v in (_PLACE_RE.sub("", x) for x in _single(raw)) if v]


def _is_occupation(value: str) -> bool:
    words = value.lower().split()
    if not words or len(words) > 4 or words[0] in _NOT_OCCUPATION_FIRST:
        return False
    if re.fullmatch(_DIETS, " ".join(words)):  # "I'm kosher" states a diet
        return False
    head = words[words.index("of") - 1] if "of" in words[1:] else words[-1]
    if head in _NOT_OCCUPATION:
        return False
    return head in _OCCUPATION_WORDS or bool(_OCCUPATION_SUFFIX.search(head))


@dataclass(frozen=True)
class _Rule:
    attribute: str
    pattern: str
    template: str
    values: Callable[[str], list[str]] = _single
    accept: Callable[[str], bool] = lambda v: True

    @cached_property
    def regex(self) -> re.Pattern[str]:
        return re.compile(self.pattern, re.IGNORECASE)


_RULES: tuple[_Rule, ...] = (
    _Rule("name", r"\bmy name is (?P<v>.+)", "Name is {v}"),
    _Rule("name", r"^(?:please\s+)?call me (?P<v>.+)", "Name is {v}"),
    _Rule("allergy", _I_AM + r" " + _ADV + r"allergic to (?P<v>.+)", "Allergic to {v}", _many),
    _Rule(
        "allergy", r"\bi have an? (?:\w+ )?allerg(?:y|ies) to (?P<v>.+)", "Allergic to {v}", _many
    ),
    _Rule("allergy", r"\bi have an? (?P<v>[\w -]+?) allergy\b", "Allergic to {v}", _many),
    _Rule(
        "allergy", r"\bmy allerg(?:y|ies) (?:is|are|include) (?P<v>.+)", "Allergic to {v}", _many
    ),
    _Rule("lives_in", r"\bi (?:currently |now |still )?live in (?P<v>.+)", "Lives in {v}"),
    _Rule(
        "lives_in",
        r"\bi(?:'ve| have)? (?:just |recently |now )?(?:moved|relocated) to (?P<v>.+)",
        "Lives in {v}",
    ),
    _Rule(
        "lives_in", _I_AM + r" (?:now |currently )?(?:based|living) in (?P<v>.+)", "Lives in {v}"
    ),
    _Rule("employer", r"\bmy employer is (?P<v>.+)", "Works at {v}"),
    _Rule("employer", r"\bi (?:currently |now )?work (?:at|for) (?P<v>.+)", "Works at {v}"),
    _Rule("employer", _I_AM + r" (?:currently |now )?employed (?:at|by) (?P<v>.+)", "Works at {v}"),
    _Rule("diet", _I_AM + r" (?:an? )?(?:strict )?(?P<v>" + _DIETS + r")\b", "Follows a {v} diet"),
    _Rule(
        "diet", r"\bi (?:eat|follow|keep) (?:an? )?(?P<v>" + _DIETS + r")\b", "Follows a {v} diet"
    ),
    _Rule("occupation", _I_AM + r" an? (?P<v>.+)", "Is {a} {v}", _occupations, _is_occupation),
    _Rule("occupation", r"\bi work as an? (?P<v>.+)", "Is {a} {v}", _occupations, _is_occupation),
    _Rule(
        "preference",
        r"\bi (?:really |strongly |generally |usually |much |definitely |always )?prefer (?P<v>.+)",
        "Prefers {v}",
    ),
    _Rule(
        "dislike",
        r"\bi (?:really |just |absolutely )?(?:don't|do not) (?:really )?like (?P<v>.+)",
        "Dislikes {v}",
        _many,
    ),
    _Rule(
        "dislike",
        r"\bi (?:really )?(?:dislike|hate|can't stand|cannot stand|detest) (?P<v>.+)",
        "Dislikes {v}",
        _many,
    ),
)

_PREFERENCE_HEAD = re.compile(r"\s+(?:over|to|rather than|instead of|than)\s+.*$", re.IGNORECASE)


def _clauses(text: str) -> list[str]:
    clauses: list[str] = []
    for sentence in _SENTENCE_RE.split(text.replace("\u2019", "'")):
        sentence = sentence.strip()
        if not sentence or sentence.endswith("?"):
            continue
        clauses.extend(c.strip() for c in _CLAUSE_RE.split(sentence) if c.strip())
    return clauses


@dataclass
class HeuristicFactExtractor:
    """Deterministic extraction of explicit first-person statements (no model).

    Recognised forms and their slots: "my name is X" / "call me X" (``name``),
    "I'm (very) allergic to X", "I have a X allergy" (``allergy``, one fact per
    allergen), "I live in X", "I moved to X", "I'm based in X" (``lives_in``),
    "my employer is X", "I work at/for X" (``employer``), "I'm a software
    engineer", "I work as a X" (``occupation``, only for job-like nouns),
    "I'm vegetarian/vegan/..." (``diet``), "I prefer X" (``preference``; the
    value is what comes before "over"/"to"), "I don't like X", "I hate X"
    (``dislike``). Questions, negated and conditional sentences are skipped.

    Args:
        confidence: Confidence given to every extracted fact.
        subject_name: Entity name used for the speaker.

    Examples:
        >>> out = HeuristicFactExtractor().extract("I'm a software engineer and I prefer Python.")
        >>> [f.content for f in out.output.entities[0].facts]
        ['Is a software engineer', 'Prefers Python']
    """

    confidence: float = 0.9
    subject_name: str = "user"

    def extract_facts(self, text: str) -> list[ExtractedFact]:
        """The facts found in ``text``, in order, one per slot value."""
        facts: list[ExtractedFact] = []
        seen: set[tuple[str, str]] = set()
        for clause in _clauses(text):
            if _CONDITIONAL_RE.search(clause):
                continue
            for rule in _RULES:
                match = rule.regex.search(clause)
                if match is None:
                    continue
                for value in rule.values(match.group("v")):
                    key = (rule.attribute, value.lower())
                    if key in seen or _BAD_START.match(value) or not rule.accept(value):
                        continue
                    seen.add(key)
                    facts.append(self._fact(rule, value))
        return facts

    def _fact(self, rule: _Rule, value: str) -> ExtractedFact:
        article = "an" if value[:1].lower() in "aeiou" else "a"
        content = rule.template.format(v=value, a=article)
        slot_value = _PREFERENCE_HEAD.sub("", value) if rule.attribute == "preference" else value
        return ExtractedFact(
            content=content,
            attribute=rule.attribute,
            value=slot_value,
            confidence=self.confidence,
        )

    def extract(self, text: str, known_entities: Sequence[Entity] = ()) -> ExtractionResult:
        """Extract first-person facts; the one entity returned is the speaker."""
        facts = self.extract_facts(text)
        speaker = ExtractedEntity(entity_name=self.subject_name, entity_type="user", facts=facts)
        return ExtractionResult(ExtractionOutput(entities=[speaker] if facts else []), "heuristic")

    async def aextract(self, text: str, known_entities: Sequence[Entity] = ()) -> ExtractionResult:
        """Same as :meth:`extract` (no I/O)."""
        return self.extract(text, known_entities)


# ---------------------------------------------------------------- LLM path

_EXTRACT_SYSTEM = """Extract durable entities and facts from a conversation turn.
Rules:
- Only extract genuinely important, durable facts; skip greetings, filler and one-off requests.
- The speaker is the entity named "user" (entity_type "user").
- Reuse a known entity's exact name when the turn is about it; never create a duplicate.
- Give each fact a short standalone statement in "content".
- When a fact sets one of these attributes, fill "attribute" and "value":
{attributes}
- confidence is in [0, 1]: 0.9 for something stated plainly, lower for inferences.
- Return no entities if nothing durable was said."""
_WHAT = "the fact extraction model"


@dataclass
class EntityFactExtractor:
    """LLM extraction of entities, facts and relations through structured output.

    Args:
        llm: Any chat model supporting ``with_structured_output``.
        max_failures_kept: How many failed results :attr:`failures` keeps.
        timeout: Seconds one model call may take (``None``: no limit). A call
            that takes longer fails like any other model failure: the result
            carries the error and nothing is stored.

    Raises:
        ConfigurationError: ``timeout`` is not a positive number or ``None``.

    Examples:
        >>> from langchain_tiered_memory.testing.fakes import ScriptedChatModel
        >>> model = ScriptedChatModel(responses=["not json"])
        >>> result = EntityFactExtractor(model).extract("I love Lyon")
        >>> result.ok, result.output.entities
        (False, [])
    """

    llm: BaseChatModel
    max_failures_kept: int = 100
    timeout: float | None = DEFAULT_LLM_TIMEOUT
    failures: deque[ExtractionResult] = field(init=False)

    def __post_init__(self) -> None:
        self.timeout = check_timeout(self.timeout)
        self.failures = deque(maxlen=self.max_failures_kept)

    @staticmethod
    def messages(text: str, known_entities: Sequence[Entity] = ()) -> list[BaseMessage]:
        """The prompt sent to the model (pure)."""
        if not isinstance(text, str) or not text.strip():
            raise InvalidInputError("text to extract from is empty: pass the conversation turn")
        attributes = "\n".join(f"  {k}: {v}" for k, v in KNOWN_ATTRIBUTES.items())
        known = (
            "Known entities (name | type):\n"
            + "\n".join(f"- {e.name} | {e.entity_type}" for e in known_entities)
            if known_entities
            else "No known entities yet."
        )
        return [
            SystemMessage(content=_EXTRACT_SYSTEM.format(attributes=attributes)),
            HumanMessage(content=f"{known}\n\nConversation turn:\n{text.strip()}"),
        ]

    @cached_property
    def _structured(self) -> Any:
        return self.llm.with_structured_output(ExtractionOutput)

    def _extract_plan(self, text: str, known: Sequence[Entity]) -> Plan[ExtractionResult]:
        """Yields the prompt, receives the model's answer; a failure becomes the result."""
        messages = self.messages(text, known)
        try:
            raw = yield messages
            if raw is None:
                raise ValueError("the model returned no structured output")
            return ExtractionResult(ExtractionOutput.model_validate(raw), "llm")
        except Exception as exc:
            error = f"LLM extraction failed ({type(exc).__name__}: {exc}); nothing was stored"
            logger.warning(error)
            failed = ExtractionResult(ExtractionOutput(), "llm", error)
            self.failures.append(failed)
            return failed

    def extract(self, text: str, known_entities: Sequence[Entity] = ()) -> ExtractionResult:
        """Extract entities and facts; never raises for model failures.

        Raises:
            InvalidInputError: ``text`` is empty (a caller's mistake, not a model failure).
        """
        return run_plan(
            self._extract_plan(text, known_entities),
            lambda m: invoke_with_timeout(self._structured, m, self.timeout, what=_WHAT),
        )

    async def aextract(self, text: str, known_entities: Sequence[Entity] = ()) -> ExtractionResult:
        """Async twin of :meth:`extract`."""
        return await arun_plan(
            self._extract_plan(text, known_entities),
            lambda m: ainvoke_with_timeout(self._structured, m, self.timeout, what=_WHAT),
        )
