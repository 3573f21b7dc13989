"""Summaries of recorded traces: per-round coverage, ceiling, observed block length.

The ceiling of a round is ``1 + C_p(T)`` computed from its edge probabilities
(DESIGN.md, fixed-tree theorem). Observed block length is ``depth(exit) + 1``.
The expected exit-depth histogram is the sum over rounds of the exact law of
``depth(V)``, ``V ~ w``; it is printed beside the observed histogram.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import numpy as np

from .law import exit_depth_law, exit_law_from_edges
from .trace import Trace
from .tree import stack_trees


def summarize_trace(trace: Trace) -> dict[str, Any]:
    if not trace.rounds:
        raise ValueError("the trace holds no rounds")
    trees = [r.tree for r in trace.rounds]
    n = max(t.num_nodes for t in trees)
    d = max(t.max_depth for t in trees)
    batch = stack_trees(trees, n)
    edges = np.zeros((len(trees), n))
    for i, r in enumerate(trace.rounds):
        edges[i, : r.tree.num_nodes] = r.edge_prob

    def one(t, e):
        law = exit_law_from_edges(t, e)
        return law.coverage, exit_depth_law(t, law, d)

    coverage, depth_law = jax.jit(jax.vmap(one))(batch, edges)
    coverage = np.asarray(coverage, dtype=np.float64)
    expected_hist = np.asarray(depth_law, dtype=np.float64).sum(0)
    rounds = []
    observed = []
    observed_hist = np.zeros(d + 1)
    for i, r in enumerate(trace.rounds):
        rec = {"round": i, "budget": r.tree.budget, "max_depth": r.tree.max_depth,
               "coverage": float(coverage[i]), "ceiling": float(1 + coverage[i]),
               "block_length": r.block_length}
        rounds.append(rec)
        if r.block_length is not None:
            observed.append(r.block_length)
            observed_hist[r.block_length - 1] += 1
    totals: dict[str, Any] = {
        "rounds": len(rounds),
        "mean_coverage": float(coverage.mean()),
        "mean_ceiling": float(1 + coverage.mean()),
        "rounds_with_exit": len(observed),
    }
    if observed:
        obs = np.asarray(observed, dtype=np.float64)
        ceil_obs = np.array([1 + coverage[i] for i, r in enumerate(trace.rounds) if r.block_length is not None])
        totals["tau_observed"] = float(obs.mean())
        totals["tau_ceiling_same_rounds"] = float(ceil_obs.mean())
        totals["tau_over_ceiling"] = float(obs.mean() / ceil_obs.mean())
        totals["tau_stderr"] = float(obs.std(ddof=1) / math.sqrt(obs.size)) if obs.size > 1 else None
    return {
        "meta": trace.meta,
        "rounds": rounds,
        "exit_depth_histogram": {
            "depth": list(range(d + 1)),
            "observed": observed_hist.astype(int).tolist(),
            "expected": expected_hist.tolist(),
        },
        "totals": totals,
    }


def format_summary(summary: dict[str, Any], max_rows: int = 20) -> str:
    lines = [f"{'round':>5} {'B':>4} {'depth':>5} {'C_p':>9} {'1+C_p':>9} {'L_obs':>5}"]
    for rec in summary["rounds"][:max_rows]:
        obs = "-" if rec["block_length"] is None else str(rec["block_length"])
        lines.append(f"{rec['round']:>5} {rec['budget']:>4} {rec['max_depth']:>5} "
                     f"{rec['coverage']:>9.4f} {rec['ceiling']:>9.4f} {obs:>5}")
    if len(summary["rounds"]) > max_rows:
        lines.append(f"  ... {len(summary['rounds']) - max_rows} more rounds (use --json for all)")
    h = summary["exit_depth_histogram"]
    lines.append("")
    lines.append("exit depth   observed   expected (exact)")
    for dd, o, e in zip(h["depth"], h["observed"], h["expected"]):
        lines.append(f"{dd:>10} {o:>10} {e:>10.2f}")
    t = summary["totals"]
    lines.append("")
    lines.append(f"rounds {t['rounds']}   mean C_p {t['mean_coverage']:.4f}   mean ceiling 1+C_p {t['mean_ceiling']:.4f}")
    if "tau_observed" in t:
        se = t["tau_stderr"]
        se_txt = f" +- {se:.4f} (s.e.)" if se is not None else ""
        lines.append(f"tau observed {t['tau_observed']:.4f}{se_txt}   ceiling on the same rounds "
                     f"{t['tau_ceiling_same_rounds']:.4f}   ratio {t['tau_over_ceiling']:.4f}")
    return "\n".join(lines)
