"""Records of episodic memory: episodes, their steps and outcomes, reflections.

Pydantic models: ids are generated when not given, timestamps are timezone-aware, and bad
values (an empty task, an unknown outcome, a negative duration) are rejected when the model
is built (``pydantic.ValidationError``, a ``ValueError``).

Examples:
    >>> ep = Episode(task_description="Deploy the API", outcome="success",
    ...              trajectory=[TrajectoryStep(action="tool_call: deploy", observation="ok")],
    ...              reflection="Run migrations first.", tags=["Deploy"])
    >>> ep.outcome is Outcome.SUCCESS, ep.tags, len(ep.episode_id)
    (True, ['deploy'], 32)
    >>> print(ep.to_summary())
    Task: Deploy the API
    Outcome: success
    Steps: [tool_call: deploy]
    Lesson: Run migrations first.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from langchain_tiered_memory.errors import InvalidInputError
from langchain_tiered_memory.tiers.common.ranking import ScoreBreakdown
from langchain_tiered_memory.types import aware_field, finite_field, utcnow

__all__ = [
    "Episode",
    "Outcome",
    "Reflection",
    "ReflectionStatus",
    "ScoredEpisode",
    "TrajectoryStep",
    "normalize_tags",
    "parse_outcome",
]


class Outcome(str, Enum):
    """How a task attempt ended."""

    SUCCESS = "success"
    PARTIAL = "partial"
    FAILURE = "failure"
    ABANDONED = "abandoned"


class ReflectionStatus(str, Enum):
    """Where an episode's reflection stands.

    ``none``: no reflection was asked for; ``pending``: asked for and not done
    yet (or the last try failed and will be retried); ``done``: reflected;
    ``failed``: every allowed try failed (see ``reflection_error``).
    """

    NONE = "none"
    PENDING = "pending"
    DONE = "done"
    FAILED = "failed"


def parse_outcome(outcome: Outcome | str) -> Outcome:
    """``outcome`` as an :class:`Outcome` (text is stripped and lower-cased).

    Raises:
        InvalidInputError: Not one of the known outcomes.
    """
    try:
        return Outcome(outcome.strip().lower() if isinstance(outcome, str) else outcome)
    except ValueError as exc:
        known = [o.value for o in Outcome]
        raise InvalidInputError(f"outcome {outcome!r} is unknown: use one of {known}") from exc


def normalize_tags(tags: Any) -> list[str]:
    """Strip, collapse whitespace, lower-case and de-duplicate tags (order kept).

    Raises:
        InvalidInputError: ``tags`` is a bare string or holds a non-string (a ``ValueError``,
            so a model's validator reports it as a validation error).
    """
    if tags is None:
        return []
    if isinstance(tags, str):
        raise InvalidInputError(
            f"tags must be a list of strings, got the string {tags!r}: use [{tags!r}]"
        )
    out: list[str] = []
    for tag in tags:
        if not isinstance(tag, str):
            raise InvalidInputError(f"tag {tag!r} is {type(tag).__name__}: tags must be strings")
        clean = " ".join(tag.split()).lower()
        if clean and clean not in out:
            out.append(clean)
    return out


class TrajectoryStep(BaseModel):
    """One step of an agent's trajectory: reasoning, action, what came back."""

    model_config = ConfigDict(validate_assignment=True)

    thought: str = ""
    action: str
    observation: str = ""
    timestamp: datetime = Field(default_factory=utcnow)

    _aware_timestamp = field_validator("timestamp", mode="after")(aware_field)


class Reflection(BaseModel):
    """A structured reflection on one episode (filled by an LLM)."""

    what_worked: str = Field(default="", description="What worked well, and why.")
    what_failed: str = Field(default="", description="What failed, and why.")
    do_differently: str = Field(default="", description="What to do differently next time.")
    lesson: str = Field(description="One transferable sentence to remember.")
    importance: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="How much this episode matters for future tasks: 0 trivial, 1 critical.",
    )

    def to_text(self) -> str:
        """The reflection as prose, lesson first (this is what gets embedded)."""
        parts = [f"Lesson: {self.lesson.strip()}"]
        for label, text in (
            ("Worked", self.what_worked),
            ("Failed", self.what_failed),
            ("Next time", self.do_differently),
        ):
            if text.strip():
                parts.append(f"{label}: {text.strip()}")
        return " ".join(parts)


class Episode(BaseModel):
    """A complete record of one task attempt.

    ``session_id`` may also be given as ``context["session_id"]``. ``get``, the
    listings and consolidation fill ``access_count`` and ``last_accessed`` from
    the store's access statistics (retrievals only with
    ``EpisodicConfig.access_counts_in_results``).
    When ``created_at`` is not given, :meth:`EpisodicMemory.record
    <langchain_tiered_memory.tiers.episodic.memory.EpisodicMemory.record>` stamps it with
    the memory's clock (the model's own default is the wall clock).
    """

    model_config = ConfigDict(validate_assignment=True)

    episode_id: str = Field(default_factory=lambda: uuid.uuid4().hex, min_length=1)
    task_description: str
    outcome: Outcome
    trajectory: list[TrajectoryStep] = Field(default_factory=list)
    reflection: str = ""
    reflection_detail: Reflection | None = None
    reflection_status: ReflectionStatus = ReflectionStatus.NONE
    reflection_error: str | None = None
    reflection_attempts: int = Field(default=0, ge=0)
    duration_seconds: float = Field(default=0.0, ge=0.0)
    context: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime = Field(default_factory=utcnow)
    tags: list[str] = Field(default_factory=list)
    session_id: str | None = None
    importance: float = Field(default=0.5, ge=0.0, le=1.0)
    pinned: bool = False
    access_count: int = Field(default=0, ge=0)
    last_accessed: datetime | None = None

    _aware_times = field_validator("created_at", "last_accessed", mode="after")(aware_field)

    @field_validator("task_description", mode="after")
    @classmethod
    def _task_not_empty(cls, value: str) -> str:
        value = value.strip()
        if not value:
            raise ValueError("task_description is empty: describe the task, e.g. 'Deploy the API'")
        return value

    @field_validator("outcome", mode="before")
    @classmethod
    def _outcome_text(cls, value: Any) -> Any:
        return parse_outcome(value) if isinstance(value, str) else value

    _finite_duration = field_validator("duration_seconds", mode="after")(finite_field)

    _tags = field_validator("tags", mode="before")(normalize_tags)

    @model_validator(mode="after")
    def _session_from_context(self) -> Episode:
        if self.session_id is None and isinstance(self.context.get("session_id"), str):
            object.__setattr__(self, "session_id", self.context["session_id"])
        if self.session_id is not None and not self.session_id.strip():
            raise ValueError("session_id is empty: pass None or a non-empty id")
        return self

    def to_summary(self) -> str:
        """Compact representation for context injection."""
        steps = " -> ".join(f"[{s.action}]" for s in self.trajectory)
        return (
            f"Task: {self.task_description}\n"
            f"Outcome: {self.outcome.value}\n"
            f"Steps: {steps}\n"
            f"Lesson: {self.reflection}"
        )

    def embedding_text(self) -> str:
        """What similarity search sees: ``task | outcome | reflection``."""
        return f"{self.task_description} | {self.outcome.value} | {self.reflection}"


@dataclass(frozen=True)
class ScoredEpisode:
    """An episode and why it ranked where it did."""

    episode: Episode
    score: ScoreBreakdown
