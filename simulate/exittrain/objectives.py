"""ExitTrain objectives: one vocabulary of node weights, normalisations, lambda and edge floor.

The loss of every objective (docs/design.md §1.10, ExitTrain) is

    loss = CE(target continuation) + lambda * tree_term,
    tree_term = sum_{trees t} sum_{v in t, v != root} c(v) * (-log q_{depth(v)}(x_v | c_t)),

where the per-node coefficient ``c(v) = s(v) / Z`` is a detached **weight**
``s`` divided by a **normalisation** ``Z``. The same names are used by the
simulated trainer (``exitlaw.simulate``) and by the engine's torch trainer.

Weights ``s(v)`` (``P`` = prefix probability, ``rho = 1 - child mass``, ``w = P rho``, the exit law):

=============  ============================================================
``token``      ``s = 0`` (lambda is irrelevant): dense CE only
``prefix``     ``s = P`` (the control; what the paper's public configs ship as ``P_tgt``)
``exit``       ``s = w = P * rho`` (the paper's exit-guided weight)
``exit-depth`` ``s = w * depth`` (the "exit" weight of the authors' public code)
``draft-opd``  no tree weights: an on-policy distillation term replaces the tree
               term (see :mod:`exitlaw.simulate.exittrain.fast` for what it assumes)
``vat``        no tree weights: verification-aware training (CE reweighted at the
               simulated first rejection, :mod:`exitlaw.simulate.exittrain.vat`) replaces the tree term
=============  ============================================================

Normalisations ``Z`` (``S`` trees in the batch):

* ``batch``: ``Z = sum of s over every non-root node of the batch`` (one weighted mean over the batch).
  For ``prefix`` it is the paper's matched control instead (the engine's definition,
  :mod:`exitlaw.engine.training.law`): ``c(v) = P(v) * (W_t / sum_{u in t} P(u)) / sum_t W_t`` with
  ``W_t = sum_{v in t} w(v)`` the tree's non-root exit mass: ``P`` rescaled per tree to that tree's exit
  total, over the exit weight's denominator (credit moves from exit boundaries to prefixes, the per-tree
  totals and ``Z`` are those of ``exit``). A tree with zero exit mass contributes nothing;
* ``tree``: each tree's non-root weights sum to one, then the mean over trees (``Z_t = S * sum_{v in t} s(v)``);
  a tree whose weights are all zero contributes nothing;
* ``nodes``: the authors' code, ``Z = number of non-root tree nodes in the batch`` (weights are not rescaled).

Edge floor (the authors' code): ``P`` is the product of edge probabilities floored
at ``alpha`` (``max(a, alpha)``; ``alpha = 1e-4`` there) while ``rho = clip(1 -
sum of the raw child edge probabilities, 0, 1)``. ``alpha = 0`` is the paper's
reading (raw edges, ``rho = 1 - m`` unclipped, so ``sum_v w(v) = 1`` exactly).

Confirmed by reading hsj576/TEV (SpecForge ``algorithms/exittrain/loss.py``,
``algorithms/dted/loss.py``, ``algorithms/exittrain/model.py``): weight types
``P_tgt`` and ``exit`` (``= P * rho * depth``), ``alpha = 1e-4``,
``loss = 1.0 * CE + 0.1 * (sum_v weight(v) * nll(v)) / (number of tree nodes)``,
default ``weight_type = "P_tgt"``.

Every function here is written in ``jax.numpy`` so the numpy reference tests and
the jitted/vmapped trainer share one formula.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np

WEIGHTS = ("token", "prefix", "exit", "exit-depth", "draft-opd", "vat")
NORMALISATIONS = ("batch", "tree", "nodes")
AUTHORS_ALPHA = 1e-4
AUTHORS_LAMBDA = 0.1
# numeric encoding (for vmap over objectives): [c_P, c_w, c_wdepth, n_batch, n_tree, n_nodes, lambda, opd, alpha, vat]
CODE_FIELDS = (
    "c_prefix",
    "c_exit",
    "c_exit_depth",
    "n_batch",
    "n_tree",
    "n_nodes",
    "lam",
    "opd",
    "alpha",
    "vat",
)
_WEIGHT_CODE = {
    "token": (0, 0, 0),
    "prefix": (1, 0, 0),
    "exit": (0, 1, 0),
    "exit-depth": (0, 0, 1),
    "draft-opd": (0, 0, 0),
    "vat": (0, 0, 0),
}
NO_TREE_WEIGHTS = ("token", "draft-opd", "vat")  # weights whose term uses no prefix probabilities


class ObjectiveError(ValueError):
    """An objective is not one of the named weights / normalisations, or its options conflict."""


@dataclass(frozen=True)
class Objective:
    """One ExitTrain objective: ``weight``, ``norm``, ``lam`` (lambda) and ``edge_floor`` (alpha; 0 = none)."""

    weight: str
    norm: str = "tree"
    lam: float = 1.0
    edge_floor: float = 0.0

    def __post_init__(self):
        if self.weight not in WEIGHTS:
            raise ObjectiveError(f"unknown weight {self.weight!r}; known: {', '.join(WEIGHTS)}")
        if self.norm not in NORMALISATIONS:
            raise ObjectiveError(
                f"unknown normalisation {self.norm!r}; known: {', '.join(NORMALISATIONS)}"
            )
        if not (np.isfinite(self.lam) and self.lam >= 0):
            raise ObjectiveError(f"lambda must be finite and >= 0, got {self.lam!r}")
        if not (np.isfinite(self.edge_floor) and 0 <= self.edge_floor < 1):
            raise ObjectiveError(f"edge floor alpha must be in [0, 1), got {self.edge_floor!r}")
        if self.weight in NO_TREE_WEIGHTS and self.edge_floor:
            raise ObjectiveError(
                f"weight {self.weight!r} uses no prefix probabilities: an edge floor means nothing there"
            )
        if self.weight in ("draft-opd", "vat") and self.norm != "batch":
            raise ObjectiveError(
                f"{self.weight} is a weighted mean over the batch's positions (norm 'batch'); "
                f"norm {self.norm!r} is not defined for it"
            )

    @property
    def name(self) -> str:
        """``token`` or ``weight/norm/lambda=x[/floor=alpha]``: the row label of every table."""
        if self.weight == "token":
            return "token"
        out = f"{self.weight}/{self.norm}/lambda={self.lam:g}"
        return out + (f"/floor={self.edge_floor:g}" if self.edge_floor else "")

    def code(self) -> np.ndarray:
        """``[10]`` float code (fields :data:`CODE_FIELDS`): the objective as numbers, for ``vmap``."""
        cw = _WEIGHT_CODE[self.weight]
        norm = tuple(float(self.norm == n) for n in NORMALISATIONS)
        lam = 0.0 if self.weight == "token" else float(self.lam)
        return np.array(
            [
                *cw,
                *norm,
                lam,
                float(self.weight == "draft-opd"),
                float(self.edge_floor),
                float(self.weight == "vat"),
            ]
        )


def parse_objective(name: str) -> Objective:
    """Inverse of :attr:`Objective.name` (``token``, ``exit/tree/lambda=0.1``, ``.../floor=0.0001``)."""
    parts = name.split("/")
    if parts == ["token"]:
        return Objective("token")
    if (
        len(parts) not in (3, 4)
        or not parts[2].startswith("lambda=")
        or (len(parts) == 4 and not parts[3].startswith("floor="))
    ):
        raise ObjectiveError(
            f"objective name {name!r} is not 'token' or 'weight/norm/lambda=x[/floor=a]'"
        )
    try:
        lam = float(parts[2][len("lambda=") :])
        floor = float(parts[3][len("floor=") :]) if len(parts) == 4 else 0.0
    except ValueError:
        raise ObjectiveError(f"objective name {name!r}: lambda / floor must be numbers") from None
    return Objective(parts[0], parts[1], lam, floor)


# ----- formulas (jax.numpy; nodes on the trailing axes, trees on axis 0) ---------------------------
def prefix_and_exit(log_edge_floored, edge_raw, ancestor, child, alpha):
    """``(P, rho)`` of one padded tree from its edges (``[N]``; ``A``/``C`` ``[N, N]``).

    ``log P = A @ log max(a, alpha)`` (``log_edge_floored``, root entry 0) and
    ``rho = 1 - C @ a_raw``, clipped to ``[0, 1]`` only when ``alpha > 0`` (the authors' code).
    """
    prefix = jnp.exp(ancestor.astype(log_edge_floored.dtype) @ log_edge_floored)
    rho = 1.0 - child.astype(edge_raw.dtype) @ edge_raw
    return prefix, jnp.where(alpha > 0, jnp.clip(rho, 0.0, 1.0), rho)


def raw_weight(code, prefix, rho, depth):
    """``s(v) = c_P P + c_w P rho + c_wd P rho depth`` (elementwise; ``code`` from :meth:`Objective.code`)."""
    w = prefix * rho
    return code[0] * prefix + code[1] * w + code[2] * w * depth


def normalise(code, s, mask, w):
    """Per-node coefficients ``c = s / Z`` for the normalisation in ``code`` (``s``, ``mask``, ``w``: ``[S, ...]``).

    ``mask`` marks the real non-root nodes; ``sum(c * nll)`` is then the tree term.
    ``w = P rho`` (the exit weight) is used only by ``prefix`` under ``batch``: the
    paper's matched control (module docstring), ``P`` rescaled per tree to ``W_t`` over ``sum_t W_t``.
    """
    s = jnp.where(mask, s, 0.0)
    axes = tuple(range(1, s.ndim))
    total = s.sum()
    per_tree = s.sum(axis=axes, keepdims=True)
    count = mask.sum()
    n_trees = s.shape[0]
    exit_per_tree = jnp.where(mask, w, 0.0).sum(axis=axes, keepdims=True)  # W_t
    z_exit = exit_per_tree.sum()  # the exit weight's denominator
    scale = jnp.where(per_tree > 0, exit_per_tree / jnp.where(per_tree > 0, per_tree, 1.0), 0.0)
    c_matched = jnp.where(z_exit > 0, s * scale / jnp.where(z_exit > 0, z_exit, 1.0), 0.0)
    c_plain = s / jnp.where(total > 0, total, 1.0)
    c_batch = jnp.where(code[0] > 0, c_matched, c_plain)  # prefix: the matched control
    c_tree = jnp.where(per_tree > 0, s / jnp.where(per_tree > 0, per_tree, 1.0), 0.0) / n_trees
    c_nodes = s / jnp.maximum(count, 1)
    return code[3] * c_batch + code[4] * c_tree + code[5] * c_nodes


def node_coefficients(objective: Objective, prefix, rho, depth, mask):
    """``c(v)`` of ``objective`` for trees given as ``[S, ...]`` arrays of ``P``, ``rho``, depth and mask."""
    if objective.weight in ("draft-opd", "vat"):
        raise ObjectiveError(
            f"{objective.weight} has no tree-node weights (its term replaces the tree term)"
        )
    return coefficients(
        jnp.asarray(objective.code()),
        jnp.asarray(prefix),
        jnp.asarray(rho),
        jnp.asarray(depth),
        jnp.asarray(mask),
    )


def coefficients(code, prefix, rho, depth, mask):
    """``c(v) = normalise(raw_weight(P, rho, depth))`` for the objective ``code`` (``[S, ...]`` arrays)."""
    return normalise(code, raw_weight(code, prefix, rho, depth), mask, prefix * rho)
