"""Draft-OPD: on-policy, position-wise distillation of the drafter (the paper's Table 1 baseline).

Source: Lei et al. 2026, "Draft-OPD: On-Policy Distillation for Speculative Draft
Models" (arXiv 2605.29343). That paper trains the drafter on the states its own
drafting induces: target-assisted rollouts give stable continuations, drafting is
replayed from the positions where verification rejected the draft, and the drafter
gets target feedback on both its accepted and its rejected proposals. The TEV paper
uses its "position-wise distilled checkpoint" as a baseline.

Only the abstract and secondary summaries of that paper were available (not its loss
equations), so exitlaw **assumes**, for a block-parallel (DFlash) drafter and with
nothing but what the ExitTrain trainer already computes:

1. **on-policy block**: at every anchor the drafter samples its own chain
   ``x_d ~ q_d(. | c)``, ``d = 1..D`` (temperature 1, from the detached rows of the
   same drafter forward the CE uses; a generator separate from the anchors');
2. **target feedback**: the frozen target scores the chain under tree attention (one
   forward with the step's DDTrees), giving its next-token row ``p_v`` at every chain
   node ``v`` (``p_root`` = the causal row at the anchor) at the trainer's target temperature;
3. **visited states instead of replay**: a sampling verifier examines position ``d`` iff
   it accepted ``x_1 .. x_{d-1}``, which happens with the chain's prefix probability
   ``P(x_<d) = prod_{i<d} p(x_i | c, x_<i)`` (``P(par(v))``). Rather than sampling that
   event and replaying drafting from the rejected position (which needs new target
   states the trainer does not have), position ``d`` is weighted by its expected
   visit ``P(par(v))``: the accepted positions and the first rejected one, in expectation.
   Anchors are already spread over every target-rollout position, so the states a
   replay would start from are among the trainer's anchors;
4. **position-wise distillation**: forward KL ``KL(p_par(v) || q_depth(v))`` with the full
   target row as soft label (its gradient is that of the soft cross-entropy);
5. the term is the visit-weighted mean over the batch's chain positions
   (normalisation ``batch`` only), and it replaces the tree term:
   ``loss = CE + lambda * opd_term``, with the same CE, lambda, data and anchors as
   the other objectives (the step's DDTrees are still built and scored for the logged
   coverage, so the compute is matched plus one chain per anchor). With an edge floor
   ``alpha`` the visit weights use the floored edges, as ``P`` does everywhere.

The simulated trainer (``exitlaw.simulate``) samples the verification instead and
replays once; both name it ``draft-opd``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from exitlaw.engine.training.law import TreeBatch, raw_weights, tree_law
from exitlaw.theory import DistributionError, DraftTree


@dataclass(frozen=True)
class OPDChains:
    """The drafter's sampled chains of a batch, scored by the frozen target."""

    chains: TreeBatch  # K chains of N = D + 1 nodes (padded)
    edge: torch.Tensor  # [K, N] float64 target edge probabilities a(u)
    # [K, N, V] float32: row v = log p_v (the target's next-token row at chain node v)
    target_logp: torch.Tensor


@torch.no_grad()
def sample_chains(
    logits: torch.Tensor, roots: torch.Tensor, rng: np.random.Generator
) -> list[DraftTree]:
    """One chain per anchor, ``x_d ~ softmax(logits[k, d])`` (``logits [K, D, V]``, ``roots [K]``).

    Inverse-CDF sampling in float64 on the host from ``rng`` (one uniform per row), so
    a run's chains depend only on its step's generator (exact resume).
    """
    if logits.ndim != 3 or roots.shape != (logits.shape[0],):
        raise DistributionError(
            f"need logits [K, D, V] and roots [K], got {tuple(logits.shape)}, {tuple(roots.shape)}"
        )
    probs = torch.softmax(logits.detach().double(), dim=-1).cpu().numpy()  # [K, D, V]
    cdf = np.cumsum(probs, axis=-1)
    u = rng.random(probs.shape[:2]) * cdf[..., -1]  # [K, D]
    tok = np.minimum((cdf < u[..., None]).sum(-1), probs.shape[-1] - 1)  # first index with cdf >= u
    return [DraftTree.chain(tok[k].tolist(), root_token=int(roots[k])) for k in range(tok.shape[0])]


def draft_opd_term(
    logits: torch.Tensor, log_z: torch.Tensor, opd: OPDChains, edge_floor: float | None = None
) -> torch.Tensor:
    """``sum_v wt(v) KL(p_par(v) || q_depth(v))`` with ``wt = P(par(v)) / sum P(par(.))`` (module docstring).

    ``logits [K, D, V]`` (differentiable), ``log_z [K, D]`` their log-normalisers.
    """
    chains = opd.chains
    k, d, vocab = logits.shape
    if (
        chains.valid.shape[0] != k
        or opd.target_logp.shape[:2] != chains.valid.shape
        or opd.target_logp.shape[2] != vocab
    ):
        raise DistributionError(
            f"chains {tuple(chains.valid.shape)} and target rows {tuple(opd.target_logp.shape)} "
            f"do not match the drafter rows {tuple(logits.shape)}"
        )
    if int(chains.depth.max()) > d:
        raise DistributionError(
            f"a chain is deeper ({int(chains.depth.max())}) than the {d} draft rows"
        )
    law = tree_law(chains, opd.edge, edge_floor)
    s = raw_weights("draft-opd", law, chains)  # P(par(v)), zero at roots and padding
    total = s.sum()
    wt = (s / total if float(total) > 0 else s).to(torch.float32)  # the visit-weighted mean
    k_idx = torch.arange(k, device=logits.device)[:, None].expand_as(chains.parent)
    # [K, N, V] target row of each node's parent
    log_p = opd.target_logp[k_idx, chains.parent.clamp(min=0)]
    log_q = (
        logits.float()[k_idx, (chains.depth - 1).clamp(min=0)]
        - log_z[k_idx, (chains.depth - 1).clamp(min=0)][..., None]
    )
    p = log_p.exp()
    kl = torch.where(p > 0, p * (log_p - log_q), torch.zeros_like(p)).sum(-1)  # [K, N]
    return torch.where(chains.nonroot, wt * kl, torch.zeros_like(kl)).sum()


__all__ = ["OPDChains", "sample_chains", "draft_opd_term"]
