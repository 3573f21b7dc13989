"""Vectorised numpy samplers for large Monte-Carlo runs: ``S`` rounds on one tree at once.

Each has an exact twin in :mod:`exitlaw.simulate.verifiers` (same law, checked by
``property_tests/simulate/kit/test_conformance.py`` with the calibrated chi-square):

* :func:`predraw_many` -- ``R[s, v] ~ p_v`` for every node (inverse CDF), then follow
  the child table ``D`` times;
* :func:`residual_many` -- sequential residual: at node ``v`` child ``j`` is accepted
  w.p. ``a(u_j) / (rest mass before j)``, one uniform per (sample, depth, child);
* :func:`tev_many` -- one categorical over nodes (``w``), one over the exit row with
  child tokens masked;
* :func:`greedy_many` -- the deterministic argmax walk, repeated;
* :func:`chain_speculative_many` -- chain speculative sampling on a realised chain;
* :func:`recursive_rejection_many` -- SpecInfer recursive rejection on a realised tree, with or
  without replacement (fixed per-node tables: the residual after ``j`` rejections is the same
  for every round).

All return ``(exit [S], bonus [S])`` int64 arrays; streams for exit/acceptance and
bonus draws are spawned separately from ``rng``.
"""

from __future__ import annotations

import numpy as np

from exitlaw.simulate.verifiers.procedures import greedy_procedure
from exitlaw.simulate.verifiers.table import TABLES, sim_verifier
from exitlaw.theory import DraftTree, check_tree_rows
from exitlaw.theory.registry import FAST


def _child_table(tree: DraftTree, vocab: int) -> np.ndarray:
    """``table[v, y]`` = child of ``v`` with token ``y``, or ``-1``."""
    table = np.full((tree.num_nodes, vocab), -1, dtype=np.int64)
    table[tree.parent[1:], tree.token[1:]] = np.arange(1, tree.num_nodes)
    return table


def _last_positive(cdf_rows: np.ndarray) -> np.ndarray:
    """Index of the last positive entry of each row (where a rounded-up draw is sent)."""
    steps = np.diff(cdf_rows, axis=1, prepend=0.0) > 0
    return cdf_rows.shape[1] - 1 - np.argmax(steps[:, ::-1], axis=1)


def _inverse_cdf(
    cdf_rows: np.ndarray, rows_idx: np.ndarray, u: np.ndarray, last: np.ndarray | None = None
) -> np.ndarray:
    """Token ``y`` with ``cdf[y-1] <= u * total < cdf[y]`` per sample (never a zero-probability token)."""
    if last is None:
        last = _last_positive(cdf_rows)
    out = np.empty(u.shape, dtype=np.int64)
    order = np.argsort(rows_idx, kind="stable")
    bounds = np.flatnonzero(np.diff(rows_idx[order])) + 1
    for grp in np.split(order, bounds):
        if grp.size == 0:
            continue
        r = rows_idx[grp[0]]
        cdf = cdf_rows[r]
        y = np.searchsorted(cdf, u[grp] * cdf[-1], side="right")
        out[grp] = np.minimum(y, last[r])
    return out


def _residual_cdf(tree: DraftTree, probs: np.ndarray) -> np.ndarray:
    """Per node the CDF of its residual row and its residual mass ``rho``, summed directly from the
    residual entries (the residual-mass rule, :mod:`exitlaw.theory.law`; leaves sum their whole row)."""
    masked = probs.copy()
    masked[tree.parent[1:], tree.token[1:]] = 0.0
    return np.cumsum(masked, axis=1), masked.sum(axis=1)


@sim_verifier("predraw", FAST)
def predraw_many(tree: DraftTree, probs, rng: np.random.Generator, num_samples: int):
    probs = check_tree_rows(tree, probs)
    n, vocab = probs.shape
    table = _child_table(tree, vocab)
    cdf = np.cumsum(probs, axis=1)
    last = _last_positive(cdf)
    predraw_rng = rng.spawn(1)[0]
    # R_v is drawn lazily at the visited node of each sample (same law as drawing all N of them)
    cur = np.zeros(num_samples, dtype=np.int64)
    draw = np.zeros(num_samples, dtype=np.int64)
    live = np.arange(num_samples)
    for _ in range(tree.max_depth + 1):
        draw[live] = _inverse_cdf(cdf, cur[live], predraw_rng.random(live.size), last)
        nxt = table[cur[live], draw[live]]
        moved = nxt >= 0
        cur[live[moved]] = nxt[moved]
        live = live[moved]
        if live.size == 0:
            break
    return cur, draw


@sim_verifier("residual", FAST)
def residual_many(tree: DraftTree, probs, rng: np.random.Generator, num_samples: int):
    probs = check_tree_rows(tree, probs)
    n, vocab = probs.shape
    accept_rng, bonus_rng = rng.spawn(2)
    kmax = max((len(c) for c in tree.children), default=0)
    # cond[v, j] = a(u_j) / (sum of p_v off the first j - 1 children): acceptance of the j-th child
    cond = np.zeros((n, max(kmax, 1)))
    kid = np.full((n, max(kmax, 1)), -1, dtype=np.int64)
    for v in range(n):
        row = probs[v]
        removed = 0.0
        for j, u in enumerate(tree.children[v]):
            x = int(tree.token[u])
            rest = row.sum() - removed
            cond[v, j] = row[x] / rest if rest > 0 else 1.0
            removed += row[x]
            kid[v, j] = u
    cur = np.zeros(num_samples, dtype=np.int64)
    done = np.zeros(num_samples, dtype=bool)
    for _ in range(tree.max_depth):
        u = accept_rng.random((num_samples, max(kmax, 1)))
        acc = (u < cond[cur]) & (kid[cur] >= 0)
        any_acc = acc.any(axis=1) & ~done
        first = acc.argmax(axis=1)
        cur = np.where(any_acc, kid[cur, first], cur)
        done |= ~any_acc
    res_cdf, _ = _residual_cdf(tree, probs)
    bonus = _inverse_cdf(res_cdf, cur, bonus_rng.random(num_samples))
    return cur, bonus


@sim_verifier("tev", FAST)
def tev_many(tree: DraftTree, probs, rng: np.random.Generator, num_samples: int):
    probs = check_tree_rows(tree, probs)
    exit_rng, bonus_rng = rng.spawn(2)
    res_cdf, rest = _residual_cdf(tree, probs)
    log_a = np.zeros(tree.num_nodes)
    with np.errstate(divide="ignore"):
        log_a[1:] = np.log(probs[tree.parent[1:], tree.token[1:]])
    # log P = A @ log a
    log_prefix = np.where(tree.ancestor_matrix, log_a[None, :], 0.0).sum(axis=1)
    prefix = np.exp(log_prefix)
    w = prefix * rest
    w_cdf = np.cumsum(w)
    exits = _inverse_cdf(
        w_cdf[None, :], np.zeros(num_samples, dtype=np.int64), exit_rng.random(num_samples)
    )
    return exits, _inverse_cdf(res_cdf, exits, bonus_rng.random(num_samples))


@sim_verifier("greedy", FAST)
def greedy_many(tree: DraftTree, probs, rng: np.random.Generator | None, num_samples: int):
    probs = check_tree_rows(tree, probs)
    v, y = greedy_procedure(tree, probs)
    return np.full(num_samples, v, dtype=np.int64), np.full(num_samples, y, dtype=np.int64)


def chain_speculative_many(
    tree: DraftTree, probs, draft_probs, rng: np.random.Generator, num_samples: int
):
    """Chain speculative sampling on a realised chain, ``S`` rounds at once (twin: ``verify_sampled``).

    Depth ``d`` is accepted w.p. ``min(1, p(x) / q(x))``; the first rejection at node ``v`` emits a
    bonus from ``norm((p_v - q_v)+)``; a fully accepted chain emits a bonus from ``p`` at the leaf.
    """
    if tree.num_nodes > 1 and tree.max_depth != tree.budget:
        raise ValueError("chain_speculative_many needs a chain (one child per node)")
    p = check_tree_rows(tree, probs)
    q = check_tree_rows(tree, draft_probs)
    accept_rng, bonus_rng = rng.spawn(2)
    n = tree.num_nodes
    ratio = np.ones(max(n - 1, 1))
    for u in range(1, n):
        x, v = int(tree.token[u]), u - 1
        ratio[u - 1] = 1.0 if q[v, x] <= 0 else min(1.0, p[v, x] / q[v, x])
    accepted = accept_rng.random((num_samples, n - 1)) < ratio[: n - 1]
    # exit node = number of leading acceptances
    exits = (
        np.where(accepted.all(axis=1), n - 1, np.argmin(accepted, axis=1))
        if n > 1
        else np.zeros(num_samples, dtype=np.int64)
    )
    bonus_rows = np.maximum(p / p.sum(1, keepdims=True) - q / q.sum(1, keepdims=True), 0.0)
    bonus_rows[n - 1] = p[n - 1]  # the leaf: plain target sampling
    cdf = np.cumsum(bonus_rows, axis=1)
    return exits.astype(np.int64), _inverse_cdf(
        cdf, exits.astype(np.int64), bonus_rng.random(num_samples)
    )


def _rejection_tables(tree: DraftTree, p: np.ndarray, q: np.ndarray, without_replacement: bool):
    """Per node: ``cond[v, j]`` = acceptance probability of child ``j`` after ``j`` rejections, and the
    residual ``rest[v]`` a fully rejected node draws its bonus from.

    After rejecting the first ``j`` children the residual is the same for every round
    (it depends only on ``p_v``, ``q_v`` and those children), so the sequential rule of
    ``verify_sampled`` reduces to fixed tables: ``r <- norm((r - q)+)``, and without
    replacement ``q(x) <- 0``; accept ``x`` w.p. ``min(1, r(x) / q(x))`` (both normalised).
    """
    n, vocab = p.shape
    kmax = max(1, max((len(c) for c in tree.children), default=0))
    cond = np.zeros((n, kmax))
    kid = np.full((n, kmax), -1, dtype=np.int64)
    rest = np.array(p, dtype=np.float64)
    for v in range(n):
        r, qq = p[v].astype(np.float64), q[v].astype(np.float64)
        for j, u in enumerate(tree.children[v]):
            x = int(tree.token[u])
            sr, sq = r.sum(), qq.sum()
            kid[v, j] = u
            if sr <= 0:  # unreachable: a rejection of probability zero led here
                cond[v, j] = 1.0
                continue
            rx, qx = r[x] / sr, (qq[x] / sq if sq > 0 else 0.0)
            cond[v, j] = 1.0 if qx <= 0 else min(1.0, rx / qx)
            r = np.maximum(r / sr - (qq / sq if sq > 0 else 0.0), 0.0)
            if without_replacement:
                qq = qq.copy()
                qq[x] = 0.0
        rest[v] = r
    return cond, kid, rest


def recursive_rejection_many(
    tree: DraftTree,
    probs,
    draft_probs,
    rng: np.random.Generator,
    num_samples: int,
    *,
    without_replacement: bool,
):
    """SpecInfer recursive rejection (``without_replacement``: EAGLE-2 / Sequoia) on a realised tree,
    ``S`` rounds at once (twin: ``verify_sampled``). ``draft_probs[v]`` is the ``q`` that drafted
    ``v``'s children."""
    p = check_tree_rows(tree, probs)
    q = check_tree_rows(tree, draft_probs)
    accept_rng, bonus_rng = rng.spawn(2)
    cond, kid, rest = _rejection_tables(tree, p, q, without_replacement)
    cur = np.zeros(num_samples, dtype=np.int64)
    done = np.zeros(num_samples, dtype=bool)
    for _ in range(tree.max_depth):
        u = accept_rng.random((num_samples, cond.shape[1]))
        acc = (u < cond[cur]) & (kid[cur] >= 0)
        any_acc = acc.any(axis=1) & ~done
        first = acc.argmax(axis=1)
        cur = np.where(any_acc, kid[cur, first], cur)
        done |= ~any_acc
    return cur, _inverse_cdf(np.cumsum(rest, axis=1), cur, bonus_rng.random(num_samples))


FAST_SAMPLERS = TABLES[FAST]  # name -> vectorised sampler: the table the decorators above fill


@sim_verifier("tev-fast")
def tev_fast(tree: DraftTree, probs, rng: np.random.Generator) -> tuple[int, int]:
    """TEV's vectorised twin as a sampling form ``f(tree, probs, rng)``: :func:`tev_many` with one
    sample (the registry's ``tev-fast``, for large ``V``)."""
    exit_node, bonus = tev_many(tree, probs, rng, 1)
    return int(exit_node[0]), int(bonus[0])


__all__ = [
    "predraw_many",
    "residual_many",
    "tev_many",
    "greedy_many",
    "chain_speculative_many",
    "recursive_rejection_many",
    "FAST_SAMPLERS",
    "tev_fast",
]
