import langchain_tiered_memory as ltm

# The public API is a promise: changing it is a deliberate act that updates this list.
EXPECTED = sorted(
    [
        "BackendError",
        "ConfigurationError",
        "ExtractionError",
        "InvalidInputError",
        "NamespaceError",
        "StoreLockedError",
        "TieredMemoryError",
        "TokenBudget",
        "TokenBudgetError",
        "TokenCounter",
        "WriteBackError",
        "__version__",
        "get_encoding",
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
            assert issubclass(obj, ltm.TieredMemoryError)
    assert issubclass(ltm.NamespaceError, ValueError)
    assert issubclass(ltm.StoreLockedError, ltm.BackendError)
