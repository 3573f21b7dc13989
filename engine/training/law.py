"""The exit law of a batch of draft trees and the ExitTrain node weights (docs/design.md §1.2 and §1.10).

Exit law (detached, float64) from the frozen target's edge probabilities ``a``:
``P = exp(A @ log a)``, ``rho = max(1 - C @ a, 0)``, ``w = P rho``; a leaf (horizon leaves
included) has ``rho = 1``, so ``w = P``. Edges only, so ``rho`` follows part 2 of the
residual-mass rule (:mod:`exitlaw.theory.law`): never negative, and a child mass above one by
more than the row tolerance is an input error. With the **edge floor** ``alpha`` (the authors'
public code, ``alpha = 1e-4``): ``P = exp(A @ log max(a, alpha))`` and
``rho = clip(1 - C @ a_raw, 0, 1)`` (child mass from the *raw* edges), ``w = P rho``
(no longer summing to one).

Node weights ``s(v)`` (one vocabulary with the simulated trainer, :mod:`.objectives`):

=============  ===============================================================
``token``      ``lambda = 0``; the ``exit`` term is still computed and logged
               (matched compute), never trained on
``prefix``     ``s = P`` (the paper's control; the authors' configs ship it as ``P_tgt``)
``exit``       ``s = w = P rho`` (the paper's exit-guided weight)
``exit-depth`` ``s = w * depth`` (what the authors' public code calls its "exit" weight)
``draft-opd``  ``s = P(par(v))``, the probability that verification reaches ``v``'s
               position, on the drafter's own chain (:mod:`.draft_opd`)
=============  ===============================================================

Normalisations ``wt = normalise(s)`` (zero at roots and padding):

* ``batch``: ``wt = s / sum_{k, v != root} s`` (one weighted mean over the batch). For
  ``prefix`` it is the paper's matched control instead: ``P`` rescaled per tree to the
  tree's total non-root exit weight ``W_k``, over the exit weight's denominator
  ``Z = sum_k W_k`` (credit moves from exit boundaries to prefixes, nothing else changes);
* ``tree``: every tree's weights sum to ``1 / K`` (``K`` trees in the batch), so each
  counts equally; a **dead** tree (non-root weights all zero) contributes nothing;
* ``nodes`` (the authors' code): ``wt = s / M`` with ``M`` the number of real non-root
  tree nodes of the batch (dead trees' nodes included); weights are not rescaled.

Pure torch (never JAX); the tests compare the law with ``exitlaw.theory`` and the
weights with hand-computed trees.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from exitlaw.engine.training.objectives import ObjectiveError, check_edge_floor, check_objective
from exitlaw.theory import ROW_SUM_ATOL, DistributionError, DraftTree, PaddedTree, stack_trees


@dataclass(frozen=True)
class TreeBatch:
    """``K`` draft trees padded to ``N`` nodes, as torch tensors (see :class:`~exitlaw.theory.PaddedTree`)."""

    parent: torch.Tensor  # [K, N] long (root -1, padding 0)
    token: torch.Tensor  # [K, N] long
    depth: torch.Tensor  # [K, N] long
    valid: torch.Tensor  # [K, N] bool
    ancestor: torch.Tensor  # [K, N, N] bool, ancestor-or-self
    child: torch.Tensor  # [K, N, N] bool, C[v, u] = par(u) == v

    @classmethod
    def from_trees(
        cls,
        trees: list[DraftTree],
        device: torch.device | str = "cpu",
        num_nodes: int | None = None,
    ) -> "TreeBatch":
        padded: PaddedTree = stack_trees(trees, num_nodes)
        put = lambda x, dt: torch.as_tensor(np.ascontiguousarray(x)).to(device=device, dtype=dt)  # noqa: E731
        return cls(
            put(padded.parent, torch.long),
            put(padded.token, torch.long),
            put(padded.depth, torch.long),
            put(padded.valid, torch.bool),
            put(padded.ancestor, torch.bool),
            put(padded.child, torch.bool),
        )

    @property
    def nonroot(self) -> torch.Tensor:
        """``[K, N]`` bool: real non-root nodes."""
        return self.valid & (self.depth > 0)


@dataclass(frozen=True)
class TreeLaw:
    """Per-node exit-law quantities of a :class:`TreeBatch` (``[K, N]``, float64, detached)."""

    prefix: torch.Tensor  # P(v) (from floored edges when a floor is set)
    rho: torch.Tensor  # max(1 - m(v), 0) from the raw edges (the residual-mass rule, part 2)
    w: torch.Tensor  # P(v) rho(v)
    coverage: torch.Tensor  # [K] C_p(T_k) = sum_{v != root} P(v)


@torch.no_grad()
def tree_law(trees: TreeBatch, edge: torch.Tensor, edge_floor: float | None = None) -> TreeLaw:
    """Exit law from edge probabilities ``edge [K, N]`` (``a(u)``; the root entry is ignored).

    ``log P = A @ log a`` written with ``where`` so that ``0 * log 0`` never occurs;
    ``m = C @ a``, ``rho = max(1 - m, 0)``; padding nodes get ``a = 0``, hence ``P = w = 0``. With
    ``edge_floor = alpha``: ``P`` from ``max(a, alpha)``, ``rho`` still from the raw edges.
    """
    if edge.shape != trees.valid.shape:
        raise DistributionError(
            f"edge must have shape {tuple(trees.valid.shape)}, got {tuple(edge.shape)}"
        )
    a = edge.detach().to(torch.float64)
    if not torch.isfinite(a).all() or (a < 0).any():
        raise DistributionError("edge probabilities must be finite and >= 0")
    check_edge_floor(edge_floor)
    is_root = trees.depth == 0
    is_root[:, 1:] = False
    a = torch.where(is_root, torch.ones_like(a), torch.where(trees.valid, a, torch.zeros_like(a)))
    a_p = a if edge_floor is None else torch.where(trees.valid, a.clamp(min=edge_floor), a)
    log_a = torch.where(
        a_p > 0,
        torch.log(torch.where(a_p > 0, a_p, torch.ones_like(a_p))),
        torch.full_like(a_p, -torch.inf),
    )
    log_prefix = torch.where(
        trees.ancestor, log_a[:, None, :], torch.zeros_like(log_a)[:, None, :]
    ).sum(-1)
    prefix = torch.where(trees.valid, torch.exp(log_prefix), torch.zeros_like(log_prefix))
    mass = torch.where(trees.child, a[:, None, :], torch.zeros_like(a)[:, None, :]).sum(-1)
    over = (mass > 1.0 + ROW_SUM_ATOL) & trees.valid
    if over.any():
        k, v = (int(i) for i in over.nonzero()[0])
        raise DistributionError(
            f"tree {k}: the children of node {v} carry edge mass {float(mass[k, v])!r} > 1 "
            f"(tolerance {ROW_SUM_ATOL:g})"
        )
    rho = (1.0 - mass).clamp(min=0.0)
    w = prefix * rho
    coverage = torch.where(trees.nonroot, prefix, torch.zeros_like(prefix)).sum(-1)
    return TreeLaw(prefix, rho, w, coverage)


@torch.no_grad()
def raw_weights(objective: str, law: TreeLaw, trees: TreeBatch) -> torch.Tensor:
    """``s [K, N]`` of the module docstring's table, zero at roots and padding.

    ``token`` gives the ``exit`` weights (logged only); ``draft-opd`` gives the reach
    probability ``P(par(v))`` of node ``v``'s position (used on the drafter's chain, :mod:`.draft_opd`).
    """
    check_objective(objective)
    if objective == "vat":
        raise ObjectiveError(
            "vat has no tree-node weights (its term reweights the drafter's positions, :mod:`.vat`)"
        )
    zero = torch.zeros_like(law.w)
    if objective == "prefix":
        s = law.prefix
    elif objective == "exit-depth":
        s = law.w * trees.depth.to(law.w.dtype)
    elif objective == "draft-opd":
        s = law.prefix.gather(1, trees.parent.clamp(min=0))
    else:  # exit, token
        s = law.w
    return torch.where(trees.nonroot, s, zero)


@torch.no_grad()
def objective_weights(
    objective: str, law: TreeLaw, trees: TreeBatch, normalisation: str = "batch"
) -> torch.Tensor:
    """Normalised node weights ``wt [K, N]`` of the tree term (module docstring); zero at roots and padding.

    All zero when every weight of the batch is zero (a batch of dead trees).
    """
    check_objective(objective, normalisation)
    nonroot = trees.nonroot
    s = raw_weights(objective, law, trees)
    zero = torch.zeros_like(s)
    per_tree = s.sum(-1)  # S_k
    safe = lambda x: torch.where(x > 0, x, torch.ones_like(x))  # noqa: E731
    if normalisation == "nodes":
        return s / max(int(nonroot.sum()), 1)  # s / M
    if normalisation == "tree":
        return torch.where(per_tree[:, None] > 0, s / safe(per_tree)[:, None], zero) / s.shape[0]
    if objective != "prefix":
        total = s.sum()
        return s / total if float(total) > 0 else zero
    exit_per_tree = torch.where(nonroot, law.w, zero).sum(-1)  # W_k
    z = exit_per_tree.sum()  # Z, the exit weight's denominator
    if float(z) <= 0:
        return zero
    scale = (
        torch.where(per_tree > 0, exit_per_tree / safe(per_tree), torch.zeros_like(per_tree)) / z
    )
    return s * scale[:, None]


__all__ = ["TreeBatch", "TreeLaw", "tree_law", "raw_weights", "objective_weights"]
