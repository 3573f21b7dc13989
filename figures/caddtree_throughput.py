"""Figure: CaDDTree's expected tokens per unit time against the budget (docs/design.md §1.9, Builders).

For a few contexts of one synthetic pair, DDTree pops ``n = 0..n_max``
prefixes; ``f(n) = (1 + Phi(n)) / (C_draft + C_verify(n))`` is computed by
:func:`exitlaw.simulate.throughput_curve` under two latency models
(:class:`exitlaw.simulate.LatencyModel`, time in ms): a convex one (``f`` is
unimodal, so the first decrease, :func:`exitlaw.simulate.first_decrease`, is
the maximum) and a tiled one (steps every ``tile`` tokens; ``f`` has several
local maxima and the first-decrease rule can stop early). Budgets 32/64/128
are marked. Both cost models are hypothetical (chosen to show the two shapes, not measured on any
machine); the data carry ``title``, ``symbols`` and ``notes`` saying so (docs/design.md §1.9, §1.11).
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import numpy as np

from exitlaw.simulate import (
    LatencyModel,
    NGramTarget,
    PositionWiseDrafter,
    ddtree_order,
    first_decrease,
    throughput_curve,
)
from exitlaw.simulate.builders.caddtree import first_decrease_misses

from .style import headline, new_figure, require, save

NAME = "caddtree_throughput"
CONVEX = dict(draft=3.0, base=20.0, linear=0.05, quadratic=0.0005)
TILED = dict(draft=3.0, base=20.0, linear=0.01, quadratic=0.0, tile=16, tile_cost=1.5)


def compute(
    *,
    seed: int = 0,
    quick: bool = False,
    vocab: int = 256,
    horizon: int = 8,
    max_budget: int = 192,
    contexts: int | None = None,
) -> dict:
    contexts = contexts or (3 if quick else 6)
    target = NGramTarget(vocab, order=2, zipf=2.0, seed=seed)
    drafter = PositionWiseDrafter(target, noise=0.5, seed=seed + 1)
    ctx = np.random.default_rng(seed).choice(vocab, size=contexts, replace=False)
    out = {
        "figure": NAME,
        "seed": seed,
        "vocab": vocab,
        "horizon": horizon,
        "max_budget": max_budget,
        "models": {},
        "title": (
            f"CaDDTree's stopping rule, simulation on a synthetic tree drafter (n-gram target, V = {vocab}, "
            f"H = {horizon}) under two hypothetical latency models"
        ),
        "symbols": {
            "n": "tree size: the number of DDTree pops (non-root nodes)",
            "Phi(n)": "cumulative draft-score mass of the first n pops (the drafter's expected accepted "
            "tokens), so 1 + Phi(n) is the expected block length the builder plans for",
            "C(n)": "C_draft + C_verify(n), the modelled time of one round in ms",
            "B": "the fixed budgets 32, 64, 128 (dotted)",
        },
        "notes": [
            "The cost models are hypothetical, not measured: they show where the first-decrease rule "
            "finds the maximum (convex cost) and where it stops early (tiled cost)."
        ],
    }
    for label, params in (("convex", CONVEX), ("tiled", TILED)):
        lat = LatencyModel(**params)
        curves = []
        for c in ctx:
            _, _, score = ddtree_order(drafter.marginals((int(c),), horizon), max_budget)
            curve = throughput_curve(score, lat)
            curves.append(
                {
                    "context": int(c),
                    "tokens_per_ms": curve.tolist(),
                    "first_decrease": first_decrease(curve),
                    "argmax": int(np.argmax(curve)),
                    "misses": first_decrease_misses(curve),
                }
            )
        out["models"][label] = {"latency": asdict(lat), "convex": lat.convex, "curves": curves}
    return out


def draw(data: dict, out_dir: str | Path, *, overwrite: bool = False) -> list[Path]:
    require(data, ("models", "title"), NAME)
    fig, axes = new_figure(2, width=4.8, height=3.7)
    colors = [
        "#1f77b4",
        "#ff7f0e",
        "#2ca02c",
        "#d62728",
        "#9467bd",
        "#8c564b",
        "#e377c2",
        "#17becf",
    ]
    for ax, label in zip(axes, ("convex", "tiled")):
        model = data["models"][label]
        lat = model["latency"]
        for i, cur in enumerate(model["curves"]):
            y = 1000.0 * np.asarray(cur["tokens_per_ms"])  # tokens per second
            n = np.arange(y.size)
            col = colors[i % len(colors)]
            ax.plot(n, y, color=col, lw=1.1, label=f"context token {cur['context']}")
            fd, am = cur["first_decrease"], cur["argmax"]
            ax.plot([fd], [y[fd]], "v", color=col, ms=6, mfc="none", mew=1.3)
            ax.plot([am], [y[am]], "*", color=col, ms=7)
        for b in (32, 64, 128):
            if b <= data["max_budget"]:
                ax.axvline(b, color="0.6", lw=0.8, ls=":")
        misses = sum(c["misses"] for c in model["curves"])
        if label == "convex":
            cost = f"C = {lat['draft']:g} + {lat['base']:g} + {lat['linear']:g}(n+1) + {lat['quadratic']:g}(n+1)^2 ms"
            title = "hypothetical convex cost: unimodal"
        else:
            cost = (
                f"C = {lat['draft']:g} + {lat['base']:g} + {lat['linear']:g}(n+1) + "
                f"{lat['tile_cost']:g} ceil((n+1)/{lat['tile']}) ms"
            )
            title = "hypothetical tiled cost: several local maxima"
        ax.set_title(
            f"{title}\n{cost}\nfirst decrease misses the maximum in {misses}/{len(model['curves'])} contexts",
            fontsize=8,
        )
        ax.set_xlabel("tree size n (DDTree pops; dotted: B = 32, 64, 128)")
        ax.set_ylabel("expected tokens / s: (1 + Phi(n)) / C(n)")
        ax.set_ylim(bottom=0)
    axes[0].plot([], [], "kv", mfc="none", label="first decrease (CaDDTree stop)")
    axes[0].plot([], [], "k*", label="global maximum")
    axes[0].legend(loc="lower right", frameon=False, fontsize=7, ncol=2)
    headline(fig, data)
    return save(fig, out_dir, NAME, overwrite=overwrite)
