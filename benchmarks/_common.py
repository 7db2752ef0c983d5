"""Helpers shared by the benchmark scripts: timing, percentiles, memory, tables.

Example:
    >>> from benchmarks._common import format_table, percentile
    >>> percentile([1.0, 2.0, 3.0, 4.0], 50)
    2.5
    >>> print(format_table(["engine", "ms"], [["a", "1.0"]]))
    | engine | ms |
    |:-------|---:|
    | a | 1.0 |
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import resource
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import numpy as np

__all__ = [
    "Stopwatch",
    "environment",
    "fmt",
    "format_table",
    "percentile",
    "ratio",
    "rss_mb",
    "run_isolated",
    "stopwatch",
    "time_calls",
]

T = TypeVar("T")


class Stopwatch:
    """Elapsed wall-clock seconds of a ``with stopwatch()`` block (``.seconds``)."""

    def __init__(self) -> None:
        self.start = time.perf_counter()
        self.seconds = 0.0


@contextmanager
def stopwatch() -> Iterator[Stopwatch]:
    """Time a block: ``with stopwatch() as sw: ...; sw.seconds``."""
    sw = Stopwatch()
    try:
        yield sw
    finally:
        sw.seconds = time.perf_counter() - sw.start


def time_calls(calls: Sequence[Callable[[], T]]) -> tuple[list[float], list[T]]:
    """Run each call once; return per-call latencies in milliseconds, and the results."""
    latencies: list[float] = []
    results: list[T] = []
    for call in calls:
        start = time.perf_counter()
        results.append(call())
        latencies.append((time.perf_counter() - start) * 1000.0)
    return latencies, results


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100, linear interpolation); NaN when empty."""
    if not values:
        return float("nan")
    return float(np.percentile(np.asarray(values, dtype=np.float64), q))


def _status_mib(field: str) -> float | None:
    """A ``/proc/self/status`` memory line (``VmRSS``, ``RssFile``) in MiB; None without one."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            lines = fh.read().splitlines()
    except OSError:  # no /proc (macOS): the caller falls back or reports no figure
        return None
    for line in lines:
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024.0
    return None


def rss_mb() -> float:
    """Resident memory of this process in MiB (``/proc``; peak RSS where it is missing)."""
    gc.collect()
    current = _status_mib("VmRSS")
    if current is not None:
        return current
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024.0 * 1024.0) if sys.platform == "darwin" else peak / 1024.0


def rss_file_mb() -> float | None:
    """Resident file-backed memory of this process in MiB (memory-mapped files, code).

    Such pages are clean copies of files that the kernel can drop under memory pressure;
    ``None`` where ``/proc/self/status`` has no ``RssFile`` line.
    """
    return _status_mib("RssFile")


def ratio(value: float | None, base: float | None) -> float | None:
    """``value / base``, or None when either is missing or ``base`` is zero."""
    if value is None or base is None or base == 0 or np.isnan(value) or np.isnan(base):
        return None
    return value / base


def fmt(value: Any, digits: int = 2) -> str:
    """Format a table cell: numbers with ``digits`` significant decimals, None as '-'."""
    if value is None:
        return "-"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, float) and np.isnan(value):
        return "-"
    if isinstance(value, int) or abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 100:
        return f"{value:.0f}"
    return f"{value:.{digits}f}"


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A Markdown table: first column left-aligned, the others right-aligned."""
    cells = [[fmt(c) for c in row] for row in rows]
    lines = ["| " + " | ".join(headers) + " |"]
    align = [":" + "-" * max(len(headers[0]) - 1, 1)]
    align += ["-" * max(len(h) - 1, 1) + ":" for h in headers[1:]]
    lines.append("|" + "|".join(align) + "|")
    lines += ["| " + " | ".join(row) + " |" for row in cells]
    return "\n".join(lines)


def _child(conn: Any, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
    try:
        conn.send(("ok", fn(*args)))
    except BaseException as exc:  # report any failure to the parent, then exit
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        conn.close()


def run_isolated(fn: Callable[..., T], *args: Any, isolated: bool = True) -> T:
    """Run ``fn(*args)`` in a fresh spawned process (clean memory figures), or inline.

    ``fn`` must be importable at module level and return something picklable.
    Raises ``RuntimeError`` with the child's error text if it failed.
    """
    if not isolated:
        return fn(*args)
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(child, fn, args))
    proc.start()
    child.close()
    try:
        status, payload = parent.recv()
    except EOFError as exc:
        proc.join()
        raise RuntimeError(f"benchmark process died with exit code {proc.exitcode}") from exc
    proc.join()
    if status != "ok":
        raise RuntimeError(payload)
    return payload  # type: ignore[no-any-return]


def host_speed_ms() -> float:
    """Milliseconds one core takes for a fixed pure-Python loop (1M additions).

    Printed with every table: the shared hosts here differ several-fold in speed
    from one day to the next, so absolute figures are only comparable at a
    similar host speed (the ratios within one run always are).
    """
    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        total = 0
        for i in range(1_000_000):
            total += i
        best = min(best, (time.process_time() - start) * 1000)
    return best


def environment() -> str:
    """One line describing the machine, for the table's caption."""
    cpus = os.cpu_count()
    load = ""
    if hasattr(os, "getloadavg"):
        load = f", load average {os.getloadavg()[0]:.1f}"
    speed = f", host speed {host_speed_ms():.0f} ms per 1M-step Python loop"
    return f"Python {sys.version.split()[0]}, {cpus} CPUs, {sys.platform}{load}{speed}"
