"""The authors'-recipe ExitTrain rows (``paper_repro/AUTHORS_REGIME.md``), on the mini engine run and in
simulation (``exitlaw repro sim-authors``): four co-primary comparisons each, Bonferroni, in per-step
acceptance ``a`` against the paper's Table 2 effect in that unit, with their preconditions."""

from __future__ import annotations

from typing import Callable

from exitlaw.paper_repro.ledger.claim_types import Claim, MeasureError, Measurement, dir_rule, need
from exitlaw.paper_repro.ledger.exittrain_units import (
    ACCEPTANCE,
    row_units,
    size_rule,
    table2_quote,
)
from exitlaw.paper_repro.mini.exittrain.authors_regime import paper_margin
from exitlaw.paper_repro.mini.exittrain.units import power_against
from exitlaw.paper_repro.regimes import Regime, RegimeError, authors_regime_run
from exitlaw.paper_repro.verdicts import Interval, Rule

# the authors'-recipe run (AUTHORS_REGIME.md): four co-primary comparisons, Bonferroni (98.75 % CIs), in
# per-step acceptance a = 1 - 1/tau against the paper's Table 2 effect in that unit (paper_margin)
AUTHORS_ALPHA = 0.05 / 4


AUTHORS_REGIME = (
    "the authors'-recipe mini run (CPU), `exitlaw repro mini --preset authors-regime`, "
    "design paper_repro/AUTHORS_REGIME.md"
)


AUTHORS_INPUTS = ("authors_regime", "authors_regime_data")

# the four co-primary comparisons (a, b, T), in the ledger's order; the engine run and the simulation judge each
COMPARISONS = tuple(("exit", b, t) for b in ("token", "prefix") for t in (0.0, 1.0))


def _units(ci: Interval, rel: dict, paper_a: float, design_unit: str) -> dict:
    """A row's two units: ``a`` (decided) and relative tau beside it at the row's level."""
    return row_units(ci, {**rel, "level": ci.level}, paper_a, design_unit)


def _primary_record(res: dict, file: str, a: str, b: str, temperature: float) -> dict:
    """The one ``analysis.primary`` record of ``a - b`` at ``temperature`` (arms compared by name, a
    strength tag ``@...`` aside), or ``MeasureError`` naming ``file``."""
    hits = [
        r
        for r in res.get("analysis", {}).get("primary", [])
        if str(r.get("a", "")).split("@")[0] == a
        and str(r.get("b", "")).split("@")[0] == b
        and float(r.get("temperature", -1)) == temperature
    ]
    if len(hits) != 1:
        raise MeasureError(
            f"{file}: expected one primary '{a} - {b}' record at T = {temperature:g}, found {len(hits)}"
        )
    return hits[0]


def _authors_rule(a: str, b: str, temperature: float) -> Rule:
    """The design's verdict rule: reproduced when the 98.75 % CI of ``a - b`` in per-step acceptance is above
    0; contradicted (not reproduced) when it lies below the paper's effect in that unit."""
    return dir_rule(ACCEPTANCE, paper_margin(a, b, temperature), alpha=AUTHORS_ALPHA)


def _authors_claim(a: str, b: str, temperature: float) -> Callable[[dict], Measurement]:
    """The measure of one co-primary row of the authors'-recipe run: its ``a - b`` interval at ``temperature``
    (B = 64) from ``results.json``'s ``analysis.primary``, with the run's regime."""

    def measure(inputs: dict) -> Measurement:
        res = need(inputs, "authors_regime")
        r = _primary_record(res, "authors_regime/results.json", a, b, temperature)
        try:
            d, rel = r["delta_a"], r["relative_tau_pct"]
            ci = Interval(float(d["mean"]), float(d["lo"]), float(d["hi"]), float(r["level"]))
            translated = float(r["paper_effect_translated_pct"])
        except (KeyError, TypeError, ValueError) as err:
            raise MeasureError(f"a primary '{a} - {b}' record lacks {err}") from None
        try:
            regime = authors_regime_run(
                res, need(inputs, "authors_regime_data"), level=ci.level
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
                ci, rel, paper_margin(a, b, temperature), "a (paper_repro/AUTHORS_REGIME.md)"
            ),
            omits="the secondary comparisons (exit - base, the strength arm, the authors' literal arms, "
            "observed tau; 95 %, no verdict) in authors_regime/results.md",
        )

    return measure


def authors_precondition(inputs: dict) -> tuple[bool, str]:
    """AUTHORS_REGIME.md's precondition, at T = 0 and T = 1: token - base in ``a`` has its 95 % interval
    above 0 and the token arm's tree depth is within 10 % of the base's."""
    pre = need(inputs, "authors_regime")["analysis"]["precondition"]
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


def authors_row(a: str, b: str, temperature: float) -> Claim:
    """The engine run's co-primary row ``a - b`` at ``temperature``."""
    name = {"token": "token-only fine-tuning", "prefix": "prefix-weighted (P-weighted) training"}[b]
    return Claim(
        f"exit_vs_{b}_authors_t{temperature:g}",
        f"exit-guided beats {name} (B = 64), judged at T = {temperature:g}, on the authors' recipe",
        table2_quote(a, b, temperature),
        AUTHORS_REGIME,
        _authors_rule(a, b, temperature),
        f"{a} - {b} per-step acceptance ({ACCEPTANCE}, Rao-Blackwellised tau), code prompts, "
        f"T = {temperature:g}, B = 64, 98.75 % (Bonferroni over the four co-primary comparisons)",
        AUTHORS_INPUTS,
        _authors_claim(a, b, temperature),
        authors_precondition,
    )


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
        res = need(inputs, "sim_exittrain_authors")
        r = _primary_record(res, "sim_exittrain_authors/results.json", a, b, temperature)
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
                rel,
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
    pre = need(inputs, "sim_exittrain_authors")["analysis"]["precondition"]
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


def sim_authors_row(a: str, b: str, temperature: float) -> Claim:
    """The simulation's co-primary row ``a - b`` at ``temperature``."""
    name = {"token": "token-only training", "prefix": "prefix-weighted (P_tgt) training"}[b]
    return Claim(
        f"exit_vs_{b}_sim_authors_t{temperature:g}",
        f"exit-guided beats {name} (B = 64), judged at T = {temperature:g}, simulation of the authors' recipe",
        table2_quote(a, b, temperature),
        SIM_AUTHORS,
        size_rule(paper_margin(a, b, temperature), alpha=0.05 / 4),
        f"{a} - {b} per-step acceptance a of exact tau, greedy data, weights at T = 1, the authors' coded "
        f"strength matched across arms, T = {temperature:g}, B = 64, 98.75 % (Bonferroni over four); "
        "relative tau beside it",
        ("sim_exittrain_authors",),
        _sim_authors_claim(a, b, temperature),
        sim_authors_precondition,
    )


__all__ = [
    "AUTHORS_ALPHA",
    "AUTHORS_INPUTS",
    "AUTHORS_REGIME",
    "COMPARISONS",
    "SIM_AUTHORS",
    "authors_precondition",
    "sim_authors_precondition",
]
