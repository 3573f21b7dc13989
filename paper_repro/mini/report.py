"""The multi-seed mini run's report: tau per objective and paired objective differences, with intervals.

Input: the evaluated cells (each with ``per_prompt_tau``) of drafters named
``name -> (objective, training seed)``. Per cell (domain, T, B, verifier):

* tau of every objective: mean over seeds x prompts with the crossed interval of
  :func:`.mini_stats.crossed_mean_ci` (the base drafter: prompts only);
* paired differences ``A - B`` (:func:`.mini_stats.paired_difference`) for the objective
  pairs and each objective against the base drafter (the base's per-prompt tau stands in
  for every seed);
* at the primary cell only (code, T = 0, B = 64: :mod:`.mini`'s docstring), the
  pre-registered verdicts of ``exit - prefix`` and ``exit - token``.
"""

from __future__ import annotations

import numpy as np

from exitlaw.paper_repro.mini.stats import (
    claim_verdict,
    crossed_mean_ci,
    pair_verdict,
    paired_difference,
)

PAIRS = (
    ("exit", "prefix"),
    ("exit", "token"),
    ("prefix", "token"),
    ("exit-depth", "prefix"),
    ("exit-depth", "token"),
    ("exit-depth", "exit"),
    ("draft-opd", "token"),
    ("exit", "draft-opd"),
    ("exit", "base"),
    ("prefix", "base"),
    ("token", "base"),
    ("exit-depth", "base"),
    ("draft-opd", "base"),
)
PRIMARY_PAIRS = (("exit", "prefix"), ("exit", "token"))
METHOD = (
    "per-prompt tau differences d[seed, prompt] on the same prompts, decode seeds and base drafter; "
    "mean over seeds x prompts; 95 % interval from the two-way crossed random-effects model (seeds and "
    "prompts random, variance components from ANOVA mean squares truncated at 0, Satterthwaite df); "
    "MDE = (t_0.975 + t_0.80) x SE (two-sided 5 %, 80 % power); relative values divide by the mean tau "
    "of the second arm"
)


def primary_cell(cfg) -> tuple[str, float, int, str]:
    """(domain, temperature, budget, verifier) of the verdict: code, T = 0, B = 64 when they were evaluated."""
    temps = [float(t) for t in cfg.temperatures]
    return (
        "code",
        0.0 if 0.0 in temps else temps[0],
        64 if 64 in cfg.budgets else cfg.budgets[0],
        cfg.verifiers[0],
    )


def _arms(rows: list, drafters: dict, cell: tuple) -> dict[str, dict[int, list[float]]]:
    """``objective -> {seed: per-prompt tau}`` in one cell (``base`` under seed ``-1``)."""
    domain, temp, budget, verifier = cell
    arms: dict[str, dict[int, list[float]]] = {}
    for r in rows:
        if (r["domain"], float(r["temperature"]), r["budget"], r["verifier"]) != cell or r[
            "drafter"
        ] not in drafters:
            continue
        objective, seed = drafters[r["drafter"]]
        arms.setdefault(objective, {})[-1 if seed is None else seed] = list(r["per_prompt_tau"])
    return arms


def analyse_cell(arms: dict, margin_pct: float, primary: bool) -> dict:
    """Tau per objective and the paired differences of one cell (module docstring)."""
    tau = {}
    for objective, by_seed in arms.items():
        ci = crossed_mean_ci(np.asarray([by_seed[s] for s in sorted(by_seed)]))
        tau[objective] = {
            k: ci[k] for k in ("mean", "lo", "hi", "se", "df", "seeds", "prompts", "per_seed_mean")
        }
    pairs = {}
    for a, b in PAIRS:
        if a not in arms or b not in arms:
            continue
        arm_b = arms[b] if b != "base" else {s: arms["base"][-1] for s in arms[a]}
        res = paired_difference(arms[a], arm_b)
        if primary and (a, b) in PRIMARY_PAIRS:
            res["verdict"] = pair_verdict(res["rel_lo"], res["rel_hi"], margin_pct)
            res["claim"] = claim_verdict(res["verdict"])
        pairs[f"{a} - {b}"] = res
    return {"tau": tau, "pairs": pairs}


def paired_analysis(cfg, rows: list, drafters: dict) -> dict:
    """Every evaluated cell analysed; the primary cell's verdicts and the depth precondition on top."""
    cells = sorted(
        {
            (r["domain"], float(r["temperature"]), r["budget"], r["verifier"])
            for r in rows
            if "same_as" not in r and "per_prompt_tau" in r
        }
    )
    prim = primary_cell(cfg)
    if prim not in cells:  # T = 0 cells of later verifiers share the first one's run
        prim = next((c for c in cells if c[:3] == prim[:3]), cells[0])
    out = []
    for cell in cells:
        res = analyse_cell(_arms(rows, drafters, cell), cfg.margin_pct, cell == prim)
        out.append(
            {
                "domain": cell[0],
                "temperature": cell[1],
                "budget": cell[2],
                "verifier": cell[3],
                **res,
            }
        )
    primary = next(
        c for c in out if (c["domain"], c["temperature"], c["budget"], c["verifier"]) == prim
    )
    # the precondition reads the pooled tau (all rounds of all prompts), the usual definition; the
    # per-prompt mean (the unit of the comparisons) weights prompts equally and is reported beside it
    base_row = next(
        (
            r
            for r in rows
            if drafters.get(r["drafter"], ("",))[0] == "base"
            and (r["domain"], float(r["temperature"]), r["budget"], r["verifier"]) == prim
        ),
        None,
    )
    base_tau = None if base_row is None else float(base_row["tau"])
    return {
        "method": METHOD,
        "margin_pct": cfg.margin_pct,
        "primary": {
            "domain": prim[0],
            "temperature": prim[1],
            "budget": prim[2],
            "verifier": prim[3],
        },
        "base_tau_primary": base_tau,
        "deep_enough": base_tau is not None and base_tau >= 4.0,
        "base_per_prompt_mean_tau_primary": primary["tau"].get("base", {}).get("mean"),
        "verdicts": {
            k: {"verdict": v["verdict"], "claim": v["claim"]}
            for k, v in primary["pairs"].items()
            if "verdict" in v
        },
        "cells": out,
    }


def _ci(x: dict, rel: bool = False, digits: int = 3) -> str:
    p = "rel_" if rel else ""
    unit = " %" if rel else ""
    d = 1 if rel else digits
    return f"{x[p + 'mean']:+.{d}f}{unit} [{x[p + 'lo']:+.{d}f}, {x[p + 'hi']:+.{d}f}]"


def format_paired_markdown(res: dict) -> str:
    """The multi-seed run as Markdown: verdicts, then tau and paired differences per cell."""
    cfg, pa = res["config"], res["paired"]
    prim = pa["primary"]
    t = res["target"]
    lines = [
        f"# Mini-scale ExitTrain comparison (preset `{cfg['preset']}`, pipeline seed {cfg['seed']})",
        "",
    ]
    if res.get("partial"):
        lines += [f"**PARTIAL RUN**: {res['partial']}", ""]
    lines += [
        f"Target: Qwen3-architecture, {t['spec']['num_layers']} layers, hidden {t['spec']['hidden_size']}, "
        f"vocab {cfg['vocab_size']}, {t['spec']['steps']} steps on {t['train_tokens']} stdlib tokens; held-out "
        f"loss code {t['heldout_code_loss']:.3f}, prose {t['heldout_prose_loss']:.3f} nats/token. Drafter: DFlash, "
        f"{cfg['draft_layers']} layer(s), block {cfg['block_size']}, distilled {cfg['distill_steps']} steps on "
        f"continuations generated at T = {cfg['gen_temperature']:g}. Objectives: {cfg['ft_steps']} steps each "
        f"from the same base drafter at B = {cfg['ft_budget']}, lambda = {cfg['ft_lam']:g}, training seeds "
        f"{[cfg['seed'] + 100 + s for s in cfg['ft_seeds']]}. Evaluation: {cfg['eval_prompts']} held-out prompts "
        f"per domain x {cfg['eval_new_tokens']} new tokens, the same prompts and decode seeds for every drafter.",
        "",
        f"Statistics: {pa['method']}.",
        "",
        f"## Verdicts (rule fixed in advance; primary cell: {prim['domain']}, T = {prim['temperature']:g}, "
        f"B = {prim['budget']}; margin {pa['margin_pct']:g} %)",
        "",
    ]
    base = pa["base_tau_primary"]
    lines.append(
        f"Base drafter tau at the primary cell (pooled over all rounds): {base:.3f}; per-prompt mean "
        f"{pa['base_per_prompt_mean_tau_primary']:.3f} "
        + (
            "(>= 4: deep trees, the setting can decide)."
            if pa["deep_enough"]
            else "(< 4: NOT the deep-tree setting; the verdicts below do not decide the deep-tree question)."
        )
    )
    lines += [
        "",
        "| claim | difference (tau) [95 % CI] | relative [95 % CI] | MDE | rule | claim verdict |",
        "|---|---|---|---|---|---|",
    ]
    primary = next(
        c
        for c in pa["cells"]
        if (c["domain"], c["temperature"], c["budget"], c["verifier"])
        == (prim["domain"], prim["temperature"], prim["budget"], prim["verifier"])
    )
    for name, v in pa["verdicts"].items():
        p = primary["pairs"][name]
        lines.append(
            f"| {name.replace(' - ', ' beats ')} | {_ci(p)} | {_ci(p, rel=True)} | {p['rel_mde']:.1f} % | "
            f"{v['verdict']} | **{v['claim']}** |"
        )
    lines.append("")
    for c in pa["cells"]:
        lines += _cell_lines(c, primary=c is primary)
    m = res["machine"]
    lines += [
        f"Machine: {m['cpu_model']}, {m['logical_cpus']} logical CPUs, torch {m['torch']} "
        f"({m['torch_cpu_capability']}), {m['torch_threads']} thread(s); CPU flags in results.json.",
        "",
        "Stage times (s): " + ", ".join(f"{k} {v:.0f}" for k, v in res["timings_s"].items()),
        "",
    ]
    return "\n".join(lines)


def _cell_lines(c: dict, primary: bool) -> list[str]:
    """One cell of the paired analysis: per-prompt mean tau per drafter, then each pair's difference."""
    tag = " (primary)" if primary else " (secondary, no verdict)"
    lines = [
        f"## {c['domain']}, T = {c['temperature']:g}, B = {c['budget']}, {c['verifier']}{tag}",
        "",
        "tau here is the mean of per-prompt tau (every prompt weighs the same).",
        "",
        "| drafter | tau [95 % CI] | per-seed mean tau |",
        "|---|---|---|",
    ]
    for objective in ("base", "token", "prefix", "exit", "exit-depth", "draft-opd"):
        if objective in c["tau"]:
            x = c["tau"][objective]
            lines.append(
                f"| {objective} | {x['mean']:.3f} [{x['lo']:.3f}, {x['hi']:.3f}] | "
                + ", ".join(f"{m:.3f}" for m in x["per_seed_mean"])
                + " |"
            )
    lines += [
        "",
        "| A - B | difference (tau) [95 % CI] | relative [95 % CI] | MDE | df | per-seed mean difference |",
        "|---|---|---|---|---|---|",
    ]
    for name, p in c["pairs"].items():
        lines.append(
            f"| {name} | {_ci(p)} | {_ci(p, rel=True)} | {p['rel_mde']:.1f} % | {p['df']:.1f} | "
            + ", ".join(f"{m:+.3f}" for m in p["per_seed_mean"])
            + " |"
        )
    return lines + [""]


__all__ = [
    "paired_analysis",
    "analyse_cell",
    "format_paired_markdown",
    "primary_cell",
    "PAIRS",
    "METHOD",
]
