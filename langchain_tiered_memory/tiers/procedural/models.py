"""Records of procedural memory: tool uses, learned strategies, tool guidance.

:class:`ToolUsageRecord` redacts secrets as it is built, so none reaches the store or a log.

Examples:
    >>> rec = ToolUsageRecord(tool_name="search", parameters={"q": "x", "api_key": "s3cr3t"},
    ...                       success=True, execution_time_ms=12)
    >>> rec.parameters
    {'q': 'x', 'api_key': '[REDACTED]'}
    >>> s = Strategy(name="retry-with-backoff", description="Retry 429s with backoff",
    ...              conditions="rate limited", procedure="sleep 2**n", success_count=8,
    ...              failure_count=2)
    >>> round(s.success_rate, 2), round(s.confidence, 2)
    (0.8, 0.49)
"""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from langchain_tiered_memory.tiers.procedural.text import redact_parameters, redact_text
from langchain_tiered_memory.types import aware_field, finite_field, utcnow

__all__ = [
    "ErrorPattern",
    "ScoredStrategy",
    "Strategy",
    "ToolGuidance",
    "ToolUsageRecord",
    "wilson_lower_bound",
]


def _required_text(value: str, info: Any) -> str:
    clean = " ".join(value.split())
    if not clean:
        raise ValueError(f"{info.field_name} is empty: pass a non-empty string")
    return clean


class ToolUsageRecord(BaseModel):
    """One use of a tool, secrets redacted.

    Attributes:
        tool_name: The tool's name (whitespace collapsed; case kept).
        parameters: The call's arguments; credential-named entries redacted.
        context: What task was being performed.
        success: Whether the call worked.
        execution_time_ms: How long it took (>= 0).
        error_message: The error, if it failed (credential-looking values redacted).
        hint: What worked instead, e.g. ``"use orders_v2"``; shown in warnings.
        timestamp: When it happened (aware).
        record_id: Unique id (generated).
    """

    model_config = ConfigDict(validate_assignment=True)

    tool_name: str
    parameters: dict[str, Any] = Field(default_factory=dict)
    context: str = ""
    success: bool
    execution_time_ms: float = Field(default=0.0, ge=0.0)
    error_message: str = ""
    hint: str = ""
    timestamp: datetime = Field(default_factory=utcnow)
    record_id: str = Field(default_factory=lambda: uuid.uuid4().hex, min_length=1)

    _required = field_validator("tool_name", mode="after")(_required_text)
    _redact_parameters = field_validator("parameters", mode="after")(redact_parameters)
    _redact_text = field_validator("error_message", "hint", "context", mode="after")(redact_text)
    _finite_time = field_validator("execution_time_ms", mode="after")(finite_field)
    _aware = field_validator("timestamp", mode="after")(aware_field)


def wilson_lower_bound(successes: int, failures: int, z: float = 1.96) -> float:
    """A strategy's confidence: Wilson score lower bound of the success rate (0 with no data)."""
    total = successes + failures
    if total == 0:
        return 0.0
    p = successes / total
    denominator = 1 + z * z / total
    center = p + z * z / (2 * total)
    spread = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total))
    return max(0.0, (center - spread) / denominator)


class Strategy(BaseModel):
    """A learned behavioural pattern and its track record (counted by ``ProceduralMemory``)."""

    model_config = ConfigDict(validate_assignment=True)

    name: str
    description: str
    conditions: str = Field(default="", description="When to apply this strategy.")
    procedure: str = Field(default="", description="What to do.")
    success_count: int = Field(default=0, ge=0)
    failure_count: int = Field(default=0, ge=0)
    last_used: datetime | None = None
    created_at: datetime = Field(default_factory=utcnow)

    _required = field_validator("name", "description", mode="after")(_required_text)
    _aware = field_validator("created_at", "last_used", mode="after")(aware_field)

    @property
    def total_uses(self) -> int:
        """Outcomes recorded."""
        return self.success_count + self.failure_count

    @property
    def success_rate(self) -> float:
        """Successes over outcomes; 0.5 before any outcome (an uninformed prior)."""
        return self.success_count / self.total_uses if self.total_uses else 0.5

    @property
    def confidence(self) -> float:
        """Wilson score lower bound (95%) of the success rate; 0 with no outcomes."""
        return wilson_lower_bound(self.success_count, self.failure_count)


@dataclass(frozen=True)
class ScoredStrategy:
    """A strategy applicable to a context, and why.

    Attributes:
        strategy: The strategy with its counts.
        relevance: Similarity of its description/conditions to the context, in [0, 1].
        confidence: Its Wilson confidence.
        score: ``relevance_weight * relevance + confidence_weight * confidence``
            over the sum of the weights.
    """

    strategy: Strategy
    relevance: float
    confidence: float
    score: float


@dataclass(frozen=True)
class ErrorPattern:
    """A recurring, normalised error of one tool."""

    signature: str
    count: int
    last_message: str


@dataclass(frozen=True)
class ToolGuidance:
    """What procedural memory learned about one tool.

    ``known`` is False when the tool was never recorded (every count is then 0).
    """

    tool_name: str
    known: bool
    total_uses: int = 0
    successes: int = 0
    failures: int = 0
    avg_execution_time_ms: float = 0.0
    common_errors: list[ErrorPattern] = field(default_factory=list)
    successful_patterns: list[str] = field(default_factory=list)
    last_used: datetime | None = None
    last_success: bool | None = None
    last_error: str | None = None
    last_hint: str | None = None

    @property
    def success_rate(self) -> float:
        """Successes over uses (0 when unknown)."""
        return self.successes / self.total_uses if self.total_uses else 0.0

    @property
    def failure_rate(self) -> float:
        """Failures over uses (0 when unknown)."""
        return self.failures / self.total_uses if self.total_uses else 0.0
