"""langchain-tiered-memory: memory that lasts across sessions for LangChain and LangGraph agents.

Working, episodic, semantic and procedural memory on an embedded Qdrant store,
offline by default (bundled tokenizer and embedding model, no LLM required).

Examples:
    >>> from langchain_tiered_memory import TokenCounter
    >>> TokenCounter().count("hello world")
    2
"""

from __future__ import annotations

from langchain_tiered_memory.assembly import (
    DroppedItem,
    MemoryConflictResolver,
    MemoryContext,
    MemoryItem,
)
from langchain_tiered_memory.assembly.assembler import (
    AssemblyConfig,
    ContextAssembler,
    UnifiedMemoryManager,
)
from langchain_tiered_memory.chat_models import LLMTimeoutError, load_chat_model
from langchain_tiered_memory.consolidation import (
    ConsolidationReport,
    ForgettingPolicy,
    MemoryConsolidator,
    MemoryTrash,
)
from langchain_tiered_memory.embeddings import LocalEmbeddings
from langchain_tiered_memory.errors import (
    BackendError,
    ConfigurationError,
    ExtractionError,
    InvalidInputError,
    NamespaceError,
    StoreLockedError,
    TieredMemoryError,
    TokenBudgetError,
    WriteBackError,
    WriteBackTimeoutError,
)
from langchain_tiered_memory.integrations.agent import create_memory_agent
from langchain_tiered_memory.integrations.chat_history import BufferedChatMessageHistory
from langchain_tiered_memory.integrations.nodes import (
    MemoryAgentContext,
    MemoryAgentState,
    create_memory_tools,
)
from langchain_tiered_memory.memory import TieredMemory
from langchain_tiered_memory.stores import (
    OptimizationStatus,
    QdrantMemoryStore,
    RetrievalMode,
)
from langchain_tiered_memory.testing.offline_model import OfflineChatModel
from langchain_tiered_memory.tiers.common.ranking import RankingConfig, ScoreBreakdown
from langchain_tiered_memory.tiers.common.scope import MemoryScope
from langchain_tiered_memory.tiers.episodic.conversations import ConversationIndex
from langchain_tiered_memory.tiers.episodic.memory import EpisodicConfig, EpisodicMemory
from langchain_tiered_memory.tiers.episodic.models import (
    Episode,
    Outcome,
    Reflection,
    ScoredEpisode,
    TrajectoryStep,
)
from langchain_tiered_memory.tiers.episodic.reflection import EpisodeReflector
from langchain_tiered_memory.tiers.procedural.memory import ProceduralConfig, ProceduralMemory
from langchain_tiered_memory.tiers.procedural.models import Strategy, ToolGuidance, ToolUsageRecord
from langchain_tiered_memory.tiers.semantic.extraction import (
    EntityFactExtractor,
    HeuristicFactExtractor,
)
from langchain_tiered_memory.tiers.semantic.memory import SemanticMemory
from langchain_tiered_memory.tiers.semantic.models import (
    Entity,
    Fact,
    Relation,
    SemanticMemoryConfig,
)
from langchain_tiered_memory.tiers.semantic.results import (
    EntityContext,
    FactWriteResult,
    RememberResult,
    SemanticSearchHit,
)
from langchain_tiered_memory.tiers.turns.memory import (
    ConversationTurn,
    ConversationTurns,
    TurnHit,
    TurnsConfig,
)
from langchain_tiered_memory.tiers.working import (
    ContextLayout,
    ContextWindowBudget,
    ConversationBuffer,
    Priority,
    PriorityTruncationBuffer,
    SlidingWindowSummaryBuffer,
    WorkingContext,
    WorkingMemoryState,
    create_working_memory_node,
)
from langchain_tiered_memory.tokens import (
    TokenBudget,
    TokenCounter,
    get_encoding,
    seed_tiktoken_cache,
)
from langchain_tiered_memory.user_memory import UserMemory
from langchain_tiered_memory.writeback.ops import DeadLetter, WriteBackStats, WriteOp, WriteReceipt
from langchain_tiered_memory.writeback.ops import RetryPolicy as WriteRetryPolicy
from langchain_tiered_memory.writeback.writer import AsyncMemoryWriter, DurableMemoryWriter

__version__ = "0.1.0"

__all__ = [
    "AssemblyConfig",
    "AsyncMemoryWriter",
    "BackendError",
    "BufferedChatMessageHistory",
    "ConfigurationError",
    "ConsolidationReport",
    "ContextAssembler",
    "ContextLayout",
    "ContextWindowBudget",
    "ConversationBuffer",
    "ConversationIndex",
    "ConversationTurn",
    "ConversationTurns",
    "DeadLetter",
    "DroppedItem",
    "DurableMemoryWriter",
    "Entity",
    "EntityContext",
    "EntityFactExtractor",
    "Episode",
    "EpisodeReflector",
    "EpisodicConfig",
    "EpisodicMemory",
    "ExtractionError",
    "Fact",
    "FactWriteResult",
    "ForgettingPolicy",
    "HeuristicFactExtractor",
    "InvalidInputError",
    "LLMTimeoutError",
    "LocalEmbeddings",
    "MemoryAgentContext",
    "MemoryAgentState",
    "MemoryConflictResolver",
    "MemoryConsolidator",
    "MemoryContext",
    "MemoryItem",
    "MemoryScope",
    "MemoryTrash",
    "NamespaceError",
    "OfflineChatModel",
    "OptimizationStatus",
    "Outcome",
    "Priority",
    "PriorityTruncationBuffer",
    "ProceduralConfig",
    "ProceduralMemory",
    "QdrantMemoryStore",
    "RankingConfig",
    "Reflection",
    "Relation",
    "RememberResult",
    "RetrievalMode",
    "ScoreBreakdown",
    "ScoredEpisode",
    "SemanticMemory",
    "SemanticMemoryConfig",
    "SemanticSearchHit",
    "SlidingWindowSummaryBuffer",
    "StoreLockedError",
    "Strategy",
    "TieredMemory",
    "TieredMemoryError",
    "TokenBudget",
    "TokenBudgetError",
    "TokenCounter",
    "ToolGuidance",
    "ToolUsageRecord",
    "TrajectoryStep",
    "TurnHit",
    "TurnsConfig",
    "UnifiedMemoryManager",
    "UserMemory",
    "WorkingContext",
    "WorkingMemoryState",
    "WriteBackError",
    "WriteBackStats",
    "WriteBackTimeoutError",
    "WriteOp",
    "WriteReceipt",
    "WriteRetryPolicy",
    "__version__",
    "create_memory_agent",
    "create_memory_tools",
    "create_working_memory_node",
    "get_encoding",
    "load_chat_model",
    "seed_tiktoken_cache",
]
