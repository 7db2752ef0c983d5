import pytest
from langchain_core.exceptions import OutputParserException
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from pydantic import BaseModel

from langchain_tiered_memory.assembly import MemoryItem, pack_items
from langchain_tiered_memory.chat_models import load_chat_model
from langchain_tiered_memory.errors import ConfigurationError
from langchain_tiered_memory.testing.offline_model import (
    OfflineChatModel,
    parse_memory_frames,
)
from langchain_tiered_memory.tokens import TokenCounter


def memory_system_prompt() -> str:
    items = [
        MemoryItem("semantic", "profile", "f1", "Allergic to shellfish"),
        MemoryItem("procedural", "warnings", "t1", "orders_v1 returns 410 Gone: use orders_v2"),
        MemoryItem("episodic", "experiences", "e1", "Kubernetes deploy failed on readiness probe"),
        MemoryItem("episodic", "experiences", "e2", "Tax report formatting task"),
    ]
    return pack_items(items, budget=1000, counter=TokenCounter()).text


def test_parses_frames_written_by_the_assembler() -> None:
    parsed = parse_memory_frames(memory_system_prompt())
    assert ("profile", "Allergic to shellfish") in parsed
    assert len(parsed) == 4


def test_answers_with_relevant_memory_only() -> None:
    model = OfflineChatModel()
    reply = model.invoke(
        [SystemMessage(memory_system_prompt()), HumanMessage("Why did the deploy fail last time?")]
    )
    assert "Allergic to shellfish" in reply.content  # profile always counts
    assert "orders_v2" in reply.content  # warnings always count
    assert "readiness probe" in reply.content  # shares "deploy"
    assert "Tax report" not in reply.content


def test_without_memory_it_says_so_and_is_deterministic() -> None:
    model = OfflineChatModel()
    a = model.invoke("Recommend a restaurant").content
    assert a == model.invoke("Recommend a restaurant").content
    assert "no memories" in a


def test_bound_tools_are_called_and_results_reported() -> None:
    @tool
    def remember_fact(fact: str) -> str:
        """Remember a fact about the user."""
        return "ok"

    model = OfflineChatModel().bind_tools([remember_fact])
    call = model.invoke([HumanMessage("Remember that I am vegetarian.")])
    assert isinstance(call, AIMessage)
    assert call.tool_calls[0]["name"] == "remember_fact"
    assert call.tool_calls[0]["args"] == {"fact": "I am vegetarian"}
    done = model.invoke(
        [
            HumanMessage("Remember that I am vegetarian."),
            call,
            ToolMessage("stored", tool_call_id=call.tool_calls[0]["id"]),
        ]
    )
    assert "stored" in done.content and not done.tool_calls


class Topic(BaseModel):
    topic: str


def test_structured_output_uses_rules_or_fails_clearly() -> None:
    model = OfflineChatModel(structured_rules={"Topic": lambda msgs: {"topic": "food"}})
    assert model.with_structured_output(Topic).invoke("x") == Topic(topic="food")
    with pytest.raises(OutputParserException, match="no rule to fill Topic"):
        OfflineChatModel().with_structured_output(Topic).invoke("x")


async def test_async_matches_sync() -> None:
    model = OfflineChatModel()
    assert (await model.ainvoke("hi")).content == model.invoke("hi").content


def test_load_chat_model() -> None:
    assert isinstance(load_chat_model(), OfflineChatModel)
    m = OfflineChatModel()
    assert load_chat_model(m) is m
    with pytest.raises(ConfigurationError, match="unknown model spec"):
        load_chat_model("nope")
    openai = load_chat_model(
        "openai:gpt-4o-mini", api_key="sk-test", base_url="http://127.0.0.1:9/v1"
    )
    assert type(openai).__name__ == "ChatOpenAI"
