# ruff: noqa: F811  (pytest fixtures imported from test_episodic_support are redefined as arguments)
import pytest
from langgraph.store.base import BaseStore
from test_episodic_support import qdrant_store, scope, store  # noqa: F401 (fixtures)

from langchain_tiered_memory.errors import ExtractionError, InvalidInputError
from langchain_tiered_memory.testing.fakes import ScriptedChatModel
from langchain_tiered_memory.tiers.common.scope import MemoryScope
from langchain_tiered_memory.tiers.episodic.memory import EpisodicConfig, EpisodicMemory
from langchain_tiered_memory.tiers.episodic.models import Episode, ReflectionStatus, TrajectoryStep
from langchain_tiered_memory.tiers.episodic.reflection import (
    EpisodeReflector,
    PatternSynthesis,
    Reflection,
)

GOOD = {
    "what_worked": "Reading the changelog",
    "what_failed": "Calling the v1 endpoint",
    "do_differently": "Check deprecations first",
    "lesson": "Use orders_v2; orders v1 returns 410 Gone.",
    "importance": 0.9,
}


def failing_episode() -> Episode:
    return Episode(
        task_description="Fetch yesterday's orders",
        outcome="failure",
        trajectory=[
            TrajectoryStep(
                thought="call the API", action="tool_call: orders", observation="410 Gone"
            )
        ],
    )


def reflector(*replies: object) -> EpisodeReflector:
    return EpisodeReflector(ScriptedChatModel(responses=list(replies)))


def test_reflector_uses_structured_output_and_shows_the_trajectory() -> None:
    model = ScriptedChatModel(responses=[GOOD])
    result = EpisodeReflector(model).reflect(failing_episode())
    assert result == Reflection(**GOOD)
    prompt = model.calls[0][-1].content
    assert "Fetch yesterday's orders" in prompt and "410 Gone" in prompt and "failure" in prompt
    assert result.to_text().startswith("Lesson: Use orders_v2")


def test_long_trajectories_are_clipped_keeping_both_ends() -> None:
    steps = [TrajectoryStep(action=f"step-{i}", observation="x" * 5000) for i in range(100)]
    episode = Episode(task_description="long", outcome="partial", trajectory=steps)
    text = (
        EpisodeReflector(ScriptedChatModel(), max_steps=10).reflection_messages(episode)[-1].content
    )
    assert "step-0" in text and "step-99" in text and "step-50" not in text
    assert "(90 steps omitted)" in text and len(text) < 10 * 600 + 2000


def test_reflector_failures_become_extraction_errors() -> None:
    with pytest.raises(ExtractionError, match="RuntimeError: model down") as info:
        reflector(RuntimeError("model down")).reflect(failing_episode())
    assert isinstance(info.value.__cause__, RuntimeError)
    with pytest.raises(ExtractionError, match="does not fit Reflection"):
        reflector({"importance": 3}).reflect(failing_episode())


def test_pattern_synthesis() -> None:
    reply = {
        "summary": "Deprecated endpoints cause most failures.",
        "failure_patterns": ["v1 APIs"],
    }
    episodes = [failing_episode(), failing_episode()]
    result = reflector(reply).synthesize_pattern(episodes)
    assert isinstance(result, PatternSynthesis) and result.failure_patterns == ["v1 APIs"]
    assert "Failure patterns: v1 APIs" in result.to_text()
    with pytest.raises(InvalidInputError, match="at least one episode"):
        reflector(reply).synthesize_pattern([])
    with pytest.raises(ExtractionError):
        reflector(ValueError("boom")).synthesize_pattern(episodes)


async def test_async_reflection_and_synthesis() -> None:
    r = reflector(GOOD, {"summary": "s"})
    assert (await r.areflect(failing_episode())).importance == 0.9
    assert (await r.asynthesize_pattern([failing_episode()])).summary == "s"


def test_record_then_reflect(store: BaseStore, scope: MemoryScope) -> None:
    memory = EpisodicMemory(store, scope)
    stored = memory.record(failing_episode(), reflector=reflector(GOOD))
    assert stored.reflection_status is ReflectionStatus.DONE
    assert stored.importance == 0.9 and stored.reflection_detail == Reflection(**GOOD)
    again = memory.get(stored.episode_id)
    assert again is not None and again.reflection.startswith("Lesson: Use orders_v2")
    # The reflection is part of what similarity search matches.
    assert memory.retrieve_similar("orders_v2 410 Gone", top_k=1)[0].episode.episode_id == (
        stored.episode_id
    )


def test_llm_failure_keeps_the_episode_pending_then_retry_succeeds(
    store: BaseStore, scope: MemoryScope
) -> None:
    memory = EpisodicMemory(store, scope)
    stored = memory.record(failing_episode(), reflector=reflector(TimeoutError("LLM timed out")))
    assert stored.reflection_status is ReflectionStatus.PENDING
    assert stored.reflection_error == "ExtractionError: reflection on episode " + (
        f"{stored.episode_id} failed: TimeoutError: LLM timed out"
    )
    kept = memory.get(stored.episode_id)
    assert kept is not None and kept.task_description == "Fetch yesterday's orders"
    assert [e.episode_id for e in memory.pending_reflections()] == [stored.episode_id]
    result = memory.retry_reflections(reflector(GOOD))
    assert result.reflected == [stored.episode_id] and not result.still_pending
    assert memory.pending_reflections() == []
    done = memory.get(stored.episode_id)
    assert done is not None and done.reflection_status is ReflectionStatus.DONE
    assert done.reflection_error is None and done.reflection_attempts == 2


def test_reflection_gives_up_after_the_attempt_limit(store: BaseStore, scope: MemoryScope) -> None:
    memory = EpisodicMemory(store, scope, config=EpisodicConfig(max_reflection_attempts=2))
    stored = memory.record(failing_episode(), reflector=reflector({"lesson": None}))
    assert stored.reflection_status is ReflectionStatus.PENDING
    result = memory.retry_reflections(reflector(RuntimeError("still down")))
    assert result.failed == [stored.episode_id]
    final = memory.get(stored.episode_id)
    assert final is not None and final.reflection_status is ReflectionStatus.FAILED
    assert "still down" in (final.reflection_error or "")
    assert memory.pending_reflections() == []


def test_episode_with_a_reflection_is_not_sent_to_the_model(
    store: BaseStore, scope: MemoryScope
) -> None:
    model = ScriptedChatModel(responses=[])
    memory = EpisodicMemory(store, scope)
    stored = memory.record(
        Episode(task_description="t", outcome="success", reflection="already done"),
        reflector=EpisodeReflector(model),
    )
    assert stored.reflection_status is ReflectionStatus.DONE and model.calls == []


async def test_async_record_with_failing_reflector(store: BaseStore, scope: MemoryScope) -> None:
    memory = EpisodicMemory(store, scope)
    stored = await memory.arecord(failing_episode(), reflector=reflector(RuntimeError("down")))
    assert stored.reflection_status is ReflectionStatus.PENDING
    assert [e.episode_id for e in await memory.apending_reflections()] == [stored.episode_id]
    result = await memory.aretry_reflections(reflector(GOOD))
    assert result.reflected == [stored.episode_id]
