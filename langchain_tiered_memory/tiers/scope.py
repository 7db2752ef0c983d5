"""Namespaces that scope every tier's reads and writes to one user (and agent).

Layout: ``("tiered_memory", <user_id>, <agent_id or "_">, <tier>, *sub)``. Labels
are whole tuple components, so user ``"al"`` can never match ``"alice"`` and a
search under one user's prefix never sees another user's items.

Example:
    >>> scope = MemoryScope("alice")
    >>> scope.namespace("episodic")
    ('tiered_memory', 'alice', '_', 'episodic')
    >>> MemoryScope("bob", agent_id="planner").namespace("semantic", "facts")
    ('tiered_memory', 'bob', 'planner', 'semantic', 'facts')
"""

from __future__ import annotations

from dataclasses import dataclass

from langchain_tiered_memory.errors import InvalidInputError
from langchain_tiered_memory.types import Namespace

__all__ = ["ROOT_LABEL", "MemoryScope", "normalize_id"]

ROOT_LABEL = "tiered_memory"
_NO_AGENT = "_"
_MAX_ID_LENGTH = 256


def normalize_id(value: str, *, what: str = "id") -> str:
    """Normalise an identifier: strip, collapse inner whitespace, lower-case.

    Raises:
        InvalidInputError: Not a string, empty after stripping, too long, or
            containing control characters.
    """
    if not isinstance(value, str):
        raise InvalidInputError(f"{what} must be a string, got {type(value).__name__} {value!r}")
    cleaned = " ".join(value.split()).lower()
    if not cleaned:
        raise InvalidInputError(f"{what} is empty: pass a non-empty string such as 'alice'")
    if len(cleaned) > _MAX_ID_LENGTH:
        raise InvalidInputError(
            f"{what} is {len(cleaned)} characters long: use at most {_MAX_ID_LENGTH}"
        )
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in cleaned):
        raise InvalidInputError(f"{what} {value!r} contains control characters: remove them")
    return cleaned


@dataclass(frozen=True)
class MemoryScope:
    """Who a memory belongs to: a user, optionally narrowed to one agent.

    Args:
        user_id: The user; normalised with :func:`normalize_id`.
        agent_id: Optional agent; ``None`` shares memory across the user's agents.
    """

    user_id: str
    agent_id: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "user_id", normalize_id(self.user_id, what="user_id"))
        if self.agent_id is not None:
            agent = normalize_id(self.agent_id, what="agent_id")
            if agent == _NO_AGENT:
                raise InvalidInputError("agent_id '_' is reserved: choose another name")
            object.__setattr__(self, "agent_id", agent)

    @property
    def prefix(self) -> Namespace:
        """The namespace prefix that holds everything of this scope."""
        return (ROOT_LABEL, self.user_id, self.agent_id or _NO_AGENT)

    @property
    def user_prefix(self) -> Namespace:
        """The namespace prefix that holds everything of this user, all agents."""
        return (ROOT_LABEL, self.user_id)

    def namespace(self, tier: str, *sub: str) -> Namespace:
        """The namespace of ``tier`` (and optional sub-labels) in this scope."""
        return (*self.prefix, tier, *sub)
