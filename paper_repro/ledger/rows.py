"""The ledger's rows: rules R0 (scale) and R1 (inputs), then R2-R5 on each claim's measurement
(:func:`evaluate`), where each row comes from (:func:`row_source`), and one dict per claim
(:func:`build_ledger`)."""

from __future__ import annotations

from exitlaw.paper_repro.ledger.claim_types import Claim, MeasureError, Measurement, sig
from exitlaw.paper_repro.ledger.claims import CLAIMS
from exitlaw.paper_repro.paired_effects import PairedEffectError
from exitlaw.paper_repro.verdicts import (
    INCONCLUSIVE,
    VERDICTS,
    Interval,
    Verdict,
    decide,
    decide_test,
    missing,
    not_decidable,
    scaled_verdict,
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
                "estimate": sig(m.ci.estimate),
                "lo": sig(m.ci.lo),
                "hi": sig(m.ci.hi),
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
                "mde": None if v.mde is None else sig(v.mde),
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


STATUSES = VERDICTS  # the verdict vocabulary (kept under its old name for importers)


__all__ = ["NOT_RUN", "STATUSES", "build_ledger", "evaluate", "observed_not_decided", "row_source"]
