"""Benchmark: simulated decoding rounds per second (DDTree + a verifier, default TEV, on an order-2 target).

For each vocabulary size, times ``simulate_decoding`` with and without the
per-round oracle (which queries extra target rows), after one warm-up round
(JAX compile). Each round pays for: drafter rows, DDTree, ``N x V`` exact
target rows (generated from hashes, cached per context), the JAX exit law,
the verifier (default ``tev``; ``tev-fast`` is its vectorised twin). The
verifier is timed from the outside (a wrapper), so the report also gives the
rate of everything else. Prints numbers; asserts nothing.
"""

from __future__ import annotations

import time
from typing import Any, Sequence

from exitlaw.simulate.builders.trees import ddtree
from exitlaw.simulate.lab.decoding import simulate_decoding
from exitlaw.simulate.lab.models import NGramTarget, PositionWiseDrafter
from exitlaw.simulate.lab.presets import verifier_fn


def run_sim_bench(
    budget: int = 64,
    vocabs: Sequence[int] = (1000, 32000),
    rounds: int = 30,
    horizon: int = 8,
    seed: int = 0,
    verifier: str = "tev",
) -> dict[str, Any]:
    verify = verifier_fn(verifier)
    res: dict[str, Any] = {
        "config": {
            "budget": budget,
            "rounds": rounds,
            "horizon": horizon,
            "builder": "ddtree",
            "verifier": verifier,
            "target": "order-2 NGramTarget, zipf 2.0, T=1",
        },
        "vocab": {},
    }
    lines = [
        f"simulated decoding, DDTree B={budget} H={horizon} + {verifier}, {rounds} rounds per cell"
    ]
    for V in vocabs:
        row = {}
        for oracle in (False, True):
            target = NGramTarget(V, order=2, zipf=2.0, seed=seed)
            drafter = PositionWiseDrafter(target, mode="greedy_path", noise=0.5)

            def build(c, rng):
                return ddtree(drafter.marginals(c, horizon), budget)

            spent = [0.0]

            def timed_verify(tree, probs, rng):
                t = time.perf_counter()
                try:
                    return verify(tree, probs, rng)
                finally:
                    spent[0] += time.perf_counter() - t

            # warm-up / compile
            simulate_decoding(target, build, verify, rounds=1, seed=seed + 99, oracle=oracle)
            t0 = time.perf_counter()
            out = simulate_decoding(
                target, build, timed_verify, rounds=rounds, seed=seed, oracle=oracle
            )
            dt = time.perf_counter() - t0
            row["with_oracle" if oracle else "no_oracle"] = {
                "rounds_per_s": rounds / dt,
                "rounds_per_s_excluding_verifier": rounds / (dt - spent[0]),
                "verifier_s_per_round": spent[0] / rounds,
                "tau": out.aggregates["tau"],
            }
        res["vocab"][str(V)] = row
        a, b = row["no_oracle"], row["with_oracle"]
        lines.append(
            f"  V={V:>6}: {a['rounds_per_s']:>7.1f} rounds/s ({a['rounds_per_s_excluding_verifier']:>7.1f} "
            f"excluding verifier, verifier {1e3 * a['verifier_s_per_round']:.1f} ms/round) | with per-round oracle "
            f"gap {b['rounds_per_s']:>7.1f} rounds/s ({b['rounds_per_s_excluding_verifier']:>7.1f} "
            f"excluding verifier) | tau {a['tau']:.2f}"
        )
    res["text"] = "\n".join(lines)
    return res
