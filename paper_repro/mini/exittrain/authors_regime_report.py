"""The authors-regime run's report: precondition at both cells, the co-primary family, the verdicts.

Implements "Evaluation and estimands", "Precondition" and "Verdict rules" of
``paper_repro/AUTHORS_REGIME.md`` (fixed before the data). Effects are in per-step acceptance
``a = 1 - 1/x`` of the per-prompt Rao-Blackwellised tau ``x``, paired over training seeds and prompts
(crossed intervals, :func:`~exitlaw.paper_repro.mini.stats.paired_difference`), with the relative tau
effect and the paper's effect translated to this run's tau beside them. Every verdict names its scale,
the temperatures of the data, the weights and the judged cell, and its level. Reads the cell records and
the plan; imports neither the run nor shipping.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from exitlaw.paper_repro.mini.exittrain.authors_regime import (
    LITERAL_ARMS,
    PRIMARY,
    config_from_json,
    paper_margin,
    plan_of,
    translated_relative,
)
from exitlaw.paper_repro.mini.exittrain.paper_regime import Paths, Plan, read_all_cells
from exitlaw.paper_repro.mini.exittrain.paper_regime_report import (
    ESTIMANDS,
    arm_values,
    training_runs,
    training_summary,
)
from exitlaw.paper_repro.mini.stats import (
    claim_verdict,
    crossed_mean_ci,
    pair_verdict,
    paired_difference,
)
from exitlaw.theory.infra.atomic_io import atomic_write_json, atomic_write_text
from exitlaw.theory.infra.provenance import cpu_fields, git_commit

SCHEMA = "exitlaw.authors_regime/1"
OUTSIDE = "inconclusive - outside the paper's regime"
AT_SCALE = {
    "reproduced": "reproduced at mini scale",
    "contradicted": "not reproduced at mini scale",
    "inconclusive": "inconclusive at mini scale",
}
SECONDARY = (
    ("exit", "prefix"),
    ("exit", "token"),
    ("token", "base"),
    ("exit", "base"),
    ("prefix", "base"),
    ("exit-strength", "token"),
    ("exit-strength", "prefix"),
    ("authors", "authors-token"),
    ("authors", "base"),
)


def scale_of(cfg) -> str:
    """The run's scale in words, from its configuration (the base's sizes and the fine-tuning steps)."""
    b = cfg.base
    return (
        f"mini scale: target {b.target.sizes.num_layers} layers, hidden {b.target.sizes.hidden_size}, vocabulary "
        f"{b.vocab_size}; DFlash drafter {b.draft_layers} layers, block {b.block_size}; "
        f"{cfg.steps} fine-tuning steps; CPU"
    )


def regime_of(cfg, t: float, level: float) -> str:
    """What one verdict is about: scale, data / weight / judged temperatures and the interval's level."""
    return (
        f"{scale_of(cfg)}; data T = {cfg.data_temperature:g} (greedy), tree weights T = "
        f"{cfg.scoring_temperature:g}, judged at T = {t:g}; {100 * level:g} % interval"
    )


def _acceptance(values: dict[int, list]) -> dict[int, np.ndarray]:
    return {s: 1.0 - 1.0 / np.asarray(v, dtype=np.float64) for s, v in values.items()}


def compare(
    cells: dict, cfg, a: str, b: str, t: float, budget: int, level: float, estimand: str = "rb_tau"
) -> dict:
    """``a - b`` in per-step acceptance of ``estimand`` (the design's unit), and in relative tau."""
    va = arm_values(cells, cfg, a, "code", t, budget, estimand)
    vb = arm_values(cells, cfg, b, "code", t, budget, estimand)
    # checks the pairing, gives the relative tau effect
    rel = paired_difference(va, vb, level=level)
    ta, tb = _acceptance(va), _acceptance(vb)
    acc = crossed_mean_ci(
        np.asarray([ta[s] for s in rel["seed_list"]])
        - np.asarray([tb[s] for s in rel["seed_list"]]),
        level=level,
    )
    return {
        "a": a,
        "b": b,
        "temperature": float(t),
        "budget": budget,
        "estimand": estimand,
        "level": level,
        "delta_a": {k: acc[k] for k in ("mean", "lo", "hi", "mde", "se", "df")},
        "relative_tau_pct": {k: rel[f"rel_{k}"] for k in ("mean", "lo", "hi")},
        "tau_a": rel["mean_a"],
        "tau_b": rel["mean_b"],
        "seeds": acc["seeds"],
        "prompts": acc["prompts"],
        "seed_variance_estimated": acc["seed_variance_estimated"],
    }


def mean_of(cells: dict, cfg, arm: str, t: float, budget: int, estimand: str) -> float:
    vals = arm_values(cells, cfg, arm, "code", t, budget, estimand)
    return float(np.mean([vals[s] for s in cfg.seeds]))


def depth_guard(ratio: float, tolerance: float) -> bool:
    """The one-sided depth guard: it fails only a fine-tuning whose trees shrink by more than ``tolerance``
    (``depth_token / depth_base < 1 - tolerance``); one that grows deeper trees passes (issue 49)."""
    return bool(ratio >= 1.0 - tolerance)


def precondition(cells: dict, cfg) -> dict:
    """At every judged temperature: token - base in ``a`` above 0 at ``precondition_level`` (95 %, not the
    family's 98.75 %) and the one-sided depth guard (:func:`depth_guard`, "Precondition")."""
    per_t = {}
    for t in cfg.judged_temperatures:
        gain = compare(cells, cfg, "token", "base", t, cfg.eval_budget, cfg.precondition_level)
        ratio = mean_of(cells, cfg, "token", t, cfg.eval_budget, "depth") / mean_of(
            cells, cfg, "base", t, cfg.eval_budget, "depth"
        )
        per_t[f"{t:g}"] = {
            "token_minus_base": gain,
            "token_beats_base": gain["delta_a"]["lo"] > 0,
            "depth_ratio": ratio,
            "depth_guard_passes": depth_guard(ratio, cfg.depth_tolerance),
            "precondition_level": cfg.precondition_level,
        }
        per_t[f"{t:g}"]["holds"] = bool(
            per_t[f"{t:g}"]["token_beats_base"] and per_t[f"{t:g}"]["depth_guard_passes"]
        )
    return {"per_temperature": per_t, "holds": all(v["holds"] for v in per_t.values())}


def primary(cells: dict, cfg, holds: bool) -> list[dict]:
    """The co-primary family at ``primary_level`` in ``a``, each against the paper's margin."""
    rows = []
    for t in cfg.judged_temperatures:
        for a, b in PRIMARY:
            r = compare(cells, cfg, a, b, t, cfg.eval_budget, cfg.primary_level)
            margin = paper_margin(a, b, t)
            rule = pair_verdict(r["delta_a"]["lo"], r["delta_a"]["hi"], margin)
            r.update(
                {
                    "margin_delta_a": margin,
                    "paper_effect_translated_pct": translated_relative(margin, r["tau_b"]),
                    "rule": rule,
                    "verdict": AT_SCALE[claim_verdict(rule)] if holds else OUTSIDE,
                    "regime": regime_of(cfg, t, cfg.primary_level),
                }
            )
            rows.append(r)
    return rows


def secondary(cells: dict, cfg) -> list[dict]:
    """Every secondary comparison at ``secondary_level``, Rao-Blackwellised and observed tau; the literal
    arms also at their training budget (labelled secondary, no verdict)."""
    rows = []
    budgets = [cfg.eval_budget] + (
        [cfg.literal_eval_budget] if cfg.literal_eval_budget != cfg.eval_budget else []
    )
    for bud in budgets:
        for a, b in SECONDARY:
            if bud != cfg.eval_budget and (a not in LITERAL_ARMS or b not in LITERAL_ARMS):
                continue
            if not {a, b} - {"base"} <= set(cfg.arms):
                continue
            for t in cfg.judged_temperatures:
                for est in ("rb_tau", "tau"):
                    rows.append(compare(cells, cfg, a, b, t, bud, cfg.secondary_level, est))
    return rows


def arm_table(cells: dict, cfg) -> list[dict]:
    """Per arm, judged temperature and budget: mean tau, Rao-Blackwellised tau, ``a``, 1 + C_p at T = 1, depth."""
    rows = []
    for arm in ("base", *cfg.arms):
        for c in cfg.drafter_cells(arm, arm, cfg.scoring_temperature):
            row = {"arm": arm, "temperature": c.temperature, "budget": c.budget}
            for est in ESTIMANDS:
                row[est] = mean_of(cells, cfg, arm, c.temperature, c.budget, est)
            acc = _acceptance(
                arm_values(cells, cfg, arm, "code", c.temperature, c.budget, "rb_tau")
            )
            row["acceptance"] = float(np.mean([acc[s] for s in cfg.seeds]))
            rows.append(row)
    return rows


def format_markdown(res: dict) -> str:
    pre = res["analysis"]["precondition"]
    lines = [
        f"# ExitTrain on the authors' recipe (`{res['config']['preset']}`), {res['scale']}",
        "",
        "Design fixed before the data: `paper_repro/AUTHORS_REGIME.md`. Fine-tuning data: the target's "
        "greedy continuations; tree weights from the target at T = 1; judged at T = 0 and T = 1. "
        f"Base: {res['calibration']['base']} (fallback applied: {res['calibration']['fallback_applied']}); "
        f"rate {res['lr']:g} (calibrated); strength arm lambda {res['calibration']['strength']['lambda']:g}.",
        "",
        "Unit: per-step acceptance `a = 1 - 1/tau` (Rao-Blackwellised tau per prompt), paired over seeds "
        "and prompts; relative tau and the paper's effect translated to this run's tau beside it.",
        "",
        f"| precondition | token - base in a ({100 * res['config']['precondition_level']:g} %) | depth token / "
        f"base (one-sided: fails below {1 - res['config']['depth_tolerance']:.2f}) | holds |",
        "|---|---|---|---|",
    ]
    for t, r in pre["per_temperature"].items():
        d = r["token_minus_base"]["delta_a"]
        lines.append(
            f"| T = {t} | {d['mean']:+.4f} [{d['lo']:+.4f}, {d['hi']:+.4f}] | {r['depth_ratio']:.3f} | "
            f"{r['holds']} |"
        )
    lines += [
        "",
        f"**Precondition {'holds at both cells' if pre['holds'] else 'fails: every ExitTrain verdict is ' + OUTSIDE}.**",
        "",
        "| primary (98.75 %) | T | delta a | margin (paper) | relative tau | paper, translated | verdict |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in res["analysis"]["primary"]:
        d, rel = r["delta_a"], r["relative_tau_pct"]
        lines.append(
            f"| {r['a']} - {r['b']} | {r['temperature']:g} | {d['mean']:+.4f} [{d['lo']:+.4f}, {d['hi']:+.4f}] | "
            f"{r['margin_delta_a']:.4f} | {rel['mean']:+.1f} % [{rel['lo']:+.1f}, {rel['hi']:+.1f}] | "
            f"{r['paper_effect_translated_pct']:+.1f} % | **{r['verdict']}** |"
        )
    lines += [
        "",
        "| arm | T | B | tau | RB tau | a | 1 + C_p at T = 1 | depth |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in res["arms"]:
        lines.append(
            f"| {r['arm']} | {r['temperature']:g} | {r['budget']} | {r['tau']:.3f} | {r['rb_tau']:.3f} | "
            f"{r['acceptance']:.4f} | {r['ceiling_ts']:.3f} | {r['depth']:.2f} |"
        )
    lines += [
        "",
        "Secondary comparisons (95 %, no verdict; observed tau in results.json):",
        "",
        "| secondary | T | B | delta a | relative tau |",
        "|---|---|---|---|---|",
    ]
    for r in res["analysis"]["secondary"]:
        if r["estimand"] != "rb_tau":
            continue
        d, rel = r["delta_a"], r["relative_tau_pct"]
        lines.append(
            f"| {r['a']} - {r['b']} | {r['temperature']:g} | {r['budget']} | "
            f"{d['mean']:+.4f} [{d['lo']:+.4f}, {d['hi']:+.4f}] | {rel['mean']:+.1f} % [{rel['lo']:+.1f}, {rel['hi']:+.1f}] |"
        )
    lines += ["", "| arm | CE (last 10) | tree term / CE | s per run |", "|---|---|---|---|"]
    for arm, r in res["training"].items():
        secs = "-" if r["mean_seconds"] is None else f"{r['mean_seconds']:.0f}"
        lines.append(
            f"| {arm} | {r['mean_last10_ce']:.3f} | {r['tree_term_over_ce']:.4f} | {secs} |"
        )
    return "\n".join(lines) + "\n"


def write_report(plan: Plan, cells: dict, timings: dict, calibration: dict) -> dict:
    """``results.json`` and ``results.md`` of the plan's run from its finished ``cells``."""
    cfg = plan.cfg
    pre = precondition(cells, cfg)
    res = {
        "schema": SCHEMA,
        "scale": scale_of(cfg),
        "config": cfg.to_json(),
        "lr": plan.lr,
        "calibration": {
            k: calibration[k] for k in ("base", "fallback_applied", "strength", "chosen_lr")
        },
        "analysis": {
            "precondition": pre,
            "primary": primary(cells, cfg, pre["holds"]),
            "secondary": secondary(cells, cfg),
        },
        "arms": arm_table(cells, cfg),
        "training": training_summary(training_runs(plan.paths, cfg), cfg),
        "timings_s": timings,
        "provenance": {"git_commit": git_commit(Path(__file__).resolve().parent), **cpu_fields()},
    }
    atomic_write_text(plan.paths.results_md, format_markdown(res))
    atomic_write_json(plan.paths.results_json, res, indent=1)
    return res


def rebuild(shipped: str | Path) -> dict:
    """Recompute ``results.json`` / ``results.md`` in a shipped folder from its cells and summaries only."""
    paths = Paths(Path(shipped))
    read = lambda p: json.loads(p.read_text(encoding="utf-8"))  # noqa: E731
    calibration = read(paths.calibration)
    plan = plan_of(paths, config_from_json(read(paths.config)), calibration)
    timings = read(paths.out / "timings.json") if (paths.out / "timings.json").is_file() else {}
    return write_report(plan, read_all_cells(paths.out), timings, calibration)
