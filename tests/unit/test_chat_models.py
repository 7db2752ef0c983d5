"""Time limits on model calls: the shared helper and the settings that use it."""

from __future__ import annotations

import math
import time
from typing import Any

import pytest
from langchain_core.messages import BaseMessage

from langchain_tiered_memory.chat_models import (
    LLMTimeoutError,
    ainvoke_with_timeout,
    check_timeout,
    invoke_with_timeout,
)
from langchain_tiered_memory.errors import ConfigurationError, ExtractionError
from langchain_tiered_memory.testing.fakes import ScriptedChatModel
from langchain_tiered_memory.tiers.episodic.models import Episode
from langchain_tiered_memory.tiers.episodic.reflection import EpisodeReflector
from langchain_tiered_memory.tiers.semantic.consistency import LLMConsistencyJudge
from langchain_tiered_memory.tiers.semantic.extraction import EntityFactExtractor
from langchain_tiered_memory.tiers.semantic.models import SemanticConfig
from langchain_tiered_memory.tiers.working.summary import SummarizationTimeoutError, Summarizer

BAD_TIMEOUTS = [0, -1, 0.0, math.nan, math.inf, True, "3", [1]]


def sleepy(seconds: float) -> Any:
    def reply(messages: list[BaseMessage]) -> str:
        time.sleep(seconds)
        return "late"

    return reply


def own_timeout(messages: list[BaseMessage]) -> Any:
    raise TimeoutError("provider says: request timed out after 60 s")


@pytest.mark.parametrize("bad", BAD_TIMEOUTS)
def test_bad_timeouts_are_rejected_everywhere(bad: Any) -> None:
    model = ScriptedChatModel()
    with pytest.raises(ConfigurationError, match="positive number of seconds or None"):
        check_timeout(bad)
    with pytest.raises(ConfigurationError, match="llm_timeout"):
        SemanticConfig(llm_timeout=bad)
    with pytest.raises(ConfigurationError, match="timeout"):
        EpisodeReflector(model, timeout=bad)
    with pytest.raises(ConfigurationError, match="timeout"):
        EntityFactExtractor(model, timeout=bad)
    with pytest.raises(ConfigurationError, match="timeout"):
        LLMConsistencyJudge(model, timeout=bad)
    with pytest.raises(ConfigurationError, match="timeout"):
        Summarizer(model, timeout=bad)


def test_good_timeouts_are_accepted() -> None:
    assert check_timeout(None) is None
    assert check_timeout(2) == 2.0
    assert SemanticConfig(llm_timeout=None).llm_timeout is None
    assert SemanticConfig().llm_timeout == 30.0
    assert EpisodeReflector(ScriptedChatModel(), timeout=None).timeout is None


def test_sync_call_gives_up_after_the_timeout() -> None:
    model = ScriptedChatModel(default=sleepy(1.0))
    started = time.monotonic()
    with pytest.raises(LLMTimeoutError, match=r"the test model did not answer within 0\.1s"):
        invoke_with_timeout(model, "hi", 0.1, what="the test model")
    assert time.monotonic() - started < 0.6
    assert isinstance(LLMTimeoutError("x"), (ExtractionError, TimeoutError))


async def test_async_call_gives_up_after_the_timeout() -> None:
    model = ScriptedChatModel(default=sleepy(1.0))
    started = time.monotonic()
    with pytest.raises(LLMTimeoutError, match=r"within 0\.1s"):
        await ainvoke_with_timeout(model, "hi", 0.1, what="the test model")
    assert time.monotonic() - started < 0.6


async def test_fast_calls_return_their_answer() -> None:
    model = ScriptedChatModel(responses=["one", "two", "three"])
    assert invoke_with_timeout(model, "hi", 5.0, what="m").content == "one"
    assert (await ainvoke_with_timeout(model, "hi", 5.0, what="m")).content == "two"
    assert invoke_with_timeout(model, "hi", None, what="m").content == "three"


async def test_the_models_own_timeout_error_passes_through_unchanged() -> None:
    model = ScriptedChatModel(default=own_timeout)
    with pytest.raises(TimeoutError, match="provider says") as info:
        invoke_with_timeout(model, "hi", 5.0, what="m")
    assert not isinstance(info.value, LLMTimeoutError)
    with pytest.raises(TimeoutError, match="provider says") as ainfo:
        await ainvoke_with_timeout(model, "hi", 5.0, what="m")
    assert not isinstance(ainfo.value, LLMTimeoutError)


def test_on_timeout_builds_the_callers_error() -> None:
    summarizer = Summarizer(ScriptedChatModel(default=sleepy(1.0)), timeout=0.05)
    with pytest.raises(SummarizationTimeoutError, match="timeout=") as info:
        summarizer.summarize("", [])
    assert isinstance(info.value, LLMTimeoutError)


async def test_reflector_timeout_is_an_extraction_error_naming_the_episode() -> None:
    reflector = EpisodeReflector(ScriptedChatModel(default=sleepy(1.0)), timeout=0.1)
    episode = Episode(task_description="Deploy", outcome="failure")
    with pytest.raises(LLMTimeoutError, match=episode.episode_id):
        reflector.reflect(episode)
    with pytest.raises(ExtractionError, match=r"did not answer within 0\.1s"):
        await reflector.areflect(episode)
    with pytest.raises(LLMTimeoutError, match="pattern synthesis"):
        reflector.synthesize_pattern([episode])
