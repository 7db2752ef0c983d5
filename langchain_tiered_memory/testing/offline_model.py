r"""A deterministic offline chat model for demos and tests.

:class:`OfflineChatModel` needs no network and no weights: it answers by citing
the memories in the framed block of its system prompt, so the effect of memory
is visible without an LLM. ``load_chat_model("offline")`` returns it.

Examples:
    >>> model = OfflineChatModel()
    >>> from langchain_tiered_memory.assembly.framing import frame_memories
    >>> memory = frame_memories([("profile", ["Allergic to shellfish"])])
    >>> reply = model.invoke([("system", memory), ("human", "Recommend a restaurant for dinner")])
    >>> "Allergic to shellfish" in reply.content
    True
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.exceptions import OutputParserException
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable, RunnableLambda
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, Field

from langchain_tiered_memory.assembly.framing import parse_memory_block
from langchain_tiered_memory.text import content_words

__all__ = ["OfflineChatModel", "parse_memory_frames"]

_REMEMBER = re.compile(r"^\s*(?:please\s+)?remember(?:\s+that)?\s+(?P<x>.+?)\s*\.?$", re.I)
_FORGET = re.compile(r"^\s*(?:please\s+)?forget(?:\s+that)?\s+(?P<x>.+?)\s*\.?$", re.I)
_SEARCH = re.compile(
    r"^\s*(?:what do you (?:remember|know) about|search (?:your )?memory for)\s+(?P<x>.+?)\??$",
    re.I,
)


parse_memory_frames = parse_memory_block
"""``(section, memory text)`` for every memory line of the framed memory block."""


def _words(text: str) -> set[str]:
    return content_words(text, min_length=3)


class OfflineChatModel(BaseChatModel):
    r"""Deterministic, offline chat model that answers from the injected memory.

    Rules, in order:

    1. After a tool result, it reports the result.
    2. With tools bound, "remember that X", "forget X" and "what do you
       remember about X" become calls to the bound tool whose name contains
       ``remember``, ``forget`` or ``search``.
    3. Otherwise it answers the last user message, listing the remembered
       warnings and profile facts, and any other memory that shares a word
       with the question. With no memory it says so.

    Args:
        structured_rules: For ``with_structured_output``: schema name to a
            function of the input messages returning the schema's fields.

    Examples:
        >>> OfflineChatModel().invoke("hello").content
        'You asked: hello\nI have no memories that bear on this.'
    """

    structured_rules: dict[str, Callable[[list[BaseMessage]], dict[str, Any]]] = Field(
        default_factory=dict
    )
    tools: list[dict[str, Any]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "offline-memory-chat-model"

    def _tool_call(self, query: str) -> AIMessage | None:
        names = [str(tool.get("function", {}).get("name", "")) for tool in self.tools]
        for pattern, fragment, arg in (
            (_REMEMBER, "remember", "fact"),
            (_FORGET, "forget", "query"),
            (_SEARCH, "search", "query"),
        ):
            match = pattern.match(query)
            name = next((n for n in names if fragment in n), None) if match else None
            if match and name:
                call_id = "call_" + uuid.uuid5(uuid.NAMESPACE_OID, name + query).hex[:12]
                return AIMessage(
                    content="",
                    tool_calls=[{"name": name, "args": {arg: match.group("x")}, "id": call_id}],
                )
        return None

    def respond(self, messages: Sequence[BaseMessage]) -> AIMessage:
        """The reply to ``messages`` (the pure rule set behind every call)."""
        if messages and isinstance(messages[-1], ToolMessage):
            return AIMessage(content=f"Done. The memory tool said: {messages[-1].content}")
        humans = [m for m in messages if isinstance(m, HumanMessage)]
        query = str(humans[-1].content) if humans else ""
        if self.tools and (call := self._tool_call(query)) is not None:
            return call
        system = "\n".join(str(m.content) for m in messages if isinstance(m, SystemMessage))
        query_words = _words(query)
        relevant = [
            text
            for section, text in parse_memory_frames(system)
            if section in ("warnings", "profile") or _words(text) & query_words
        ]
        lines = [f"You asked: {query}"]
        if relevant:
            lines.append("Taking into account what I remember:")
            lines.extend(f"- {text}" for text in relevant)
        else:
            lines.append("I have no memories that bear on this.")
        return AIMessage(content="\n".join(lines))

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self.respond(messages))])

    def bind_tools(  # type: ignore[override]
        self, tools: Sequence[Any], **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Return a copy of the model that may call ``tools``."""
        return self.model_copy(update={"tools": [convert_to_openai_tool(t) for t in tools]})

    def with_structured_output(  # type: ignore[override]
        self, schema: Any, *, include_raw: bool = False, **kwargs: Any
    ) -> Runnable[LanguageModelInput, Any]:
        """Fill ``schema`` from the rule registered for it in ``structured_rules``.

        Without a rule, calls raise ``OutputParserException`` that says how to
        fix it; memory code treats that as a failed LLM call and falls back to
        its heuristics.
        """
        name = getattr(schema, "__name__", str(schema))

        def fill(value: LanguageModelInput) -> Any:
            messages = self._convert_input(value).to_messages()
            rule = self.structured_rules.get(name)
            if rule is None:
                raise OutputParserException(
                    f"OfflineChatModel has no rule to fill {name}: pass "
                    f"structured_rules={{'{name}': fn}} or use a real chat model"
                )
            data = rule(messages)
            if isinstance(schema, type) and issubclass(schema, BaseModel):
                parsed: Any = schema.model_validate(data)
            else:
                parsed = data
            if include_raw:
                raw = AIMessage(content=str(data))
                return {"raw": raw, "parsed": parsed, "parsing_error": None}
            return parsed

        return RunnableLambda(fill, name=f"offline_structured_{name}")
