"""Shared fixtures: offline fakes, temporary stores, and the socket guard.

Sockets are disabled for every test by pytest-socket (see ``addopts`` in
pyproject.toml); a test that needs loopback marks itself ``enable_socket``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

from langchain_tiered_memory.testing.fakes import FakeClock, HashingEmbeddings, ScriptedChatModel

# Nothing may reach a hub or a tokenizer download at test time.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

settings.register_profile(
    "ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", max_examples=30, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


@pytest.fixture
def embeddings() -> HashingEmbeddings:
    """Deterministic lexical embeddings (384-d)."""
    return HashingEmbeddings(size=384)


@pytest.fixture
def clock() -> FakeClock:
    """A clock that only moves when told to."""
    return FakeClock()


@pytest.fixture
def scripted_model() -> Iterator[ScriptedChatModel]:
    """A scripted chat model with no replies yet; set ``.responses`` in the test."""
    yield ScriptedChatModel(responses=[])
