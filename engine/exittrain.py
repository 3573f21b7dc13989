"""ExitTrain: the exit-guided drafter loss (DESIGN.md section 1, "ExitTrain").

For a batch of ``K`` anchors, each with the drafter's per-depth logits
``[D, V]`` and a draft tree of ``N`` (padded) nodes scored by the frozen target:

    loss = CE  +  lambda * sum_k sum_{v != root} wt_k(v) * (-log q_{k, depth(v)}(x_v))

* ``CE``: dense token cross-entropy of every depth row against the
  target-generated continuation (mean over valid ``(anchor, depth)`` pairs);
* exit law (detached, float64): ``P = exp(A @ log a)``, ``rho = 1 - C @ a``,
  ``w = P rho``; a leaf (horizon leaves included) has ``rho = 1``, so ``w = P``;
* weights ``wt`` (zero at the root and on padding):
  - ``exit``:   ``wt_k(v) = w_k(v) / Z`` with ``Z = sum_k sum_{v != root} w_k(v)``
    (one denominator for the batch, so ``sum wt = 1``);
  - ``prefix``: ``wt_k(v) = P_k(v) * (W_k / S_k) / Z``: ``P`` rescaled per tree to
    the tree's total non-root exit weight ``W_k`` (``S_k = sum_{v != root} P_k``),
    over the *same* denominator ``Z``: the control moves credit from exit
    boundaries to prefixes and changes nothing else;
  - ``token``:  ``lambda = 0`` (the tree term is still computed and logged, so the
    three objectives do the same work: matched compute).
* ``-log q_d(x_v) = logZ_d - z_d[x_v]``: one log-normaliser per distinct draft row
  (``K * D`` of them, shared with the CE term) and gathered logits; no node ever
  materialises a full-vocabulary distribution.

Pure torch (never JAX); the tests compare the law with ``exitlaw.theory``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from exitlaw.theory import DistributionError, DraftTree, PaddedTree, stack_trees

OBJECTIVES = ("exit", "prefix", "token")


@dataclass(frozen=True)
class TreeBatch:
    """``K`` draft trees padded to ``N`` nodes, as torch tensors (see :class:`~exitlaw.theory.PaddedTree`)."""

    parent: torch.Tensor    # [K, N] long (root -1, padding 0)
    token: torch.Tensor     # [K, N] long
    depth: torch.Tensor     # [K, N] long
    valid: torch.Tensor     # [K, N] bool
    ancestor: torch.Tensor  # [K, N, N] bool, ancestor-or-self
    child: torch.Tensor     # [K, N, N] bool, C[v, u] = par(u) == v

    @classmethod
    def from_trees(cls, trees: list[DraftTree], device: torch.device | str = "cpu",
                   num_nodes: int | None = None) -> "TreeBatch":
        padded: PaddedTree = stack_trees(trees, num_nodes)
        put = lambda x, dt: torch.as_tensor(np.ascontiguousarray(x)).to(device=device, dtype=dt)  # noqa: E731
        return cls(put(padded.parent, torch.long), put(padded.token, torch.long), put(padded.depth, torch.long),
                   put(padded.valid, torch.bool), put(padded.ancestor, torch.bool), put(padded.child, torch.bool))

    @property
    def nonroot(self) -> torch.Tensor:
        """``[K, N]`` bool: real non-root nodes."""
        return self.valid & (self.depth > 0)


@dataclass(frozen=True)
class TreeLaw:
    """Per-node exit-law quantities of a :class:`TreeBatch` (``[K, N]``, float64, detached)."""

    prefix: torch.Tensor    # P(v)
    rho: torch.Tensor       # 1 - m(v)
    w: torch.Tensor         # P(v) rho(v)
    coverage: torch.Tensor  # [K] C_p(T_k) = sum_{v != root} P(v)


@torch.no_grad()
def tree_law(trees: TreeBatch, edge: torch.Tensor) -> TreeLaw:
    """Exit law from edge probabilities ``edge [K, N]`` (``a(u)``; the root entry is ignored).

    ``log P = A @ log a`` written with ``where`` so that ``0 * log 0`` never occurs;
    ``m = C @ a``; padding nodes get ``a = 0``, hence ``P = w = 0``.
    """
    if edge.shape != trees.valid.shape:
        raise DistributionError(f"edge must have shape {tuple(trees.valid.shape)}, got {tuple(edge.shape)}")
    a = edge.detach().to(torch.float64)
    if not torch.isfinite(a).all() or (a < 0).any():
        raise DistributionError("edge probabilities must be finite and >= 0")
    is_root = trees.depth == 0
    is_root[:, 1:] = False
    a = torch.where(is_root, torch.ones_like(a), torch.where(trees.valid, a, torch.zeros_like(a)))
    log_a = torch.where(a > 0, torch.log(torch.where(a > 0, a, torch.ones_like(a))), torch.full_like(a, -torch.inf))
    log_prefix = torch.where(trees.ancestor, log_a[:, None, :], torch.zeros_like(log_a)[:, None, :]).sum(-1)
    prefix = torch.exp(log_prefix)
    rho = 1.0 - torch.where(trees.child, a[:, None, :], torch.zeros_like(a)[:, None, :]).sum(-1)
    w = prefix * rho
    coverage = torch.where(trees.nonroot, prefix, torch.zeros_like(prefix)).sum(-1)
    return TreeLaw(prefix, rho, w, coverage)


NORMALISATIONS = ("batch", "tree")


@torch.no_grad()
def objective_weights(objective: str, law: TreeLaw, trees: TreeBatch, normalisation: str = "batch") -> torch.Tensor:
    """Node weights ``wt [K, N]`` of the tree term (module docstring); zero at roots and padding.

    For ``exit`` and ``prefix`` they sum to one over the batch (all zero when no
    tree has non-root exit mass); ``token`` returns the ``exit`` weights, which the
    loss multiplies by ``lambda = 0`` (logged, never trained on).
    ``normalisation``: ``batch`` (default) divides by ``Z = sum_k W_k``, so a tree counts
    in proportion to its non-root exit mass; ``tree`` normalises every tree to total
    ``1 / K'`` (``K'`` trees with ``W_k > 0``), i.e. ``w~_k = w_k / W_k`` averaged over trees.
    """
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}")
    if normalisation not in NORMALISATIONS:
        raise ValueError(f"normalisation must be one of {NORMALISATIONS}, got {normalisation!r}")
    nonroot = trees.nonroot
    zero = torch.zeros_like(law.w)
    w = torch.where(nonroot, law.w, zero)
    per_tree = w.sum(-1)                      # W_k
    total = per_tree.sum()                    # Z, the shared denominator
    if float(total) <= 0.0:
        return zero
    if normalisation == "batch":
        share = per_tree / total              # tree k's total weight: W_k / Z
    else:
        live = (per_tree > 0).to(per_tree.dtype)
        share = live / live.sum()             # 1 / K' for every tree with W_k > 0

    def spread(x: torch.Tensor) -> torch.Tensor:
        """``x`` rescaled so that tree ``k``'s non-root weights sum to ``share_k``."""
        mass = x.sum(-1)
        scale = torch.where(mass > 0, share / torch.where(mass > 0, mass, torch.ones_like(mass)), zero[:, 0])
        return x * scale[:, None]

    if objective == "prefix":
        return spread(torch.where(nonroot, law.prefix, zero))  # P rescaled to the exit weight's total
    return spread(w)


def draft_log_normalisers(logits: torch.Tensor) -> torch.Tensor:
    """``logZ [K, D]``: one ``logsumexp`` per distinct draft row of ``logits [K, D, V]`` (float32)."""
    if logits.ndim != 3:
        raise DistributionError(f"draft logits must have shape [K, D, V], got {tuple(logits.shape)}")
    return torch.logsumexp(logits.float(), dim=-1)


def gathered_nll(logits: torch.Tensor, log_z: torch.Tensor, depth_row: torch.Tensor, token: torch.Tensor) -> torch.Tensor:
    """``-log q_{k, d}(x) = logZ[k, d] - z[k, d, x]`` for index tensors ``depth_row, token [K, M]``.

    ``depth_row`` is 0-based (draft row ``d - 1`` scores a node at depth ``d``).
    """
    rows = depth_row.clamp(min=0)
    k_idx = torch.arange(logits.shape[0], device=logits.device)[:, None].expand_as(rows)
    z = logits[k_idx, rows, token].float()
    return log_z[k_idx, rows] - z


@dataclass(frozen=True)
class LossTerms:
    """The loss and what the metrics log reports about it."""

    total: torch.Tensor       # CE + lambda * tree (differentiable)
    ce: torch.Tensor          # dense token cross-entropy
    tree: torch.Tensor        # sum_v wt(v) (-log q_depth(v)(x_v)) (differentiable, logged for every objective)
    lam: float                # the lambda actually used (0 for `token`)
    mean_w: float             # mean over trees of the non-root exit mass W_k = 1 - w(root)
    coverage: float           # mean over trees of C_p(T_k)
    nodes: int                # real non-root nodes scored


def exittrain_loss(logits: torch.Tensor, targets: torch.Tensor, target_valid: torch.Tensor,
                   trees: TreeBatch, edge: torch.Tensor, *, objective: str, lam: float,
                   normalisation: str = "batch") -> LossTerms:
    """The ExitTrain loss of one batch (module docstring).

    ``logits [K, D, V]`` drafter rows (row ``d - 1`` = depth ``d``), ``targets [K, D]``
    the target-generated continuation tokens, ``target_valid [K, D]`` bool;
    ``trees`` the realised trees (``N`` nodes, depth ``<= D``), ``edge [K, N]`` the
    frozen target's edge probabilities.
    """
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}")
    if lam < 0 or not np.isfinite(lam):
        raise ValueError(f"lambda must be finite and >= 0, got {lam}")
    k, d, _ = logits.shape
    if targets.shape != (k, d) or target_valid.shape != (k, d):
        raise DistributionError(f"targets and target_valid must have shape ({k}, {d}), got "
                                f"{tuple(targets.shape)} and {tuple(target_valid.shape)}")
    if trees.valid.shape[0] != k:
        raise DistributionError(f"{trees.valid.shape[0]} trees for {k} anchors")
    if int(trees.depth.max()) > d:
        raise DistributionError(f"a tree is deeper ({int(trees.depth.max())}) than the {d} draft rows")
    log_z = draft_log_normalisers(logits)
    steps = torch.arange(d, device=logits.device)[None].expand(k, d)
    ce_nll = gathered_nll(logits, log_z, steps, targets.clamp(min=0))
    count = target_valid.sum()
    ce = torch.where(target_valid, ce_nll, torch.zeros_like(ce_nll)).sum() / count.clamp(min=1)

    law = tree_law(trees, edge)
    weights = objective_weights(objective, law, trees, normalisation).to(torch.float32)
    node_nll = gathered_nll(logits, log_z, trees.depth - 1, trees.token)
    tree_term = torch.where(trees.nonroot, weights * node_nll, torch.zeros_like(node_nll)).sum()
    used = 0.0 if objective == "token" else float(lam)
    nonroot_w = torch.where(trees.nonroot, law.w, torch.zeros_like(law.w)).sum(-1)
    return LossTerms(total=ce + used * tree_term, ce=ce, tree=tree_term, lam=used,
                     mean_w=float(nonroot_w.mean()), coverage=float(law.coverage.mean()),
                     nodes=int(trees.nonroot.sum()))


__all__ = ["OBJECTIVES", "NORMALISATIONS", "TreeBatch", "TreeLaw", "LossTerms", "tree_law", "objective_weights",
           "draft_log_normalisers", "gathered_nll", "exittrain_loss"]
