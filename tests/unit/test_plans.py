"""The plan drivers: a sync method and its async twin run the same plan alike."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

from langchain_tiered_memory.plans import arun_plan, run_plan


def _recovering() -> Generator[str, Any, list[Any]]:
    """Ask twice; a failed request is recorded and the plan goes on."""
    seen: list[Any] = []
    for request in ("first", "second"):
        try:
            seen.append((yield request))
        except KeyError as exc:
            seen.append(f"failed: {exc.args[0]}")
    return seen


def _execute(request: str) -> str:
    if request == "first":
        raise KeyError("first")
    return request.upper()


async def _aexecute(request: str) -> str:
    return _execute(request)


def test_a_failed_request_is_raised_inside_the_plan_which_may_recover() -> None:
    assert run_plan(_recovering(), _execute) == ["failed: first", "SECOND"]


async def test_the_async_driver_gives_the_same_result() -> None:
    assert await arun_plan(_recovering(), _aexecute) == ["failed: first", "SECOND"]


def test_unhandled_errors_propagate_without_entering_the_plan() -> None:
    plan = _recovering()
    with pytest.raises(KeyError, match="first"):
        run_plan(plan, _execute, handled=())
    assert plan.gi_frame is not None  # left suspended at its first request, not resumed


async def test_unhandled_errors_propagate_from_the_async_driver() -> None:
    with pytest.raises(KeyError, match="first"):
        await arun_plan(_recovering(), _aexecute, handled=())


def test_a_plan_that_yields_nothing_returns_at_once() -> None:
    def plan() -> Generator[str, Any, int]:
        return 7
        yield "never"

    assert run_plan(plan(), _execute) == 7
