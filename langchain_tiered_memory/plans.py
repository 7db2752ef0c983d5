"""Plans, and the one sync and one async driver that run them.

A *plan* is a generator that yields requests (a store batch, a prompt, a lock)
and receives their results, so I/O logic is written once: :func:`run_plan`
executes the requests with a plain function, :func:`arun_plan` with a coroutine
function (see ARCHITECTURE.md, "Two patterns that recur"). An error executing
a request is raised inside the plan at the ``yield`` that made it;
``handled=()`` propagates every error at once instead.

Example:
    >>> def plan():
    ...     hits = yield "count"
    ...     return hits * 2
    >>> run_plan(plan(), lambda request: 21)
    42
    >>> import asyncio
    >>> async def answer(request):
    ...     return 21
    >>> asyncio.run(arun_plan(plan(), answer))
    42
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass
from typing import Any, TypeAlias, TypeVar

__all__ = ["Handled", "Plan", "arun_plan", "run_plan"]

T = TypeVar("T")

Plan: TypeAlias = Generator[Any, Any, T]
"""A generator yielding requests, receiving their results, returning ``T``."""

Handled: TypeAlias = type[BaseException] | tuple[type[BaseException], ...]
"""The errors of executing a request that are raised inside the plan."""


@dataclass(frozen=True)
class _Done:
    value: Any


def _advance(plan: Plan[Any], result: Any, error: BaseException | None) -> Any:
    """The plan's next request, or :class:`_Done` with its return value."""
    try:
        return plan.throw(error) if error is not None else plan.send(result)
    except StopIteration as stop:
        return _Done(stop.value)


def run_plan(plan: Plan[T], execute: Callable[[Any], Any], *, handled: Handled = Exception) -> T:
    """Drive ``plan``: execute each request it yields and send the result back.

    Args:
        plan: A started or fresh generator.
        execute: Executes one request and returns its result.
        handled: Errors of ``execute`` raised inside the plan (the default: every
            ``Exception``); any other error propagates from here.

    Returns:
        The plan's return value.
    """
    step = _advance(plan, None, None)
    while not isinstance(step, _Done):
        error: BaseException | None = None
        try:
            result = execute(step)
        except handled as exc:  # raised inside the plan, which decides
            result, error = None, exc
        step = _advance(plan, result, error)
    value: T = step.value
    return value


async def arun_plan(
    plan: Plan[T], execute: Callable[[Any], Awaitable[Any]], *, handled: Handled = Exception
) -> T:
    """Async :func:`run_plan`: ``execute`` is awaited."""
    step = _advance(plan, None, None)
    while not isinstance(step, _Done):
        error: BaseException | None = None
        try:
            result = await execute(step)
        except handled as exc:  # raised inside the plan, which decides
            result, error = None, exc
        step = _advance(plan, result, error)
    value: T = step.value
    return value
