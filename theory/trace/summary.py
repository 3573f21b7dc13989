"""Summaries of recorded traces: per-round coverage, ceiling, observed block length.

The ceiling of a round is ``1 + C_p(T)`` computed from its edge probabilities
(docs/design.md §1.3, fixed-tree theorem). Observed block length is ``depth(exit) + 1``.
The expected exit-depth histogram is the sum over rounds of the exact law of
``depth(V)``, ``V ~ w``; it is printed beside the observed histogram.

Laws come from :mod:`exitlaw.theory.trace.stream` (bucketed by tree size, numpy):
:func:`summarize_trace_file` streams a file in memory bounded by its largest
round; :func:`summarize_trace` summarises a trace already in memory. Per-round
values are kept as compact arrays; ``keep_rounds`` limits how many per-round
records the summary lists (``None``: all).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from exitlaw.theory.trace.format import Trace
from exitlaw.theory.trace.stream import (
    DEFAULT_CHUNK_NODES,
    PARALLEL_MIN_BYTES,
    ChunkLaw,
    laws_of_rounds,
    stream_trace_laws,
)


class _Columns:
    """Per-round values, filled in as chunks (in any round order) arrive."""

    def __init__(self) -> None:
        self.size = 0
        self.budget = np.zeros(0, dtype=np.int32)
        self.max_depth = np.zeros(0, dtype=np.int32)
        self.coverage = np.zeros(0)
        self.block = np.zeros(0, dtype=np.int32)
        self.depth_law = np.zeros(1)

    def add(self, c: ChunkLaw) -> None:
        top = int(c.index.max()) + 1
        if top > self.budget.size:
            cap = max(top, 2 * self.budget.size, 1024)
            for name in ("budget", "max_depth", "coverage", "block"):
                old = getattr(self, name)
                new = np.zeros(cap, dtype=old.dtype)
                new[: old.size] = old
                setattr(self, name, new)
        self.size = max(self.size, top)
        self.budget[c.index], self.max_depth[c.index] = c.budget, c.max_depth
        self.coverage[c.index], self.block[c.index] = c.coverage, c.block_length
        if c.depth_law.size > self.depth_law.size:
            self.depth_law = np.concatenate(
                [self.depth_law, np.zeros(c.depth_law.size - self.depth_law.size)]
            )
        self.depth_law[: c.depth_law.size] += c.depth_law


def _summary(
    meta: dict[str, Any], chunks: Iterable[ChunkLaw], keep_rounds: int | None
) -> dict[str, Any]:
    cols = _Columns()
    for c in chunks:
        cols.add(c)
    n = cols.size
    if n == 0:
        raise ValueError("the trace holds no rounds")
    coverage, block = cols.coverage[:n], cols.block[:n]
    d = int(cols.max_depth[:n].max())
    shown = n if keep_rounds is None else min(n, keep_rounds)
    rounds = [
        {
            "round": i,
            "budget": int(cols.budget[i]),
            "max_depth": int(cols.max_depth[i]),
            "coverage": float(coverage[i]),
            "ceiling": float(1 + coverage[i]),
            "block_length": None if block[i] < 0 else int(block[i]),
        }
        for i in range(shown)
    ]
    seen = block >= 0
    observed_hist = (
        np.bincount(block[seen] - 1, minlength=d + 1) if seen.any() else np.zeros(d + 1, dtype=int)
    )
    expected_hist = np.zeros(d + 1)
    expected_hist[: min(d + 1, cols.depth_law.size)] = cols.depth_law[: d + 1]
    totals: dict[str, Any] = {
        "rounds": n,
        "mean_coverage": float(coverage.mean()),
        "mean_ceiling": float(1 + coverage.mean()),
        "rounds_with_exit": int(seen.sum()),
    }
    if seen.any():
        obs = block[seen].astype(np.float64)
        ceil_obs = 1 + coverage[seen]
        totals["tau_observed"] = float(obs.mean())
        totals["tau_ceiling_same_rounds"] = float(ceil_obs.mean())
        totals["tau_over_ceiling"] = float(obs.mean() / ceil_obs.mean())
        totals["tau_stderr"] = (
            float(obs.std(ddof=1) / math.sqrt(obs.size)) if obs.size > 1 else None
        )
    return {
        "meta": meta,
        "rounds": rounds,
        "exit_depth_histogram": {
            "depth": list(range(d + 1)),
            "observed": observed_hist.astype(int).tolist(),
            "expected": expected_hist.tolist(),
        },
        "totals": totals,
    }


def summarize_trace(trace: Trace, *, keep_rounds: int | None = None) -> dict[str, Any]:
    """Summary of a trace held in memory (see the module docstring)."""
    if not trace.rounds:
        raise ValueError("the trace holds no rounds")
    return _summary(trace.meta, laws_of_rounds(trace.rounds), keep_rounds)


def summarize_trace_file(
    path: str | Path,
    *,
    keep_rounds: int | None = None,
    allow_incomplete: bool = False,
    chunk_nodes: int = DEFAULT_CHUNK_NODES,
    workers: int = 1,
    parallel_min_bytes: int = PARALLEL_MIN_BYTES,
) -> dict[str, Any]:
    """Summary of a trace file, streamed: memory depends on its largest round, not on its length.
    ``workers > 1`` reads a large file in that many processes (same result)."""
    meta: dict[str, Any] = {}
    # ``meta`` is filled from the header as the stream starts, before the summary is built
    chunks = stream_trace_laws(
        path,
        meta.update,
        allow_incomplete=allow_incomplete,
        chunk_nodes=chunk_nodes,
        workers=workers,
        parallel_min_bytes=parallel_min_bytes,
    )
    return _summary(meta, chunks, keep_rounds)


def format_summary(summary: dict[str, Any], max_rows: int = 20) -> str:
    lines = [f"{'round':>5} {'B':>4} {'depth':>5} {'C_p':>9} {'1+C_p':>9} {'L_obs':>5}"]
    for rec in summary["rounds"][:max_rows]:
        obs = "-" if rec["block_length"] is None else str(rec["block_length"])
        lines.append(
            f"{rec['round']:>5} {rec['budget']:>4} {rec['max_depth']:>5} "
            f"{rec['coverage']:>9.4f} {rec['ceiling']:>9.4f} {obs:>5}"
        )
    total = summary["totals"]["rounds"]
    if total > max_rows:
        lines.append(
            f"  ... {total - min(max_rows, len(summary['rounds']))} more rounds (use --json for all)"
        )
    h = summary["exit_depth_histogram"]
    lines.append("")
    lines.append("exit depth   observed   expected (exact)")
    for dd, o, e in zip(h["depth"], h["observed"], h["expected"]):
        lines.append(f"{dd:>10} {o:>10} {e:>10.2f}")
    t = summary["totals"]
    lines.append("")
    lines.append(
        f"rounds {t['rounds']}   mean C_p {t['mean_coverage']:.4f}   mean ceiling 1+C_p {t['mean_ceiling']:.4f}"
    )
    if "tau_observed" in t:
        se = t["tau_stderr"]
        se_txt = f" +- {se:.4f} (s.e.)" if se is not None else ""
        lines.append(
            f"tau observed {t['tau_observed']:.4f}{se_txt}   ceiling on the same rounds "
            f"{t['tau_ceiling_same_rounds']:.4f}   ratio {t['tau_over_ceiling']:.4f}"
        )
    return "\n".join(lines)
