"""The ExitTrain rows' one unit policy (issue 49): decided in per-step acceptance ``a = 1 - 1/tau`` with
relative tau beside it, each with its interval and level, the power against the paper's effect, and the
size rule of a simulated ExitTrain effect in that unit."""

from __future__ import annotations

from exitlaw.paper_repro.ledger.claim_types import sig
from exitlaw.paper_repro.mini.exittrain.authors_regime import PAPER_TABLE2_TAU
from exitlaw.paper_repro.mini.exittrain.units import power_against
from exitlaw.paper_repro.verdicts import Interval, Rule

ACCEPTANCE = "a (= 1 - 1/tau)"


EXITTRAIN_UNITS = (
    "ExitTrain unit policy (issue 49): every ExitTrain row is decided in per-step acceptance a = 1 - 1/tau "
    "(primary; regime-invariant, paper_repro/AUTHORS_REGIME.md 'The unit') against the paper's Table 2 effect "
    "in a (the smaller of T = 0 and T = 1, unless the row is judged at one of them), with relative tau beside "
    "it; each unit with its interval and level; the row's power against the paper's effect in a; what the "
    "row does not judge; and a primary interval that excludes 0 in an undecided row is flagged 'observed, "
    "not decided'"
)


RELATIVE = "relative tau (%)"


def row_units(a_ci: Interval, rel: dict, paper_a: float, design_unit: str) -> dict:
    """Both units of one ExitTrain row (the policy above), each with its interval and level."""
    return {
        "primary": {
            "unit": ACCEPTANCE,
            "estimate": sig(a_ci.estimate),
            "lo": sig(a_ci.lo),
            "hi": sig(a_ci.hi),
            "level": a_ci.level,
        },
        "beside": {
            "unit": RELATIVE,
            "estimate": sig(float(rel["mean"])),
            "lo": sig(float(rel["lo"])),
            "hi": sig(float(rel["hi"])),
            "level": float(rel.get("level", a_ci.level)),
        },
        "paper_effect_primary": sig(paper_a),
        "power": sig(power_against(paper_a, a_ci.lo, a_ci.hi, a_ci.level)),
        "design_unit": design_unit,
    }


def _bracket(estimate: float, lo: float, hi: float, spec: str) -> str:
    """``estimate [lo, hi]`` in the format ``spec``."""
    return f"{estimate:{spec}} [{lo:{spec}}, {hi:{spec}}]"


def units_text(u: dict) -> str:
    p, b = u["primary"], u["beside"]
    return (
        f"{p['unit']} {_bracket(p['estimate'], p['lo'], p['hi'], '+.4f')} ({100 * p['level']:g} %); "
        f"{b['unit']} {_bracket(b['estimate'], b['lo'], b['hi'], '+.2f')} ({100 * b['level']:g} %); "
        f"power against the paper's effect in a ({p['unit'].split()[0]} {u['paper_effect_primary']:+.4f}): "
        f"{u['power']:.2f}; unit of the design: {u['design_unit']}"
    )


def cell_text(r: dict) -> str:
    d, rel = r["delta_a"], r["relative_tau_pct"]
    return (
        f"T = {float(r['temperature']):g}: {r['a']} - {r['b']} in a "
        f"{_bracket(d['mean'], d['lo'], d['hi'], '+.4f')}, relative tau "
        f"{rel['mean']:+.2f} % [{rel['lo']:+.2f}, {rel['hi']:+.2f}] ({100 * float(r['level']):g} %)"
    )


def size_rule(paper: float, alpha: float = 0.05) -> Rule:
    """R3 for a simulated ExitTrain effect: reproduced only when the CI excludes 0 AND contains the paper's
    (smallest stated) effect; a CI wholly below it is contradicted even when it excludes 0 (issue 34). In
    per-step acceptance a, the unit policy's primary unit (issue 49)."""
    return Rule("size", ACCEPTANCE, side=1, paper_effect=paper, alpha=alpha)


def table2_quote(a: str, b: str, temperature: float) -> str:
    """What the paper reports for ``a`` over ``b`` at ``temperature`` (Table 2's taus and their ratio)."""
    ta, tb = PAPER_TABLE2_TAU[a][temperature], PAPER_TABLE2_TAU[b][temperature]
    return f"Table 2: tau {tb:.2f} -> {ta:.2f} at T={temperature:g} ({100 * (ta / tb - 1):+.1f} %)"


def table2_effects(b: str) -> str:
    """What the paper reports for exit-guided training over ``b`` at T = 0 and 1 (Table 2's tau ratios)."""
    tau = PAPER_TABLE2_TAU
    effects = " / ".join(f"{100 * (tau['exit'][t] / tau[b][t] - 1):+.1f}%" for t in (0.0, 1.0))
    return f"Table 2: {effects} tau at T=0/1"


__all__ = [
    "ACCEPTANCE",
    "EXITTRAIN_UNITS",
    "RELATIVE",
    "table2_effects",
    "table2_quote",
    "units_text",
]
