"""The conformance-kit row's measure (Theorem 1, Corollary 1): the kit's calibrated tests on every
verifier, as one test outcome (rejected or not, with its minimal power)."""

from __future__ import annotations

from exitlaw.paper_repro.ledger.claim_types import MeasureError, Measurement, need


def kit(inputs: dict) -> Measurement:
    checks = need(inputs, "checks")
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


__all__ = ["kit"]
