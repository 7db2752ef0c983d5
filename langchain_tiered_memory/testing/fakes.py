"""Deterministic stand-ins for models and time, for tests, notebooks and offline demos.

:class:`HashingEmbeddings` (lexical embeddings, nothing downloaded),
:class:`ScriptedChatModel` (replies from a script, can raise on cue) and
:class:`FakeClock` (moves only when told to).

Examples:
    >>> from langchain_tiered_memory.testing.fakes import HashingEmbeddings, ScriptedChatModel
    >>> emb = HashingEmbeddings(size=64)
    >>> len(emb.embed_query("shellfish allergy"))
    64
    >>> model = ScriptedChatModel(responses=["Hello!"])
    >>> model.invoke("hi").content
    'Hello!'
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.exceptions import OutputParserException
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable, RunnableLambda
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

__all__ = ["FakeClock", "HashingEmbeddings", "ScriptedChatModel", "ScriptedReply"]

_WORD = re.compile(r"\w+", re.UNICODE)


class HashingEmbeddings(BaseModel, Embeddings):
    """Deterministic lexical embeddings by feature hashing (no model, no network).

    Each lower-cased word adds weight 1.0 to one of ``size`` buckets (sign from
    the hash), each character trigram 0.3; the vector is L2-normalised, so
    cosine similarity grows with shared words. Good enough to test ranking
    logic; use :class:`~langchain_tiered_memory.embeddings.LocalEmbeddings`
    for real semantics.

    Examples:
        >>> emb = HashingEmbeddings()
        >>> a, b = emb.embed_documents(["I love Python", "Python is loved"])
        >>> round(sum(x * y for x, y in zip(a, b)), 2) > 0.2
        True
    """

    model_config = ConfigDict(frozen=True)

    size: int = Field(default=384, gt=0)
    trigram_weight: float = 0.3

    def _bucket(self, feature: str) -> tuple[int, float]:
        digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
        value = int.from_bytes(digest, "little")
        return value % self.size, (1.0 if (value >> 63) & 1 else -1.0)

    def _embed(self, text: str) -> list[float]:
        vec = [0.0] * self.size
        for word in _WORD.findall(text.lower()):
            idx, sign = self._bucket("w:" + word)
            vec[idx] += sign
            padded = f"#{word}#"
            for i in range(len(padded) - 2):
                idx, sign = self._bucket("t:" + padded[i : i + 3])
                vec[idx] += sign * self.trigram_weight
        norm = math.sqrt(sum(x * x for x in vec))
        if norm == 0.0:
            vec[0] = 1.0
            return vec
        return [x / norm for x in vec]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed each text."""
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        """Embed one query."""
        return self._embed(text)


ScriptedReply = (
    str
    | AIMessage
    | dict[str, Any]
    | BaseException
    | Callable[[list[BaseMessage]], "str | AIMessage | dict[str, Any]"]
)
"""One scripted reply: text, a message, a dict (for structured output), an
exception to raise, or a callable of the input messages returning one of those."""


class ScriptedChatModel(BaseChatModel):
    """A chat model that answers from a script; deterministic and offline.

    Replies are taken in order; when the script runs out, ``default`` is used
    (or, if ``default`` is None, a ``RuntimeError`` says the script ran out).
    Every call's input messages are kept in :attr:`calls` for assertions.

    ``bind_tools`` returns the model itself (tool calls come from scripted
    ``AIMessage`` replies). ``with_structured_output(schema)`` parses the next
    reply (a dict, or text that is JSON) into ``schema`` and raises
    ``OutputParserException`` when it does not fit, as real parsers do.

    Examples:
        >>> from pydantic import BaseModel
        >>> class Answer(BaseModel):
        ...     value: int
        >>> model = ScriptedChatModel(responses=[{"value": 42}])
        >>> model.with_structured_output(Answer).invoke("?").value
        42
    """

    responses: list[Any] = Field(default_factory=list)
    default: Any = None
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _position: int = PrivateAttr(default=0)
    calls: list[list[BaseMessage]] = Field(default_factory=list)
    bound_tools: list[Any] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted-chat-model"

    def _next(self, messages: list[BaseMessage]) -> Any:
        with self._lock:
            self.calls.append(list(messages))
            if self._position < len(self.responses):
                reply = self.responses[self._position]
                self._position += 1
            elif self.default is not None:
                reply = self.default
            else:
                raise RuntimeError(
                    f"ScriptedChatModel ran out of replies after {self._position}: "
                    "add more responses or set default="
                )
        if callable(reply):  # a function of the input (replies and exceptions are not callable)
            reply = reply(list(messages))
        if isinstance(reply, BaseException):
            raise reply
        return reply

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        reply = self._next(messages)
        if not isinstance(reply, AIMessage):
            reply = AIMessage(content=json.dumps(reply) if isinstance(reply, dict) else str(reply))
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def bind_tools(  # type: ignore[override]
        self, tools: Sequence[Any], **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Record the tools and return the model itself."""
        self.bound_tools[:] = list(tools)
        return self

    def with_structured_output(  # type: ignore[override]
        self, schema: Any, *, include_raw: bool = False, **kwargs: Any
    ) -> Runnable[LanguageModelInput, Any]:
        """Return a runnable that parses the next scripted reply into ``schema``."""

        def parse(value: LanguageModelInput) -> Any:
            messages = self._convert_input(value).to_messages()
            reply = self._next(messages)
            if isinstance(reply, AIMessage):
                reply = reply.content
            if isinstance(reply, str):
                try:
                    reply = json.loads(reply)
                except json.JSONDecodeError as exc:
                    raise OutputParserException(
                        f"scripted reply is not JSON: {reply[:80]!r}"
                    ) from exc
            if isinstance(schema, type) and issubclass(schema, BaseModel):
                try:
                    parsed: Any = schema.model_validate(reply)
                except Exception as exc:
                    raise OutputParserException(
                        f"scripted reply does not fit {schema.__name__}: {exc}"
                    ) from exc
            else:
                parsed = reply
            if include_raw:
                return {
                    "raw": AIMessage(content=json.dumps(reply, default=str)),
                    "parsed": parsed,
                    "parsing_error": None,
                }
            return parsed

        return RunnableLambda(parse, name="scripted_structured_output")


class FakeClock:
    """A clock for tests: ``clock()`` returns the current fake time (UTC, aware).

    Examples:
        >>> clock = FakeClock(datetime(2026, 1, 1, tzinfo=timezone.utc))
        >>> clock.advance(days=2); clock().day
        3
    """

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 1, 1, tzinfo=timezone.utc)

    def __call__(self) -> datetime:
        """The current fake time."""
        return self._now

    def advance(self, **delta: float) -> None:
        """Move time forward by ``timedelta(**delta)``."""
        self._now += timedelta(**delta)

    def set(self, when: datetime) -> None:
        """Jump to ``when``."""
        self._now = when
