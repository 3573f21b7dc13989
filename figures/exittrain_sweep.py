"""Figure: paired differences between ExitTrain objectives with 95 % confidence intervals.

Data in: the JSON of :func:`exitlaw.simulate.exittrain.sweep.run_sweep` (schema
``exitlaw.sim_exittrain_sweep`` v1; ``rows`` of paired comparisons, each with
``rel_pct`` = mean and t-interval of ``100 (tau_A - tau_B) / tau_B`` over seeds).
One panel per (regime, training budget, lambda); in each, one group per
comparison (the paper's normalisation ``tree``; the authors' floored ``nodes``
configuration for exit-depth vs prefix), with six points: eval budgets 32/64/128
at the first evaluation temperature (filled: T = 0 in the default sweep, T = 0.5 in `matched`) and the others (open). The shaded band is the paper's claimed
effect (4-8 % in tau). Not in the registry: its data come from a ~20-minute sweep
(``exitlaw simulate exittrain --sweep all``), not from embedded defaults.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .style import new_figure, require, save

NAME = "exittrain_sweep"
PAPER_BAND = (4.0, 8.0)
# (label, A template, B template): "{lam}" is filled with the panel's lambda
GROUPS = (
    ("exit - prefix", "exit/tree/lambda={lam}", "prefix/tree/lambda={lam}"),
    ("exit - token", "exit/tree/lambda={lam}", "token"),
    ("prefix - token", "prefix/tree/lambda={lam}", "token"),
    ("exit-depth - prefix", "exit-depth/tree/lambda={lam}", "prefix/tree/lambda={lam}"),
    (
        "authors: exit-depth - prefix\n(nodes, floor)",
        "exit-depth/nodes/lambda={lam}/floor=0.0001",
        "prefix/nodes/lambda={lam}/floor=0.0001",
    ),
    ("draft-opd - token", "draft-opd/batch/lambda={lam}", "token"),
    ("exit - draft-opd", "exit/tree/lambda={lam}", "draft-opd/batch/lambda={lam}"),
    ("vat - token", "vat/batch/lambda={lam}", "token"),
    ("exit - vat", "exit/tree/lambda={lam}", "vat/batch/lambda={lam}"),
)
# one colour per eval budget, budgets in increasing order
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#8c564b")


def _index(rows: list[dict]) -> dict[tuple, dict]:
    return {
        (r["regime"], r["train_budget"], r["eval_budget"], r["T"], r["a"], r["b"]): r for r in rows
    }


def draw(data: dict, out_dir: str | Path, *, overwrite: bool = False) -> list[Path]:
    """Paired relative differences (%) with 95 % CIs; PNG + PDF named ``exittrain_sweep``."""
    require(data, ("config", "rows"), NAME)
    cfg, idx = data["config"], _index(data["rows"])
    panels = [
        (reg["name"], tb, lam)
        for reg in cfg["regimes"]
        for tb in cfg["train_budgets"]
        for lam in cfg["lambdas"]
    ]
    ncols = len(cfg["train_budgets"]) * len(cfg["lambdas"])
    fig, axes = new_figure(ncols, nrows=len(cfg["regimes"]), width=4.6, height=3.6)
    budgets = cfg["eval_budgets"]
    color = {b: PALETTE[i % len(PALETTE)] for i, b in enumerate(sorted(budgets))}
    # a config without them: T=0, T=1
    temps = [f"T={float(t):g}" for t in cfg.get("eval_temperatures", (0.0, 1.0))]
    offsets = np.linspace(-0.33, 0.33, len(temps) * len(budgets))
    for ax, (reg, tb, lam) in zip(axes, panels):
        ax.axhspan(*PAPER_BAND, color="#dddddd", zorder=0, label="paper's claimed effect")
        ax.axhline(0.0, color="k", lw=0.8)
        labels, g = [], 0
        for label, a_t, b_t in GROUPS:
            a, b = a_t.format(lam=f"{lam:g}"), b_t.format(lam=f"{lam:g}")
            pts = [(eb, t, idx.get((reg, tb, eb, t, a, b))) for t in temps for eb in budgets]
            if all(p[2] is None for p in pts):
                continue
            for k, (eb, t, row) in enumerate(pts):
                if row is None:
                    continue
                r = row["rel_pct"]
                ax.errorbar(
                    g + offsets[k],
                    r["mean"],
                    yerr=[[r["mean"] - r["lo"]], [r["hi"] - r["mean"]]],
                    fmt="o",
                    ms=3.5,
                    lw=1.0,
                    capsize=1.5,
                    color=color[eb],
                    mfc=color[eb] if t == temps[0] else "white",
                    label=f"eval B = {eb}, {t}" if g == 0 else None,
                )
            labels.append(label)
            g += 1
        ax.set_xticks(range(len(labels)), labels, rotation=40, ha="right", fontsize=6.5)
        ax.set_ylabel("paired difference in tau (%)")
        ax.set_title(
            f"{reg}: train B = {tb}, lambda = {lam:g} ({cfg['seeds']} seeds, 95 % CI)", fontsize=8
        )
    axes[0].legend(loc="upper left", frameon=False, fontsize=6, ncol=2)
    for ax in axes[len(panels) :]:
        ax.set_visible(False)
    return save(fig, out_dir, NAME, overwrite=overwrite)
