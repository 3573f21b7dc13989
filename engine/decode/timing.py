"""Stage timing from the outside: wrap a call, never instrument the algorithm.

:func:`median_ms` times a whole call repeatedly (benchmarks); :class:`StageTimer`
charges the stages of a running decode. ``timer.call("draft", fn, *args)`` runs ``fn`` and charges its latency to stage
``"draft"``. On a CPU the clock is ``time.perf_counter``; on a CUDA device each
call is bracketed by CUDA events (no synchronisation until :meth:`summary`).
:class:`NullTimer` has the same interface and measures nothing.
"""

from __future__ import annotations

import statistics
import time
from collections import defaultdict
from typing import Any, Callable

import torch


class NullTimer:
    """Runs the call, records nothing."""

    def call(self, stage: str, fn: Callable[..., Any], *args, **kwargs):
        return fn(*args, **kwargs)

    def summary(self) -> dict[str, dict[str, float]]:
        return {}


class StageTimer(NullTimer):
    """Per-stage total seconds and call counts (CUDA events on a GPU, perf_counter on a CPU)."""

    def __init__(self, device: torch.device | str = "cpu"):
        self.cuda = torch.device(device).type == "cuda"
        self._seconds: dict[str, float] = defaultdict(float)
        self._count: dict[str, int] = defaultdict(int)
        self._events: list[tuple[str, Any, Any]] = []

    def call(self, stage: str, fn: Callable[..., Any], *args, **kwargs):
        self._count[stage] += 1
        if self.cuda:
            begin = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            begin.record()
            out = fn(*args, **kwargs)
            end.record()
            self._events.append((stage, begin, end))
            return out
        t0 = time.perf_counter()
        out = fn(*args, **kwargs)
        self._seconds[stage] += time.perf_counter() - t0
        return out

    def _flush(self) -> None:
        if self._events:
            torch.cuda.synchronize()
            for stage, begin, end in self._events:
                self._seconds[stage] += begin.elapsed_time(end) / 1000.0
            self._events.clear()

    def total(self, stage: str) -> float:
        self._flush()
        return self._seconds.get(stage, 0.0)

    def summary(self) -> dict[str, dict[str, float]]:
        """``{stage: {"total_s", "calls", "mean_ms"}}``."""
        self._flush()
        return {
            s: {
                "total_s": self._seconds[s],
                "calls": self._count[s],
                "mean_ms": 1000.0 * self._seconds[s] / max(self._count[s], 1),
            }
            for s in sorted(self._count)
        }


def _sync(device: str) -> None:
    if str(device).startswith("cuda"):
        torch.cuda.synchronize()


def interleaved_ms(
    fns: dict[str, Callable[[], Any]],
    device: torch.device | str,
    repeats: int,
    *,
    setup: Callable[[], None] | None = None,
    warmup: int = 1,
    setups: dict[str, Callable[[], None]] | None = None,
) -> dict[str, list[float]]:
    """Wall milliseconds per call of each ``fns[k]()``, ``repeats`` calls each, after ``warmup`` untimed rounds.

    The functions alternate call by call, so load drifts on a shared machine hit all of
    them alike (compare them within one run); ``setup()`` runs untimed before every call
    (a cache refill, say), then ``setups[k]()`` if given (work a stage's interval leaves out);
    CUDA work is synchronised around each timed call.
    """
    setups = setups or {}

    def prepare(k: str) -> None:
        if setup is not None:
            setup()
        if k in setups:
            setups[k]()

    for _ in range(warmup):
        for k, fn in fns.items():
            prepare(k)
            fn()
    _sync(device)
    out: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeats):
        for k, fn in fns.items():
            prepare(k)
            _sync(device)
            t0 = time.perf_counter()
            fn()
            _sync(device)
            out[k].append(1000.0 * (time.perf_counter() - t0))
    return out


def median_ms(
    fn: Callable[[], Any], reps: int, device: torch.device | str, setup=None, warmup: int = 2
) -> float:
    """Median wall milliseconds of ``fn()`` over ``reps`` runs (``setup()`` untimed before each),
    after ``warmup`` untimed runs (kernel selection, allocator caches, lazy CUDA init)."""
    return float(
        statistics.median(
            interleaved_ms({"fn": fn}, device, reps, setup=setup, warmup=warmup)["fn"]
        )
    )


__all__ = ["StageTimer", "NullTimer", "interleaved_ms", "median_ms"]
