import langchain_tiered_memory as ltm

# The public API is a promise: changing it is a deliberate act that updates this list.
EXPECTED = sorted(
    [
        "create_memory_tools",
        "MemoryAgentState",
        "MemoryAgentContext",
        "create_memory_agent",
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
        "LLMTimeoutError",
        "Fact",
        "FactWriteResult",
        "ForgettingPolicy",
        "HeuristicFactExtractor",
        "InvalidInputError",
        "LocalEmbeddings",
        "MemoryConflictResolver",
        "MemoryConsolidator",
        "MemoryContext",
        "MemoryItem",
        "MemoryScope",
        "MemoryTrash",
        "NamespaceError",
        "OfflineChatModel",
        "Outcome",
        "Priority",
        "PriorityTruncationBuffer",
        "ProceduralConfig",
        "ProceduralMemory",
        "OptimizationStatus",
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
        "create_working_memory_node",
        "get_encoding",
        "load_chat_model",
        "seed_tiktoken_cache",
    ]
)


def test_all_is_pinned() -> None:
    assert sorted(ltm.__all__) == EXPECTED


def test_every_name_in_all_exists() -> None:
    for name in ltm.__all__:
        assert hasattr(ltm, name), name


def test_error_tree() -> None:
    for name in ltm.__all__:
        obj = getattr(ltm, name)
        if isinstance(obj, type) and issubclass(obj, Exception):
            assert issubclass(obj, ltm.TieredMemoryError), name
    assert issubclass(ltm.NamespaceError, ValueError)
    assert issubclass(ltm.InvalidInputError, ValueError)
    assert issubclass(ltm.StoreLockedError, ltm.BackendError)
    assert issubclass(ltm.WriteBackTimeoutError, TimeoutError)


def test_facade_names_promised_in_the_issue() -> None:
    from langchain_tiered_memory import (  # noqa: F401
        Episode,
        Outcome,
        TieredMemory,
        ToolUsageRecord,
        TrajectoryStep,
    )
