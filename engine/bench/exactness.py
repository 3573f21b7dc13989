"""Where a T = 0 output leaves greedy autoregressive decoding, and whether that is a near-tie.

At ``T = 0`` every exact method must emit greedy AR's tokens. When a run does not, the first differing
token says which: greedy's log-probability lead over its runner-up there (``ar_margin``, recomputed by
one causal forward over the context and AR's tokens before it) is either below
:data:`~exitlaw.theory.sampling_settings.NEAR_TIE_MARGIN` (a *near-tie*: batch-variant numerics may flip
it) or not (an *error*: the method or a kernel computed something else). The H200 run that found a
kernel fault this way is ``paper_repro/results/gpu/README.md``.
"""

from __future__ import annotations

from typing import Any, Sequence

import torch

from exitlaw.theory.sampling_settings import NEAR_TIE_MARGIN


def first_difference(tokens: Sequence[int], reference: Sequence[int]) -> int | None:
    """The first index where the two sequences differ (the shorter one's length when one is a prefix of
    the other), or ``None`` when they are equal."""
    if list(tokens) == list(reference):
        return None
    return next(
        (i for i, (a, b) in enumerate(zip(tokens, reference)) if a != b),
        min(len(tokens), len(reference)),
    )


@torch.inference_mode()
def divergence(
    target,
    context: Sequence[int],
    tokens: Sequence[int],
    reference: Sequence[int],
    *,
    tie_margin: float = NEAR_TIE_MARGIN,
) -> dict[str, Any] | None:
    """``None`` when ``tokens`` equal greedy AR's ``reference`` after ``context``; else the first
    difference: its ``position``, both tokens, greedy's log-probability lead over its runner-up there
    (``ar_margin``), how far the emitted token trails greedy's (``token_gap``, log-probabilities), and
    ``kind``: ``near-tie`` (``ar_margin < tie_margin``), ``error``, or ``length`` (one output is a
    prefix of the other: a stop token emitted or missed)."""
    j = first_difference(tokens, reference)
    if j is None:
        return None
    if j == min(len(tokens), len(reference)):
        return {"position": j, "kind": "length", "length": len(tokens), "ar_length": len(reference)}
    cache = target.new_cache()
    ids = torch.tensor([*context, *reference[:j]], dtype=torch.long)
    logits = target.prefill(cache, ids, all_logits=False).logits[-1].double()
    logp = torch.log_softmax(logits, -1)
    top = torch.topk(logp, 2).values
    ar_token, token = int(reference[j]), int(tokens[j])
    margin = float(top[0] - top[1])
    return {
        "position": j,
        "kind": "near-tie" if margin < tie_margin else "error",
        "ar_token": ar_token,
        "token": token,
        "ar_margin": margin,
        "token_gap": float(logp[ar_token] - logp[token]),
    }


def summary(rows: Sequence[dict[str, Any]]) -> str:
    """``"2 errors, 1 near-tie"``-style counts of divergence kinds (empty: ``"none"``)."""
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["kind"]] = counts.get(r["kind"], 0) + 1
    if not counts:
        return "none"
    plural = {"error": "errors", "near-tie": "near-ties", "length": "length differences"}
    return ", ".join(
        f"{n} {kind if n == 1 else plural.get(kind, kind)}" for kind, n in sorted(counts.items())
    )


__all__ = ["first_difference", "divergence", "summary"]
