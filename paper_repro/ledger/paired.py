"""The measure of a paired-effect row (:func:`exitlaw.paper_repro.paired_effects.paired_interval`): the
field lab's rows and, with the source run's regime, the ExitTrain rows' relative tau."""

from __future__ import annotations

from typing import Callable

from exitlaw.paper_repro.ledger.claim_types import MeasureError, Measurement, need
from exitlaw.paper_repro.paired_effects import paired_interval
from exitlaw.paper_repro.regimes import Regime, RegimeError
from exitlaw.paper_repro.verdicts import Interval


def paired_claim(
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
        ci, recs = paired_interval(need(inputs, source), comparison, selector, cells)
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


__all__ = []
