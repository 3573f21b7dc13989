"""The paper-regime run's report: the precondition, the paired comparisons and the verdicts.

Implements the "Evaluation and estimands" and "Verdict rules" sections of
``paper_repro/PAPER_REGIME.md`` (fixed before the data): per-prompt values of each cell, paired
``A - B`` over training seeds and prompts (:func:`~exitlaw.paper_repro.mini.stats.paired_difference`,
crossed seed x prompt intervals), the precondition *token beats base at the primary cell*, the two
primary comparisons at 97.5 %, every secondary one at 95 %, and ``paired_effects`` records in the
shape the claims ledger reads (:mod:`exitlaw.paper_repro.paired_effects`). Reads the cell records and
the plan (:mod:`.paper_regime`); imports neither the run nor shipping.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from exitlaw.paper_repro.mini.exittrain.paper_regime import Paths, Plan, cell_key
from exitlaw.paper_repro.mini.stats import (
    claim_verdict,
    crossed_mean_ci,
    pair_verdict,
    paired_difference,
)
from exitlaw.theory.infra.atomic_io import atomic_write_json, atomic_write_text
from exitlaw.theory.infra.provenance import cpu_fields, git_commit

SCHEMA = "exitlaw.paper_regime/1"
OUTSIDE = "inconclusive - outside the paper's regime"
ESTIMANDS = {
    "rb_tau": "per_prompt_rb_tau",
    "tau": "per_prompt_tau",
    "ceiling_ts": "per_prompt_ceiling_ts",
    "depth": "per_prompt_depth",
}
PRIMARY = (("exit", "prefix"), ("exit", "token"))
SECONDARY = (
    ("token", "base"),
    ("exit", "base"),
    ("prefix", "base"),
    ("prefix", "token"),
    ("exit-l1", "prefix-l1"),
    ("exit-l1", "token"),
    ("exit-depth", "prefix-nodes"),
    ("exit-depth", "token"),
    ("authors", "authors-token"),
    ("authors", "base"),
    ("authors-token", "base"),
)


def arm_values(
    cells: dict, cfg, arm: str, domain: str, t: float, b: int, estimand: str
) -> dict[int, list]:
    """``{seed: per-prompt values}`` of ``arm`` in one cell (``base``: its one run under every seed)."""
    field = ESTIMANDS[estimand]
    if arm == "base":
        vals = cells[cell_key("base", domain, t, b)][field]
        return {s: list(vals) for s in cfg.seeds}
    return {s: list(cells[cell_key(f"{arm}-s{s}", domain, t, b)][field]) for s in cfg.seeds}


def compare(
    cells: dict,
    cfg,
    a: str,
    b: str,
    domain: str,
    t: float,
    budget: int,
    estimand: str,
    level: float,
) -> dict:
    return paired_difference(
        arm_values(cells, cfg, a, domain, t, budget, estimand),
        arm_values(cells, cfg, b, domain, t, budget, estimand),
        level=level,
    )


def _available(cells: dict, cfg, arms, domain, t, b) -> bool:
    return all(
        cell_key("base" if x == "base" else f"{x}-s{s}", domain, t, b) in cells
        for x in arms
        for s in cfg.seeds
    )


def budget_row(
    cells: dict, cfg, t_s: float, a: str = "exit", b: str = "base", estimand: str = "rb_tau"
) -> dict:
    """``a - b`` with equal weight over ``cfg.budget_row``: the per-(seed, prompt) difference averaged over
    budgets, relative to ``b``'s mean over the same budgets (95 %)."""
    diffs, refs, per_budget = [], [], {}
    for bud in cfg.budget_row:
        va = arm_values(cells, cfg, a, "code", t_s, bud, estimand)
        vb = arm_values(cells, cfg, b, "code", t_s, bud, estimand)
        diffs.append(np.array([va[s] for s in cfg.seeds]) - np.array([vb[s] for s in cfg.seeds]))
        refs.append(float(np.mean([vb[s] for s in cfg.seeds])))
        per_budget[str(bud)] = paired_difference(va, vb, level=cfg.secondary_level)
    res = crossed_mean_ci(np.mean(diffs, axis=0), level=cfg.secondary_level)
    ref = float(np.mean(refs))
    for k in ("mean", "lo", "hi", "mde", "se"):
        res[f"rel_{k}"] = 100.0 * res[k] / ref
    res.update({"mean_b": ref, "budgets": list(cfg.budget_row), "per_budget": per_budget})
    return res


def _record(pair: dict, a: str, b: str, setting: dict, estimand: str) -> dict:
    """A paired-effect record (:mod:`exitlaw.paper_repro.paired_effects`); ``setting["cell"]`` is ``primary``
    at the primary cell (code, T = T_s, B = eval budget) so the ledger can select it without knowing T_s."""
    return {
        "comparison": f"{a}-{b}",
        "metric": "tau" if estimand in ("rb_tau", "tau") else estimand,
        "estimand": estimand,
        "setting": {**setting, "estimand": estimand},
        "diff": {k: pair[k] for k in ("mean", "lo", "hi")},
        "rel_pct": {"mean": pair["rel_mean"], "lo": pair["rel_lo"], "hi": pair["rel_hi"]},
        "level": pair["level"],
        "mde_pct": pair["rel_mde"],
        "n_seeds": pair["seeds"],
        "n_units": pair["prompts"],
        "method": "paired over training seeds and prompts, crossed random-effects interval (Satterthwaite)",
    }


def _primary_setting(cfg, t_s: float) -> dict:
    """The ledger setting of the primary cell (code, T = T_s, B = eval budget), which the other records vary."""
    return {
        "regime": "paper",
        "domain": "code",
        "temperature": float(t_s),
        "eval_budget": cfg.eval_budget,
        "verifier": cfg.verifier,
        "lambda": 0.1,
        "weight_norm": "batch",
        "scoring_temperature": float(t_s),
        "cell": "primary",
    }


def _primary(cells: dict, cfg, t_s: float, holds: bool, setting: dict) -> tuple[dict, list[dict]]:
    """Primary verdicts per pair against its margin (outside the claim when the precondition fails), and
    their ledger records."""
    primary, records = {}, []
    for a, b in PRIMARY:
        pair = compare(cells, cfg, a, b, "code", t_s, cfg.eval_budget, "rb_tau", cfg.primary_level)
        margin = cfg.margins_pct[f"{a}-{b}"]
        pv = pair_verdict(pair["rel_lo"], pair["rel_hi"], margin)
        primary[f"{a}-{b}"] = {
            **pair,
            "margin_pct": margin,
            "pair_verdict": pv,
            "verdict": claim_verdict(pv) if holds else OUTSIDE,
        }
        records.append(_record(pair, a, b, {**setting, "role": "primary"}, "rb_tau"))
    return primary, records


def _token_beats_base(cells: dict, cfg, domain: str, t: float, estimand: str) -> bool | None:
    """Whether token - base has its lower end > 0 in this cell (``None`` when either arm is missing)."""
    if not _available(cells, cfg, ("token", "base"), domain, t, cfg.eval_budget):
        return None
    pair = compare(
        cells, cfg, "token", "base", domain, t, cfg.eval_budget, estimand, cfg.secondary_level
    )
    return pair["rel_lo"] > 0


def _secondary_record(
    pair: dict, a: str, b: str, domain: str, t: float, estimand: str, t_s: float, setting: dict
) -> dict:
    """The ledger record of one secondary comparison: ``-l1`` arms are lambda = 1, the per-node arms
    normalise weights by nodes."""
    lam = 1.0 if a.endswith("-l1") else 0.1
    norm = "nodes" if a in ("exit-depth", "prefix-nodes", "authors", "authors-token") else "batch"
    cell = "primary" if (domain, t) == ("code", t_s) else "secondary"
    return _record(
        pair,
        a.removesuffix("-l1"),
        b.removesuffix("-l1"),
        {
            **setting,
            "domain": domain,
            "temperature": float(t),
            "lambda": lam,
            "weight_norm": norm,
            "role": "secondary",
            "arms": f"{a} - {b}",
            "cell": cell,
        },
        estimand,
    )


def _secondary(cells: dict, cfg, t_s: float, setting: dict) -> tuple[list[dict], list[dict]]:
    """Every available pair at every secondary cell and estimand, and their ledger records."""
    rows, records = [], []
    temps = [("code", t_s), ("code", 0.0), ("code", 1.0), ("prose", t_s)]
    for domain, t in temps:
        for estimand in ("rb_tau", "tau", "ceiling_ts"):
            cell_token = _token_beats_base(cells, cfg, domain, t, estimand)
            for a, b in SECONDARY + PRIMARY:
                if not _available(cells, cfg, (a, b), domain, t, cfg.eval_budget):
                    continue
                pair = compare(
                    cells, cfg, a, b, domain, t, cfg.eval_budget, estimand, cfg.secondary_level
                )
                rows.append(
                    {
                        "a": a,
                        "b": b,
                        "domain": domain,
                        "temperature": float(t),
                        "budget": cfg.eval_budget,
                        "estimand": estimand,
                        "token_beats_base_here": cell_token,
                        **pair,
                    }
                )
                records.append(_secondary_record(pair, a, b, domain, t, estimand, t_s, setting))
    return rows, records


def _budget_row_records(row: dict, cfg, setting: dict) -> list[dict]:
    """Ledger records of the budget row: exit - base at each budget, then their equal-weight mean."""
    records = [
        _record(
            pair,
            "exit",
            "base",
            {**setting, "eval_budget": int(bud), "role": "budget row", "cell": "budget"},
            "rb_tau",
        )
        for bud, pair in row["per_budget"].items()
    ]
    records.append(
        _record(
            {**row, "seeds": row["seeds"], "prompts": row["prompts"]},
            "exit",
            "base",
            {
                **setting,
                "eval_budget": "equal-weight mean over " + "/".join(map(str, cfg.budget_row)),
                "role": "budget row",
                "cell": "budget mean",
            },
            "rb_tau",
        )
    )
    return records


def analyse(cells: dict, cfg, t_s: float) -> dict:
    """Precondition, primary verdicts, secondary comparisons and ledger records (the design's rules)."""
    pre = compare(
        cells, cfg, "token", "base", "code", t_s, cfg.eval_budget, "rb_tau", cfg.secondary_level
    )
    holds = pre["rel_lo"] > 0
    setting = _primary_setting(cfg, t_s)
    primary, primary_records = _primary(cells, cfg, t_s, holds, setting)
    secondary, secondary_records = _secondary(cells, cfg, t_s, setting)
    out = {
        "precondition": {
            "rule": "token - base at the primary cell (Rao-Blackwellised tau, 95 %): lower end > 0",
            "token_minus_base": pre,
            "holds": bool(holds),
        },
        "primary": primary,
        "secondary": secondary,
        "paired_effects": primary_records + secondary_records,
    }
    if _available(cells, cfg, ("exit", "base"), "code", t_s, cfg.budget_row[0]) and all(
        _available(cells, cfg, ("exit", "base"), "code", t_s, bud) for bud in cfg.budget_row
    ):
        row = budget_row(cells, cfg, t_s)
        out["budget_row"] = row
        out["paired_effects"] += _budget_row_records(row, cfg, setting)
    return out


def arm_table(cells: dict, cfg, t_s: float) -> list[dict]:
    """Per arm and cell: mean observed tau, Rao-Blackwellised tau, 1 + C_p at T_s and tree depth."""
    rows = []
    for arm in ("base", *cfg.arms):
        for domain, t, b in [
            ("code", t_s, cfg.eval_budget),
            ("code", 0.0, cfg.eval_budget),
            ("code", 1.0, cfg.eval_budget),
            ("prose", t_s, cfg.eval_budget),
        ]:
            if not _available(cells, cfg, (arm,), domain, t, b):
                continue
            row = {"arm": arm, "domain": domain, "temperature": float(t), "budget": b}
            for est in ESTIMANDS:
                vals = arm_values(cells, cfg, arm, domain, t, b, est)
                row[est] = float(np.mean([vals[s] for s in cfg.seeds]))
            rows.append(row)
    return rows


def training_runs(paths: Paths, cfg) -> dict[str, dict]:
    """Per finished run ``<arm>-s<seed>``: the mean of its last 10 steps' CE, tree term and training-tree
    coverage, and its seconds; from the run folders and from ``training.json`` (runs shipped earlier)."""
    runs = {}
    if paths.training.is_file():
        runs.update(json.loads(paths.training.read_text(encoding="utf-8")).get("runs", {}))
    for arm in cfg.arms:
        for s in cfg.seeds:
            run = paths.arm_run(f"{arm}-s{s}")
            path = run / "metrics.jsonl"
            if not (run / "final" / "model.safetensors").is_file() or not path.is_file():
                continue
            recs = [
                json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()
            ][-10:]
            secs = run / "seconds.json"
            runs[f"{arm}-s{s}"] = {
                "ce": float(np.mean([r["ce"] for r in recs])),
                "tree": float(np.mean([r["tree"] for r in recs])),
                "coverage": float(np.mean([r["coverage"] for r in recs])),
                "seconds": json.loads(secs.read_text(encoding="utf-8"))["seconds"]
                if secs.is_file()
                else None,
            }
    return runs


def training_summary(runs: dict[str, dict], cfg) -> dict:
    """Per arm: mean over its runs of CE, the tree term, lambda x tree / CE, coverage and seconds."""
    summary = {}
    for arm in cfg.arms:
        mine = [r for name, r in runs.items() if name.rsplit("-s", 1)[0] == arm]
        if not mine:
            continue
        ce, tree = np.mean([r["ce"] for r in mine]), np.mean([r["tree"] for r in mine])
        secs = [r["seconds"] for r in mine if r.get("seconds") is not None]
        summary[arm] = {
            "runs": len(mine),
            "mean_last10_ce": float(ce),
            "mean_last10_tree": float(tree),
            "tree_term_over_ce": float(cfg.arm(arm).lam * tree / ce),
            "mean_last10_coverage": float(np.mean([r["coverage"] for r in mine])),
            "mean_seconds": float(np.mean(secs)) if secs else None,
        }
    return summary


def format_markdown(res: dict) -> str:
    pre = res["analysis"]["precondition"]
    t = pre["token_minus_base"]
    lines = [
        f"# ExitTrain in the paper's regime (`{res['config']['preset']}`)",
        "",
        f"Design fixed before the data: `paper_repro/PAPER_REGIME.md`. T_s = {res['T_s']:g}; "
        f"fine-tuning lr {res['lr']:g} (calibrated).",
        "",
        f"**Precondition** (token - base, code, T = T_s, B = {res['config']['eval_budget']}, "
        f"Rao-Blackwellised tau, 95 %): {t['rel_mean']:+.1f} % [{t['rel_lo']:+.1f}, {t['rel_hi']:+.1f}] -> "
        f"**{'holds' if pre['holds'] else 'fails: every ExitTrain verdict is ' + OUTSIDE}**",
        "",
        "| primary (97.5 %) | relative effect | margin | verdict |",
        "|---|---|---|---|",
    ]
    for name, r in res["analysis"]["primary"].items():
        lines.append(
            f"| {name} | {r['rel_mean']:+.1f} % [{r['rel_lo']:+.1f}, {r['rel_hi']:+.1f}] | "
            f"{r['margin_pct']} % | **{r['verdict']}** |"
        )
    if "budget_row" in res["analysis"]:
        r = res["analysis"]["budget_row"]
        lines += [
            "",
            f"Budget row (exit - base, equal weight over B = {r['budgets']}, T_s, 95 %): "
            f"{r['rel_mean']:+.1f} % [{r['rel_lo']:+.1f}, {r['rel_hi']:+.1f}]",
        ]
    lines += [
        "",
        "| arm | cell | tau | RB tau | 1 + C_p at T_s | tree depth |",
        "|---|---|---|---|---|---|",
    ]
    for r in res["arms"]:
        lines.append(
            f"| {r['arm']} | {r['domain']}, T={r['temperature']:g}, B={r['budget']} | {r['tau']:.3f} | "
            f"{r['rb_tau']:.3f} | {r['ceiling_ts']:.3f} | {r['depth']:.2f} |"
        )
    lines += [
        "",
        "Secondary comparisons (95 %, Rao-Blackwellised tau; observed tau and 1 + C_p at T_s in "
        "results.json):",
        "",
        "| secondary | cell | relative effect | token > base here |",
        "|---|---|---|---|",
    ]
    for r in res["analysis"]["secondary"]:
        if r["estimand"] != "rb_tau":
            continue
        lines.append(
            f"| {r['a']} - {r['b']} | {r['domain']}, T={r['temperature']:g} | "
            f"{r['rel_mean']:+.1f} % [{r['rel_lo']:+.1f}, {r['rel_hi']:+.1f}] | {r['token_beats_base_here']} |"
        )
    lines += [
        "",
        "| arm | CE (last 10) | tree term / CE | coverage (training trees) | s per run |",
        "|---|---|---|---|---|",
    ]
    for arm, r in res["training"].items():
        secs = "-" if r["mean_seconds"] is None else f"{r['mean_seconds']:.0f}"
        lines.append(
            f"| {arm} | {r['mean_last10_ce']:.3f} | {r['tree_term_over_ce']:.3f} | "
            f"{r['mean_last10_coverage']:.3f} | {secs} |"
        )
    return "\n".join(lines) + "\n"


def write_report(plan: Plan, cells: dict, timings: dict, files: dict) -> dict:
    """``results.json`` and ``results.md`` of the plan's run from its finished ``cells``."""
    cfg, t_s = plan.cfg, plan.t_s
    provenance = {"git_commit": git_commit(Path(__file__).resolve().parent), **cpu_fields()}
    res = {
        "schema": SCHEMA,
        "config": cfg.to_json(),
        "T_s": t_s,
        "lr": plan.lr,
        "prompt_files": files,
        "analysis": analyse(cells, cfg, t_s),
        "arms": arm_table(cells, cfg, t_s),
        "training": training_summary(training_runs(plan.paths, cfg), cfg),
        "timings_s": timings,
        "provenance": provenance,
    }
    res["paired_effects"] = res["analysis"]["paired_effects"]
    atomic_write_text(plan.paths.results_md, format_markdown(res))
    atomic_write_json(plan.paths.results_json, res, indent=1)
    return res
