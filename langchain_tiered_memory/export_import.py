"""Export and import of store records as JSON Lines, keeping each record's timestamps.

One line per store item: ``format``, ``namespace``, ``key``, ``value``,
``created_at`` and ``updated_at`` (ISO-8601). Import keeps each record's times
on a store with the :class:`~langchain_tiered_memory.stores.abilities.Restoring`
ability and (best effort, through its item dictionary) on LangGraph's
``InMemoryStore``; any other store stamps the import time, and a warning says so.

Examples:
    >>> from langgraph.store.memory import InMemoryStore
    >>> store = InMemoryStore()
    >>> store.put(("tiered_memory", "alice", "notes"), "n1", {"text": "hello"})
    >>> record = export_record(store.get(("tiered_memory", "alice", "notes"), "n1"))
    >>> op = parse_record(record)
    >>> other = InMemoryStore()
    >>> write_records(other, [op])
    >>> other.get(op.namespace, "n1").updated_at.isoformat() == record["updated_at"]
    True
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from datetime import datetime
from typing import Any, Literal

from langgraph.store.base import BaseStore, Item, PutOp
from langgraph.store.memory import InMemoryStore

from langchain_tiered_memory.erasure_fence import awriting, put_namespaces, writing
from langchain_tiered_memory.errors import InvalidInputError
from langchain_tiered_memory.stores.abilities import Restoring
from langchain_tiered_memory.stores.restore import RestoreOp
from langchain_tiered_memory.stores.serialized import SerializedStore, unwrap
from langchain_tiered_memory.text import check_unicode
from langchain_tiered_memory.tiers.common.scope import (
    NO_AGENT,
    ROOT_LABEL,
    MemoryScope,
    label_to_id,
    normalize_id,
)
from langchain_tiered_memory.types import ensure_aware

__all__ = [
    "EXPORT_FORMAT",
    "ImportTarget",
    "RestoreOp",
    "awrite_records",
    "export_record",
    "index_of",
    "jsonl_line",
    "parse_record",
    "read_records",
    "write_records",
]

logger = logging.getLogger(__name__)

EXPORT_FORMAT = "langchain-tiered-memory/v1"
"""The ``format`` field of every exported record."""

_CHUNK = 2048
"""Records per write: one embedding call and one store call each (a store with the
``Restoring`` ability sends them to the engine in batches of 1,024)."""


def export_record(item: Item) -> dict[str, Any]:
    """One store item as a JSON-ready export record."""
    return {
        "format": EXPORT_FORMAT,
        "namespace": list(item.namespace),
        "key": item.key,
        "value": item.value,
        "created_at": item.created_at.isoformat(),
        "updated_at": item.updated_at.isoformat(),
    }


def jsonl_line(record: dict[str, Any]) -> str:
    """One export record as a line of a JSON Lines export file (newline included)."""
    return json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n"


def index_of(namespace: tuple[str, ...], value: dict[str, Any]) -> list[str] | Literal[False]:
    """Which field to embed when re-importing a record: the tiers embed one text field each."""
    if any(label.startswith("_") for label in namespace[3:]):
        return False
    for field in ("text", "content", "search_text"):
        if isinstance(value.get(field), str):
            return [field]
    return False


def _time(record: dict[str, Any], field: str) -> datetime:
    text = record[field]
    if not isinstance(text, str):
        raise TypeError(f"{field} is {type(text).__name__}, not ISO-8601 text")
    return datetime.fromisoformat(text)


def parse_record(record: Any) -> RestoreOp:
    """The :class:`RestoreOp` of one export record (a parsed JSON object).

    Raises:
        ValueError, KeyError, TypeError: The record is not an export record
            (wrong format, a namespace outside ``tiered_memory``, a missing
            field, a timestamp that is not ISO-8601 text).
    """
    if not isinstance(record, dict):
        raise TypeError(f"a record is a JSON object, got {type(record).__name__}")
    if record.get("format") != EXPORT_FORMAT:
        raise ValueError(f"format is {record.get('format')!r}, not {EXPORT_FORMAT!r}")
    ns = tuple(record["namespace"])
    if not ns or ns[0] != ROOT_LABEL:
        raise ValueError(f"namespace {ns!r} is not a tiered_memory namespace")
    value = dict(record["value"])
    return RestoreOp(
        ns,
        str(record["key"]),
        value,
        created_at=_time(record, "created_at"),
        updated_at=_time(record, "updated_at"),
        index=index_of(ns, value),
    )


class ImportTarget:
    """Whose memory the records of an import file become.

    The user label of every record is decoded and normalised exactly as
    :meth:`TieredMemory.for_user` does (so ``"VICTIM"`` is the user
    ``"victim"``), then mapped to the user the caller named. A record of a user
    the caller did not name is refused, so a file cannot write to a user that
    the call did not mention.

    Args:
        user_id: Import every record as this user (the file must hold one user,
            as :meth:`TieredMemory.export_jsonl` writes).
        user_map: Import the records of user ``old`` as user ``new``, for each
            ``{old: new}`` (both normalised).
        keep_file_users: Keep each record under its own (normalised) user; with
            ``user_map``, only the users it does not name.

    Raises:
        InvalidInputError: No target, ``user_id`` together with ``user_map`` or
            ``keep_file_users``, or an id that ``for_user`` would refuse.

    Examples:
        >>> target = ImportTarget(user_map={"Old Name": "alice"})
        >>> target.namespace(("tiered_memory", "OLD NAME", "_", "semantic", "facts"))
        ('tiered_memory', 'alice', '_', 'semantic', 'facts')
        >>> ImportTarget(keep_file_users=True).user_of(("tiered_memory", " Bob ", "_", "x"))
        'bob'
    """

    def __init__(
        self,
        *,
        user_id: str | None = None,
        user_map: Mapping[str, str] | None = None,
        keep_file_users: bool = False,
    ) -> None:
        if user_id is not None and user_map:
            raise InvalidInputError(
                "pass user_id or user_map, not both: user_id imports a one-user file as that "
                "user, user_map={'old id': 'new id'} moves each named user"
            )
        if user_id is not None and keep_file_users:
            raise InvalidInputError(
                "keep_file_users=True keeps the file's own users, user_id imports every record "
                "as one user: pass one of them"
            )
        if user_id is None and not user_map and not keep_file_users:
            raise InvalidInputError(
                "say whose memory the file's records become: user_id='alice' (the file as that "
                "user), user_map={'old id': 'new id'}, or keep_file_users=True (each record "
                "under its own user id, normalised)"
            )
        self.user_id = None if user_id is None else normalize_id(user_id, what="user_id")
        self.user_map = {
            normalize_id(old, what="a user_map key"): normalize_id(new, what=f"user_map[{old!r}]")
            for old, new in (user_map or {}).items()
        }
        self.keep_file_users = keep_file_users

    @staticmethod
    def user_of(namespace: tuple[str, ...]) -> str:
        """The normalised user of a record's namespace.

        Raises:
            InvalidInputError: The namespace has no user, agent and tier labels, or
                its user label is not an id ``for_user`` accepts.
        """
        if len(namespace) < 4:
            raise InvalidInputError(
                f"namespace {namespace!r} lacks the user, agent and tier labels of a memory record"
            )
        return normalize_id(label_to_id(namespace[1]), what=f"user label {namespace[1]!r}")

    def namespace(self, namespace: tuple[str, ...]) -> tuple[str, ...]:
        """Where a record of ``namespace`` goes: the named user, the agent normalised.

        Raises:
            InvalidInputError: The record's user is not named (see the class
                docstring), or a label is not an id ``for_user`` accepts.
        """
        source = self.user_of(namespace)
        if self.user_id is not None:
            user = self.user_id
        elif source in self.user_map:
            user = self.user_map[source]
        elif self.keep_file_users:
            user = source
        else:
            raise InvalidInputError(
                f"the record belongs to user {source!r}, which this import does not name: add "
                f"it to user_map (user_map={{{source!r}: {source!r}}} keeps it), or pass "
                "keep_file_users=True to keep the file's users"
            )
        agent = None if namespace[2] == NO_AGENT else label_to_id(namespace[2])
        return (*MemoryScope(user, agent).prefix, *namespace[3:])


def read_records(path: str | os.PathLike[str], target: ImportTarget) -> list[RestoreOp]:
    """Every record of a JSON Lines export file, moved to the users ``target`` names.

    Blank lines are skipped.

    Raises:
        InvalidInputError: A line is not an export record, is not UTF-8, holds
            text that is not valid Unicode, or its user is refused by ``target``
            (names the file and line); ``target.user_id`` is given and the file
            holds records of more than one user. Nothing is returned.
    """
    ops: list[RestoreOp] = []
    users: set[str] = set()
    moved: dict[tuple[str, ...], tuple[str, tuple[str, ...]]] = {}  # per namespace, once
    with open(path, "rb") as fh:
        for n, raw in enumerate(fh, 1):
            try:
                line = raw.decode("utf-8")
                if not line.strip():
                    continue
                record = json.loads(line)
                if "\\u" in line:  # only an escape can put a lone surrogate in UTF-8 text
                    check_unicode(json.dumps(record, ensure_ascii=False), "the record")
                op = parse_record(record)
            except UnicodeDecodeError as exc:
                raise InvalidInputError(
                    f"{path}:{n} is not UTF-8 text (byte {exc.start} of the line): export "
                    "files are UTF-8 JSON Lines; nothing was imported"
                ) from exc
            except (ValueError, KeyError, TypeError) as exc:
                raise InvalidInputError(
                    f"{path}:{n} is not a langchain-tiered-memory export record ({exc}); "
                    "nothing was imported"
                ) from exc
            try:
                user, namespace = moved.get(op.namespace) or moved.setdefault(
                    op.namespace, (target.user_of(op.namespace), target.namespace(op.namespace))
                )
            except InvalidInputError as exc:
                raise InvalidInputError(f"{path}:{n}: {exc}; nothing was imported") from exc
            users.add(user)
            ops.append(op._replace(namespace=namespace))
    if target.user_id is not None and len(users) > 1:
        named = ", ".join(repr(u) for u in sorted(users))
        raise InvalidInputError(
            f"{path} holds records of users {named}: user_id= imports a one-user file; name "
            "each with user_map={'old id': 'new id'}; nothing was imported"
        )
    return ops


def _chunks(ops: Sequence[RestoreOp]) -> list[Sequence[RestoreOp]]:
    return [ops[start : start + _CHUNK] for start in range(0, len(ops), _CHUNK)]


def _embedded_texts(op: RestoreOp) -> set[str]:
    """The texts a store embeds for ``op`` (every top-level text when the store decides)."""
    if op.index is False:
        return set()
    fields = op.index if op.index is not None else list(op.value)
    return {text for field in fields if isinstance(text := op.value.get(field), str)}


def _put_batches(ops: Sequence[RestoreOp]) -> list[list[PutOp]]:
    """``ops`` as put batches in which no embedded text occurs twice.

    LangGraph's ``InMemoryStore`` embeds each distinct text of a batch once and
    then fails ("Number of embeddings ... does not match number of indices")
    when two records of the batch embed the same text, e.g. one entity under
    two agents of a user.
    """
    batches: list[list[PutOp]] = [[]]
    seen: set[str] = set()
    for op in ops:
        texts = _embedded_texts(op)
        if texts & seen:
            batches.append([])
            seen = set()
        batches[-1].append(PutOp(op.namespace, op.key, op.value, index=op.index))
        seen |= texts
    return batches if batches[0] else []


def _after_puts(store: BaseStore, ops: Sequence[RestoreOp]) -> None:
    """Give put records their own times where the store allows it, else warn."""
    if isinstance(store, Restoring):  # restore_items() wrote them with their times
        return
    inner = unwrap(store)
    if isinstance(inner, InMemoryStore):
        # Best effort on LangGraph's InMemoryStore, which has no way to write
        # explicit times: replace its freshly stamped items (vectors untouched).
        with store.lock if isinstance(store, SerializedStore) else nullcontext():
            for op in ops:
                item = inner._data.get(op.namespace, {}).get(op.key)
                if item is not None:
                    inner._data[op.namespace][op.key] = Item(
                        value=item.value,
                        key=op.key,
                        namespace=op.namespace,
                        created_at=ensure_aware(op.created_at),
                        updated_at=ensure_aware(op.updated_at),
                    )
        return
    if ops:
        logger.warning(
            "%s has no restore_items() method: %d imported records were stamped with the "
            "import time instead of their exported created_at/updated_at",
            type(store).__name__,
            len(ops),
        )


def write_records(store: BaseStore, ops: Sequence[RestoreOp]) -> None:
    """Write records to ``store`` keeping their timestamps (see the module docstring)."""
    for chunk in _chunks(ops):
        with writing(store, put_namespaces(chunk)):
            if isinstance(store, Restoring):
                store.restore_items(chunk)
            else:
                for batch in _put_batches(chunk):
                    store.batch(batch)
    _after_puts(store, ops)


async def awrite_records(store: BaseStore, ops: Sequence[RestoreOp]) -> None:
    """Async twin of :func:`write_records`."""
    for chunk in _chunks(ops):
        async with awriting(store, put_namespaces(chunk)):
            if isinstance(store, Restoring):
                await store.arestore_items(chunk)
            else:
                for batch in _put_batches(chunk):
                    await store.abatch(batch)
    _after_puts(store, ops)
