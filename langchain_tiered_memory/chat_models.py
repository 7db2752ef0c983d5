"""Chat models: one argument to choose a model, and calling it with a time limit.

:func:`load_chat_model` turns ``"offline"``, ``"openai:<model>"`` or a
``BaseChatModel`` into a model. Every LLM path of the memory (extraction, the
consistency judge, reflection, the running summary) goes through
:func:`invoke_with_timeout` or :func:`ainvoke_with_timeout`, so a hanging
provider costs at most ``timeout`` seconds per call. The sync call runs in a
worker thread (with the caller's context variables) that Python cannot kill:
set a client timeout on the model as well (e.g. ``ChatOpenAI(timeout=...)``).
The async call is cancelled. ``timeout=None`` waits as long as it takes.

Examples:
    >>> from langchain_tiered_memory.testing.fakes import ScriptedChatModel
    >>> model = ScriptedChatModel(responses=["hi"])
    >>> invoke_with_timeout(model, "hello", 5.0, what="the greeting model").content
    'hi'
    >>> check_timeout(2), check_timeout(None)
    (2.0, None)
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import math
from collections.abc import Callable
from typing import Any

from langchain_core.language_models import BaseChatModel

from langchain_tiered_memory.errors import ConfigurationError, ExtractionError

__all__ = [
    "DEFAULT_LLM_TIMEOUT",
    "LLMTimeoutError",
    "ainvoke_with_timeout",
    "check_timeout",
    "invoke_with_timeout",
]

DEFAULT_LLM_TIMEOUT = 30.0
"""Seconds one model call may take by default."""


class LLMTimeoutError(ExtractionError, TimeoutError):
    """A model call did not return within its timeout (nothing it would have produced is kept)."""


def check_timeout(timeout: Any, *, name: str = "timeout") -> float | None:
    """Validate a timeout: a positive, finite number of seconds, or ``None`` for no limit.

    Raises:
        ConfigurationError: Anything else (zero, negative, NaN, infinite, a bool, text).
    """
    if timeout is None:
        return None
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, (int, float))
        or not math.isfinite(timeout)
        or timeout <= 0
    ):
        raise ConfigurationError(
            f"{name} must be a positive number of seconds or None (no limit), got {timeout!r}"
        )
    return float(timeout)


def invoke_with_timeout(
    runnable: Any,
    value: Any,
    timeout: float | None,
    *,
    what: str,
    on_timeout: Callable[[], Exception] | None = None,
) -> Any:
    """``runnable.invoke(value)``, giving up after ``timeout`` seconds.

    Args:
        runnable: A chat model or any runnable with ``invoke``.
        value: Its input.
        timeout: Seconds to wait; ``None`` waits forever.
        what: Names the call in the timeout error ("the fact extraction model").
        on_timeout: Builds the exception raised on timeout (default: an
            :class:`LLMTimeoutError` naming ``what``).

    Raises:
        LLMTimeoutError: The call took longer than ``timeout`` (or ``on_timeout()``).
        Exception: Whatever the call raised, unchanged.
    """
    if timeout is None:
        return runnable.invoke(value)
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="llm-call")
    try:
        future = pool.submit(contextvars.copy_context().run, runnable.invoke, value)
        try:
            return future.result(timeout=timeout)
        except concurrent.futures.TimeoutError:
            if future.done():  # the model raised TimeoutError itself: pass it on unchanged
                return future.result()
            future.cancel()
            raise _on_timeout(what, timeout, on_timeout) from None
    finally:
        pool.shutdown(wait=False)


async def ainvoke_with_timeout(
    runnable: Any,
    value: Any,
    timeout: float | None,
    *,
    what: str,
    on_timeout: Callable[[], Exception] | None = None,
) -> Any:
    """Async twin of :func:`invoke_with_timeout` (``runnable.ainvoke``, cancelled on timeout)."""
    if timeout is None:
        return await runnable.ainvoke(value)
    task = asyncio.ensure_future(runnable.ainvoke(value))
    try:
        done, _ = await asyncio.wait({task}, timeout=timeout)
    except BaseException:  # the caller was cancelled: cancel the model call too
        task.cancel()
        raise
    if task not in done:
        task.cancel()
        task.add_done_callback(_retrieve)
        raise _on_timeout(what, timeout, on_timeout)
    return task.result()


def _on_timeout(what: str, timeout: float, on_timeout: Callable[[], Exception] | None) -> Exception:
    if on_timeout is not None:
        return on_timeout()
    return LLMTimeoutError(
        f"{what} did not answer within {timeout}s: raise the timeout or use a faster model"
    )


def _retrieve(task: asyncio.Future[Any]) -> None:
    """Mark a cancelled call's outcome as seen (no "exception never retrieved" noise)."""
    if not task.cancelled():
        task.exception()


def load_chat_model(model: str | BaseChatModel = "offline", **kwargs: Any) -> BaseChatModel:
    """Turn one argument into a chat model.

    Args:
        model: ``"offline"`` (the default), ``"openai:<model name>"`` (needs the
            ``openai`` extra; any OpenAI-compatible server through
            ``base_url=`` or ``OPENAI_BASE_URL``), or a ``BaseChatModel``.
        **kwargs: Passed to the model's constructor.

    Raises:
        ConfigurationError: Unknown spec, or the extra it needs is not installed.
    """
    if isinstance(model, BaseChatModel):
        return model
    if model == "offline":
        from langchain_tiered_memory.testing.offline_model import OfflineChatModel

        return OfflineChatModel(**kwargs)
    if model.startswith("openai:"):
        try:
            from langchain_openai import ChatOpenAI
        except ImportError as exc:
            raise ConfigurationError(
                "model 'openai:...' needs langchain-openai: "
                'pip install "langchain-tiered-memory[openai]"'
            ) from exc
        chat: BaseChatModel = ChatOpenAI(model=model.split(":", 1)[1], **kwargs)
        return chat
    raise ConfigurationError(
        f"unknown model spec {model!r}: use 'offline', 'openai:<model>' or a BaseChatModel"
    )
