"""Benchmark (prints, never asserts): samples/s of every verifier sampler, and the kit's wall time.

Tree: the best-first (oracle) tree of a synthetic drafter at budget ``B``; target
rows differ per node (hashed from the path). Per-call public forms are timed on
``calls`` rounds, the vectorised samplers on ``samples`` rounds at once.
"""

from __future__ import annotations

import time

import numpy as np

from exitlaw.theory import oracle_tree

from .conformance_cases import HashedTarget
from .fast_samplers import FAST_SAMPLERS


def bench_tree(vocab: int, budget: int, seed: int = 0):
    drafter = HashedTarget(vocab, seed, concentration=0.05, zero_prob=0.0)
    target = HashedTarget(vocab, seed + 1, concentration=0.05, zero_prob=0.0)
    tree = oracle_tree(drafter, budget)
    probs = np.stack([target(tree.path(v)) for v in range(tree.num_nodes)])
    return tree, probs


def _rate(fn, count: int) -> float:
    t = time.perf_counter()
    fn()
    return count / (time.perf_counter() - t)


def run_verifier_bench(*, vocabs=(1000, 32000), budget: int = 64, samples: int = 100_000,
                       calls: int = 500, kit: bool = True, seed: int = 0) -> dict:
    from . import verifiers

    rows, lines = [], []
    lines.append(f"samples/s on a B={budget} tree (oracle tree of a synthetic drafter); "
                 f"vectorised: {samples} rounds per call, per-call forms: {calls} calls")
    lines.append(f"{'vocab':>6}  {'sampler':<22} {'samples/s':>12}   depth")
    for vocab in vocabs:
        tree, probs = bench_tree(vocab, budget, seed)
        rng = np.random.default_rng(seed)
        for name, fn in FAST_SAMPLERS.items():
            fn(tree, probs, rng, 16)  # warm caches
            r = _rate(lambda: fn(tree, probs, rng, samples), samples)
            rows.append({"vocab": vocab, "sampler": f"{name}_many", "samples_per_s": r})
        for name in ("predraw", "residual", "tev", "greedy"):
            fn = getattr(verifiers, name)
            r = _rate(lambda: [fn(tree, probs, rng) for _ in range(calls)], calls)
            rows.append({"vocab": vocab, "sampler": name, "samples_per_s": r})
        for row in rows[-8:]:
            lines.append(f"{vocab:>6}  {row['sampler']:<22} {row['samples_per_s']:>12.0f}   {tree.max_depth}")
    kit_rows = []
    if kit:
        from .conformance import run_kit

        lines.append("conformance kit wall time (default settings, seed 0)")
        for name in ("predraw", "residual", "tev"):
            t = time.perf_counter()
            rep = run_kit(getattr(verifiers, name), name=f"exitlaw.simulate.verifiers:{name}")
            dt = time.perf_counter() - t
            kit_rows.append({"verifier": name, "seconds": dt, "verdict": rep.verdict,
                             "samples": rep.total_samples})
            lines.append(f"  {name:<10} {dt:7.2f} s   {rep.total_samples} samples   {rep.verdict}")
    return {"budget": budget, "samplers": rows, "kit": kit_rows, "text": "\n".join(lines)}


__all__ = ["run_verifier_bench", "bench_tree"]
