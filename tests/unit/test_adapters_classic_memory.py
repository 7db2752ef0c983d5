from __future__ import annotations

import importlib
import sys

import pytest

pytest.importorskip(
    "langchain_classic", reason='the classic extra is not installed: pip install ".[classic]"'
)
from langchain_classic.chains import ConversationChain, LLMChain
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder

from langchain_tiered_memory.errors import ConfigurationError, InvalidInputError
from langchain_tiered_memory.testing.fakes import ScriptedChatModel
from langchain_tiered_memory.tiers.working import (
    ConversationBuffer,
    PriorityTruncationBuffer,
    SlidingWindowSummaryBuffer,
    WorkingBuffer,
)
from langchain_tiered_memory.tokens import TokenCounter

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

COUNTER = TokenCounter()


def buffers() -> list[WorkingBuffer]:
    summarizer = ScriptedChatModel(default="They chatted about numbers.")
    return [
        ConversationBuffer(max_tokens=200),
        PriorityTruncationBuffer(max_tokens=200),
        SlidingWindowSummaryBuffer(summarizer, max_tokens=200, recent_window=2),
    ]


@pytest.mark.parametrize("buffer", buffers(), ids=lambda b: type(b).__name__)
def test_conversation_chain_takes_the_buffer_as_drop_in_memory(buffer: WorkingBuffer) -> None:
    from langchain_tiered_memory.integrations import WorkingBufferMemory

    model = ScriptedChatModel(default="fine " * 5)
    memory = WorkingBufferMemory(buffer=buffer)
    chain = ConversationChain(llm=model, memory=memory)
    for i in range(25):
        assert chain.invoke({"input": f"number {i} " + "pad " * 5})["response"] == "fine " * 5
    prompt = str(model.calls[-1][0].content)  # ConversationChain sends one string prompt
    assert "Human: number 23" in prompt and "AI: fine" in prompt
    assert "number 0 " not in prompt
    history = memory.load_memory_variables({})["history"]
    assert COUNTER.count(history) < 200 + 40  # the buffer's budget, rendered as text


def test_llm_chain_with_message_memory_and_async() -> None:
    from langchain_tiered_memory.integrations import WorkingBufferMemory

    prompt = ChatPromptTemplate.from_messages(
        [MessagesPlaceholder("chat"), ("human", "{question}")]
    )
    model = ScriptedChatModel(default="yes")
    memory = WorkingBufferMemory(
        buffer=ConversationBuffer(max_tokens=100), memory_key="chat", return_messages=True
    )
    chain = LLMChain(llm=model, prompt=prompt, memory=memory)
    chain.invoke({"question": "first?"})
    chain.invoke({"question": "second?"})
    assert [m.content for m in model.calls[-1]] == ["first?", "yes", "second?"]


async def test_async_save_context_uses_the_async_model() -> None:
    from langchain_tiered_memory.integrations import WorkingBufferMemory

    summarizer = ScriptedChatModel(default="summary")
    buffer = SlidingWindowSummaryBuffer(summarizer, max_tokens=150, recent_window=2)
    memory = WorkingBufferMemory(buffer=buffer, return_messages=True)
    for i in range(15):
        await memory.asave_context({"input": f"q{i} " + "pad " * 8}, {"text": "a"})
    assert buffer.running_summary == "summary"
    loaded = await memory.aload_memory_variables({})
    assert loaded["history"][0].content.endswith("summary")
    await memory.aclear()
    assert len(buffer) == 0


def test_ambiguous_output_and_wrong_buffer_are_errors_with_a_fix() -> None:
    from langchain_tiered_memory.integrations import WorkingBufferMemory

    memory = WorkingBufferMemory()
    with pytest.raises(InvalidInputError, match="output_key"):
        memory.save_context({"input": "q"}, {"a": "1", "b": "2"})
    with pytest.raises(ValueError, match="WorkingBuffer"):
        WorkingBufferMemory(buffer=[])


def test_missing_classic_extra_names_the_install_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import langchain_tiered_memory.integrations as adapters

    monkeypatch.setitem(sys.modules, "langchain_classic", None)
    monkeypatch.setitem(sys.modules, "langchain_classic.base_memory", None)
    monkeypatch.delitem(sys.modules, "langchain_tiered_memory.integrations.classic_memory", False)
    monkeypatch.delitem(adapters.__dict__, "WorkingBufferMemory", False)
    with pytest.raises(
        ConfigurationError, match=r'pip install "langchain-tiered-memory\[classic\]"'
    ):
        adapters.WorkingBufferMemory  # noqa: B018
    # The chat-history adapter does not need the extra.
    assert importlib.import_module("langchain_tiered_memory.integrations.chat_history")
