"""ExitTrain: the exit-guided drafter loss (docs/design.md §1.10, "ExitTrain").

For a batch of ``K`` anchors, each with the drafter's per-depth logits
``[D, V]`` and a draft tree of ``N`` (padded) nodes scored by the frozen target:

    loss = CE  +  lambda * sum_k sum_{v != root} wt_k(v) * (-log q_{k, depth(v)}(x_v))

* ``CE``: dense token cross-entropy of every depth row against the
  target-generated continuation (mean over valid ``(anchor, depth)`` pairs);
* ``wt``: the objective's node weights under its normalisation, from the detached
  exit law (:mod:`.exittrain_law`: ``token``, ``prefix``, ``exit``, ``exit-depth``;
  ``batch``, ``tree``, ``nodes``; the edge floor); ``token`` trains with ``lambda = 0``;
* ``draft-opd`` replaces the tree term by its on-policy distillation term (:mod:`.draft_opd`);
* ``vat`` replaces it by the verification-aware reweighted CE (:mod:`.vat`).

``-log q_d(x_v) = logZ_d - z_d[x_v]``: one log-normaliser per distinct draft row
(``K * D`` of them, shared with the CE term) and gathered logits; no node ever
materialises a full-vocabulary distribution.

Presets (:data:`~exitlaw.engine.training.config.PRESETS`): ``paper`` is the paper's reading
(``exit``, ``batch``, lambda 1, no floor, budget 64); ``authors-code`` is the public
code's (``prefix`` as its configs ship, ``nodes``, lambda 0.1, floor 1e-4, budget 32).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from exitlaw.engine.training.draft_opd import OPDChains, draft_opd_term
from exitlaw.engine.training.law import TreeBatch, TreeLaw, objective_weights, raw_weights, tree_law
from exitlaw.engine.training.objectives import (
    NORMALISATIONS,
    OBJECTIVES,
    ObjectiveError,
    check_objective,
)
from exitlaw.engine.training.vat import vat_term
from exitlaw.theory import DistributionError


def draft_log_normalisers(logits: torch.Tensor) -> torch.Tensor:
    """``logZ [K, D]``: one ``logsumexp`` per distinct draft row of ``logits [K, D, V]`` (float32)."""
    if logits.ndim != 3:
        raise DistributionError(
            f"draft logits must have shape [K, D, V], got {tuple(logits.shape)}"
        )
    return torch.logsumexp(logits.float(), dim=-1)


def gathered_nll(
    logits: torch.Tensor, log_z: torch.Tensor, depth_row: torch.Tensor, token: torch.Tensor
) -> torch.Tensor:
    """``-log q_{k, d}(x) = logZ[k, d] - z[k, d, x]`` for index tensors ``depth_row, token [K, M]``.

    ``depth_row`` is 0-based (draft row ``d - 1`` scores a node at depth ``d``).
    """
    rows = depth_row.clamp(min=0)
    k_idx = torch.arange(logits.shape[0], device=logits.device)[:, None].expand_as(rows)
    z = logits[k_idx, rows, token].float()
    return log_z[k_idx, rows] - z


def token_ce(
    logits: torch.Tensor, log_z: torch.Tensor, targets: torch.Tensor, target_valid: torch.Tensor
) -> torch.Tensor:
    """Dense CE: mean of ``-log q_d(x_{a+d})`` over the valid ``(anchor, depth)`` pairs (``[K, D]`` inputs)."""
    k, d = targets.shape
    steps = torch.arange(d, device=logits.device)[None].expand(k, d)
    nll = gathered_nll(logits, log_z, steps, targets.clamp(min=0))
    return torch.where(target_valid, nll, torch.zeros_like(nll)).sum() / target_valid.sum().clamp(
        min=1
    )


@dataclass(frozen=True)
class LossTerms:
    """The loss and what the metrics log reports about it (tree fields ``None`` without scored trees)."""

    total: torch.Tensor  # CE + lambda * tree (differentiable)
    ce: torch.Tensor  # dense token cross-entropy
    tree: torch.Tensor  # the weighted term (tree term, or the draft-opd term); 0 without trees
    lam: float  # the lambda actually used (0 for `token` and without trees)
    # mean over trees of the non-root exit mass W_k (1 - w(root) without a floor)
    mean_w: float | None
    coverage: float | None  # mean over trees of C_p(T_k)
    nodes: int | None  # real non-root nodes scored
    depth: float | None  # mean over trees of the maximum depth


def exittrain_loss(
    logits: torch.Tensor,
    targets: torch.Tensor,
    target_valid: torch.Tensor,
    trees: TreeBatch | None,
    edge: torch.Tensor | None,
    *,
    objective: str,
    lam: float,
    normalisation: str = "batch",
    edge_floor: float | None = None,
    opd: OPDChains | None = None,
) -> LossTerms:
    """The ExitTrain loss of one batch (module docstring).

    ``logits [K, D, V]`` drafter rows (row ``d - 1`` = depth ``d``), ``targets [K, D]``
    the target-generated continuation tokens, ``target_valid [K, D]`` bool;
    ``trees`` the realised trees (``N`` nodes, depth ``<= D``), ``edge [K, N]`` the
    frozen target's edge probabilities. ``trees = edge = None``: CE only (token-only
    distillation without tree scoring; ``objective`` must be ``token``). ``opd``: the
    drafter's scored chains of the batch, needed by ``draft-opd``.
    """
    check_objective(objective, normalisation, edge_floor)
    if lam < 0 or not np.isfinite(lam):
        raise ObjectiveError(f"lambda must be finite and >= 0, got {lam}")
    k, d, _ = logits.shape
    if targets.shape != (k, d) or target_valid.shape != (k, d):
        raise DistributionError(
            f"targets and target_valid must have shape ({k}, {d}), got "
            f"{tuple(targets.shape)} and {tuple(target_valid.shape)}"
        )
    log_z = draft_log_normalisers(logits)
    ce = token_ce(logits, log_z, targets, target_valid)
    # needs no trees; with trees they are still scored and logged
    if objective == "vat" and trees is None:
        term = vat_term(logits, log_z, targets, target_valid)
        return LossTerms(ce + float(lam) * term, ce, term, float(lam), None, None, None, None)
    if trees is None:
        if objective != "token":
            raise ObjectiveError(f"objective {objective!r} needs scored trees")
        return LossTerms(ce, ce, torch.zeros((), device=logits.device), 0.0, None, None, None, None)
    if trees.valid.shape[0] != k:
        raise DistributionError(f"{trees.valid.shape[0]} trees for {k} anchors")
    if int(trees.depth.max()) > d:
        raise DistributionError(
            f"a tree is deeper ({int(trees.depth.max())}) than the {d} draft rows"
        )
    law = tree_law(trees, edge, edge_floor)
    if objective == "draft-opd":
        if opd is None:
            raise ObjectiveError("draft-opd needs the drafter's scored chains (opd=...)")
        term = draft_opd_term(logits, log_z, opd, edge_floor)
    elif objective == "vat":
        term = vat_term(logits, log_z, targets, target_valid)
    else:
        weights = objective_weights(objective, law, trees, normalisation).to(torch.float32)
        node_nll = gathered_nll(logits, log_z, trees.depth - 1, trees.token)
        term = torch.where(trees.nonroot, weights * node_nll, torch.zeros_like(node_nll)).sum()
    used = 0.0 if objective == "token" else float(lam)
    nonroot_w = torch.where(trees.nonroot, law.w, torch.zeros_like(law.w)).sum(-1)
    return LossTerms(
        total=ce + used * term,
        ce=ce,
        tree=term,
        lam=used,
        mean_w=float(nonroot_w.mean()),
        coverage=float(law.coverage.mean()),
        nodes=int(trees.nonroot.sum()),
        depth=float(trees.depth.max(-1).values.double().mean()),
    )


# the exit law, weights and vocabulary are re-exported here: one import for the whole loss
def batch_loss(
    batch,
    *,
    objective: str,
    lam: float,
    normalisation: str = "batch",
    edge_floor: float | None = None,
    scored: bool = True,
) -> LossTerms:
    """:func:`exittrain_loss` of a built batch (:func:`~exitlaw.engine.training.batch.make_batch`): its
    drafter rows in float32, targets, trees, edge probabilities and OPD chains; ``scored=False``: CE only
    (no trees, objective ``token``)."""
    return exittrain_loss(
        batch.logits.float(),
        batch.targets,
        batch.target_valid,
        batch.trees if scored else None,
        batch.edge if scored else None,
        objective=objective,
        lam=lam,
        normalisation=normalisation,
        edge_floor=edge_floor,
        opd=batch.opd if scored else None,
    )


__all__ = [
    "OBJECTIVES",
    "NORMALISATIONS",
    "ObjectiveError",
    "check_objective",
    "TreeBatch",
    "TreeLaw",
    "LossTerms",
    "batch_loss",
    "tree_law",
    "raw_weights",
    "objective_weights",
    "draft_log_normalisers",
    "gathered_nll",
    "token_ce",
    "exittrain_loss",
]
