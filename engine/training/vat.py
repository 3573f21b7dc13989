"""VAT: verification-aware reweighting of the drafter's per-position loss (a training baseline).

Source: Gu et al. 2026, "Verification-Aware Training" (VAT; huggingface.co/papers/2608.30135),
cited by the TEV paper as "VAT reweights simulated first-rejection positions". From its
abstract: verification is sequential and discards every position from the first rejection
onward, while drafter training imitates the target token by token under a *fixed*
per-position weight schedule (DFlash's ``exp(-(d - 1) / gamma)`` decay). VAT simulates
verification at every training step and (i) trains a jointly learned binary *verification
head* on whether each position survives, (ii) replaces the fixed schedule by
*verification-adaptive weighting*: full weight up to each sample's first rejection point,
with the decay re-anchored to start there.

Only the abstract was available (not the loss equations), so exitlaw **assumes**:

1. **simulated verification** is the exact-match test of the drafter's greedy token
   ``argmax_x q_d(x | c)`` against the target-generated continuation token ``y_d`` (the
   CE targets) at every valid position; the first rejection ``j`` is the first valid
   ``d`` with a mismatch (1-based), ``j = D`` when every valid position matches. It is
   deterministic given the batch (no random numbers), so the simulated trainer
   (``exitlaw.simulate``) and this one give identical weights on identical inputs;
2. **weights** ``v_d = 1`` for ``d <= j`` (the rejected position keeps full weight: it is
   the one verification ends on) and ``v_d = exp(-(d - j) / gamma)`` for ``d > j``;
   ``gamma = 4`` (:data:`VAT_GAMMA`; the abstract gives no value), ``v = 0`` at invalid positions;
3. the **term** is the ``v``-weighted mean of ``-log q_d(y_d)`` over the batch's valid
   positions (normalisation ``batch`` only; no edge floor: it uses no tree probabilities),
   and, as for draft-opd, it replaces the tree term: ``loss = CE + lambda * vat_term``
   (same CE, lambda, data and anchors as every other objective; the step's trees are still
   built and scored for the logged coverage);
4. the **verification head is omitted**: the drafters here have no separate hidden-state
   head to attach it to, and its loss does not change the drafter's weighting above.
"""

from __future__ import annotations

import torch

from exitlaw.theory import DistributionError

VAT_GAMMA = 4.0  # decay constant after the first rejection (assumption 2)


@torch.no_grad()
def first_rejection(
    draft_top: torch.Tensor, targets: torch.Tensor, valid: torch.Tensor
) -> torch.Tensor:
    """``j [K]`` (1-based): the first valid position whose greedy draft token differs from the target's; ``D`` if none."""
    if draft_top.shape != targets.shape or valid.shape != targets.shape or targets.ndim != 2:
        raise DistributionError(
            f"draft tokens, targets and valid must share one [K, D] shape, got "
            f"{tuple(draft_top.shape)}, {tuple(targets.shape)}, {tuple(valid.shape)}"
        )
    d = targets.shape[1]
    mismatch = (draft_top != targets) & valid
    first = mismatch.to(torch.int8).argmax(dim=1) + 1  # argmax: first True
    return torch.where(mismatch.any(dim=1), first, torch.full_like(first, d))


@torch.no_grad()
def vat_position_weights(
    j: torch.Tensor, valid: torch.Tensor, gamma: float = VAT_GAMMA
) -> torch.Tensor:
    """``v [K, D]`` float64: 1 up to and at ``j``, ``exp(-(d - j) / gamma)`` after it, 0 at invalid positions."""
    if not (gamma > 0 and gamma < float("inf")):
        raise DistributionError(f"VAT decay gamma must be finite and > 0, got {gamma!r}")
    d = torch.arange(1, valid.shape[1] + 1, device=valid.device, dtype=torch.float64)[None]
    after = (d - j[:, None].to(torch.float64)).clamp(min=0.0)
    return torch.where(valid, torch.exp(-after / gamma), torch.zeros_like(after))


def vat_term(
    logits: torch.Tensor,
    log_z: torch.Tensor,
    targets: torch.Tensor,
    valid: torch.Tensor,
    gamma: float = VAT_GAMMA,
) -> torch.Tensor:
    """``sum v_d (-log q_d(y_d)) / sum v_d`` over the batch (module docstring); 0 without valid positions.

    ``logits [K, D, V]`` (differentiable), ``log_z [K, D]`` their log-normalisers,
    ``targets``/``valid [K, D]`` the target continuation and its mask.
    """
    k, d, _ = logits.shape
    if targets.shape != (k, d) or valid.shape != (k, d):
        raise DistributionError(f"targets and valid must have shape ({k}, {d})")
    j = first_rejection(logits.detach().argmax(dim=-1), targets, valid)
    v = vat_position_weights(j, valid, gamma)
    total = v.sum()
    wt = (v / total if float(total) > 0 else v).to(torch.float32)
    nll = log_z - logits.float().gather(-1, targets.clamp(min=0)[..., None])[..., 0]
    return torch.where(valid, wt * nll, torch.zeros_like(nll)).sum()


__all__ = ["VAT_GAMMA", "first_rejection", "vat_position_weights", "vat_term"]
