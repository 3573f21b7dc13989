"""The paper-regime ExitTrain rows (``paper_repro/PAPER_REGIME.md``): their cells, the run's regime, the
measure in ``a`` from ``paper_regime/acceptance.json`` with relative tau beside it, and the precondition
(token-only fine-tuning beats the base drafter)."""

from __future__ import annotations

from typing import Callable

from exitlaw.paper_repro.ledger.claim_types import Claim, MeasureError, Measurement, dir_rule, need
from exitlaw.paper_repro.ledger.exittrain_units import (
    ACCEPTANCE,
    cell_text,
    row_units,
    table2_effects,
)
from exitlaw.paper_repro.ledger.paired import paired_claim
from exitlaw.paper_repro.mini.exittrain.units import find as find_units
from exitlaw.paper_repro.mini.exittrain.units import paper_effect_a, power_against
from exitlaw.paper_repro.regimes import Regime, paper_regime_run
from exitlaw.paper_repro.verdicts import Interval

# the paper-regime run's two primary comparisons share alpha 0.05 (Bonferroni: 0.025 each, 97.5 % CIs)
PRIMARY_ALPHA = 0.025


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


REGIME_INPUTS = ("paper_regime", "paper_regime_data", "paper_regime_units")


def _paper_regime(role: str) -> Callable[[dict, float], Regime]:
    """The paper-regime run's regime (results.json, ft_data/fresh_prompts.json) for a row of ``role``."""
    return lambda inputs, level: paper_regime_run(
        need(inputs, "paper_regime"), need(inputs, "paper_regime_data"), role=role, level=level
    )


def regime_claim_a(
    a: str, b: str, budget, comparison: str, selector: dict, role: str
) -> Callable[[dict], Measurement]:
    """A paper-regime row in ``a`` (``paper_regime/acceptance.json``, recomputed from the run's cells by
    ``paper_repro/mini/exittrain/units.py``), its relative tau (the run's report) beside it, and the same
    comparison at T = 0 and T = 1, which the row does not judge."""
    rel_measure = paired_claim(
        "paper_regime", comparison, selector, 1, PAPER_REGIME, _paper_regime(role)
    )

    def measure(inputs: dict) -> Measurement:
        rel_m = rel_measure(inputs)
        units = need(inputs, "paper_regime_units")
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
        u = row_units(
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
            + "; ".join(cell_text(c) for c in cells),
        )

    return measure


def regime_precondition(inputs: dict) -> tuple[bool, str]:
    """The paper's regime (PAPER_REGIME.md): token-only fine-tuning beats the base drafter at the primary cell."""
    pre = need(inputs, "paper_regime")["analysis"]["precondition"]
    t = pre["token_minus_base"]
    units = need(inputs, "paper_regime_units")
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


def primary_row(b: str) -> Claim:
    """The paper-regime run's primary row: exit-guided training against ``b`` (``token`` or ``prefix``)
    at the primary cell, quoting Table 2's tau ratios at T = 0 and 1."""
    name = {
        "token": "matched token-only fine-tuning",
        "prefix": "prefix-weighted (P-weighted) training",
    }[b]
    return Claim(
        f"exit_vs_{b}",
        f"exit-guided beats {name} (tau, B=64), engine",
        table2_effects(b),
        PAPER_REGIME,
        dir_rule(ACCEPTANCE, paper_effect_a("exit", b), alpha=PRIMARY_ALPHA),
        f"exit - {b} per-step acceptance a, paper-regime primary cell (code, T=T_s, B=64, lambda 0.1), "
        "97.5 % (Bonferroni over the two primary comparisons); relative tau beside it",
        REGIME_INPUTS,
        regime_claim_a("exit", b, 64, f"exit-{b}", REGIME_PRIMARY, "primary"),
        regime_precondition,
    )


__all__ = [
    "PAPER_REGIME",
    "PRIMARY_ALPHA",
    "REGIME_BUDGETS",
    "REGIME_INPUTS",
    "REGIME_PRIMARY",
    "REGIME_SECONDARY",
    "primary_row",
    "regime_precondition",
]
