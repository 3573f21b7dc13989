"""Figure: tau and the fixed-tree ceiling ``1 + C_p`` against the budget, for DDTree, chain and the oracle tree.

Multi-round simulated decoding (:func:`exitlaw.simulate.simulate_decoding`) on
one synthetic target/drafter pair (an n-gram target, a position-wise
DFlash-like drafter), TEV verifier, at budgets 32/64/128. Per builder it reports
tau (mean block length, with its standard error), the mean ceiling
``1 + C_p(T)`` of the trees it built, and the mean oracle ceiling
``1 + C*_p(B)`` at the same budget, and the per-round allocation gap's mean and
standard error (over rounds); both panels are simulation, which the title says
(docs/design.md §1.11); the shaded band between DDTree's ceiling
and the oracle's is the allocation gap (docs/design.md §1.5, "Oracle tree"). Chain
always drafts ``horizon`` tokens, so its points do not move with ``B``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from exitlaw.simulate import get_preset, simulate_decoding, verifier_fn
from exitlaw.simulate.lab.presets import with_overrides

from .style import COLORS, headline, new_figure, require, save

NAME = "budget_sweep"
BUILDERS = ("ddtree", "chain", "oracle")


def compute(
    *,
    seed: int = 0,
    quick: bool = False,
    budgets=(32, 64, 128),
    rounds: int | None = None,
    vocab: int = 256,
    preset: str = "medium",
) -> dict:
    rounds = rounds or (30 if quick else 200)
    rows = []
    for B in budgets:
        cfg = with_overrides(
            get_preset(preset),
            vocab=vocab,
            budget=int(B),
            rounds=rounds,
            verifier="tev-fast",
            seed=seed,
        )
        target = cfg.target.model()
        pos, ar = cfg.drafter.models(target)
        for b in BUILDERS:
            res = simulate_decoding(
                target,
                cfg.make_builder(b, target, pos, ar),
                verifier_fn(cfg.verifier),
                rounds=cfg.rounds,
                seed=cfg.seed,
                prompt_length=cfg.prompt_length,
                oracle=True,
            )
            a = res.aggregates
            gaps = np.array([r.allocation_gap for r in res.records], dtype=np.float64)
            rows.append(
                {
                    "budget": int(B),
                    "builder": b,
                    "tree_budget": a["mean_budget"],
                    "tau": a["tau"],
                    "tau_stderr": a["tau_stderr"],
                    "ceiling": a["mean_ceiling"],
                    "oracle_ceiling": 1.0 + a["mean_oracle_coverage"],
                    "allocation_gap": a["mean_allocation_gap"],
                    "allocation_gap_stderr": float(gaps.std(ddof=1) / np.sqrt(gaps.size)),
                    "tau_minus_ceiling_z": a["tau_minus_ceiling_z"],
                }
            )
    return {
        "figure": NAME,
        "seed": seed,
        "rounds": rounds,
        "vocab": vocab,
        "preset": preset,
        "horizon": get_preset(preset).horizon,
        "verifier": "tev",
        "budgets": [int(b) for b in budgets],
        "rows": rows,
        "title": (
            f"Both panels: simulation, {rounds} decoding rounds per B on a synthetic tree drafter "
            f"(n-gram target, position-wise drafter, V = {vocab}), TEV verifier"
        ),
        "symbols": {
            "tau": "mean block length per round incl. the bonus token",
            "B": "tree budget (non-root nodes)",
            "C_p(T)": "coverage of the built tree T: sum of the target prefix probabilities of its nodes",
            "1 + C_p(T)": "the fixed-tree ceiling of E[L] for any exact verifier",
            "C*_p(B)": "coverage of the oracle tree (top-B target prefixes)",
            "H": "draft horizon (chain drafts H tokens whatever B)",
        },
    }


def _series(rows, builder, key):
    pts = sorted((r["budget"], r[key]) for r in rows if r["builder"] == builder)
    return np.array([p[0] for p in pts]), np.array([p[1] for p in pts], dtype=np.float64)


def draw(data: dict, out_dir: str | Path, *, overwrite: bool = False) -> list[Path]:
    require(data, ("rows", "budgets", "title"), NAME)
    rows = data["rows"]
    fig, (ax, axg) = new_figure(2, width=4.0, height=3.5)
    offsets = {"ddtree": -1.5, "chain": 0.0, "oracle": 1.5}
    for b in BUILDERS:
        B, tau = _series(rows, b, "tau")
        if B.size == 0:
            continue
        _, se = _series(rows, b, "tau_stderr")
        _, ceil = _series(rows, b, "ceiling")
        x = B * (1 + 0.03 * offsets[b])
        name = f"chain (H = {data.get('horizon')})" if b == "chain" else b
        ax.errorbar(
            x,
            tau,
            yerr=se,
            fmt="o",
            color=COLORS[b],
            ms=4,
            capsize=2,
            label=f"{name}: tau (+- 1 s.e.)",
        )
        ax.plot(B, ceil, "-", color=COLORS[b], lw=1.3, label=f"{name}: 1 + C_p(T)")
    B, oracle_ceiling = _series(rows, "ddtree", "oracle_ceiling")
    _, dd_ceiling = _series(rows, "ddtree", "ceiling")
    if B.size:
        ax.fill_between(
            B,
            dd_ceiling,
            oracle_ceiling,
            color=COLORS["oracle"],
            alpha=0.15,
            label="allocation gap (DDTree to oracle)",
        )
        axg.bar(np.arange(B.size), oracle_ceiling - dd_ceiling, color=COLORS["ddtree"], width=0.6)
        for i, g in enumerate(oracle_ceiling - dd_ceiling):
            axg.annotate(
                f"{g:.2f}",
                (i, g),
                xytext=(0, 2),
                textcoords="offset points",
                ha="center",
                fontsize=8,
            )
        axg.set_xticks(np.arange(B.size), [str(int(b)) for b in B])
        axg.set_ylim(0, max(float((oracle_ceiling - dd_ceiling).max()), 1e-9) * 1.25)
    ax.set_xscale("log", base=2)
    ax.set_xticks(data["budgets"], [str(b) for b in data["budgets"]])
    ax.minorticks_off()
    ax.set_xlabel("tree budget B (non-root nodes)")
    ax.set_ylabel("tokens per round")
    ax.set_title(
        f"simulated tau vs fixed-tree ceiling ({data.get('rounds')} rounds, V = {data.get('vocab')})"
    )
    ax.legend(loc="upper left", frameon=False, fontsize=7)
    lo, hi = ax.get_ylim()
    ax.set_ylim(0, hi + 0.45 * hi)
    axg.set_xlabel("tree budget B (non-root nodes)")
    axg.set_ylabel("C*_p(B) - C_p(DDTree) (tokens per round)")
    axg.set_title("allocation gap of DDTree (simulation)")
    headline(fig, data)
    return save(fig, out_dir, NAME, overwrite=overwrite)
