"""The claim table's data types: a :class:`Claim` (its rule, estimand and inputs, declared before any
data), the :class:`Measurement` its measure returns, the error of an input that cannot give the estimand,
and the rule shorthands (direction, equivalence) the table is written with."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from exitlaw.paper_repro.regimes import Regime
from exitlaw.paper_repro.verdicts import Interval, Rule


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


def need(inputs: dict, name: str) -> Any:
    """The input ``name`` of a measure (``KeyError`` when it is absent)."""
    data = inputs.get(name)
    if data is None:
        raise KeyError(name)
    return data


def dir_rule(
    unit: str, paper: float | None = None, side: int = 1, at=("cpu", "gpu"), alpha: float = 0.05
) -> Rule:
    """A direction rule (R2): the CI excludes 0 on the paper's side."""
    return Rule("direction", unit, side=side, paper_effect=paper, decidable_at=at, alpha=alpha)


def eq_rule(margin: float, unit: str = "tokens") -> Rule:
    """An equivalence rule (R4): a TOST at ``margin``."""
    return Rule("equivalence", unit, margin=margin)


def sig(x: float) -> float:
    """9 significant digits: the ledger stays byte-identical across libm builds that differ in the last ulp."""
    return float(f"{x:.9g}")


__all__ = ["Claim", "MeasureError", "Measurement"]
