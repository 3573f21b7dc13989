"""The authors' ExitTrain recipe in simulation: verdicts in both units (issue 49, item 1).

Runs :func:`exitlaw.simulate.exittrain.recipe.run_recipe` (greedy data, tree weights at T = 1, arms
token / prefix (``P_tgt``, nodes) / exit (``P rho``) / exit-depth (``P rho depth``) at matched tree-term
strength, 10 seeds, exact tau) and judges it with the rules of ``paper_repro/AUTHORS_REGIME.md``:

* **unit** per-step acceptance ``a = 1 - 1/tau`` (primary) with relative tau beside it; per seed the
  paired difference ``a_A - a_B = 1/tau_B - 1/tau_A`` (resp. ``100 (tau_A / tau_B - 1)``), its mean and
  t-interval over seeds (seeds are the only noise: tau is exact);
* **co-primary family** (Bonferroni, 98.75 %): exit - prefix and exit - token at T = 0 and T = 1, at
  the primary strength (``literal``: the authors' coded prefix arm at lambda 0.1, the others matched);
* **margins** the paper's Table 2 effects, in ``a`` (:func:`~.authors_regime.paper_margin`) and in
  relative tau (``100 (tau_A / tau_B - 1)`` of the same table), each with the design's rule
  (:func:`~exitlaw.paper_repro.mini.stats.pair_verdict`): reproduced when the interval is above 0; not
  reproduced when it is below 0, or contains 0 and lies below the margin; inconclusive otherwise;
* **precondition** (95 %): token - start in ``a`` above 0 at both temperatures and a one-sided depth
  guard (the token arm's mean tree depth at least ``1 - 0.10`` of the start's); when it fails every
  verdict reads *inconclusive - outside the paper's regime*;
* **power** of each comparison against the paper's effect in its unit (t approximation) and its minimal
  detectable effect at 80 %.

Regenerate the shipped folder: ``exitlaw repro sim-authors --out paper_repro/results/sim_exittrain_authors
--overwrite`` (:func:`run_to`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from exitlaw.paper_repro.mini.exittrain.authors_regime import PAPER_TABLE2_TAU, paper_margin
from exitlaw.paper_repro.mini.stats import claim_verdict, pair_verdict
from exitlaw.simulate.exittrain.recipe import RecipeConfig, run_recipe
from exitlaw.simulate.exittrain.sweep import provenance
from exitlaw.theory.infra.atomic_io import atomic_write_json, atomic_write_text

SCHEMA = "exitlaw.sim_exittrain_authors/1"
PRIMARY_LEVEL, SECONDARY_LEVEL = 1 - 0.05 / 4, 0.95
DEPTH_TOLERANCE = 0.10
OUTSIDE = "inconclusive - outside the paper's regime"
IN_SIM = {
    "reproduced": "reproduced in simulation",
    "contradicted": "not reproduced in simulation",
    "inconclusive": "inconclusive in simulation",
}
FILES = ("simulation.json", "results.json", "results.md")


def paper_relative(a: str, b: str, t: float) -> float:
    """The paper's relative tau effect of ``a`` over ``b`` at ``t`` (Table 2), percent."""
    return 100.0 * (PAPER_TABLE2_TAU[a][t] / PAPER_TABLE2_TAU[b][t] - 1.0)


def size_rule(lo: float, hi: float, effect: float) -> str:
    """The ledger's size rule R3 (``paper_repro/verdicts.py``) on ``[lo, hi]`` against the paper's positive
    ``effect``: reproduced when the interval excludes 0 and contains the effect; contradicted when it lies
    below the effect (even excluding 0); inconclusive otherwise (contains 0 and the effect, or lies beyond
    it). ``property_tests/paper_repro/mini/test_sim_authors.py`` checks it against the ledger's."""
    if not lo <= hi or not effect > 0:
        raise ValueError(f"need lo <= hi and a positive effect, got [{lo}, {hi}], {effect}")
    if hi < effect:
        return "contradicted"
    if lo > 0 and lo <= effect:
        return "reproduced"
    return "inconclusive"


def paired_t(d, level: float, effect: float | None = None) -> dict[str, Any]:
    """Mean of the per-seed differences ``d`` with its two-sided t-interval, its MDE at 80 % power and,
    given the paper's ``effect``, the power of the level's test against it (one side, t approximation)."""
    d = np.asarray(d, dtype=np.float64)
    if d.ndim != 1 or d.size < 2 or not np.isfinite(d).all():
        raise ValueError(f"need >= 2 finite per-seed differences, got {d.tolist()}")
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    n, df = d.size, d.size - 1
    se = float(d.std(ddof=1)) / np.sqrt(n)
    q = float(stats.t.ppf(0.5 + level / 2, df))
    mean = float(d.mean())
    out = {
        "mean": mean,
        "lo": mean - q * se,
        "hi": mean + q * se,
        "se": se,
        "level": level,
        "n": n,
        "mde": (q + float(stats.t.ppf(0.8, df))) * se,
        "per_seed": d.tolist(),
    }
    if effect is not None:
        out["power_vs_paper"] = 1.0 if se == 0 else float(1.0 - stats.t.cdf(q - effect / se, df))
    return out


def compare(raw: dict, a: str, b: str, t_index: int, level: float, paper: tuple | None) -> dict:
    """``a - b`` at the ``t_index``-th judged temperature in ``a`` and in relative tau."""
    tau = lambda arm: (  # noqa: E731
        np.asarray(raw["start_tau"])[:, t_index]
        if arm == "start"
        else np.asarray(raw["tau"][arm])[:, t_index]
    )
    ta, tb = tau(a), tau(b)
    t = raw["temperatures"][t_index]
    m_a = m_rel = None
    if paper is not None:
        m_a, m_rel = paper_margin(*paper, t), paper_relative(*paper, t)
    out = {
        "a": a,
        "b": b,
        "temperature": t,
        "tau_a": float(ta.mean()),
        "tau_b": float(tb.mean()),
        "delta_a": paired_t(1.0 / tb - 1.0 / ta, level, m_a),
        "relative_tau_pct": paired_t(100.0 * (ta / tb - 1.0), level, m_rel),
    }
    if paper is not None:
        out["margin_delta_a"], out["margin_relative_pct"] = m_a, m_rel
    if paper is not None and m_a > 0:  # a verdict needs the paper's side: its effect is a gain
        out["rule_a"] = pair_verdict(out["delta_a"]["lo"], out["delta_a"]["hi"], m_a)
        out["rule_relative"] = pair_verdict(
            out["relative_tau_pct"]["lo"], out["relative_tau_pct"]["hi"], m_rel
        )
        for key, margin in (("delta_a", m_a), ("relative_tau_pct", m_rel)):
            d = out[key]
            out[f"size_{key}"] = {"verdict": size_rule(d["lo"], d["hi"], margin)}
    return out


def precondition(raw: dict, tolerance: float = DEPTH_TOLERANCE) -> dict:
    """Token - start in ``a`` above 0 (95 %) at every judged temperature, and the one-sided depth guard:
    the token arm's mean tree depth is at least ``1 - tolerance`` of the start's (growing deeper passes)."""
    ratio = float(np.mean(raw["depth"]["token"]) / np.mean(raw["start_depth"]))
    per_t = {}
    for i, t in enumerate(raw["temperatures"]):
        gain = compare(raw, "token", "start", i, SECONDARY_LEVEL, ("token", "base"))
        per_t[f"{t:g}"] = {
            "token_minus_start": gain,
            "token_beats_start": bool(gain["delta_a"]["lo"] > 0),
        }
    depth_ok = bool(ratio >= 1.0 - tolerance)
    return {
        "per_temperature": per_t,
        "depth_ratio": ratio,
        "depth_tolerance": tolerance,
        "depth_guard_passes": depth_ok,
        "holds": depth_ok and all(v["token_beats_start"] for v in per_t.values()),
    }


def analyse(raw: dict) -> dict:
    """Precondition, the co-primary family (98.75 %) and the secondary comparisons (95 %)."""
    cfg = raw["config"]
    strengths = cfg["strengths"]
    primary_s = strengths[0]
    label = lambda w, s: (  # noqa: E731
        "token" if w == "token" else f"{w}@{'literal' if s == 'literal' else f'{100 * s:g}% of CE'}"
    )
    pre = precondition(raw)
    primary = []
    for i, t in enumerate(raw["temperatures"]):
        for b in ("prefix", "token"):
            r = compare(
                raw, label("exit", primary_s), label(b, primary_s), i, PRIMARY_LEVEL, ("exit", b)
            )
            r["verdict_a"] = IN_SIM[claim_verdict(r["rule_a"])] if pre["holds"] else OUTSIDE
            r["verdict_relative"] = (
                IN_SIM[claim_verdict(r["rule_relative"])] if pre["holds"] else OUTSIDE
            )
            for key in ("delta_a", "relative_tau_pct"):
                v = r[f"size_{key}"]["verdict"]
                r[f"size_verdict_{key}"] = IN_SIM[v] if pre["holds"] else OUTSIDE
            primary.append(r)
    secondary = []
    for s in strengths:
        pairs = [("exit", "prefix"), ("exit", "token"), ("prefix", "token")]
        pairs += [("exit-depth", "prefix"), ("exit-depth", "exit"), ("exit-depth", "token")]
        for i, _ in enumerate(raw["temperatures"]):
            for a, b in pairs:
                paper = (a, b) if a in PAPER_TABLE2_TAU and b in PAPER_TABLE2_TAU else None
                r = compare(raw, label(a, s), label(b, s), i, SECONDARY_LEVEL, paper)
                r["strength"] = s
                secondary.append(r)
    return {"precondition": pre, "primary": primary, "secondary": secondary}


def _ci(d: dict, f: str = "{:+.5f}") -> str:
    return f"{f.format(d['mean'])} [{f.format(d['lo'])}, {f.format(d['hi'])}]"


def _header_lines(raw: dict) -> list[str]:
    """Title, the simulated regime and recipe, the starting drafter and the arms' strengths."""
    cfg, reg = raw["config"], raw["config"]["regime"]
    st = np.asarray(raw["start_tau"]).mean(0)
    return [
        "# ExitTrain on the authors' recipe, simulated (exact tau)",
        "",
        f"Target: order-2 Zipf {reg['zipf']:g} chain, vocabulary {reg['vocab']}; position-wise drafter, "
        f"rank {reg['rank']}, block {reg['horizon']}; pretrained {reg['pretrain_steps']} steps on T = 1 "
        f"samples, fine-tuned {reg['steps']} steps x {reg['batch']} on continuations at data T = "
        f"{cfg['data_temperature']:g} (greedy), trees (B = {cfg['train_budget']}) scored at T = "
        f"{cfg['scoring_temperature']:g}; {len(raw['seeds'])} seeds; judged exactly at B = "
        f"{cfg['eval_budget']}, T = "
        + " and ".join(f"{t:g}" for t in raw["temperatures"])
        + f"; {raw['seconds']:.0f} s wall, {raw['cpu_seconds']:.0f} s CPU.",
        "",
        "Starting drafter tau: "
        + ", ".join(f"{v:.3f} (T = {t:g})" for v, t in zip(st, raw["temperatures"]))
        + f"; mean tree depth {np.mean(raw['start_depth']):.2f}.",
        "",
        f"Strengths: the authors' coded arm (prefix, nodes, lambda 0.1, floor 1e-4) puts "
        f"{100 * raw['strength']['literal_share']:.2f} % of CE in its tree term; lambdas "
        + ", ".join(f"{k} {v:g}" for k, v in raw["strength"]["lambda"].items())
        + ".",
        "",
    ]


def _precondition_lines(pre: dict) -> list[str]:
    """The precondition table per temperature, the depth guard and whether the precondition holds."""
    lines = [
        "| precondition (95 %) | token - start in a | relative tau | holds |",
        "|---|---|---|---|",
    ]
    for t, r in pre["per_temperature"].items():
        g = r["token_minus_start"]
        lines.append(
            f"| T = {t} | {_ci(g['delta_a'])} | {_ci(g['relative_tau_pct'], '{:+.2f}')} % | "
            f"{r['token_beats_start']} |"
        )
    return lines + [
        "",
        f"Depth guard (one-sided): token / start depth {pre['depth_ratio']:.3f} (fails only below "
        f"{1 - pre['depth_tolerance']:.2f}): {pre['depth_guard_passes']}. "
        f"**Precondition {'holds' if pre['holds'] else 'fails: every verdict reads ' + OUTSIDE}.**",
    ]


def _primary_lines(primary: list[dict]) -> list[str]:
    """The co-primary table: each interval under the design's rule and the ledger's size rule."""
    lines = [
        "",
        "## Co-primary family (98.75 %, Bonferroni over 4; strength: literal)",
        "",
        "Two rules on each interval: the design's (AUTHORS_REGIME.md: reproduced when the interval is "
        "above 0) and the ledger's size rule R3 for simulated rows (paper_repro/verdicts.py: reproduced "
        "only when the interval also contains the paper's effect; below it, not reproduced).",
        "",
        "| comparison | T | delta a | margin a | power | design rule (a) | size rule (a) | relative tau % "
        "| margin % | power | design rule (relative tau) | size rule (relative tau) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in primary:
        da, dr = r["delta_a"], r["relative_tau_pct"]
        lines.append(
            f"| {r['a']} - {r['b']} | {r['temperature']:g} | {_ci(da)} | {r['margin_delta_a']:.4f} | "
            f"{da['power_vs_paper']:.2f} | {r['verdict_a']} | **{r['size_verdict_delta_a']}** | "
            f"{_ci(dr, '{:+.2f}')} | {r['margin_relative_pct']:.2f} | {dr['power_vs_paper']:.2f} | "
            f"{r['verdict_relative']} | **{r['size_verdict_relative_tau_pct']}** |"
        )
    return lines


def _secondary_lines(secondary: list[dict]) -> list[str]:
    """The secondary table, marked by the sign of each 95 % interval (no verdict)."""
    lines = [
        "",
        "## Secondary (95 %, no verdict: `>` / `<` when the interval excludes 0, else `~`)",
        "",
        "| strength | comparison | T | delta a | relative tau % | |",
        "|---|---|---|---|---|---|",
    ]
    for r in secondary:
        da = r["delta_a"]
        mark = ">" if da["lo"] > 0 else "<" if da["hi"] < 0 else "~"
        lines.append(
            f"| {r['strength']} | {r['a']} - {r['b']} | {r['temperature']:g} | {_ci(da)} | "
            f"{_ci(r['relative_tau_pct'], '{:+.2f}')} | {mark} |"
        )
    return lines


def _arm_lines(raw: dict) -> list[str]:
    """Per arm: its lambda, tau at each temperature (mean over seeds) and its mean tree depth."""
    lines = ["", "| arm | lambda | tau (mean over seeds) | depth |", "|---|---|---|---|"]
    for arm in raw["arms"]:
        tau = np.asarray(raw["tau"][arm]).mean(0)
        lam = raw["strength"]["lambda"].get(arm, 0.0)
        lines.append(
            f"| {arm} | {lam:g} | "
            + ", ".join(f"{v:.3f} (T = {t:g})" for v, t in zip(tau, raw["temperatures"]))
            + f" | {np.mean(raw['depth'][arm]):.2f} |"
        )
    return lines


def format_markdown(res: dict) -> str:
    """The report: regime, precondition, co-primary and secondary tables and the arms' tau and depth."""
    raw, an = res["simulation"], res["analysis"]
    lines = (
        _header_lines(raw)
        + _precondition_lines(an["precondition"])
        + _primary_lines(an["primary"])
        + _secondary_lines(an["secondary"])
        + _arm_lines(raw)
    )
    return "\n".join(lines) + "\n"


def report(raw: dict) -> dict:
    return {"schema": SCHEMA, "simulation": raw, "analysis": analyse(raw)}


def write(res: dict, out: str | Path, *, overwrite: bool = False) -> list[Path]:
    out = Path(out)
    paths = [out / f for f in FILES]
    if not overwrite and any(p.exists() for p in paths):
        raise FileExistsError(f"{out} already holds results; pass --overwrite to replace them")
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_json(paths[0], res["simulation"], indent=1)
    atomic_write_json(
        paths[1],
        {"schema": SCHEMA, "config": res["simulation"]["config"], "analysis": res["analysis"]},
        indent=1,
    )
    atomic_write_text(paths[2], format_markdown(res))
    return paths


def run_to(
    out: str | Path,
    *,
    from_simulation: str | Path | None = None,
    overwrite: bool = False,
    log=lambda line: None,
) -> list[Path]:
    """Train and judge (or re-judge ``from_simulation``) and write :data:`FILES` into ``out``."""
    if not overwrite and any((Path(out) / f).exists() for f in FILES):
        raise FileExistsError(f"{out} already holds results; pass --overwrite")
    if from_simulation:
        raw = json.loads(Path(from_simulation).read_text(encoding="utf-8"))
    else:
        raw = run_recipe(RecipeConfig(), log=log)
        raw["provenance"] = provenance()
    return write(report(raw), out, overwrite=overwrite)
