"""Figure: the ExitTrain ablation (the paper's Table 2 analogue): token-only, prefix-weighted, exit-guided.

Two sources, each normalised to ``table[drafter]["B=b,T=t"] = tau``:

* simulation: :func:`exitlaw.simulate.exittrain.mini.run_exittrain_mini`
  (exact ``tau = 1 + E_pi[C_p(DDTree_B)]`` on a synthetic n-gram target);
* the mini-scale run (``exitlaw repro mini --out DIR``; ``DIR/results.json``,
  schema ``exitlaw.mini_results/1``): empirical tau of the engine, averaged over
  the held-out code and prose prompts, TEV verifier (T = 0 is greedy for all).

Bars per budget, one panel per (source, temperature); the dashed line is the
starting drafter (pretrained / distilled) that all three objectives fine-tune.
Every bar carries its 95 % confidence interval when the source has one: an
explicit ``ci[drafter]["B=b,T=t"] = [lo, hi]``, else ``+- 1.96 se`` from the
source's standard errors ``se`` (the mini run: the standard error of the mean tau
over rounds, combined over domains). A source with neither (the simulation: one
training run, exact tau) says "no interval: single run" in its legend.

Every y-axis starts at 0. A panel whose run is a pipeline check -- a mini run of any preset but
``paper-regime`` (the shallow ``full`` preset, ``quick``), or a ``quick`` simulation -- says in its
title that it is not evidence; the decided runs are in the ledger (docs/design.md §1.11).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from exitlaw.simulate.exittrain.mini import REGIMES, run_exittrain_mini

from .style import COLORS, headline, new_figure, read_data, require, save

NAME = "exittrain_ablation"
OBJECTIVES = ("token-only", "prefix-weighted", "exit-guided")
# mini presets whose runs decide claims; the rest check the pipeline
EVIDENCE_PRESETS = ("paper-regime",)
PIPELINE_CHECK = "pipeline check, not evidence"
MINI_LABELS = {
    "base": "pretrained",
    "token": "token-only",
    "prefix": "prefix-weighted",
    "exit": "exit-guided",
}


def mini_table(results: dict, verifier: str = "tev") -> dict:
    """``{drafter: {"B=b,T=t": mean tau over domains}}`` (and SR) from a mini-run ``results.json``."""
    require(results, ("cells",), NAME)
    acc: dict[tuple, list] = {}
    for c in results["cells"]:
        if c.get("verifier") != verifier or c.get("drafter") not in MINI_LABELS:
            continue
        key = (MINI_LABELS[c["drafter"]], f"B={int(c['budget'])},T={float(c['temperature']):g}")
        acc.setdefault(key, []).append((float(c["tau"]), c.get("sr"), c.get("tau_se")))
    if not acc:
        raise ValueError(f"mini results hold no cells for verifier {verifier!r}")
    table, sr, se = {}, {}, {}
    for (drafter, col), vals in acc.items():
        table.setdefault(drafter, {})[col] = float(np.mean([v[0] for v in vals]))
        if all(v[2] is not None for v in vals):  # standard error of the mean over domains
            se.setdefault(drafter, {})[col] = float(
                np.sqrt(sum(v[2] ** 2 for v in vals)) / len(vals)
            )
        srs = [v[1] for v in vals if v[1] is not None]
        if srs:
            sr.setdefault(drafter, {})[col] = float(np.mean(srs))
    cfg = results.get("config", {})
    check = cfg.get("preset") not in EVIDENCE_PRESETS
    return {
        "table": table,
        "sr": sr,
        "se": se,
        "budgets": sorted({int(c.split(",")[0][2:]) for d in table.values() for c in d}),
        "label": f"mini-scale engine run on a CPU (preset {cfg.get('preset', '?')}, {verifier}, mean over "
        f"domains)" + (f": {PIPELINE_CHECK}" if check else ""),
        "train_budget": cfg.get("ft_budget"),
        "pipeline_check": check,
    }


Z95 = 1.959963984540054  # two-sided 95 % normal quantile


def intervals(source: dict) -> dict | None:
    """``{drafter: {"B=b,T=t": (lo, hi)}}`` from ``ci`` or ``se`` (module docstring), or ``None``."""
    if source.get("ci"):
        return {
            d: {c: (float(v[0]), float(v[1])) for c, v in cols.items()}
            for d, cols in source["ci"].items()
        }
    if source.get("se"):
        return {
            d: {
                c: (source["table"][d][c] - Z95 * s, source["table"][d][c] + Z95 * s)
                for c, s in cols.items()
            }
            for d, cols in source["se"].items()
            if d in source["table"]
        }
    return None


def compute(
    *,
    seed: int = 0,
    quick: bool = False,
    regime: str = "lowrank",
    mini_results: str | Path | None = None,
    steps: int | None = None,
) -> dict:
    if regime not in REGIMES:
        raise ValueError(f"unknown regime {regime!r}; known: {', '.join(REGIMES)}")
    reg = REGIMES[regime]
    if quick:
        reg = replace(
            reg, vocab=16, pretrain_steps=20, steps=20, batch=8, eval_budgets=(32, 64, 128)
        )
    sim = run_exittrain_mini(reg, steps=steps, seed=seed)
    sources = {
        "simulation": {
            "table": {k: v for k, v in sim["table"].items() if k != "oracle"},
            "oracle": sim["table"].get("oracle"),
            "budgets": list(sim["regime"]["eval_budgets"]),
            "label": f"simulation (regime {reg.name}, V = {reg.vocab}, {reg.steps} steps, exact tau)"
            + (f": {PIPELINE_CHECK}" if quick else ""),
            "regime": sim["regime"],
            "train_budget": sim["regime"]["train_budget"],
            "pipeline_check": quick,
        }
    }
    if mini_results is not None:
        sources["mini"] = mini_table(read_data(mini_results)) | {"path": str(mini_results)}
    return {"figure": NAME, "seed": seed, "sources": sources} | words(sources)


def words(sources: dict) -> dict:
    """Title (scale and setting, pipeline checks named), symbols and notes (docs/design.md §1.11)."""
    parts = [
        "simulation (synthetic n-gram target)" if k == "simulation" else "CPU mini-scale engine run"
        for k in sources
    ]
    checks = [k for k, s in sources.items() if s.get("pipeline_check")]
    return {
        "title": "ExitTrain ablation (Table 2 analogue): "
        + " and ".join(parts)
        + (f"; {', '.join(checks)}: {PIPELINE_CHECK}" if checks else ""),
        "symbols": {
            "tau": "mean output-block length per round incl. the bonus token (y-axes from 0)",
            "B": "inference tree budget (non-root nodes)",
            "T": "sampling temperature at evaluation",
            "starting drafter": "the drafter all three objectives fine-tune (dashed)",
        },
        "notes": [
            f"Panels marked '{PIPELINE_CHECK}' come from runs too small to decide anything; "
            "the claims are decided in the ledger (paper_repro/results/ledger.md)."
        ]
        if checks
        else [],
    }


def draw(data: dict, out_dir: str | Path, *, overwrite: bool = False) -> list[Path]:
    require(data, ("sources",), NAME)
    panels = [(s, t) for s in data["sources"] for t in ("T=0", "T=1")]
    fig, axes = new_figure(2, nrows=(len(panels) + 1) // 2, width=4.3, height=3.3)
    for ax, (src, temp) in zip(axes, panels):
        s = data["sources"][src]
        budgets = s["budgets"]
        idx = np.arange(len(budgets))
        base = s["table"].get("pretrained", {})
        cis = intervals(s)
        vals_all = []
        for i, obj in enumerate(OBJECTIVES):
            row = s["table"].get(obj, {})
            cols = [f"B={b},{temp}" for b in budgets]
            vals = np.array([row.get(c, np.nan) for c in cols], dtype=np.float64)
            vals_all.append(vals)
            x = idx + (i - 1) * 0.26
            ax.bar(x, vals, width=0.26, color=COLORS[obj], label=obj)
            if cis is not None:
                ci = cis.get(obj, {})
                lo = np.array([ci.get(c, (np.nan, np.nan))[0] for c in cols], dtype=np.float64)
                hi = np.array([ci.get(c, (np.nan, np.nan))[1] for c in cols], dtype=np.float64)
                ok = np.isfinite(lo) & np.isfinite(hi) & np.isfinite(vals)
                if ok.any():
                    ax.errorbar(
                        x[ok],
                        vals[ok],
                        yerr=np.vstack([vals[ok] - lo[ok], hi[ok] - vals[ok]]),
                        fmt="none",
                        ecolor="black",
                        elinewidth=0.9,
                        capsize=2,
                    )
                    vals_all += [lo[ok], hi[ok]]
        if base:
            bv = [base.get(f"B={b},{temp}", np.nan) for b in budgets]
            for i, v in enumerate(bv):
                ax.hlines(
                    v,
                    i - 0.42,
                    i + 0.42,
                    colors=COLORS["pretrained"],
                    linestyles="--",
                    lw=1.2,
                    label="starting drafter" if i == 0 else None,
                )
            vals_all.append(np.array(bv))
        finite = (
            np.concatenate([v[np.isfinite(v)] for v in vals_all]) if vals_all else np.array([1.0])
        )
        hi = float(finite.max())
        ax.set_ylim(0.0, hi * 1.35)  # from 0: differences are read against the whole bar
        ax.set_xticks(idx, [f"B = {b}" for b in budgets])
        tb = s.get("train_budget")
        ax.set_xlabel("inference tree budget" + (f" (drafters trained at B = {tb})" if tb else ""))
        ax.set_ylabel("tau (tokens per round)")
        ax.set_title(f"{s['label']}\n{temp}", fontsize=8)
        ax.plot(
            [],
            [],
            " ",
            label="black bars: 95 % CI" if cis is not None else "no interval: single run",
        )
        ax.legend(loc="upper left", frameon=False, fontsize=7, ncol=2)
    for ax in axes[len(panels) :]:
        ax.set_visible(False)
    w = words(data["sources"])
    headline(fig, {**w, **{k: data[k] for k in w if k in data}, "figure": NAME})
    return save(fig, out_dir, NAME, overwrite=overwrite)
