"""How episodes are laid out in a ``BaseStore`` and how their filters are written.

Sibling namespaces under ``(..., "episodic")``: ``episodes`` (keyed by ``episode_id``),
``access`` (retrieval counts) and ``conversations``. An episode's value is its JSON dump
plus the fields the store filters on: ``text`` (``task | outcome | reflection``, the
only embedded field), ``created_ts`` (epoch seconds), ``session_id`` (``""`` when none)
and one flag field per tag, ``tag_<escaped tag>: 1`` (``BaseStore`` filters have no
"contains"; a match on any of several tags runs one search per tag in one batch).
Only this module knows the layout.

Examples:
    >>> tag_field("ci/cd v2")
    'tag_ciU00002FcdU000020v2'
    >>> episode_filter(outcome="failure", session_id="s1")
    {'outcome': {'$eq': 'failure'}, 'session_id': {'$eq': 's1'}}
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal

from langchain_tiered_memory.errors import InvalidInputError
from langchain_tiered_memory.tiers.common.records import (
    check_stored_size,
    to_epoch,
    validate_model,
)
from langchain_tiered_memory.tiers.common.scope import MemoryScope
from langchain_tiered_memory.tiers.episodic.models import (
    Episode,
    Outcome,
    normalize_tags,
    parse_outcome,
)
from langchain_tiered_memory.types import Namespace

__all__ = [
    "EMBED_FIELDS",
    "TAG_FLAG",
    "TagMode",
    "conversations_namespace",
    "episode_filter",
    "episode_from_value",
    "episode_to_value",
    "episodes_namespace",
    "tag_field",
    "tag_filters",
    "validate_episode",
]

TagMode = Literal["any", "all"]
TAG_FLAG = 1
"""The value of a tag's flag field."""
EMBED_FIELDS = ["text"]
"""Fields passed as ``index=`` on every put, whatever the store's default fields are."""

_TAG_SAFE = re.compile(r"[^a-z0-9_]")
_EPISODE_FIELDS = frozenset(Episode.model_fields)
_NOT_STORED = frozenset({"access_count", "last_accessed"})


def episodes_namespace(scope: MemoryScope) -> Namespace:
    """Where a scope's episodes live."""
    return scope.namespace("episodic", "episodes")


def conversations_namespace(scope: MemoryScope) -> Namespace:
    """Where a scope's conversation index lives."""
    return scope.namespace("episodic", "conversations")


def tag_field(tag: str) -> str:
    """The payload field flagging ``tag``: ``tag_`` + the tag with unsafe characters escaped.

    Tags are lower-case, so lower-case letters, digits and ``_`` stay and any other
    character becomes ``U`` + six upper-case hex digits: unambiguous, and dots,
    slashes or dashes never turn into paths in a store's filter language.
    """
    clean = " ".join(tag.split()).lower()
    return "tag_" + _TAG_SAFE.sub(lambda m: f"U{ord(m.group()):06X}", clean)


def validate_episode(episode: Episode | dict[str, Any], now: datetime) -> Episode:
    """Return a validated copy of ``episode`` (an Episode or a dict of its fields).

    Args:
        episode: The episode.
        now: The recording tier's time: an episode whose ``created_at`` the caller
            did not set gets it (instead of the wall-clock default of the model).

    Raises:
        InvalidInputError: A field is invalid (the message lists which and why), a
            text is not valid Unicode, or the stored episode would be over the
            one-record limit. Direct and queued recording both check here first.
    """
    ep = validate_model(Episode, episode, "episode", unset={"created_at": now})
    check_stored_size(episode_to_value(ep), "episode")
    return ep


def episode_to_value(episode: Episode) -> dict[str, Any]:
    """The stored value of ``episode`` (see the module docstring)."""
    value = episode.model_dump(mode="json", exclude=set(_NOT_STORED))
    value["text"] = episode.embedding_text()
    value["created_ts"] = to_epoch(episode.created_at)
    value["session_id"] = episode.session_id or ""
    for tag in episode.tags:
        value[tag_field(tag)] = TAG_FLAG
    return value


def episode_from_value(value: dict[str, Any]) -> Episode:
    """Rebuild an episode from its stored value (access counts are read by the tier)."""
    data = {k: v for k, v in value.items() if k in _EPISODE_FIELDS}
    data["session_id"] = data.get("session_id") or None
    return Episode.model_validate(data)


def episode_filter(
    *,
    outcome: Outcome | str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    session_id: str | None = None,
    reflection_status: str | None = None,
) -> dict[str, Any]:
    """A ``BaseStore`` filter for the given conditions (all must hold)."""
    flt: dict[str, Any] = {}
    if outcome is not None:
        flt["outcome"] = {"$eq": parse_outcome(outcome).value}
    window = {op: to_epoch(t) for op, t in (("$gte", since), ("$lte", until)) if t is not None}
    if window:
        flt["created_ts"] = window
    if session_id is not None:
        if not isinstance(session_id, str) or not session_id.strip():
            raise InvalidInputError(f"session_id {session_id!r} is empty: pass a non-empty id")
        flt["session_id"] = {"$eq": session_id}
    if reflection_status is not None:
        flt["reflection_status"] = {"$eq": reflection_status}
    return flt


def tag_filters(
    base: dict[str, Any], tags: Sequence[str] | None, mode: TagMode = "any"
) -> list[dict[str, Any]]:
    """The filters to run so that results carry ``tags``: one per tag for ``any``.

    Returns ``[base]`` when there are no tags. The caller merges the results of
    several filters (an OR); each filter runs inside the store.

    Raises:
        InvalidInputError: ``mode`` is neither ``"any"`` nor ``"all"``, or tags are malformed.
    """
    clean = normalize_tags(tags)
    if not clean:
        return [base]
    if mode == "all":
        return [{**base, **{tag_field(t): TAG_FLAG for t in clean}}]
    if mode == "any":
        return [{**base, tag_field(t): TAG_FLAG} for t in clean]
    raise InvalidInputError(f"tag_mode {mode!r} is unknown: use 'any' or 'all'")
