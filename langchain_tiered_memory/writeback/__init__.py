"""Durable write-back: an SQLite outbox of memory writes, applied with retries."""

from __future__ import annotations

from typing import TYPE_CHECKING

from langchain_tiered_memory.lazy import lazy_exports

if TYPE_CHECKING:
    from langchain_tiered_memory.writeback.ops import (
        DeadLetter,
        RetryPolicy,
        WriteBackStats,
        WriteOp,
        WriteReceipt,
    )
    from langchain_tiered_memory.writeback.writer import DurableMemoryWriter, Handler

__all__ = [
    "DeadLetter",
    "DurableMemoryWriter",
    "Handler",
    "RetryPolicy",
    "WriteBackStats",
    "WriteOp",
    "WriteReceipt",
]

__getattr__, __dir__ = lazy_exports(__name__)
