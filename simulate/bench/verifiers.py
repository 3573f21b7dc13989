"""Benchmark (prints, never asserts): samples/s of every verifier sampler, and the kit's wall time.

Tree: the best-first (oracle) tree of a synthetic drafter at budget ``B``; target
rows differ per node (hashed from the path). Per-call public forms are timed on
``calls`` rounds, the vectorised samplers on ``samples`` rounds at once.
"""

from __future__ import annotations

import time

import numpy as np

from exitlaw.simulate.kit.conformance import run_kit
from exitlaw.simulate.verifiers.fast import FAST_SAMPLERS
from exitlaw.simulate.verifiers.table import implemented, sim_function
from exitlaw.theory import oracle_tree
from exitlaw.theory.registry import FIXED_TREE, PROCEDURE


class ZipfRows:
    """``p(. | prefix)``: Zipf(``s``) over a permutation of the vocabulary hashed from the prefix."""

    def __init__(self, vocab: int, seed: int, s: float = 1.5):
        self.vocab, self.seed = vocab, seed
        w = np.arange(1, vocab + 1, dtype=np.float64) ** -s
        self.base = w / w.sum()

    def __call__(self, prefix) -> np.ndarray:
        g = np.random.default_rng([self.seed, len(prefix), *[int(t) for t in prefix]])
        row = np.empty(self.vocab)
        row[g.permutation(self.vocab)] = self.base
        return row


def bench_tree(vocab: int, budget: int, seed: int = 0):
    """The best-first tree of a Zipf drafter (depth grows with budget), target rows of the same family
    with the drafter's top token kept on top half the time (a realistic acceptance mix)."""
    drafter = ZipfRows(vocab, seed)
    tree = oracle_tree(drafter, budget)
    target = ZipfRows(vocab, seed + 1)
    probs = np.stack(
        [0.5 * drafter(tree.path(v)) + 0.5 * target(tree.path(v)) for v in range(tree.num_nodes)]
    )
    return tree, probs


def _rate(fn, count: int) -> float:
    t = time.perf_counter()
    fn()
    return count / (time.perf_counter() - t)


def run_verifier_bench(
    *,
    vocabs=(1000, 32000),
    budget: int = 64,
    samples: int = 100_000,
    calls: int = 500,
    kit: bool = True,
    seed: int = 0,
) -> dict:
    rows, lines = [], []
    lines.append(
        f"samples/s on a B={budget} tree (oracle tree of a synthetic drafter); "
        f"vectorised: {samples} rounds per call; per-call forms f(tree, probs, rng): {calls} calls, "
        "rows validated once (validate=False)"
    )
    lines.append(f"{'vocab':>6}  {'sampler':<22} {'samples/s':>12}   tree depth")
    for vocab in vocabs:
        tree, probs = bench_tree(vocab, budget, seed)
        rng = np.random.default_rng(seed)
        for name, fn in FAST_SAMPLERS.items():
            fn(tree, probs, rng, 16)  # warm caches
            r = _rate(lambda: fn(tree, probs, rng, samples), samples)
            rows.append({"vocab": vocab, "sampler": f"{name}_many", "samples_per_s": r})
        for name in implemented(PROCEDURE, kind=FIXED_TREE):
            fn = sim_function(name)
            r = _rate(lambda: [fn(tree, probs, rng, validate=False) for _ in range(calls)], calls)
            rows.append({"vocab": vocab, "sampler": name, "samples_per_s": r})
        for row in rows[-8:]:
            lines.append(
                f"{vocab:>6}  {row['sampler']:<22} {row['samples_per_s']:>12.0f}   {tree.max_depth}"
            )
    kit_rows = []
    if kit:
        lines.append(
            "conformance kit time per verifier (default settings, seed 0): wall and CPU seconds"
        )
        for name in implemented(PROCEDURE, kind=FIXED_TREE, sampling=True):
            t, c = time.perf_counter(), time.process_time()
            rep = run_kit(sim_function(name), name=f"exitlaw.simulate.verifiers:{name}")
            dt, dc = time.perf_counter() - t, time.process_time() - c
            kit_rows.append(
                {
                    "verifier": name,
                    "seconds": dt,
                    "cpu_seconds": dc,
                    "verdict": rep.verdict,
                    "samples": rep.total_samples,
                }
            )
            lines.append(
                f"  {name:<10} {dt:7.2f} s wall  {dc:7.2f} s CPU   {rep.total_samples} samples   {rep.verdict}"
            )
    return {"budget": budget, "samplers": rows, "kit": kit_rows, "text": "\n".join(lines)}


__all__ = ["run_verifier_bench", "bench_tree"]
