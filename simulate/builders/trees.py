"""Tree builders: DDTree best-first, chain, static shapes, EAGLE-2 dynamic, oracle, Tsubame two-pass.

Every builder returns a :class:`Built`: a prefix-closed :class:`DraftTree`
(distinct siblings) and the draft log-probability ``log q_depth(u)(x_u)`` of
each node's own token (0 at the root; ``None`` for the oracle, which never
looks at the drafter). Trees hold exactly the requested budget ``B``, except
that DDTree (and Tsubame, which plans with it) follows the best-first rule's
shortage rule: when fewer than ``B`` prefixes within the horizon have positive
draft probability, it returns all of them (``exitlaw.theory.best_first``).

* :func:`ddtree` (docs/design.md §1.9, Builders): position-wise rows ``q_d``; the score of
  a prefix is ``sum_d log q_d(x_d)``; the top ``B`` prefixes under the one
  best-first rule (``exitlaw.theory.ddtree_from_rows``): ties go to the
  shallower prefix, then the lexicographically smaller token sequence; nodes
  come out in that order, parents before children.
* :func:`chain` top-1 per depth; :func:`static_tree` a fixed branching profile.
* :func:`eagle_dynamic` (EAGLE-2): autoregressive drafter; expand the ``top_k``
  best frontier nodes by ``top_k`` children for ``depth`` steps, then keep the
  top ``B`` candidates by cumulative draft log-probability.
* :func:`oracle` the top-``B`` *target* prefixes (``exitlaw.theory.oracle_tree``).
* :func:`tsubame` two passes: plan the topology with DDTree, then re-populate
  each sibling group with tokens sampled without replacement from ``q_d``
  (Gumbel top-k, on the caller's draft stream).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from exitlaw.simulate.builders.settings import check_fields, check_positive
from exitlaw.simulate.builders.table import BuildFn, sim_builder
from exitlaw.theory import (
    DraftTree,
    TreeError,
    check_budget,
    check_rows,
    ddtree_from_rows,
    oracle_tree,
    ranked_top_k,
)

_NEG_INF = -np.inf


@dataclass(frozen=True, eq=False)
class Built:
    tree: DraftTree
    draft_logprob: np.ndarray | None  # [N]; log q of each node's token, 0 at the root
    # [N, V]; row v = the draft law q that sampled v's children (sampled-draft builders only),
    # what recursive-rejection verifiers need
    draft_rows: np.ndarray | None = None


def _log(q: np.ndarray, name: str = "draft rows") -> np.ndarray:
    """``log q`` after checking ``q`` is a ``[.., V]`` table of distributions (``log 0 = -inf``)."""
    q = np.asarray(q, dtype=np.float64)
    check_rows(q.reshape(-1, q.shape[-1]) if q.ndim else q, name=name)
    with np.errstate(divide="ignore"):
        return np.log(q)


def _log_marginals(marginals: np.ndarray) -> np.ndarray:
    """Position-wise rows ``q_d``, ``d = 1..H``, checked and logged: ``[H, V]``."""
    if np.ndim(marginals) != 2:
        raise ValueError(f"marginals must have shape [H, V], got {np.shape(marginals)}")
    return _log(marginals, "draft marginals")


def _ranked(logq_row: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` largest entries, best first, ties to the smaller token id."""
    row = np.asarray(logq_row, dtype=np.float64)[None, :]
    return ranked_top_k(row, min(k, row.shape[1]))[1][0]


def ddtree_order(
    marginals: np.ndarray, budget: int, *, root_token: int = -1
) -> tuple[DraftTree, np.ndarray, np.ndarray]:
    """DDTree in best-first order: ``(tree, draft_logprob [N], score [N])``, node ``i`` = ``i``-th prefix.

    ``score[u] = sum`` of ``log q_d`` along the path (0 at the root). Any prefix
    ``0..n`` of the nodes is the DDTree at budget ``n`` (used by CaDDTree).
    Fewer than ``budget`` nodes when fewer prefixes have positive draft probability.
    """
    check_budget(budget)
    bf = ddtree_from_rows(_log_marginals(marginals), budget, root_token=root_token)
    return bf.tree, bf.value, bf.score


def ddtree(marginals: np.ndarray, budget: int, *, root_token: int = -1) -> Built:
    """Top-``budget`` prefixes of the factorised draft score (DDTree best-first)."""
    tree, lp, _ = ddtree_order(marginals, budget, root_token=root_token)
    return Built(tree, lp)


def chain(marginals: np.ndarray, budget: int, *, root_token: int = -1) -> Built:
    """Top-1 token per depth, ``budget`` deep (DFlash's default chain)."""
    check_budget(budget)
    logq = _log_marginals(marginals)
    if budget > logq.shape[0]:
        raise ValueError(
            f"a chain of budget {budget} needs horizon >= {budget}, the drafter gives {logq.shape[0]}"
        )
    toks = [int(_ranked(logq[d], 1)[0]) for d in range(budget)]
    return Built(
        DraftTree.chain(toks, root_token=root_token),
        np.array([0.0] + [logq[d, t] for d, t in enumerate(toks)]),
    )


def static_tree(
    marginals: np.ndarray, budget: int, branching: Sequence[int], *, root_token: int = -1
) -> Built:
    """Fixed shape: every depth-``d`` node has the top ``branching[d]`` tokens of ``q_{d+1}``.

    The full shape is laid out breadth first and cut after ``budget`` nodes
    (a breadth-first prefix is prefix-closed).
    """
    check_budget(budget)
    logq = _log_marginals(marginals)
    if len(branching) > logq.shape[0] or any(int(b) < 1 for b in branching):
        raise ValueError(
            f"branching {list(branching)} must have positive entries and at most H={logq.shape[0]} depths"
        )
    parent, token, lp = [-1], [root_token], [0.0]
    frontier = [0]
    for d, k in enumerate(branching):
        toks = _ranked(logq[d], int(k))
        nxt = []
        for par in frontier:
            for t in toks:
                if len(parent) > budget:
                    break
                nxt.append(len(parent))
                parent.append(par), token.append(int(t)), lp.append(logq[d, t])
        frontier = nxt
    if len(parent) <= budget:
        raise ValueError(
            f"static shape {list(branching)} has {len(parent) - 1} nodes, fewer than budget {budget}"
        )
    return Built(DraftTree(parent=np.array(parent), token=np.array(token)), np.array(lp))


def eagle_dynamic(
    drafter, context: Sequence[int], budget: int, *, depth: int, top_k: int, root_token: int = -1
) -> Built:
    """EAGLE-2 dynamic expansion with an autoregressive drafter ``q(. | c, path)``.

    Layer ``d``: the ``top_k`` depth-``(d-1)`` candidates of highest cumulative
    score each get their ``top_k`` best children. Rerank: keep the top ``budget``
    of all candidates by ``(score desc, depth asc)``; cumulative log-probs never
    increase along a path, so the kept set is prefix-closed.
    """
    check_budget(budget)
    if depth < 1 or top_k < 1:
        raise ValueError(f"depth and top_k must be >= 1, got depth={depth}, top_k={top_k}")
    ctx = tuple(context)
    # candidate: (path tuple, score, own log q)
    cands: dict[tuple[int, ...], tuple[float, float]] = {}
    frontier: list[tuple[tuple[int, ...], float]] = [((), 0.0)]
    for _ in range(depth):
        layer = []
        for path, s in frontier:
            logq = _log(drafter.probs(ctx + path))
            for t in _ranked(logq, top_k):
                child = path + (int(t),)
                cands[child] = (s + logq[t], logq[t])
                layer.append((child, s + logq[t]))
        layer.sort(key=lambda c: (-c[1], c[0]))
        frontier = layer[:top_k]
    if len(cands) < budget:
        raise ValueError(
            f"EAGLE expansion (depth={depth}, top_k={top_k}) yields {len(cands)} candidates, "
            f"fewer than budget {budget}"
        )
    kept = sorted(cands, key=lambda p: (-cands[p][0], len(p), p))[:budget]
    tree = DraftTree.from_paths(kept, root_token=root_token)
    lp = np.array([0.0] + [cands[tree.path(v)][1] for v in range(1, tree.num_nodes)])
    return Built(tree, lp)


def oracle(target, context: Sequence[int], budget: int, *, root_token: int = -1) -> Built:
    """The maximum-coverage tree ``C*_p(B)`` (theory.oracle_tree on ``p(. | c, prefix)``)."""
    return Built(oracle_tree(target.prefix_target(context), budget, root_token=root_token), None)


def tsubame(
    marginals: np.ndarray, budget: int, rng: np.random.Generator, *, root_token: int = -1
) -> Built:
    """Two-pass tree: DDTree topology, then each sibling group re-sampled from ``q_d`` without replacement.

    Pass 2 draws, for every node with ``k`` children at depth ``d``, ``k`` distinct
    tokens by Gumbel top-k on ``log q_d`` (``rng`` is the draft stream).
    """
    plan = ddtree(marginals, budget, root_token=root_token).tree
    logq = _log_marginals(marginals)
    token = plan.token.copy()
    for v in range(plan.num_nodes):
        kids = plan.children[v]
        if not kids.size:
            continue
        row = logq[plan.depth[v]]
        support = np.flatnonzero(row > _NEG_INF)
        if support.size < kids.size:
            raise TreeError(
                f"q_{plan.depth[v] + 1} has {support.size} tokens of positive mass, "
                f"node {v} needs {kids.size} distinct children"
            )
        g = row[support] + rng.gumbel(size=support.size)
        picks = support[np.argsort(-g, kind="stable")[: kids.size]]
        token[kids] = picks
    tree = DraftTree(parent=plan.parent, token=token)
    lp = np.zeros(tree.num_nodes)
    lp[1:] = logq[tree.depth[1:] - 1, tree.token[1:]]
    # children of a node at depth d were drawn from q_{d+1} = marginals[d]; horizon leaves have
    # no children, so any valid row will do for them (the last one)
    rows = np.asarray(marginals, dtype=np.float64)[np.minimum(tree.depth, len(marginals) - 1)]
    return Built(tree, lp, rows)


# ----------------------------------------------------------------- the simulator's makers
@dataclass(frozen=True)
class StaticSettings:
    """The static tree's branching profile: ``branching[d]`` children per depth-``d`` node."""

    branching: tuple[int, ...] = (4, 2, 2, 1, 1, 1, 1, 1)

    def __post_init__(self) -> None:
        check_fields(self, "static setting")
        object.__setattr__(self, "branching", tuple(self.branching))
        check_positive(self, "static setting")


@dataclass(frozen=True)
class EagleSettings:
    """EAGLE-2's dynamic expansion: ``depth`` levels (one drafter call each), ``top_k`` frontier
    nodes expanded by ``top_k`` children per level."""

    depth: int = 6
    top_k: int = 8

    def __post_init__(self) -> None:
        check_fields(self, "eagle setting")
        check_positive(self, "eagle setting")


@sim_builder("ddtree")
def make_ddtree(cfg, target, pos, ar) -> BuildFn:
    return lambda c, rng: ddtree(pos.marginals(c, cfg.horizon), cfg.budget)


@sim_builder("chain")
def make_chain(cfg, target, pos, ar) -> BuildFn:
    return lambda c, rng: chain(pos.marginals(c, cfg.horizon), cfg.horizon)


@sim_builder("static", settings=StaticSettings)
def make_static(cfg, target, pos, ar, settings: StaticSettings) -> BuildFn:
    return lambda c, rng: static_tree(pos.marginals(c, cfg.horizon), cfg.budget, settings.branching)


@sim_builder("eagle", settings=EagleSettings, drafter_calls=lambda cfg, s: s.depth)  # one per level
def make_eagle(cfg, target, pos, ar, settings: EagleSettings) -> BuildFn:
    return lambda c, rng: eagle_dynamic(
        ar, c, cfg.budget, depth=settings.depth, top_k=settings.top_k
    )


@sim_builder("oracle")
def make_oracle(cfg, target, pos, ar) -> BuildFn:
    return lambda c, rng: oracle(target, c, cfg.budget)


@sim_builder("tsubame")
@sim_builder("tsubame-rrs")
@sim_builder("tsubame-univer")
def make_tsubame(cfg, target, pos, ar) -> BuildFn:
    return lambda c, rng: tsubame(pos.marginals(c, cfg.horizon), cfg.budget, rng)


__all__ = [
    "Built",
    "EagleSettings",
    "StaticSettings",
    "ddtree_order",
    "ddtree",
    "chain",
    "static_tree",
    "eagle_dynamic",
    "oracle",
    "tsubame",
]
