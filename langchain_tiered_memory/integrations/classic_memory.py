"""Classic ``BaseMemory`` adapter: the working-memory buffers as drop-in chain memory.

For ``langchain-classic`` chains such as ``ConversationChain`` and ``LLMChain``.
``langchain-classic`` is an optional extra; importing this module without it
raises :class:`~langchain_tiered_memory.errors.ConfigurationError` naming the
install command.

Examples:
    >>> from langchain_classic.chains import ConversationChain
    >>> from langchain_tiered_memory.testing.fakes import ScriptedChatModel
    >>> from langchain_tiered_memory.tiers.working import ConversationBuffer
    >>> memory = WorkingBufferMemory(buffer=ConversationBuffer(max_tokens=500))
    >>> chain = ConversationChain(llm=ScriptedChatModel(default="Hi!"), memory=memory)
    >>> chain.invoke({"input": "hello"})["response"]
    'Hi!'
    >>> [m.content for m in memory.buffer.messages]
    ['hello', 'Hi!']
"""

from __future__ import annotations

import warnings
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, get_buffer_string
from pydantic import Field

from langchain_tiered_memory.errors import ConfigurationError, InvalidInputError
from langchain_tiered_memory.tiers.working.buffers import ConversationBuffer, WorkingBuffer

try:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from langchain_classic.base_memory import BaseMemory
        from langchain_classic.memory.utils import get_prompt_input_key
except ImportError as exc:  # pragma: no cover - exercised by a test that hides the module
    raise ConfigurationError(
        "WorkingBufferMemory needs the optional langchain-classic package: "
        'pip install "langchain-tiered-memory[classic]"'
    ) from exc

__all__ = ["WorkingBufferMemory"]


class WorkingBufferMemory(BaseMemory):  # type: ignore[misc]
    """A classic chain memory backed by any working-memory buffer.

    ``load_memory_variables`` returns the buffer's budgeted context (as text
    for string prompts, or as messages with ``return_messages=True``);
    ``save_context`` stores the turn's input and output (a summarising buffer
    may call its model there; ``asave_context`` calls it asynchronously).

    Attributes:
        buffer: The working-memory buffer (``ConversationBuffer()`` by default).
        memory_key: Prompt variable that receives the history.
        input_key: Chain input holding the user's message (guessed if ``None``).
        output_key: Chain output holding the reply (guessed if ``None``).
        return_messages: Return messages instead of one string.
        human_prefix: Label of human turns in the string form.
        ai_prefix: Label of AI turns in the string form.

    Examples:
        >>> memory = WorkingBufferMemory(return_messages=True)
        >>> memory.save_context({"input": "hi"}, {"output": "hello"})
        >>> [m.type for m in memory.load_memory_variables({})["history"]]
        ['human', 'ai']
    """

    buffer: WorkingBuffer = Field(default_factory=ConversationBuffer)
    memory_key: str = "history"
    input_key: str | None = None
    output_key: str | None = None
    return_messages: bool = False
    human_prefix: str = "Human"
    ai_prefix: str = "AI"

    @property
    def memory_variables(self) -> list[str]:
        """The one prompt variable this memory fills."""
        return [self.memory_key]

    def _format(self, messages: list[BaseMessage]) -> dict[str, Any]:
        if self.return_messages:
            return {self.memory_key: messages}
        text = get_buffer_string(messages, human_prefix=self.human_prefix, ai_prefix=self.ai_prefix)
        return {self.memory_key: text}

    def _turn(self, inputs: dict[str, Any], outputs: dict[str, Any]) -> list[BaseMessage]:
        input_key = self.input_key or get_prompt_input_key(inputs, self.memory_variables)
        if self.output_key is not None:
            output_key = self.output_key
        elif len(outputs) == 1:
            output_key = next(iter(outputs))
        else:
            raise InvalidInputError(
                f"the chain returned several outputs {sorted(outputs)}: set output_key= to "
                "the one holding the reply"
            )
        return [HumanMessage(str(inputs[input_key])), AIMessage(str(outputs[output_key]))]

    def load_memory_variables(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """The history to put in the prompt."""
        return self._format(self.buffer.get_context().messages)

    async def aload_memory_variables(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """Async :meth:`load_memory_variables`."""
        return self._format((await self.buffer.aget_context()).messages)

    def save_context(self, inputs: dict[str, Any], outputs: dict[str, str]) -> None:
        """Store the turn's input and output."""
        self.buffer.add_messages(self._turn(inputs, outputs))

    async def asave_context(self, inputs: dict[str, Any], outputs: dict[str, str]) -> None:
        """Async :meth:`save_context`."""
        await self.buffer.aadd_messages(self._turn(inputs, outputs))

    def clear(self) -> None:
        """Forget every message (and the summary)."""
        self.buffer.clear()

    async def aclear(self) -> None:
        """Async :meth:`clear`."""
        self.buffer.clear()
