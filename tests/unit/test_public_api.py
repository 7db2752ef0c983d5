"""The public API: a small top level, and each subpackage's own deliberate names."""

from __future__ import annotations

import importlib

import pytest

import langchain_tiered_memory as ltm

# The public API is a promise: changing it is a deliberate act that updates this list.
EXPECTED = [
    "AssemblyConfig",
    "BackendError",
    "ConfigurationError",
    "Episode",
    "Fact",
    "InvalidInputError",
    "LocalEmbeddings",
    "MemoryClosedError",
    "MemoryContext",
    "MemoryPathError",
    "Outcome",
    "QdrantMemoryStore",
    "StoreLockedError",
    "TieredMemory",
    "TieredMemoryError",
    "TieredMemoryMiddleware",
    "ToolUsageRecord",
    "TrajectoryStep",
    "UserMemory",
    "WriteBackError",
    "__version__",
    "create_memory_agent",
    "load_chat_model",
]

SUBPACKAGES = {
    "assembly": ["AssemblyConfig", "ContextAssembler", "MemoryContext", "MemoryItem"],
    "consolidation": ["ConsolidationReport", "ForgettingPolicy", "MemoryConsolidator"],
    "errors": ["NamespaceError", "TokenBudgetError", "WriteBackTimeoutError"],
    "integrations": ["BufferedChatMessageHistory", "TieredMemoryMiddleware", "create_memory_agent"],
    "integrations.nodes": ["MemoryAgentContext", "MemoryAgentState", "create_memory_tools"],
    "stores": ["QdrantMemoryStore", "RetrievalMode", "OptimizationStatus"],
    "testing": ["HashingEmbeddings", "OfflineChatModel", "ScriptedChatModel", "FakeClock"],
    "tiers.common": ["MemoryScope", "RankingConfig", "normalize_id"],
    "tiers.episodic": ["EpisodicConfig", "EpisodicMemory", "Episode", "EpisodeReflector"],
    "tiers.procedural": ["ProceduralConfig", "ProceduralMemory", "Strategy", "ToolUsageRecord"],
    "tiers.semantic": ["SemanticConfig", "SemanticMemory", "Fact", "Entity", "RememberResult"],
    "tiers.turns": ["TurnsConfig", "ConversationTurns", "ConversationTurn", "TurnHit"],
    "tiers.working": ["ConversationBuffer", "SlidingWindowSummaryBuffer", "ContextWindowBudget"],
    "tokens": ["TokenCounter", "TokenBudget"],
    "writeback": ["DurableMemoryWriter", "RetryPolicy", "WriteOp", "WriteReceipt"],
}
"""A few names each subpackage promises (its ``__all__`` may hold more)."""

REMOVED = ["UnifiedMemoryManager", "AsyncMemoryWriter", "WriteRetryPolicy", "SemanticMemoryConfig"]
"""Old names that are gone: one name per thing."""


def test_all_is_pinned() -> None:
    assert sorted(ltm.__all__) == sorted(EXPECTED)
    assert len(ltm.__all__) <= 25, "the top level is the day-one API: keep it small"


def test_every_name_in_all_exists() -> None:
    for name in ltm.__all__:
        assert getattr(ltm, name) is not None, name


@pytest.mark.parametrize("subpackage", sorted(SUBPACKAGES))
def test_each_subpackage_exports_its_own_api(subpackage: str) -> None:
    module = importlib.import_module(f"langchain_tiered_memory.{subpackage}")
    exported = module.__all__
    for name in SUBPACKAGES[subpackage]:
        assert name in exported, f"{subpackage} does not export {name}"
    for name in exported:
        assert getattr(module, name) is not None, f"{subpackage}.{name}"


def test_old_names_are_gone() -> None:
    modules = [ltm] + [
        importlib.import_module(f"langchain_tiered_memory.{name}") for name in SUBPACKAGES
    ]
    for module in modules:
        for name in REMOVED:
            assert not hasattr(module, name), f"{module.__name__}.{name}"


def test_config_classes_follow_one_pattern() -> None:
    """Each tier's settings are ``<Tier>Config``, passed to ``TieredMemory`` as ``<tier>=``."""
    import inspect

    from langchain_tiered_memory.tiers.episodic import EpisodicConfig
    from langchain_tiered_memory.tiers.procedural import ProceduralConfig
    from langchain_tiered_memory.tiers.semantic import SemanticConfig
    from langchain_tiered_memory.tiers.turns import TurnsConfig

    keywords = inspect.signature(ltm.TieredMemory).parameters
    expected = {
        "assembly": ltm.AssemblyConfig,
        "episodic": EpisodicConfig,
        "semantic": SemanticConfig,
        "procedural": ProceduralConfig,
        "turns": TurnsConfig,
    }
    for keyword, config in expected.items():
        assert keyword in keywords, keyword
        assert config.__name__ == f"{keyword.capitalize()}Config"


def test_error_tree() -> None:
    from langchain_tiered_memory import errors

    for name in errors.__all__:
        assert issubclass(getattr(errors, name), ltm.TieredMemoryError), name
    for name in ltm.__all__:
        obj = getattr(ltm, name)
        if isinstance(obj, type) and issubclass(obj, Exception):
            assert issubclass(obj, ltm.TieredMemoryError), name
    assert issubclass(errors.NamespaceError, ValueError)
    assert issubclass(ltm.InvalidInputError, ValueError)
    assert issubclass(ltm.MemoryPathError, ltm.ConfigurationError)
    assert issubclass(ltm.MemoryClosedError, RuntimeError)
    assert issubclass(ltm.StoreLockedError, ltm.BackendError)
    assert issubclass(errors.WriteBackTimeoutError, TimeoutError)


def test_the_records_a_user_builds_are_at_the_top_level() -> None:
    from langchain_tiered_memory import (  # noqa: F401
        Episode,
        Outcome,
        TieredMemory,
        ToolUsageRecord,
        TrajectoryStep,
    )


TOP_OF_THE_IMPORT_FLOW = {"cli", "nodes"}
"""Packages no other module of the library imports: they may import their modules eagerly."""


def test_subpackages_import_their_names_lazily() -> None:
    """A subpackage ``__init__`` imports none of its modules when it runs.

    Otherwise importing one module of a subpackage would first run its siblings,
    and two modules that do not import each other could still form a circle.
    """
    import ast
    from pathlib import Path

    root = Path(ltm.__file__).parent
    for init in sorted(root.rglob("__init__.py")):
        if init.parent == root or init.parent.name in TOP_OF_THE_IMPORT_FLOW:
            continue
        tree = ast.parse(init.read_text(encoding="utf-8"))
        runtime = [
            node.module
            for node in tree.body
            if isinstance(node, ast.ImportFrom)
            and (node.module or "").startswith("langchain_tiered_memory")
            and node.module != "langchain_tiered_memory.lazy"
        ]
        assert runtime == [], f"{init.relative_to(root)} imports {runtime} eagerly"
