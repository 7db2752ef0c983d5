"""Namespaces that scope every tier's reads and writes to one user (and agent).

Layout: ``("tiered_memory", <user_id>, <agent_id or "_">, <tier>, *sub)``. Labels
are whole tuple components, so user ``"al"`` can never match ``"alice"`` and a
search under one user's prefix never sees another user's items.

Examples:
    >>> scope = MemoryScope("alice")
    >>> scope.namespace("episodic")
    ('tiered_memory', 'alice', '_', 'episodic')
    >>> MemoryScope("bob", agent_id="planner").namespace("semantic", "facts")
    ('tiered_memory', 'bob', 'planner', 'semantic', 'facts')
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from langchain_tiered_memory.errors import InvalidInputError
from langchain_tiered_memory.text import check_unicode
from langchain_tiered_memory.types import Namespace

__all__ = ["NO_AGENT", "ROOT_LABEL", "MemoryScope", "id_to_label", "label_to_id", "normalize_id"]

ROOT_LABEL = "tiered_memory"
NO_AGENT = "_"
"""The agent label of memories shared by all of a user's agents (``agent_id=None``)."""
MAX_ID_LENGTH = 256
"""Most characters an id may have (user, agent and entity ids, turn ids)."""


_ESCAPE = re.compile(r"%(25|2e)")
_FOLDED_WHITESPACE = frozenset("\t\n\r\x0b\x0c")
_RESERVED_IDS = frozenset({"*"})


def normalize_id(value: str, *, what: str = "id") -> str:
    """Normalise an identifier: Unicode NFC, strip, collapse whitespace, lower-case.

    Every user and agent id goes through this (``TieredMemory.for_user``, the
    CLI, import), so ids are case-insensitive: ``"Alice"`` and ``" alice "`` are
    the same user, stored and listed as ``"alice"``.
    Tabs and newlines fold into single spaces; every other control character
    (including the information separators U+001C to U+001F, which ``str.split``
    would also treat as spaces) is rejected, so two distinct ids never collide.

    Examples:
        >>> normalize_id("  Alice  Smith ")
        'alice smith'

    Raises:
        InvalidInputError: Not a string, empty after stripping, too long, reserved
            (``"*"`` is LangGraph's namespace wildcard), containing control characters,
            or not valid Unicode (a lone surrogate).
    """
    if not isinstance(value, str):
        raise InvalidInputError(f"{what} must be a string, got {type(value).__name__} {value!r}")
    if any((ord(ch) < 32 and ch not in _FOLDED_WHITESPACE) or 127 <= ord(ch) < 160 for ch in value):
        raise InvalidInputError(f"{what} {value!r} contains control characters: remove them")
    check_unicode(value, what)
    cleaned = " ".join(unicodedata.normalize("NFC", value).split()).lower()
    if not cleaned:
        raise InvalidInputError(f"{what} is empty: pass a non-empty string such as 'alice'")
    if len(cleaned) > MAX_ID_LENGTH:
        raise InvalidInputError(
            f"{what} is {len(cleaned)} characters long: use at most {MAX_ID_LENGTH}"
        )
    if cleaned in _RESERVED_IDS:
        raise InvalidInputError(
            f"{what} {value!r} is reserved (a namespace wildcard): choose another"
        )
    return cleaned


def id_to_label(value: str) -> str:
    """The namespace label of a normalised id: ``%`` and ``.`` percent-encoded.

    LangGraph stores reject ``.`` in namespace labels, so ``"alice.smith@example.com"``
    is stored under the label ``"alice%2esmith@example.com"``.
    """
    return value.replace("%", "%25").replace(".", "%2e")


def label_to_id(label: str) -> str:
    """Inverse of :func:`id_to_label` (decoded left to right, so it is exact)."""
    return _ESCAPE.sub(lambda m: "%" if m.group(1) == "25" else ".", label)


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
            if agent == NO_AGENT:
                raise InvalidInputError("agent_id '_' is reserved: choose another name")
            object.__setattr__(self, "agent_id", agent)

    @property
    def prefix(self) -> Namespace:
        """The namespace prefix that holds everything of this scope."""
        agent = id_to_label(self.agent_id) if self.agent_id else NO_AGENT
        return (ROOT_LABEL, id_to_label(self.user_id), agent)

    @property
    def user_prefix(self) -> Namespace:
        """The namespace prefix that holds everything of this user, all agents."""
        return (ROOT_LABEL, id_to_label(self.user_id))

    def namespace(self, tier: str, *sub: str) -> Namespace:
        """The namespace of ``tier`` (and optional sub-labels) in this scope."""
        return (*self.prefix, tier, *sub)
