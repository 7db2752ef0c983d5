"""Deployable memory agent for ``langgraph dev`` and LangGraph Platform (see langgraph.json).

Environment:
    TIERED_MEMORY_PATH: memory directory (default ``./.tiered-memory``).
    TIERED_MEMORY_MODEL: ``offline`` (default) or ``openai:<model>`` (then OPENAI_API_KEY,
        and OPENAI_BASE_URL for a local OpenAI-compatible server).

Runs pass the user as ``context={"user_id": ...}`` or ``config["configurable"]["user_id"]``.
The server brings its own checkpointer, so the graph is compiled without one.
"""

from __future__ import annotations

import atexit
import os

from langchain_tiered_memory import TieredMemory
from langchain_tiered_memory.chat_models import load_chat_model
from langchain_tiered_memory.integrations.agent import create_memory_agent

memory = TieredMemory.open(os.environ.get("TIERED_MEMORY_PATH", "./.tiered-memory"))
atexit.register(memory.close)

graph = create_memory_agent(
    load_chat_model(os.environ.get("TIERED_MEMORY_MODEL", "offline")),
    memory=memory,
    checkpointer=False,
)
