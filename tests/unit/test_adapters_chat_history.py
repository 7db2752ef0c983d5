from __future__ import annotations

from typing import Any

import pytest
from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import BaseMessage
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables.history import RunnableWithMessageHistory

from langchain_tiered_memory.integrations import (
    BufferedChatMessageHistory,
    create_session_history_factory,
)
from langchain_tiered_memory.testing.fakes import ScriptedChatModel
from langchain_tiered_memory.tiers.working import (
    SUMMARY_MESSAGE_ID,
    ConversationBuffer,
    SlidingWindowSummaryBuffer,
)
from langchain_tiered_memory.tokens import TokenCounter

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

COUNTER = TokenCounter()
PROMPT = ChatPromptTemplate.from_messages(
    [("system", "You are helpful."), MessagesPlaceholder("history"), ("human", "{input}")]
)


def chain_with(model: ScriptedChatModel, get_history: Any) -> RunnableWithMessageHistory:
    return RunnableWithMessageHistory(
        PROMPT | model,
        get_history,
        input_messages_key="input",
        history_messages_key="history",
    )


def session(name: str) -> dict[str, Any]:
    return {"configurable": {"session_id": name}}


def test_is_a_chat_message_history() -> None:
    assert issubclass(BufferedChatMessageHistory, BaseChatMessageHistory)


def test_runnable_with_message_history_gets_the_budgeted_context() -> None:
    model = ScriptedChatModel(default="reply " * 10)
    get_history = create_session_history_factory(lambda: ConversationBuffer(max_tokens=150))
    chain = chain_with(model, get_history)
    for i in range(15):
        chain.invoke({"input": f"question {i}"}, session("s1"))
    history = get_history("s1")
    assert len(history.buffer) == 30  # every turn stored
    last_prompt: list[BaseMessage] = model.calls[-1]
    past = last_prompt[1:-1]  # between the system prompt and the new question
    assert COUNTER.count_messages(past) <= 150
    assert past[-1].content == "reply " * 10 and "question 13" in str(past[-2].content)
    assert "question 0" not in " ".join(str(m.content) for m in last_prompt)
    assert get_history("s2").messages == []  # sessions are separate


async def test_async_chain_summarises_through_the_history() -> None:
    summarizer = ScriptedChatModel(default="User asked many questions.")
    model = ScriptedChatModel(default="answer")
    get_history = create_session_history_factory(
        lambda: SlidingWindowSummaryBuffer(summarizer, max_tokens=200, recent_window=2)
    )
    chain = chain_with(model, get_history)
    for i in range(20):
        await chain.ainvoke({"input": f"question {i} " + "detail " * 10}, session("a"))
    assert summarizer.calls
    history = get_history("a")
    assert (await history.aget_messages())[0].id == SUMMARY_MESSAGE_ID
    assert history.context().summary == "User asked many questions."
    assert model.calls[-1][1].id == SUMMARY_MESSAGE_ID


def test_clear() -> None:
    history = BufferedChatMessageHistory()
    history.add_user_message("hi")
    history.clear()
    assert history.messages == []
