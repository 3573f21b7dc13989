"""The simulation-sweep ExitTrain rows (``exitlaw simulate exittrain --sweep``, and its matched sweep at
``T = 0.5``): their setting, the sweep's regime, and the measure in ``a`` from the sweep's per-seed exact
tau with relative tau beside it."""

from __future__ import annotations

from typing import Callable

from exitlaw.paper_repro.ledger.claim_types import Claim, MeasureError, Measurement, need
from exitlaw.paper_repro.ledger.exittrain_units import (
    ACCEPTANCE,
    cell_text,
    row_units,
    size_rule,
    table2_effects,
)
from exitlaw.paper_repro.ledger.paired import paired_claim
from exitlaw.paper_repro.mini.exittrain.units import paper_effect_a, sweep_units
from exitlaw.paper_repro.regimes import Regime, sim_sweep_run
from exitlaw.paper_repro.verdicts import Interval

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


def _sim_regime(source: str, regime: str = "deep") -> Callable[[dict, float], Regime]:
    """A simulation sweep's regime ``regime`` from the config its files record."""
    path, run = SWEEP_FILES[source]
    return lambda inputs, level: sim_sweep_run(need(inputs, source), regime, run=run, source=path)


def _sweep_of(inputs: dict, source: str) -> dict:
    files = need(inputs, source)
    sweeps = [f for f in (files if isinstance(files, list) else [files]) if "regimes" in f]
    if len(sweeps) != 1:
        raise MeasureError(f"{source}: expected one sweep with per-seed tau, found {len(sweeps)}")
    return sweeps[0]


def sim_claim_a(
    source: str, a_name: str, b_name: str, b: str, temps, selector: dict, label: str
) -> Callable[[dict], Measurement]:
    """A simulation-sweep row in ``a`` from the sweep's per-seed exact tau (equal-weight mean over the judged
    temperatures, paired t over seeds), relative tau beside it the same way; the pooled row omits the
    temperatures one by one."""
    rel_measure = paired_claim(
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
        units = row_units(
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
                    cell_text({**x, "a": "exit", "b": b, "temperature": x["temperatures"][0]})
                    for x in per_t
                )
            )
        if others:
            parts.append(
                "the same drafters judged at the sweep's other temperatures: "
                + "; ".join(
                    cell_text({**x, "a": "exit", "b": b, "temperature": x["temperatures"][0]})
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


def sim_row(b: str, *, matched: bool = False) -> Claim:
    """The simulation sweep's row: exit-guided training against ``b`` (``token`` or ``prefix``) in the
    deep regime at B = 64, judged at T = 0 and 1; ``matched``: in the sweep trained at T = 0.5 and
    judged there."""
    name = {"token": "token-only training", "prefix": "prefix-weighted training"}[b]
    arm = {"token": "token", "prefix": SIM_PREFIX}[b]
    if matched:
        key, wording, source = (
            f"exit_vs_{b}_sim_matched",
            "simulation trained and judged at one temperature",
            "sim_exittrain_matched",
        )
        setting = (
            "the sim rows' setting (deep, train/eval B=64, lambda 0.1, tree normalisation) in the sweep "
            "trained at T = 0.5, judged at T = 0.5"
        )
        temps, selector, label = (0.5,), SIM_MATCHED, SIM_SWEEP_MATCHED
    else:
        key, wording, source = f"exit_vs_{b}_sim", "simulation", "sim_exittrain_sweep"
        setting = (
            "sweep regime deep, train B=64, eval B=64, lambda 0.1, tree normalisation; per seed the "
            "equal-weight mean over T=0 and T=1, 95 % t over seeds"
        )
        temps, selector, label = (0.0, 1.0), SIM_DEEP, SIM_SWEEP
    return Claim(
        key,
        f"exit-guided beats {name} (tau, B=64), {wording}",
        table2_effects(b),
        label,
        size_rule(paper_effect_a("exit", b)),
        f"exit - {b} per-step acceptance a of exact tau, {setting}; relative tau beside it",
        (source,),
        sim_claim_a(source, SIM_EXIT, arm, b, temps, selector, label),
    )


__all__ = [
    "SIM_DEEP",
    "SIM_EXIT",
    "SIM_MATCHED",
    "SIM_PREFIX",
    "SIM_SWEEP",
    "SIM_SWEEP_MATCHED",
    "SWEEP_FILES",
    "sim_row",
]
