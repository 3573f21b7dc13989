"""Figure: predraw, sequential residual and TEV share one exit law (Theorem 1, Corollary 1).

On one DDTree from the simulation lab (n-gram target, position-wise drafter),
each verifier is run ``S`` times on the *same* tree and target rows with the
vectorised samplers of :mod:`exitlaw.simulate.verifiers.fast`; the histogram of
the output-block length ``L = depth(exit) + 1`` is drawn against the exact law
``Pr[L = d + 1] = sum_{depth(v) = d} w(v)`` (:func:`exitlaw.theory.exit_depth_law`).
The dashed line marks ``E[L] = 1 + C_p(T)``. A pooled chi-square
(:func:`exitlaw.simulate.stats.pooled_chisquare`) per verifier goes in the legend.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from exitlaw.simulate import NGramTarget, PositionWiseDrafter, ddtree
from exitlaw.simulate.stats import pooled_chisquare
from exitlaw.simulate.verifiers.fast import FAST_SAMPLERS
from exitlaw.simulate.verifiers.table import implemented
from exitlaw.theory import exit_depth_law, exit_law, gather_edge_probs
from exitlaw.theory.registry import FAST

from .style import COLORS, headline, new_figure, require, save

NAME = "verifier_equivalence"
VERIFIERS = implemented(FAST, sampling=True)  # predraw, residual, tev


def compute(
    *,
    seed: int = 0,
    quick: bool = False,
    vocab: int = 256,
    budget: int = 64,
    horizon: int = 8,
    samples: int | None = None,
) -> dict:
    """Sample every verifier on one simulated tree; return counts and the exact depth law."""
    samples = samples or (4_000 if quick else 40_000)
    target = NGramTarget(vocab, order=2, zipf=1.6, seed=seed)
    drafter = PositionWiseDrafter(target, noise=0.4, seed=seed + 1)
    context = (int(np.random.default_rng(seed).integers(vocab)),)
    tree = ddtree(drafter.marginals(context, horizon), budget).tree
    probs = np.stack([target.probs(context + tree.path(v)) for v in range(tree.num_nodes)])
    law = exit_law(tree, probs)
    depth_law = np.asarray(exit_depth_law(tree, law, tree.max_depth), dtype=np.float64)
    depth_law = depth_law / depth_law.sum()
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0xE9]))
    streams = dict(zip(VERIFIERS, rng.spawn(len(VERIFIERS))))
    fns = FAST_SAMPLERS
    counts, mean_length, chi = {}, {}, {}
    for name in VERIFIERS:
        exits, _ = fns[name](tree, probs, streams[name], samples)
        depths = tree.depth[exits]
        counts[name] = np.bincount(depths, minlength=tree.max_depth + 1).tolist()
        mean_length[name] = float(depths.mean() + 1)
        res = pooled_chisquare(counts[name], depth_law)
        chi[name] = {"statistic": res.statistic, "dof": res.dof, "pvalue": res.pvalue}
    return {
        "figure": NAME,
        "seed": seed,
        "vocab": vocab,
        "budget": budget,
        "horizon": horizon,
        "samples": samples,
        "nodes": tree.num_nodes,
        "max_depth": tree.max_depth,
        "edge_prob_sum": float(gather_edge_probs(tree, probs)[1:].sum()),
        "exact_depth_law": depth_law.tolist(),
        "expected_length": float(law.expected_length),
        "coverage": float(law.coverage),
        "counts": counts,
        "mean_length": mean_length,
        "chisquare": chi,
        "title": (
            f"Simulation on one synthetic tree (DDTree, B = {budget}, V = {vocab}, n-gram target): "
            f"predraw = residual = TEV, {samples:,} draws each"
        ),
        "symbols": {
            "L": "output-block length: depth of the exit node + 1 (the bonus token)",
            "w(v)": "exit law: P(v) rho(v), the probability that a round exits at node v",
            "C_p(T)": "coverage: sum of the target prefix probabilities of the tree's nodes",
            "B": "tree budget (non-root nodes); V: vocabulary size",
            "p": "chi-square p-value of the sampled depth histogram against the exact law",
        },
    }


def draw(data: dict, out_dir: str | Path, *, overwrite: bool = False) -> list[Path]:
    require(
        data,
        ("exact_depth_law", "counts", "expected_length", "samples", "mean_length", "title"),
        NAME,
    )
    law = np.asarray(data["exact_depth_law"], dtype=np.float64)
    L = np.arange(1, law.size + 1)
    fig, (ax,) = new_figure(width=6.0, height=3.6)
    width = 0.8 / len(VERIFIERS)
    for i, name in enumerate(VERIFIERS):
        c = np.asarray(data["counts"][name], dtype=np.float64)
        freq = c / c.sum()
        chi = data.get("chisquare", {}).get(name)
        label = f"{name} (mean L = {data['mean_length'][name]:.3f}"
        label += f", chi-square p = {chi['pvalue']:.2f})" if chi else ")"
        ax.bar(L + (i - 1) * width, freq, width=width, color=COLORS[name], alpha=0.85, label=label)
    ax.plot(
        L,
        law,
        "o",
        color=COLORS["exact"],
        ms=5,
        mfc="none",
        mew=1.4,
        label="exact law: sum of w(v) by depth",
    )
    ax.axvline(
        data["expected_length"],
        color=COLORS["exact"],
        ls="--",
        lw=1.2,
        label=f"E[L] = 1 + C_p(T) = {data['expected_length']:.3f}",
    )
    ax.set_xlabel("output-block length L = depth(exit) + 1 (tokens)")
    ax.set_ylabel("probability")
    ax.set_xticks(L)
    ax.set_ylim(0, max(law.max(), 1e-9) * 1.6)
    ax.set_title(
        f"Predraw = residual = TEV on one fixed tree (B = {data.get('budget')}, "
        f"V = {data.get('vocab')}, {data['samples']:,} draws each)"
    )
    ax.legend(loc="upper right", frameon=False)
    headline(fig, data)
    return save(fig, out_dir, NAME, overwrite=overwrite)
