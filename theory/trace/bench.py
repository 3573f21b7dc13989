"""``exitlaw bench law --trace FILE``: rounds per second and peak memory of the streaming summary.

Peak memory is the process's peak resident set size (``getrusage``, Linux: KiB),
measured in this process, which has imported numpy and the summary only (no
JAX); it includes the interpreter's own ~30 MB.
"""

from __future__ import annotations

import os
import resource
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from exitlaw.theory.trace.format import TraceRound, TraceWriter
from exitlaw.theory.trace.summary import summarize_trace_file
from exitlaw.theory.tree import DraftTree


def peak_rss_mb() -> float:
    """Peak resident set size of this process in MiB (``ru_maxrss`` is KiB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 1024


def make_bench_trace(
    path: str | Path,
    *,
    rounds: int,
    max_budget: int = 64,
    big_round: int = 0,
    vocab: int = 151936,
    seed: int = 0,
    overwrite: bool = False,
) -> Path:
    """A synthetic trace for the benchmark: ``rounds`` random trees of ``1..max_budget`` non-root nodes
    (one of ``big_round`` nodes in the middle when given), random edges with child mass <= 1,
    draft log-probabilities, an exit node and a bonus, as the engine records them."""
    rng = np.random.default_rng(seed)
    with TraceWriter(path, {"source": "make_bench_trace", "seed": seed}, overwrite=overwrite) as w:
        for i in range(rounds):
            b = (
                big_round
                if big_round and i == rounds // 2
                else int(rng.integers(1, max_budget + 1))
            )
            parent = np.concatenate([[-1], [int(rng.integers(0, u)) for u in range(1, b + 1)]])
            # distinct: siblings differ
            token = np.concatenate([[0], rng.choice(vocab, size=b, replace=False)])
            raw = rng.uniform(0.0, 1.0, b + 1)
            mass = np.zeros(b + 1)
            np.add.at(mass, parent[1:], raw[1:])
            edge = raw / np.maximum(1.0, mass[np.maximum(parent, 0)])
            edge[0] = 1.0
            tree = DraftTree(parent=parent, token=token)
            w.write(
                TraceRound(
                    tree,
                    edge,
                    draft_logprob=np.log(rng.uniform(0.01, 1.0, b + 1)),
                    exit_node=int(rng.integers(0, b + 1)),
                    bonus=int(rng.integers(0, vocab)),
                )
            )
    return Path(path)


def _children_peak_rss_mb() -> float:
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 1024


def run_trace_bench(path: str | Path, *, workers: int = 1) -> dict[str, Any]:
    """Summarise ``path`` once (streamed, in ``workers`` processes) and report rounds, wall seconds,
    rounds/s, CPU-seconds (this process plus its workers) and rounds per CPU-second (the figure that
    a loaded machine distorts least), MB/s and peak RSS (this process, and the largest worker's)."""
    path = Path(path)
    size = path.stat().st_size if path.is_file() else 0
    before = peak_rss_mb()
    kids0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0, c0 = time.perf_counter(), time.process_time()
    summary = summarize_trace_file(path, keep_rounds=20, workers=workers)
    seconds = time.perf_counter() - t0
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)  # the workers' CPU time (this run's only)
    cpu = time.process_time() - c0 + kids.ru_utime - kids0.ru_utime + kids.ru_stime - kids0.ru_stime
    rounds = summary["totals"]["rounds"]
    peak = peak_rss_mb()
    out = {
        "trace": str(path),
        "bytes": size,
        "rounds": rounds,
        "seconds": seconds,
        "rounds_per_s": rounds / seconds,
        "mb_per_s": size / 2**20 / seconds,
        "cpu_seconds": cpu,
        "rounds_per_cpu_s": rounds / cpu if cpu > 0 else float("inf"),
        "load_average_1min": os.getloadavg()[0],
        "peak_rss_mb": peak,
        "rss_before_mb": before,
        "cpus": os.cpu_count(),
        "workers": workers,
        "worker_peak_rss_mb": _children_peak_rss_mb(),
        "mean_coverage": summary["totals"]["mean_coverage"],
    }
    out["text"] = (
        f"{path}: {size / 2**20:.1f} MiB, {rounds} rounds in {seconds:.2f} s: "
        f"{out['rounds_per_s']:,.0f} rounds/s, {out['mb_per_s']:.1f} MiB/s "
        f"({cpu:.2f} CPU-seconds, {out['rounds_per_cpu_s']:,.0f} rounds per CPU-second; "
        f"load {out['load_average_1min']:.1f} "
        f"on {out['cpus']} CPUs); "
        f"peak RSS {peak:.0f} MiB (before {before:.0f} MiB)"
        + (
            f", largest worker {out['worker_peak_rss_mb']:.0f} MiB ({workers} workers)"
            if workers > 1
            else ""
        )
    )
    return out


__all__ = ["run_trace_bench", "make_bench_trace", "peak_rss_mb"]
