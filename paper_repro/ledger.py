"""The claims ledger: one row per claim of the paper, each decided by a rule declared before the data.

:data:`CLAIMS` is the claim table. Every :class:`Claim` declares, before any
input is read, its :class:`~exitlaw.paper_repro.verdicts.Rule` (kind, the
paper's side and effect, the equivalence margin, the scales at which its
decisive setting exists), its primary estimand in words and the names of the
inputs it reads. Its ``measure`` function turns those inputs into ONE interval
(or one calibrated test outcome); :mod:`exitlaw.paper_repro.verdicts` turns the
interval into ``reproduced`` / ``contradicted`` / ``inconclusive`` (rules
R0-R5 stated there). The paper's numbers (Hu et al., arXiv:2610.11750) are
quoted as data; nothing here holds exitlaw's numbers.

Inputs (``inputs[name]``; how they are gathered and hashed: :mod:`.ledger_inputs`):
``verifier_equivalence``, ``budget_sweep``, ``sampled_exactness`` (figure data),
``verifier_latency`` (``exitlaw bench verifiers --json``), ``mini`` (a shallow
``exitlaw repro mini`` results.json), ``checks`` (conformance-kit reports by
verifier), and the paired-effect files ``sim_exittrain_sweep`` (a list of
files), ``mini_deep`` (one file) and ``mini_deep_budgets`` (the deep run re-run with
evaluation at B = 32/64/128: the budget-robustness claim's only input), read by
:func:`exitlaw.paper_repro.paired_effects.paired_interval`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from exitlaw.theory.infra.atomic_io import atomic_write_text

from exitlaw.paper_repro.paired_effects import PairedEffectError, paired_interval
from exitlaw.paper_repro.mini.exittrain.authors_regime import paper_margin
from exitlaw.paper_repro.mini.exittrain.units import (
    find as find_units,
    paper_effect_a,
    power_against,
    sweep_units,
)
from exitlaw.paper_repro.regimes import (
    Regime,
    RegimeError,
    authors_regime_run,
    paper_regime_run,
    sim_sweep_run,
)
from exitlaw.paper_repro.verdicts import (
    CONTRADICTED,
    INCONCLUSIVE,
    REPRODUCED,
    VERDICTS,
    Interval,
    Rule,
    Verdict,
    bootstrap_interval,
    decide,
    decide_test,
    missing,
    not_decidable,
    pool,
    scaled_verdict,
)

SCHEMA = "exitlaw.ledger/2"
PAPER_MARGIN = 0.03  # tokens: Table 4's "TEV and predraw tau differ by <= 0.03"
ROUNDING = 1e-9  # band of a float64 computation (exact enumeration, closed forms)


class MeasureError(ValueError):
    """An input is present but cannot give the claim's estimand (named in the message)."""


@dataclass(frozen=True)
class Measurement:
    value: str  # exitlaw's numbers in words
    scale: str  # where they were measured
    ci: Interval | None = None  # the primary effect's interval (rules R2-R4) ...
    test: tuple[bool, float] | None = None  # ... or a calibrated test's (rejected, power) (rule R5)
    # an ExitTrain row's regime: scale, model sizes, steps, data / scoring / judged temperatures, level
    regime: Regime | None = None
    # an ExitTrain row under the unit policy (EXITTRAIN_UNITS): both units, each with its interval and level,
    # the power against the paper's effect in the primary unit, and what the row does not judge
    units: dict | None = None
    omits: str | None = None


@dataclass(frozen=True)
class Claim:
    key: str
    claim: str
    paper: str
    check: str
    rule: Rule
    estimand: str
    inputs: tuple[str, ...]
    measure: Callable[[dict], Measurement] | None
    # the claim's own precondition, declared with it: (holds, what was measured); when it fails the verdict
    # is inconclusive, "outside the paper's regime", whatever the measurement says
    precondition: Callable[[dict], tuple[bool, str]] | None = None


# ----- measures --------------------------------------------------------------------------------------------
def _need(inputs: dict, name: str) -> Any:
    data = inputs.get(name)
    if data is None:
        raise KeyError(name)
    return data


def _length_stats(counts, n_expected: int | None = None) -> tuple[float, float, int]:
    """Mean, standard error and count of ``L = depth + 1`` from an exit-depth histogram."""
    n = sum(counts)
    if n < 2:
        raise MeasureError(f"an exit-depth histogram needs >= 2 draws, got {n}")
    mean = sum((d + 1) * c for d, c in enumerate(counts)) / n
    var = sum(c * (d + 1 - mean) ** 2 for d, c in enumerate(counts)) / (n - 1)
    return mean, math.sqrt(var / n), n


def fixed_tree_ceiling(inputs: dict) -> Measurement:
    ve = _need(inputs, "verifier_equivalence")
    parts, ci = [], None
    for k in ("tev", "predraw", "residual"):
        if k not in ve["counts"]:
            continue
        mean, se, n = _length_stats(ve["counts"][k])
        c = Interval.normal(mean - ve["expected_length"], se)
        ci = ci or c  # TEV first: the primary
        parts.append(f"{k} {c.text(4)}")
    if ci is None or "tev" not in ve["counts"]:
        raise MeasureError("verifier_equivalence has no TEV exit-depth counts")
    return Measurement(
        "E[L] - (1 + C_p(T)): " + "; ".join(parts),
        f"simulation, one tree B={ve['budget']}, "
        f"V={ve['vocab']}, {ve['samples']:,} draws per verifier",
        ci=ci,
    )


def same_exit_law(inputs: dict) -> Measurement:
    ve = _need(inputs, "verifier_equivalence")
    for k in ("tev", "predraw"):
        if k not in ve["counts"]:
            raise MeasureError(f"verifier_equivalence has no {k} exit-depth counts")
    mt, st, _ = _length_stats(ve["counts"]["tev"])
    mp, sp, _ = _length_stats(ve["counts"]["predraw"])
    ci = Interval.normal(mt - mp, math.hypot(st, sp))
    ps = ", ".join(f"{k} {v['pvalue']:.2f}" for k, v in ve.get("chisquare", {}).items())
    return Measurement(
        f"tau(TEV) - tau(predraw) {ci.text(4)} tokens (independent draws); chi-square p of each "
        f"exit-depth histogram vs the exact law: {ps}",
        f"simulation, one tree B={ve['budget']}, V={ve['vocab']}, {ve['samples']:,} draws each",
        ci=ci,
    )


def allocation_gap(inputs: dict) -> Measurement:
    bs = _need(inputs, "budget_sweep")
    rows = sorted((r for r in bs["rows"] if r["builder"] == "ddtree"), key=lambda r: r["budget"])
    prim = [r for r in rows if r["budget"] == 64]
    if not prim or "allocation_gap_stderr" not in prim[0]:
        raise MeasureError("budget_sweep has no DDTree row at B=64 with allocation_gap_stderr")
    r = prim[0]
    ci = Interval.normal(r["allocation_gap"], r["allocation_gap_stderr"])
    over = [
        f"{x['builder']} B={x['budget']}"
        for x in bs["rows"]  # chain drafts H tokens, not B; oracle is the bound
        if x["builder"] not in ("chain", "oracle") and x["ceiling"] > x["oracle_ceiling"] + 1e-6
    ]
    text = (
        "DDTree C*_p(B) - C_p(T) per round: "
        + ", ".join(
            f"B={x['budget']} {x['allocation_gap']:.3f} +- {x.get('allocation_gap_stderr', float('nan')):.3f}"
            for x in rows
        )
        + f" tokens; builders above the oracle ceiling: {', '.join(over) or 'none'}"
    )
    return Measurement(
        text, f"simulation, {bs['rounds']} rounds per B, position-wise drafter, TEV", ci=ci
    )


def sampled_conditional_excess(inputs: dict) -> Measurement:
    se = _need(inputs, "sampled_exactness")
    ex = [t["speculative_mean_length"] - t["ceiling"] for t in se["trees"]]
    if not ex:
        raise MeasureError("sampled_exactness has no trees")
    above = sum(x > ROUNDING for x in ex)
    return Measurement(
        f"chain speculative sampling: max over realised drafts of E[L|T] - (1 + C_p(T)) = "
        f"{max(ex):+.4f}; above the ceiling on {above}/{len(ex)} drafts",
        f"exact enumeration, V={se['vocab']}, H={se['horizon']}",
        ci=Interval.computed(max(ex), ROUNDING),
    )


def sampled_marginal_exact(inputs: dict) -> Measurement:
    se = _need(inputs, "sampled_exactness")
    tv = se["marginal_tv"]["speculative"]
    tev = max(t["tev_tv"] for t in se["trees"])
    return Measurement(
        f"draft-averaged TV(speculative sampling, target) = {tv:.1e}; TEV conditional TV <= {tev:.1e}",
        f"exact enumeration, V={se['vocab']}, H={se['horizon']}",
        ci=Interval.computed(tv, ROUNDING),
    )


def engine_tau_equal(inputs: dict) -> Measurement:
    mini = _need(inputs, "mini")
    cells = {
        (c["drafter"], c["domain"], c["budget"], float(c["temperature"]), c["verifier"]): c
        for c in mini["cells"]
    }
    diffs = []
    for (d, dom, b, t, v), c in sorted(cells.items()):
        o = cells.get((d, dom, b, t, "predraw"))
        if v != "tev" or t != 1.0 or o is None:
            continue
        diffs.append(Interval.normal(c["tau"] - o["tau"], math.hypot(c["tau_se"], o["tau_se"])))
    if not diffs:
        raise MeasureError("the mini run has no T=1 predraw/TEV cell pairs")
    # the cells share their prompts, models and seed: correlated, so the interval is the one that holds
    # under any correlation between them (verdicts.pool, correlated=True); the independent one beside it
    ci = pool(diffs, correlated=True)
    naive = pool(diffs)
    worst = max(diffs, key=lambda c: abs(c.estimate))
    return Measurement(
        f"mean over {len(diffs)} T=1 cells of tau(TEV) - tau(predraw): {ci.text(4)} tokens "
        f"(interval valid under any correlation between the cells, which share prompts, models and "
        f"seed; treated as independent it would read {naive.text(4)}); largest single-cell "
        f"|difference| {abs(worst.estimate):.3f}",
        f"mini-scale engine run (CPU, preset {mini.get('config', {}).get('preset', '?')})",
        ci=ci,
    )


def _log_ratios(row: dict, predraw: str = "predraw") -> list[float]:
    s = row.get("samples_ms") or {}
    if "tev" not in s or predraw not in s or len(s["tev"]) != len(s[predraw]):
        raise MeasureError(
            "the latency row has no paired per-call samples (samples_ms) for predraw and TEV; "
            "rerun `exitlaw bench verifiers --json`"
        )
    return [math.log(t / p) for t, p in zip(s["tev"], s[predraw])]


def _medians(row: dict) -> dict:
    """Median ms per stage: ``ms`` in figure data, ``median_ms`` in a ``bench verifiers`` result."""
    return row["ms"] if "ms" in row else row["median_ms"]


STAGE_INTERVAL = (
    "the stage interval: everything after the target forward (decision, bonus, host read, KV commit) "
    "for both verifiers, like for like"
)


def latency(inputs: dict, name: str = "verifier_latency") -> Measurement:
    """The TEV saving over predraw in the verifier stage, from the ``bench verifiers`` results ``name``.

    Decided on the stage interval only (the same interval for both verifiers). The authors' interval
    (TEV without the row reductions their released code runs inside its forward window, against the
    whole predraw) is reported beside it, never decided on: the two intervals are unlike."""
    lat = _need(inputs, name)
    cfg = lat.get("config", {})
    if not cfg.get("commit"):
        raise MeasureError(
            "the latency input does not time the KV-cache commit (the paper's interval)"
        )
    rows = sorted(lat["rows"], key=lambda r: r["budget"])
    logs = [x for r in rows for x in _log_ratios(r)]

    def saving(xs):
        return bootstrap_interval(
            xs, statistic=lambda x: 100.0 * (1.0 - math.exp(float(x.mean()))), seed=0
        )

    ci = saving(logs)
    multi = "predraw_multinomial"
    if all(multi in (r.get("samples_ms") or {}) for r in rows):
        which = "exitlaw's fast predraw (one inverse-CDF draw per row, as the engine runs it)"
        other = (
            f"; vs DDTree's multinomial predraw: "
            f"{saving([x for r in rows for x in _log_ratios(r, multi)]).text(1, ' %')}"
        )
        per_b = ", ".join(
            f"B={r['budget']} {_medians(r)[multi]:.2f} / {_medians(r)['predraw']:.2f} / "
            f"{_medians(r)['tev']:.2f} ms"
            for r in rows
        )
        medians = "medians DDTree multinomial / exitlaw predraw / TEV"
    else:
        which = (
            "the input's predraw (it predates the two-predraw bench: which path is not recorded)"
        )
        other = ""
        per_b = ", ".join(
            f"B={r['budget']} {_medians(r)['predraw']:.2f} vs {_medians(r)['tev']:.2f} ms"
            for r in rows
        )
        medians = "medians predraw vs TEV"
    authors = "tev_authors"
    if all(authors in (r.get("samples_ms") or {}) for r in rows):
        split = [
            math.log(a / p)
            for r in rows
            for a, p in zip(r["samples_ms"][authors], r["samples_ms"]["predraw"])
        ]
        other += (
            f"; beside it, not decided on (unlike intervals): the authors' interval (TEV without its "
            f"row reductions vs the whole predraw) {saving(split).text(1, ' %')}"
        )
    return Measurement(
        f"TEV saving vs {which} over {STAGE_INTERVAL}: {ci.text(1, ' %')}{other}; {medians}: "
        f"{per_b}",
        f"{cfg.get('device', '?')}, V={cfg.get('vocab', '?')}, T={cfg.get('temperature')}, "
        f"{cfg.get('trees')} trees x {cfg.get('repeats')} repeats per B, {len(logs)} paired calls",
        ci=ci,
    )


def fixed_shape_tev(name: str) -> Callable[[dict], tuple[bool, str]]:
    """The latency rows' precondition: the input timed TEV as the paper describes it (one fixed-shape,
    level-parallel decision; the bench records its op counts and both intervals since then). An input
    from before that timed another implementation, so it cannot judge the paper's procedure."""

    def check(inputs: dict) -> tuple[bool, str]:
        cfg = _need(inputs, name).get("config", {})
        rows = _need(inputs, name).get("rows", [])
        counted = bool(rows) and all("tev" in (r.get("ops") or {}) for r in rows)
        if "intervals" not in cfg or not counted:
            return False, (
                "the input timed the earlier TEV implementation (a data-dependent [K, V] row copy and "
                "host-side checks; no op counts or intervals recorded), not the paper's fixed-shape "
                "procedure: rerun `exitlaw bench verifiers` on this commit"
            )
        worst = max(r["ops"]["tev"]["launching_ops"] for r in rows)
        one = all(r["ops"]["tev"].get("one_sequence") for r in rows)
        return True, (
            f"fixed-shape TEV timed: at most {worst} launching ops per decision, "
            f"{'one op/shape sequence per budget' if one else 'several op/shape sequences'}"
        )

    return check


def kit(inputs: dict) -> Measurement:
    checks = _need(inputs, "checks")
    names = sorted(checks)
    if not names:
        raise MeasureError("no conformance-kit reports")
    rejected = any(checks[k]["verdict"] != "exact and saturating" for k in names)
    if any(checks[k]["min_power"] is None for k in names):
        raise MeasureError(
            "a conformance-kit report computed no power (no check ran: "
            + ", ".join(f"{k} {checks[k]['verdict']}" for k in names)
            + ")"
        )
    power = min(checks[k]["min_power"] for k in names)
    text = "; ".join(
        f"{k}: {checks[k]['verdict']} ({checks[k]['total_samples']} samples, min power "
        f"{checks[k]['min_power']:.3f}, family alpha {checks[k]['family_alpha']:g})"
        for k in names
    )
    return Measurement(text, "conformance kit hard cases", test=(rejected, power))


# ----- paired effects (ExitTrain) --------------------------------------------------------------------------
def _paired_claim(
    source: str,
    comparison: str,
    selector: dict,
    cells: int,
    label: str,
    regime_of: Callable[[dict, float], Regime] | None = None,
) -> Callable[[dict], Measurement]:
    """The measure of a paired-effect row; ``regime_of(inputs, level)`` reads the source run's regime (an
    ExitTrain row), which the row completes with the temperatures its records were judged at."""

    def measure(inputs: dict) -> Measurement:
        ci, recs = paired_interval(_need(inputs, source), comparison, selector, cells)
        regime = None
        if regime_of is not None:
            temps = [r.get("setting", {}).get("temperature") for r in recs]
            if any(t is None for t in temps):
                raise MeasureError(f"a '{comparison}' record names no judged temperature")
            try:
                regime = regime_of(inputs, ci.level).judged(temps, ci.level)
            except RegimeError as err:
                raise MeasureError(str(err)) from None
        seeds = sorted({r.get("n_seeds") for r in recs}, key=str)
        units = sorted({r.get("n_units") for r in recs}, key=str)
        cells_text = "; ".join(
            f"{', '.join(f'{k}={v}' for k, v in sorted(r.get('setting', {}).items()) if k not in selector or isinstance(selector[k], tuple))}"
            f" {Interval(r['rel_pct']['mean'], r['rel_pct']['lo'], r['rel_pct']['hi'], r.get('level', 0.95)).text(2, ' %')}"
            for r in recs
        )
        return Measurement(
            f"{comparison} tau: {ci.text(2, ' %')}"
            + (
                f" (pooled over {cells_text}; the cells share seeds: the interval holds under any "
                "correlation between them)"
                if cells > 1
                else ""
            )
            + f"; seeds {seeds}, units {units}",
            label,
            ci=ci,
            regime=regime,
        )

    return measure


# ----- ExitTrain rows: one unit policy (issue 49) ----------------------------------------------------------
EXITTRAIN_UNITS = (
    "ExitTrain unit policy (issue 49): every ExitTrain row is decided in per-step acceptance a = 1 - 1/tau "
    "(primary; regime-invariant, paper_repro/AUTHORS_REGIME.md 'The unit') against the paper's Table 2 effect "
    "in a (the smaller of T = 0 and T = 1, unless the row is judged at one of them), with relative tau beside "
    "it; each unit with its interval and level; the row's power against the paper's effect in a; what the "
    "row does not judge; and a primary interval that excludes 0 in an undecided row is flagged 'observed, "
    "not decided'"
)
RELATIVE = "relative tau (%)"


def _units(a_ci: Interval, rel: dict, paper_a: float, design_unit: str) -> dict:
    """Both units of one ExitTrain row (the policy above), each with its interval and level."""
    return {
        "primary": {
            "unit": ACCEPTANCE,
            "estimate": _sig(a_ci.estimate),
            "lo": _sig(a_ci.lo),
            "hi": _sig(a_ci.hi),
            "level": a_ci.level,
        },
        "beside": {
            "unit": RELATIVE,
            "estimate": _sig(float(rel["mean"])),
            "lo": _sig(float(rel["lo"])),
            "hi": _sig(float(rel["hi"])),
            "level": float(rel.get("level", a_ci.level)),
        },
        "paper_effect_primary": _sig(paper_a),
        "power": _sig(power_against(paper_a, a_ci.lo, a_ci.hi, a_ci.level)),
        "design_unit": design_unit,
    }


def units_text(u: dict) -> str:
    p, b = u["primary"], u["beside"]
    return (
        f"{p['unit']} {p['estimate']:+.4f} [{p['lo']:+.4f}, {p['hi']:+.4f}] ({100 * p['level']:g} %); "
        f"{b['unit']} {b['estimate']:+.2f} [{b['lo']:+.2f}, {b['hi']:+.2f}] ({100 * b['level']:g} %); "
        f"power against the paper's effect in a ({p['unit'].split()[0]} {u['paper_effect_primary']:+.4f}): "
        f"{u['power']:.2f}; unit of the design: {u['design_unit']}"
    )


def _cell_text(r: dict) -> str:
    d, rel = r["delta_a"], r["relative_tau_pct"]
    return (
        f"T = {float(r['temperature']):g}: {r['a']} - {r['b']} in a {d['mean']:+.4f} [{d['lo']:+.4f}, "
        f"{d['hi']:+.4f}], relative tau {rel['mean']:+.2f} % [{rel['lo']:+.2f}, {rel['hi']:+.2f}] "
        f"({100 * float(r['level']):g} %)"
    )


def _regime_claim_a(
    a: str, b: str, budget, comparison: str, selector: dict, role: str
) -> Callable[[dict], Measurement]:
    """A paper-regime row in ``a`` (``paper_regime/acceptance.json``, recomputed from the run's cells by
    ``paper_repro/mini/exittrain/units.py``), its relative tau (the run's report) beside it, and the same
    comparison at T = 0 and T = 1, which the row does not judge."""
    rel_measure = _paired_claim(
        "paper_regime", comparison, selector, 1, PAPER_REGIME, _paper_regime(role)
    )

    def measure(inputs: dict) -> Measurement:
        rel_m = rel_measure(inputs)
        units = _need(inputs, "paper_regime_units")
        t_s = float(units["T_s"])
        try:
            rec = find_units(units, a, b, t_s, budget)
            cells = [find_units(units, a, b, t, 64) for t in (0.0, 1.0)]
        except KeyError as err:
            raise MeasureError(f"paper_regime/acceptance.json: {err}") from None
        if abs(float(rec["level"]) - rel_m.ci.level) > 1e-12:
            raise MeasureError(
                f"paper_regime/acceptance.json's '{a} - {b}' is at level {rec['level']}, the row's at "
                f"{rel_m.ci.level}"
            )
        d, rel = rec["delta_a"], rel_m.ci
        ci = Interval(float(d["mean"]), float(d["lo"]), float(d["hi"]), float(rec["level"]))
        u = _units(
            ci,
            {"mean": rel.estimate, "lo": rel.lo, "hi": rel.hi, "level": rel.level},
            paper_effect_a(a, b),
            "relative tau (paper_repro/PAPER_REGIME.md)",
        )
        return Measurement(
            f"{a} - {b} in {ACCEPTANCE}: {ci.text(4)} at T = {t_s:g}"
            + (", per-(seed, prompt) mean over B = 32/64/128" if budget == "row" else "")
            + f"; beside it, {rel_m.value}",
            rel_m.scale,
            ci=ci,
            regime=rel_m.regime,
            units=u,
            omits="the same run at the paper's temperatures, not judged by this row: "
            + "; ".join(_cell_text(c) for c in cells),
        )

    return measure


def _sweep_of(inputs: dict, source: str) -> dict:
    files = _need(inputs, source)
    sweeps = [f for f in (files if isinstance(files, list) else [files]) if "regimes" in f]
    if len(sweeps) != 1:
        raise MeasureError(f"{source}: expected one sweep with per-seed tau, found {len(sweeps)}")
    return sweeps[0]


def _sim_claim_a(
    source: str, a_name: str, b_name: str, b: str, temps, selector: dict, label: str
) -> Callable[[dict], Measurement]:
    """A simulation-sweep row in ``a`` from the sweep's per-seed exact tau (equal-weight mean over the judged
    temperatures, paired t over seeds), relative tau beside it the same way; the pooled row omits the
    temperatures one by one."""
    rel_measure = _paired_claim(
        source, f"exit-{b}", selector, len(temps), label, _sim_regime(source)
    )

    def measure(inputs: dict) -> Measurement:
        rel_m = rel_measure(inputs)
        sweep = _sweep_of(inputs, source)
        try:
            u = sweep_units(sweep, a_name, b_name, temperatures=temps)
            per_t = [sweep_units(sweep, a_name, b_name, temperatures=[t]) for t in temps]
        except (KeyError, ValueError) as err:
            raise MeasureError(
                f"{source}: no per-seed tau for {a_name} / {b_name}: {err}"
            ) from None
        d = u["delta_a"]
        ci = Interval(d["mean"], d["lo"], d["hi"], u["level"])
        units = _units(
            ci,
            {**u["relative_tau_pct"], "level": u["level"]},
            paper_effect_a("exit", b),
            "relative tau (issue 34's size rule)",
        )
        judged = [float(t) for t in sweep["config"].get("eval_temperatures", (0.0, 1.0))]
        others = [
            sweep_units(sweep, a_name, b_name, temperatures=[t]) for t in judged if t not in temps
        ]
        parts = []
        if len(temps) > 1:
            parts.append(
                "the pooled temperatures one by one: "
                + "; ".join(
                    _cell_text({**x, "a": "exit", "b": b, "temperature": x["temperatures"][0]})
                    for x in per_t
                )
            )
        if others:
            parts.append(
                "the same drafters judged at the sweep's other temperatures: "
                + "; ".join(
                    _cell_text({**x, "a": "exit", "b": b, "temperature": x["temperatures"][0]})
                    for x in others
                )
            )
        return Measurement(
            f"exit - {b} in {ACCEPTANCE}: {ci.text(4)} (seeds {u['seeds']}, exact tau, equal-weight mean "
            f"over T = {', '.join(f'{t:g}' for t in temps)}); beside it, {rel_m.value}",
            rel_m.scale,
            ci=ci,
            regime=rel_m.regime,
            units=units,
            omits=". ".join(parts) or None,
        )

    return measure


# ----- the claim table (declared before any data is read) ---------------------------------------------------
def _dir(
    unit: str, paper: float | None = None, side: int = 1, at=("cpu", "gpu"), alpha: float = 0.05
) -> Rule:
    return Rule("direction", unit, side=side, paper_effect=paper, decidable_at=at, alpha=alpha)


# the paper-regime run's two primary comparisons share alpha 0.05 (Bonferroni: 0.025 each, 97.5 % CIs)
PRIMARY_ALPHA = 0.025


def _eq(margin: float, unit: str = "tokens") -> Rule:
    return Rule("equivalence", unit, margin=margin)


# the paper-regime run's primary cell (code, T = T_s, B = 64, Rao-Blackwellised tau; paper_repro/PAPER_REGIME.md)
REGIME_PRIMARY = {"regime": "paper", "role": "primary", "cell": "primary", "estimand": "rb_tau"}
REGIME_SECONDARY = {
    "regime": "paper",
    "role": "secondary",
    "cell": "primary",
    "estimand": "rb_tau",
    "lambda": 0.1,
    "weight_norm": "batch",
}
REGIME_BUDGETS = {
    "regime": "paper",
    "role": "budget row",
    "cell": "budget mean",
    "estimand": "rb_tau",
}
PAPER_REGIME = (
    "the paper-regime mini run (CPU), `exitlaw repro mini --preset paper-regime`, "
    "design paper_repro/PAPER_REGIME.md"
)


def _paper_regime(role: str) -> Callable[[dict, float], Regime]:
    """The paper-regime run's regime (results.json, ft_data/fresh_prompts.json) for a row of ``role``."""
    return lambda inputs, level: paper_regime_run(
        _need(inputs, "paper_regime"), _need(inputs, "paper_regime_data"), role=role, level=level
    )


def _sim_regime(source: str, regime: str = "deep") -> Callable[[dict, float], Regime]:
    """A simulation sweep's regime ``regime`` from the config its files record."""
    path, run = SWEEP_FILES[source]
    return lambda inputs, level: sim_sweep_run(_need(inputs, source), regime, run=run, source=path)


# input -> (its files, the command that made them)
SWEEP_FILES = {
    "sim_exittrain_sweep": (
        "sim_exittrain_sweep/*.json",
        "`exitlaw simulate exittrain --sweep` (simulate/exittrain/sweep.py)",
    ),
    "sim_exittrain_matched": (
        "sim_exittrain_matched/sweep.json",
        "`exitlaw simulate exittrain --sweep matched` (simulate/exittrain/sweep.py, rule 5)",
    ),
}
REGIME_INPUTS = ("paper_regime", "paper_regime_data", "paper_regime_units")


def _size(paper: float, alpha: float = 0.05) -> Rule:
    """R3 for a simulated ExitTrain effect: reproduced only when the CI excludes 0 AND contains the paper's
    (smallest stated) effect; a CI wholly below it is contradicted even when it excludes 0 (issue 34). In
    per-step acceptance a, the unit policy's primary unit (issue 49)."""
    return Rule("size", ACCEPTANCE, side=1, paper_effect=paper, alpha=alpha)


def regime_precondition(inputs: dict) -> tuple[bool, str]:
    """The paper's regime (PAPER_REGIME.md): token-only fine-tuning beats the base drafter at the primary cell."""
    pre = _need(inputs, "paper_regime")["analysis"]["precondition"]
    t = pre["token_minus_base"]
    units = _need(inputs, "paper_regime_units")
    try:
        rec = find_units(units, "token", "base", float(units["T_s"]), 64)
    except KeyError as err:
        raise MeasureError(f"paper_regime/acceptance.json: {err}") from None
    d, e = rec["delta_a"], paper_effect_a("token", "base")
    return bool(pre["holds"]), (
        f"token - base {t['rel_mean']:+.2f} % [{t['rel_lo']:+.2f}, {t['rel_hi']:+.2f}], in a "
        f"{d['mean']:+.4f} [{d['lo']:+.4f}, {d['hi']:+.4f}] ({100 * float(rec['level']):g} %; power "
        f"{power_against(e, d['lo'], d['hi'], float(rec['level'])):.2f} against the paper's {e:+.4f}) at the "
        "primary cell (the precondition needs its lower end > 0)"
    )


# the authors'-recipe run (AUTHORS_REGIME.md): four co-primary comparisons, Bonferroni (98.75 % CIs), in
# per-step acceptance a = 1 - 1/tau against the paper's Table 2 effect in that unit (paper_margin)
AUTHORS_ALPHA = 0.05 / 4
AUTHORS_REGIME = (
    "the authors'-recipe mini run (CPU), `exitlaw repro mini --preset authors-regime`, "
    "design paper_repro/AUTHORS_REGIME.md"
)
AUTHORS_INPUTS = ("authors_regime", "authors_regime_data")
ACCEPTANCE = "a (= 1 - 1/tau)"


def _authors_rule(a: str, b: str, temperature: float) -> Rule:
    """The design's verdict rule: reproduced when the 98.75 % CI of ``a - b`` in per-step acceptance is above
    0; contradicted (not reproduced) when it lies below the paper's effect in that unit."""
    return _dir(ACCEPTANCE, paper_margin(a, b, temperature), alpha=AUTHORS_ALPHA)


def _authors_claim(a: str, b: str, temperature: float) -> Callable[[dict], Measurement]:
    """The measure of one co-primary row of the authors'-recipe run: its ``a - b`` interval at ``temperature``
    (B = 64) from ``results.json``'s ``analysis.primary``, with the run's regime."""

    def measure(inputs: dict) -> Measurement:
        res = _need(inputs, "authors_regime")
        hits = [
            r
            for r in res.get("analysis", {}).get("primary", [])
            if r.get("a") == a
            and r.get("b") == b
            and float(r.get("temperature", -1)) == temperature
        ]
        if len(hits) != 1:
            raise MeasureError(
                f"authors_regime/results.json: expected one primary '{a} - {b}' record at "
                f"T = {temperature:g}, found {len(hits)}"
            )
        r = hits[0]
        try:
            d, rel = r["delta_a"], r["relative_tau_pct"]
            ci = Interval(float(d["mean"]), float(d["lo"]), float(d["hi"]), float(r["level"]))
            translated = float(r["paper_effect_translated_pct"])
        except (KeyError, TypeError, ValueError) as err:
            raise MeasureError(f"a primary '{a} - {b}' record lacks {err}") from None
        try:
            regime = authors_regime_run(
                res, _need(inputs, "authors_regime_data"), level=ci.level
            ).judged([temperature], ci.level)
        except RegimeError as err:
            raise MeasureError(str(err)) from None
        return Measurement(
            f"{a} - {b} in {ACCEPTANCE}: {ci.text(4)} at T = {temperature:g}, B = {r.get('budget')}; "
            f"relative tau {float(rel['mean']):+.2f} % [{float(rel['lo']):+.2f}, {float(rel['hi']):+.2f}] "
            f"at tau {float(r['tau_b']):.2f} (the paper's effect translated to that tau: "
            f"{translated:+.2f} %); seeds {r.get('seeds')}, prompts {r.get('prompts')}",
            AUTHORS_REGIME,
            ci=ci,
            regime=regime,
            units=_units(
                ci,
                {**rel, "level": ci.level},
                paper_margin(a, b, temperature),
                "a (paper_repro/AUTHORS_REGIME.md)",
            ),
            omits="the secondary comparisons (exit - base, the strength arm, the authors' literal arms, "
            "observed tau; 95 %, no verdict) in authors_regime/results.md",
        )

    return measure


def authors_precondition(inputs: dict) -> tuple[bool, str]:
    """AUTHORS_REGIME.md's precondition, at T = 0 and T = 1: token - base in ``a`` has its 95 % interval
    above 0 and the token arm's tree depth is within 10 % of the base's."""
    pre = _need(inputs, "authors_regime")["analysis"]["precondition"]
    parts = []
    for t, cell in sorted(pre["per_temperature"].items(), key=lambda kv: float(kv[0])):
        d = cell["token_minus_base"]["delta_a"]
        level = float(cell["token_minus_base"].get("level", 0.95))
        power = power_against(paper_margin("token", "base", float(t)), d["lo"], d["hi"], level)
        parts.append(
            f"T = {float(t):g}: token - base in a {d['mean']:+.4f} [{d['lo']:+.4f}, {d['hi']:+.4f}] "
            f"({100 * level:g} %; power {power:.2f} against the paper's {paper_margin('token', 'base', float(t)):+.4f}), "
            f"depth ratio {cell['depth_ratio']:.3f}"
        )
    return bool(pre["holds"]), (
        "; ".join(parts) + " (the precondition needs, at both temperatures, the lower end > 0 and "
        "the depth ratio at least 0.90: the one-sided depth guard)"
    )


def _authors_row(a: str, b: str, temperature: float, paper: str) -> Claim:
    name = {"token": "token-only fine-tuning", "prefix": "prefix-weighted (P-weighted) training"}[b]
    return Claim(
        f"exit_vs_{b}_authors_t{temperature:g}",
        f"exit-guided beats {name} (B = 64), judged at T = {temperature:g}, on the authors' recipe",
        paper,
        AUTHORS_REGIME,
        _authors_rule(a, b, temperature),
        f"{a} - {b} per-step acceptance ({ACCEPTANCE}, Rao-Blackwellised tau), code prompts, "
        f"T = {temperature:g}, B = 64, 98.75 % (Bonferroni over the four co-primary comparisons)",
        AUTHORS_INPUTS,
        _authors_claim(a, b, temperature),
        authors_precondition,
    )


SIM_DEEP = {
    "regime": "deep",
    "train_budget": 64,
    "eval_budget": 64,
    "lambda": 0.1,
    "weight_norm": "tree",
    "edge_floor": None,
}
SIM_SWEEP = "simulation sweep (exact tau), `exitlaw simulate exittrain --sweep`"
# the same setting as SIM_DEEP, in the sweep trained and judged at T_m = 0.5 (its matched cell, rule 5)
SIM_MATCHED = {**SIM_DEEP, "temperature": 0.5}
SIM_SWEEP_MATCHED = (
    "simulation sweep trained and judged at T = 0.5, `exitlaw simulate exittrain --sweep matched`"
)
SIM_EXIT, SIM_PREFIX = "exit/tree/lambda=0.1", "prefix/tree/lambda=0.1"
SIM_AUTHORS = (
    "simulation of the authors' recipe (exact tau), `exitlaw repro sim-authors`, "
    "design simulate/exittrain/recipe.py"
)


def _sim_authors_regime(res: dict, level: float, temperature: float) -> Regime:
    cfg = res.get("config")
    if not isinstance(cfg, dict) or "regime" not in cfg:
        raise MeasureError("sim_exittrain_authors/results.json records no config")
    r = cfg["regime"]
    return Regime(
        scale="simulation",
        run=SIM_AUTHORS,
        models=f"synthetic n-gram target, vocabulary {r['vocab']}, zipf {r['zipf']:g}, horizon "
        f"{r['horizon']}; drafter rank {r['rank']} (Qwen3-4B/8B in the paper)",
        steps=f"{r['steps']} fine-tuning steps of {r['batch']} rollouts after {r['pretrain_steps']} "
        "token-only pretraining steps",
        data_temperature=float(cfg["data_temperature"]),
        scoring_temperature=float(cfg["scoring_temperature"]),
        source="sim_exittrain_authors/results.json (config)",
    ).judged([temperature], level)


def _sim_authors_claim(a: str, b: str, temperature: float) -> Callable[[dict], Measurement]:
    """One co-primary comparison of the simulated authors' recipe (literal strength), both units."""

    def measure(inputs: dict) -> Measurement:
        res = _need(inputs, "sim_exittrain_authors")
        hits = [
            r
            for r in res.get("analysis", {}).get("primary", [])
            if r["a"].split("@")[0] == a
            and r["b"].split("@")[0] == b
            and float(r["temperature"]) == temperature
        ]
        if len(hits) != 1:
            raise MeasureError(
                f"sim_exittrain_authors/results.json: expected one primary '{a} - {b}' at T = "
                f"{temperature:g}, found {len(hits)}"
            )
        r = hits[0]
        d, rel = r["delta_a"], r["relative_tau_pct"]
        ci = Interval(float(d["mean"]), float(d["lo"]), float(d["hi"]), float(d["level"]))
        return Measurement(
            f"{r['a']} - {r['b']} in {ACCEPTANCE}: {ci.text(5)} at T = {temperature:g} (exact tau, "
            f"{d['n']} seeds); relative tau {rel['mean']:+.2f} % [{rel['lo']:+.2f}, {rel['hi']:+.2f}]",
            SIM_AUTHORS,
            ci=ci,
            regime=_sim_authors_regime(res, ci.level, temperature),
            units=_units(
                ci,
                {**rel, "level": ci.level},
                paper_margin(a, b, temperature),
                "a (simulate/exittrain/recipe.py, paper_repro/mini/exittrain/sim_authors.py)",
            ),
            omits="the 2 % and 10 % of CE strengths and exit-depth (secondary, 95 %) in "
            "sim_exittrain_authors/results.md",
        )

    return measure


def sim_authors_precondition(inputs: dict) -> tuple[bool, str]:
    """The simulated recipe's precondition: token - start above 0 (95 %) at both temperatures and the
    one-sided depth guard."""
    pre = _need(inputs, "sim_exittrain_authors")["analysis"]["precondition"]
    parts = []
    for t, cell in sorted(pre["per_temperature"].items(), key=lambda kv: float(kv[0])):
        d = cell["token_minus_start"]["delta_a"]
        e = paper_margin("token", "base", float(t))
        parts.append(
            f"T = {float(t):g}: token - start in a {d['mean']:+.4f} [{d['lo']:+.4f}, {d['hi']:+.4f}] "
            f"({100 * d['level']:g} %; power {power_against(e, d['lo'], d['hi'], d['level']):.2f} against "
            f"the paper's {e:+.4f})"
        )
    return bool(pre["holds"]), "; ".join(parts) + (
        f"; depth ratio {pre['depth_ratio']:.3f} (one-sided guard: at least {1 - pre['depth_tolerance']:.2f})"
    )


def _sim_authors_row(a: str, b: str, temperature: float, paper: str) -> Claim:
    name = {"token": "token-only training", "prefix": "prefix-weighted (P_tgt) training"}[b]
    return Claim(
        f"exit_vs_{b}_sim_authors_t{temperature:g}",
        f"exit-guided beats {name} (B = 64), judged at T = {temperature:g}, simulation of the authors' recipe",
        paper,
        SIM_AUTHORS,
        _size(paper_margin(a, b, temperature), alpha=0.05 / 4),
        f"{a} - {b} per-step acceptance a of exact tau, greedy data, weights at T = 1, the authors' coded "
        f"strength matched across arms, T = {temperature:g}, B = 64, 98.75 % (Bonferroni over four); "
        "relative tau beside it",
        ("sim_exittrain_authors",),
        _sim_authors_claim(a, b, temperature),
        sim_authors_precondition,
    )


GPU_ONLY = ("gpu",)
FIELD_LAB = "field lab (exact E[L | T] per drafted tree), `exitlaw simulate field-lab`"

CLAIMS: tuple[Claim, ...] = (
    Claim(
        "kit_exact_saturating",
        "predraw, residual and TEV are exact and reach 1 + C_p (conformance kit)",
        "Thm 1, Cor. 1",
        "exitlaw check exitlaw.simulate.verifiers:{predraw,residual,tev}",
        Rule("test", "kit family alpha 1e-6 per verifier"),
        "the kit's calibrated tests on every verifier (no rejection, min power)",
        ("checks",),
        kit,
    ),
    Claim(
        "fixed_tree_ceiling",
        "on a fixed tree an exact saturating verifier's E[L] equals 1 + C_p(T)",
        "Theorem 1 (sec. 3.2): E[L] <= 1 + C_p(T), equality iff the canonical law",
        "property_tests/theory/test_verifier_laws.py; `exitlaw figures --only verifier_equivalence`",
        _eq(PAPER_MARGIN),
        "TEV's mean block length minus 1 + C_p(T), one tree (margin: Table 4's 0.03 tokens)",
        ("verifier_equivalence",),
        fixed_tree_ceiling,
    ),
    Claim(
        "same_exit_law",
        "predraw and TEV share one exit/bonus law, hence one tau",
        "Corollary 1 (sec. 3.2, 4); Table 4: tau(TEV) - tau(predraw) <= 0.03 tokens",
        "property_tests/theory/test_verifier_laws.py; `exitlaw figures --only verifier_equivalence`",
        _eq(PAPER_MARGIN),
        "tau(TEV) - tau(predraw) on one simulated tree",
        ("verifier_equivalence",),
        same_exit_law,
    ),
    Claim(
        "engine_tau_equal",
        "with a fixed drafter, engine tau of TEV equals predraw's",
        "Table 4 (Qwen3-4B, T=1): 7.08 vs 7.09 and 8.05 vs 8.06; differ <= 0.03 tokens",
        "`exitlaw repro mini` cells at T=1, predraw vs TEV",
        _eq(PAPER_MARGIN),
        "tau(TEV) - tau(predraw), equal-weight mean over the mini run's T=1 cells",
        ("mini",),
        engine_tau_equal,
    ),
    Claim(
        "allocation_gap",
        "a draft-score (DDTree) tree leaves target mass a same-budget oracle tree covers",
        "sec. 1, 3.3 (qualitative: draft-target mismatch under a finite budget)",
        "property_tests/simulate/lab/test_builders.py; `exitlaw figures --only budget_sweep`",
        _dir("tokens"),
        "mean per-round C*_p(64) - C_p(DDTree_64)",
        ("budget_sweep",),
        allocation_gap,
    ),
    Claim(
        "sampled_drafts_exceed",
        "conditionally on a realised sampled draft, classic verifiers can exceed 1 + C_p(T)",
        "App. A.5 (fixed-tree ceiling vs HSD's sampled chain)",
        "property_tests/theory/test_verifier_laws.py; `exitlaw figures --only sampled_exactness`",
        _dir("tokens"),
        "max over enumerated drafts of E[L|T] - (1 + C_p(T)), chain speculative sampling",
        ("sampled_exactness",),
        sampled_conditional_excess,
    ),
    Claim(
        "sampled_drafts_marginal",
        "averaged over the draft randomness, classic sampled-draft verifiers are exact",
        "App. A.5; Leviathan et al. / SpecInfer (exact on average)",
        "property_tests/theory/test_verifier_laws.py; `exitlaw figures --only sampled_exactness`",
        _eq(1e-6, "total variation"),
        "TV between the draft-averaged block law and the target law",
        ("sampled_exactness",),
        sampled_marginal_exact,
    ),
    Claim(
        "tev_stage_savings",
        "TEV cuts verifier-stage latency (decision + bonus + KV commit) vs predraw",
        "Table 3 (Qwen3-4B, GPU): -12.9/-15.2/-24.3% at T=0.6; -12.0/-14.0/-17.1% at T=1 (B = 32/64/128)",
        "`exitlaw bench verifiers --json` (CPU) or `exitlaw gpu-check --out`",
        _dir("%", 12.0),
        "100 (1 - geometric mean of TEV/predraw stage time) over the stage interval (everything after "
        "the forward, both verifiers alike; the authors' interval reported beside, never decided on), "
        "predraw = exitlaw's fast predraw as the engine runs it (DDTree's multinomial path reported "
        "beside it), paired calls pooled over B = 32/64/128, bootstrap 95 % CI over calls (calls on one "
        "tree are correlated and are not clustered: the interval is narrower than one over trees would "
        "be); precondition: the input timed the fixed-shape TEV",
        ("verifier_latency",),
        latency,
        fixed_shape_tev("verifier_latency"),
    ),
    Claim(
        "tev_stage_savings_gpu",
        "TEV cuts verifier-stage latency (decision + bonus + KV commit) vs predraw, on a GPU (row added "
        "after the first GPU run, one H200, bf16, commit 6064ee4; its rule and estimand are the CPU row's)",
        "Table 3 (Qwen3-4B, GPU): -12.9/-15.2/-24.3% at T=0.6; -12.0/-14.0/-17.1% at T=1 (B = 32/64/128)",
        "`paper_repro/gpu_benches.sh` (`exitlaw bench verifiers --device cuda`; paper_repro/results/gpu/)",
        _dir("%", 12.0),
        "as the CPU row: 100 (1 - geometric mean of TEV/predraw stage time) over the stage interval, "
        "paired calls pooled over B = 32/64/128, bootstrap 95 % CI over calls (not clustered by tree); "
        "precondition: the input timed the fixed-shape TEV",
        ("verifier_latency_gpu",),
        lambda inputs: latency(inputs, "verifier_latency_gpu"),
        fixed_shape_tev("verifier_latency_gpu"),
    ),
    Claim(
        "exittrain_tau_gain",
        "ExitTrain raises tau over the starting (DDTree) drafter at B=64",
        "Table 1: +8.8..+13.8% avg tau (Qwen3-4B/8B); Table 4: +13.7%",
        PAPER_REGIME,
        _dir(ACCEPTANCE, paper_effect_a("exit", "base")),
        "exit - base per-step acceptance a (Rao-Blackwellised tau per prompt), paper-regime primary cell "
        "(code, T=T_s, B=64), 95 %; relative tau beside it",
        REGIME_INPUTS,
        _regime_claim_a("exit", "base", 64, "exit-base", REGIME_SECONDARY, "secondary"),
        regime_precondition,
    ),
    Claim(
        "budget_robustness",
        "the drafter trained at one budget keeps its tau gain at B = 32, 64, 128",
        "Table 5: +11.6..+13.8% tau vs DDTree at B=32/64/128",
        PAPER_REGIME,
        _dir(ACCEPTANCE, paper_effect_a("exit", "base")),
        "exit - base per-step acceptance a, paper-regime run (code, T=T_s), per-(seed, prompt) difference "
        "averaged over B = 32/64/128, 95 %; relative tau beside it",
        REGIME_INPUTS,
        _regime_claim_a("exit", "base", "row", "exit-base", REGIME_BUDGETS, "secondary"),
        regime_precondition,
    ),
    Claim(
        "exit_vs_token",
        "exit-guided beats matched token-only fine-tuning (tau, B=64), engine",
        "Table 2: +5.9% / +7.9% tau at T=0/1",
        PAPER_REGIME,
        _dir(ACCEPTANCE, paper_effect_a("exit", "token"), alpha=PRIMARY_ALPHA),
        "exit - token per-step acceptance a, paper-regime primary cell (code, T=T_s, B=64, lambda 0.1), "
        "97.5 % (Bonferroni over the two primary comparisons); relative tau beside it",
        REGIME_INPUTS,
        _regime_claim_a("exit", "token", 64, "exit-token", REGIME_PRIMARY, "primary"),
        regime_precondition,
    ),
    Claim(
        "exit_vs_prefix",
        "exit-guided beats prefix-weighted (P-weighted) training (tau, B=64), engine",
        "Table 2: +7.8% / +4.4% tau at T=0/1",
        PAPER_REGIME,
        _dir(ACCEPTANCE, paper_effect_a("exit", "prefix"), alpha=PRIMARY_ALPHA),
        "exit - prefix per-step acceptance a, paper-regime primary cell (code, T=T_s, B=64, lambda 0.1), "
        "97.5 % (Bonferroni over the two primary comparisons); relative tau beside it",
        REGIME_INPUTS,
        _regime_claim_a("exit", "prefix", 64, "exit-prefix", REGIME_PRIMARY, "primary"),
        regime_precondition,
    ),
    _authors_row("exit", "token", 0.0, "Table 2: tau 8.36 -> 8.85 at T=0 (+5.9 %)"),
    _authors_row("exit", "token", 1.0, "Table 2: tau 7.47 -> 8.06 at T=1 (+7.9 %)"),
    _authors_row("exit", "prefix", 0.0, "Table 2: tau 8.21 -> 8.85 at T=0 (+7.8 %)"),
    _authors_row("exit", "prefix", 1.0, "Table 2: tau 7.72 -> 8.06 at T=1 (+4.4 %)"),
    Claim(
        "exit_vs_token_sim",
        "exit-guided beats token-only training (tau, B=64), simulation",
        "Table 2: +5.9% / +7.9% tau at T=0/1",
        SIM_SWEEP,
        _size(paper_effect_a("exit", "token")),
        "exit - token per-step acceptance a of exact tau, sweep regime deep, train B=64, eval B=64, lambda "
        "0.1, tree normalisation; per seed the equal-weight mean over T=0 and T=1, 95 % t over seeds; "
        "relative tau beside it",
        ("sim_exittrain_sweep",),
        _sim_claim_a(
            "sim_exittrain_sweep", SIM_EXIT, "token", "token", (0.0, 1.0), SIM_DEEP, SIM_SWEEP
        ),
    ),
    Claim(
        "exit_vs_prefix_sim",
        "exit-guided beats prefix-weighted training (tau, B=64), simulation",
        "Table 2: +7.8% / +4.4% tau at T=0/1",
        SIM_SWEEP,
        _size(paper_effect_a("exit", "prefix")),
        "exit - prefix per-step acceptance a of exact tau, sweep regime deep, train B=64, eval B=64, lambda "
        "0.1, tree normalisation; per seed the equal-weight mean over T=0 and T=1, 95 % t over seeds; "
        "relative tau beside it",
        ("sim_exittrain_sweep",),
        _sim_claim_a(
            "sim_exittrain_sweep", SIM_EXIT, SIM_PREFIX, "prefix", (0.0, 1.0), SIM_DEEP, SIM_SWEEP
        ),
    ),
    Claim(
        "exit_vs_token_sim_matched",
        "exit-guided beats token-only training (tau, B=64), simulation trained and "
        "judged at one temperature",
        "Table 2: +5.9% / +7.9% tau at T=0/1",
        SIM_SWEEP_MATCHED,
        _size(paper_effect_a("exit", "token")),
        "exit - token per-step acceptance a of exact tau, the sim rows' setting (deep, train/eval B=64, "
        "lambda 0.1, tree normalisation) in the sweep trained at T = 0.5, judged at T = 0.5; relative tau "
        "beside it",
        ("sim_exittrain_matched",),
        _sim_claim_a(
            "sim_exittrain_matched",
            SIM_EXIT,
            "token",
            "token",
            (0.5,),
            SIM_MATCHED,
            SIM_SWEEP_MATCHED,
        ),
    ),
    Claim(
        "exit_vs_prefix_sim_matched",
        "exit-guided beats prefix-weighted training (tau, B=64), simulation "
        "trained and judged at one temperature",
        "Table 2: +7.8% / +4.4% tau at T=0/1",
        SIM_SWEEP_MATCHED,
        _size(paper_effect_a("exit", "prefix")),
        "exit - prefix per-step acceptance a of exact tau, the sim rows' setting (deep, train/eval B=64, "
        "lambda 0.1, tree normalisation) in the sweep trained at T = 0.5, judged at T = 0.5; relative tau "
        "beside it",
        ("sim_exittrain_matched",),
        _sim_claim_a(
            "sim_exittrain_matched",
            SIM_EXIT,
            SIM_PREFIX,
            "prefix",
            (0.5,),
            SIM_MATCHED,
            SIM_SWEEP_MATCHED,
        ),
    ),
    _sim_authors_row("exit", "token", 0.0, "Table 2: tau 8.36 -> 8.85 at T=0 (+5.9 %)"),
    _sim_authors_row("exit", "token", 1.0, "Table 2: tau 7.47 -> 8.06 at T=1 (+7.9 %)"),
    _sim_authors_row("exit", "prefix", 0.0, "Table 2: tau 8.21 -> 8.85 at T=0 (+7.8 %)"),
    _sim_authors_row("exit", "prefix", 1.0, "Table 2: tau 7.72 -> 8.06 at T=1 (+4.4 %)"),
    Claim(
        "univer_vs_rrs_wo",
        "UniVer's acceptance length exceeds recursive rejection without replacement "
        "(exitlaw's reading of UniVer: its algorithm is not public; see simulate/verifiers/univer.py)",
        "UniVer abstract: +4.2..+8.5% acceptance length over RRS without replacement",
        FIELD_LAB,
        Rule("size", "%", side=1, paper_effect=4.2),
        "UniVer - RRS-w/o relative tau on the same drafted Tsubame-shaped trees, equal-weight mean over the "
        "lab's two drafter-noise cells",
        ("field_lab",),
        _paired_claim(
            "field_lab", "univer-rrs_wo", {"lab": "field", "topology": "tsubame"}, 2, FIELD_LAB
        ),
    ),
    Claim(
        "hsd_vs_chain_sd",
        "HSD accepts more tokens than token-wise verification of the same drafted chain "
        "(exitlaw's reading of HSD, simulate/verifiers/hsd.py; row added after the field lab ran: the rule is "
        "the claim's own wording, a direction with no size for acceptance)",
        "HSD abstract: 'significantly boosts the expected number of accepted tokens', 'consistent improvements in "
        "acceptance rates' (its +12 % is EAGLE-3 end to end on GPUs, not this estimand)",
        FIELD_LAB,
        _dir("%"),
        "HSD - chain speculative sampling relative tau on the same drafted chains, equal-weight mean over the "
        "lab's two drafter-noise cells",
        ("field_lab",),
        _paired_claim(
            "field_lab", "hsd-chain_sd", {"lab": "field", "topology": "chain"}, 2, FIELD_LAB
        ),
    ),
    Claim(
        "exittrain_sr_gain",
        "ExitTrain raises end-to-end speedup SR over the starting drafter at B=64",
        "Table 1: +11.5..+13.8% avg SR (Qwen3-4B/8B); Table 4: +12.1/+12.5%",
        "`exitlaw bench decoding` at full scale (paper_repro/FULL_SCALE.md)",
        _dir("%", 11.5, at=GPU_ONLY),
        "relative SR, exit-guided vs starting drafter, paper-scale models",
        (),
        None,
    ),
    Claim(
        "end_to_end_speedup",
        "ExitTrain + TEV speeds up decoding by ~14% over DDTree (paper-scale models)",
        "Abstract, Table 1: +14% decode throughput",
        "paper_repro/FULL_SCALE.md (exitlaw bench decoding on a GPU)",
        _dir("%", 14.0, at=GPU_ONLY),
        "relative decode throughput, ExitTrain + TEV vs DDTree",
        (),
        None,
    ),
)


def evaluate(
    claim: Claim, inputs: dict, *, scale: str = "cpu"
) -> tuple[Verdict, Measurement | None]:
    """Rules R0 (scale), R1 (inputs), then R2-R5 on the claim's measurement."""
    v = not_decidable(claim.rule, scale)
    if v is not None:
        return v, None
    absent = [n for n in claim.inputs if inputs.get(n) is None]
    if absent or claim.measure is None:
        return missing(", ".join(absent) or "no measurement at this scale"), None
    try:
        m = claim.measure(inputs)
    except (MeasureError, PairedEffectError) as err:
        return missing(str(err)), None
    if claim.precondition is not None:
        holds, what = claim.precondition(inputs)
        if not holds:
            return Verdict(INCONCLUSIVE, f"outside the paper's regime: {what}"), m
    if m.test is not None:
        return decide_test(claim.rule, *m.test), m
    return decide(claim.rule, m.ci), m


def _sig(x: float) -> float:
    """9 significant digits: the ledger stays byte-identical across libm builds that differ in the last ulp."""
    return float(f"{x:.9g}")


NOT_RUN = "GPU, not run"


def row_source(claim: Claim, provenance: dict, measured: bool, scale: str = "cpu") -> str:
    """Where a row comes from: ``this run (input)`` or ``shipped (file, commit)`` per input, dirty commits
    flagged; ``GPU, not run`` for a claim decidable on a GPU only (docs/design.md §1.11)."""
    if scale not in claim.rule.decidable_at:
        return NOT_RUN if scale != "gpu" else f"not decidable at {scale}"
    if not claim.inputs:
        return "no input at this scale"
    parts = []
    for n in claim.inputs:
        p = provenance.get(n)
        if p is None:
            parts.append(f"missing ({n}: not an input of this ledger)")
            continue
        commit = str(p.get("git_commit", "unknown"))
        dirty = ", DIRTY: made from uncommitted changes" if "dirty" in commit else ""
        if p.get("origin") == "this run":
            parts.append(f"this run ({n}, {p.get('path')}{dirty})")
        else:
            parts.append(f"shipped ({p.get('path')}, commit {commit[:12]}{dirty})")
    return "; ".join(parts) + ("" if measured else " (not measured)")


def build_ledger(inputs: dict, provenance: dict | None = None, *, scale: str = "cpu") -> list[dict]:
    """One dict per claim; ``provenance`` maps input names to their records (``sha256``, ``origin`` etc.)."""
    provenance = provenance or {}
    rows = []
    for c in CLAIMS:
        v, m = evaluate(c, inputs, scale=scale)
        where = m.scale if m else (NOT_RUN if scale not in c.rule.decidable_at else "-")
        regime = m.regime if m else None
        words = scaled_verdict(c.rule, v.verdict, regime.scale_words() if regime else where)
        ci = (
            None
            if m is None or m.ci is None
            else {
                "estimate": _sig(m.ci.estimate),
                "lo": _sig(m.ci.lo),
                "hi": _sig(m.ci.hi),
                "level": m.ci.level,
                "computed": m.ci.is_exact,
            }
        )
        rows.append(
            {
                "key": c.key,
                "claim": c.claim,
                "paper": c.paper,
                "check": c.check,
                "rule": c.rule.text(),
                "estimand": c.estimand,
                "exitlaw": m.value
                if m
                else ("not run (GPU only)" if where == NOT_RUN else "not measured"),
                "scale": regime.text() if regime else where,
                "regime": regime.to_json() if regime else None,
                "source": row_source(c, provenance, m is not None, scale),
                "ci": ci,
                "verdict": v.verdict,
                # an ExitTrain row's verdict says its regime: scale, models, steps, temperatures, level
                "verdict_text": f"{words} [{regime.tag(scale=False)}]" if regime else words,
                "reason": v.reason,
                "mde": None if v.mde is None else _sig(v.mde),
                "inputs": {n: provenance.get(n, {}).get("sha256", "absent") for n in c.inputs},
                # the ExitTrain unit policy (EXITTRAIN_UNITS): both units with their levels, the power
                # against the paper's effect in a, what the row omits, and "observed, not decided"
                "units": None if m is None else m.units,
                "omits": None if m is None else m.omits,
                "observed": observed_not_decided(v.verdict, m.ci if m else None),
            }
        )
    return rows


def observed_not_decided(verdict: str, ci: Interval | None) -> str | None:
    """The flag of an undecided row whose primary interval excludes 0: a difference was observed (at the
    row's level) and the row's rules did not decide it (a failed precondition, a size beyond the paper's)."""
    if verdict != INCONCLUSIVE or ci is None or ci.is_exact or not (ci.lo > 0 or ci.hi < 0):
        return None
    side = "above" if ci.lo > 0 else "below"
    return (
        f"observed, not decided: the {100 * ci.level:g} % interval {ci.text(4)} lies {side} 0, but the "
        "row's rules do not decide it (see the reason)"
    )


def format_markdown(
    rows: list[dict], provenance: dict | None = None, header: dict | None = None
) -> str:
    def cell(s) -> str:
        return str(s).replace("|", "\\|").replace("\n", " ")

    lines = [
        "# exitlaw claims ledger",
        "",
        "Generated by `exitlaw ledger`. Each verdict follows a rule declared in the claim table before the data "
        "(exitlaw/paper_repro/ledger.py; the rules R0-R5 are stated in paper_repro/verdicts.py): reproduced "
        "(the CI excludes 0 on the paper's side; for a size rule it also contains the paper's effect; for "
        "equalities, a TOST at the paper's margin passes), contradicted (the CI excludes the paper's effect "
        "on the other side, or the margin), inconclusive (otherwise, with the reason and the minimal "
        "detectable effect). Every verdict says its scale; a row measured at mini scale reads reproduced / "
        "not reproduced / inconclusive at mini scale, and an ExitTrain row names its regime in brackets: "
        "model sizes, fine-tuning steps, the temperatures of its data, of its tree weights' scoring and of "
        "its judging, and its interval's level (paper_repro/regimes.py). " + EXITTRAIN_UNITS + ".",
        "",
    ]
    if header:
        lines += [", ".join(f"{k}: {v}" for k, v in header.items()), ""]
    lines += [
        "| claim | paper | rule | exitlaw | scale | verdict | reason | source | inputs |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        ins = ", ".join(f"{n} {h[:12]}" for n, h in r["inputs"].items()) or "-"
        lines.append(
            "| "
            + " | ".join(
                cell(x)
                for x in (
                    r["claim"],
                    r["paper"],
                    r["rule"] + "; estimand: " + r["estimand"],
                    r["exitlaw"]
                    + (f" **Units:** {units_text(r['units'])}." if r.get("units") else "")
                    + (f" **Omits:** {r['omits']}." if r.get("omits") else "")
                    + (f" **{r['observed']}**." if r.get("observed") else ""),
                    r["scale"],
                    f"**{r.get('verdict_text', r['verdict'])}**",
                    r["reason"],
                    r.get("source", "-"),
                    ins,
                )
            )
            + " |"
        )
    if provenance:
        lines += [
            "",
            "## Inputs",
            "",
            "| input | origin | file | sha256 | exitlaw | git commit | config |",
            "|---|---|---|---|---|---|---|",
        ]
        for name, p in provenance.items():
            lines.append(
                "| "
                + " | ".join(
                    cell(x)
                    for x in (
                        name,
                        p.get("origin", "-"),
                        p.get("path"),
                        p.get("sha256"),
                        p.get("exitlaw_version"),
                        str(p.get("git_commit"))
                        + (
                            " (DIRTY: uncommitted changes)"
                            if "dirty" in str(p.get("git_commit"))
                            else ""
                        )
                        + (f" ({p['filled']})" if p.get("filled") else ""),
                        p.get("config_sha256"),
                    )
                )
                + " |"
            )
    return "\n".join(lines) + "\n"


def ledger_json(
    rows: list[dict], provenance: dict | None = None, header: dict | None = None
) -> str:
    return (
        json.dumps(
            {"schema": SCHEMA, "header": header or {}, "inputs": provenance or {}, "rows": rows},
            indent=1,
            sort_keys=False,
        )
        + "\n"
    )


def write_ledger(
    rows: list[dict],
    out_dir: str | Path,
    provenance: dict | None = None,
    *,
    header: dict | None = None,
    overwrite: bool = False,
    stem: str = "ledger",
) -> tuple[Path, Path]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    md, js = out / f"{stem}.md", out / f"{stem}.json"
    if not overwrite and (md.exists() or js.exists()):
        raise FileExistsError(f"{md} or {js} already exists; pass --overwrite to replace")
    atomic_write_text(md, format_markdown(rows, provenance, header))
    atomic_write_text(js, ledger_json(rows, provenance, header))
    return md, js


STATUSES = VERDICTS  # the verdict vocabulary (kept under its old name for importers)

__all__ = [
    "CLAIMS",
    "Claim",
    "Measurement",
    "MeasureError",
    "build_ledger",
    "evaluate",
    "format_markdown",
    "write_ledger",
    "ledger_json",
    "REPRODUCED",
    "CONTRADICTED",
    "INCONCLUSIVE",
    "VERDICTS",
    "STATUSES",
]
