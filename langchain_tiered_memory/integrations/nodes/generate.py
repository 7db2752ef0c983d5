"""The ``generate`` node: one model call with memory, trimmed conversation and tools.

The model sees the system prompt, the memory context from ``retrieve`` as a
second system message, and the thread's conversation fitted to ``history_tokens``
by the working-memory trimmer (no summariser, so no extra LLM call; tool calls
stay with their results). The state's messages are left whole. After
``max_tool_rounds`` tool rounds in one turn the model is called without tools,
so a turn always ends with an answer.

Examples:
    >>> from langchain_tiered_memory.testing.fakes import ScriptedChatModel
    >>> model = ScriptedChatModel(default="Hi!")
    >>> generate = create_generate_node(model, system_prompt="Be brief.")
    >>> update = generate.invoke({"messages": [("user", "hello")],
    ...                           "memory_context": "<memory>...</memory>"})
    >>> update["messages"][0].content
    'Hi!'
    >>> [m.type for m in model.calls[0]]
    ['system', 'system', 'human']
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from langchain_core.tools import BaseTool

from langchain_tiered_memory.errors import ConfigurationError
from langchain_tiered_memory.integrations.nodes.retrieve import state_messages
from langchain_tiered_memory.integrations.nodes.state import current_turn
from langchain_tiered_memory.tiers.working.graph import WorkingMemoryNode
from langchain_tiered_memory.tiers.working.messages import CounterLike

__all__ = [
    "DEFAULT_SYSTEM_PROMPT",
    "MEMORY_MESSAGE_ID",
    "GenerateNode",
    "create_generate_node",
    "tool_rounds",
]

DEFAULT_SYSTEM_PROMPT = (
    "You are a helpful assistant with long-term memory of this user. Use what you remember "
    "when it bears on the request (allergies, preferences, earlier failures and their fixes). "
    "Use the memory tools to look things up, to remember what the user asks you to remember, "
    "and to forget what they ask you to forget."
)
MEMORY_MESSAGE_ID = "tiered-memory-context"
"""Id of the system message that carries the memory context (never stored in the thread)."""


def tool_rounds(messages: Sequence[BaseMessage]) -> int:
    """How many times the model has called tools in the current turn."""
    _, after = current_turn(messages)
    return sum(1 for m in after if isinstance(m, AIMessage) and m.tool_calls)


class GenerateNode:
    """Calls the model on system prompt + memory + trimmed conversation.

    Args:
        model: The chat model (the turn's one hot-path LLM call, plus tool rounds).
        tools: Tools bound to the model (``bind_tools``); empty for none.
        system_prompt: The instructions, first message of every call.
        history_tokens: Token budget of the conversation part of the input.
        max_tool_rounds: Tool rounds allowed per turn before the model must answer.
        counter: Token counter for trimming (the bundled offline one by default).
    """

    def __init__(
        self,
        model: BaseChatModel,
        tools: Sequence[BaseTool | Callable[..., Any] | dict[str, Any]] = (),
        *,
        system_prompt: str = DEFAULT_SYSTEM_PROMPT,
        history_tokens: int = 4000,
        max_tool_rounds: int = 5,
        counter: CounterLike | None = None,
    ) -> None:
        if not isinstance(model, BaseChatModel):
            raise ConfigurationError(
                f"model must be a langchain BaseChatModel, got {type(model).__name__}: use "
                "langchain_tiered_memory.chat_models.load_chat_model('offline' | 'openai:...')"
            )
        if isinstance(max_tool_rounds, bool) or max_tool_rounds < 0:
            raise ConfigurationError(f"max_tool_rounds must be >= 0, got {max_tool_rounds!r}")
        self.model = model
        self.system_prompt = system_prompt
        self.max_tool_rounds = max_tool_rounds
        self.bound: Runnable[LanguageModelInput, BaseMessage] = (
            model.bind_tools(list(tools)) if tools else model
        )
        self.window = WorkingMemoryNode(
            None, max_tokens=history_tokens, counter=counter, output="llm_input_messages"
        )

    def model_input(self, state: Any) -> tuple[list[BaseMessage], bool]:
        """The messages the model gets for ``state``, and whether tools may be used."""
        messages = state_messages(state)
        fitted = self.window({"messages": messages})["llm_input_messages"]
        head: list[BaseMessage] = []
        if self.system_prompt:
            head.append(SystemMessage(self.system_prompt))
        memory = state.get("memory_context") if isinstance(state, dict) else None
        if memory:
            head.append(SystemMessage(memory, id=MEMORY_MESSAGE_ID))
        return [*head, *fitted], tool_rounds(messages) < self.max_tool_rounds

    def __call__(self, state: Any, config: RunnableConfig | None = None) -> dict[str, Any]:
        """Run the node: ``{"messages": [reply]}``."""
        messages, with_tools = self.model_input(state)
        return {"messages": [(self.bound if with_tools else self.model).invoke(messages, config)]}

    async def acall(self, state: Any, config: RunnableConfig | None = None) -> dict[str, Any]:
        """Async twin of :meth:`__call__`."""
        messages, with_tools = self.model_input(state)
        model = self.bound if with_tools else self.model
        return {"messages": [await model.ainvoke(messages, config)]}


def create_generate_node(
    model: BaseChatModel,
    tools: Sequence[BaseTool | Callable[..., Any] | dict[str, Any]] = (),
    *,
    system_prompt: str = DEFAULT_SYSTEM_PROMPT,
    history_tokens: int = 4000,
    max_tool_rounds: int = 5,
    counter: CounterLike | None = None,
    name: str = "generate",
) -> RunnableLambda[Any, dict[str, Any]]:
    """Create the ``generate`` node (sync and async); arguments as for :class:`GenerateNode`.

    It reads ``messages`` and ``memory_context`` from the state and returns the
    model's reply as ``{"messages": [reply]}``.
    """
    node = GenerateNode(
        model,
        tools,
        system_prompt=system_prompt,
        history_tokens=history_tokens,
        max_tool_rounds=max_tool_rounds,
        counter=counter,
    )
    return RunnableLambda(node.__call__, afunc=node.acall, name=name)
