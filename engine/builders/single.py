"""Draft-tree builders from a drafter's per-depth rows (docs/design.md §1.9, "Builders").

The drafter (DFlash) gives one log-probability row ``log q_d`` per depth
``d = 1..D``, shared by every node of that depth, so the score of a prefix
``x_1..x_d`` factorises: ``s(x_1..x_d) = sum_{i<=d} log q_i(x_i)``.

* :func:`build_ddtree` -- DDTree: the ``B`` prefixes of highest score under the
  one best-first rule (:func:`exitlaw.theory.ddtree_prefixes`; ties to the
  shallower prefix, then the lexicographically smaller token sequence; fewer
  than ``B`` nodes only when fewer prefixes have finite score). Only the top
  ``k = min(B, V)`` tokens of each row can appear
  (:func:`exitlaw.theory.candidate_width`), so the device computes ``topk`` per
  depth, the ``[D, k]`` table moves to the host once, and the numpy rule does
  the rest. ``topk`` picks arbitrarily among tokens tied across the ``k``-th
  place, so it takes one extra column: a row whose ``k``-th and ``(k+1)``-th
  values are equal (and finite) is re-ranked exactly on the host.
  On a CPU the ``[D, k + 1]`` table is selected by numpy (:func:`top_candidates`: ``argpartition``,
  then a sort of the ``k + 1``), about 1.9x faster than torch's CPU ``topk`` on the batched
  ``[8, 15, 512]`` rows (``serve_bench/cpu_reductions/reductions_timing.py``); the rule ranks the
  candidates itself, so the tree is the same.
* :func:`build_chain` -- top-1 per depth (the DFlash default).
"""

from __future__ import annotations

import heapq

import numpy as np
import torch

from exitlaw.engine.builders.table import engine_builder
from exitlaw.theory import (
    DistributionError,
    DraftTree,
    candidate_width,
    ddtree_prefixes,
    ranked_top_k,
)

LOGPROB_ATOL = 1e-5  # log_softmax may round a little above 0


def _as_rows(draft_logprobs) -> torch.Tensor:
    """``[D, V]`` floating rows (shape and dtype checked; values by :func:`check_row_maxima`)."""
    rows = (
        draft_logprobs
        if isinstance(draft_logprobs, torch.Tensor)
        else torch.as_tensor(np.asarray(draft_logprobs))
    )
    if rows.ndim != 2 or rows.shape[0] == 0 or rows.shape[1] == 0:
        raise DistributionError(
            f"draft_logprobs must have shape [D, V] with D, V >= 1, got {tuple(rows.shape)}"
        )
    if not torch.is_floating_point(rows):
        raise DistributionError(f"draft_logprobs must be floating point, got {rows.dtype}")
    return rows


def check_row_maxima(maxima: np.ndarray) -> None:
    """Every row's maximum as ``topk`` / ``max`` return it (a NaN ranks above every number there, so a
    row holding one has maximum NaN): no NaN and none above 0 -- the values check of the whole table
    from the ``[D]`` values the builder transfers anyway (no extra pass over ``[D, V]``, no extra sync)."""
    if np.isnan(maxima).any():
        raise DistributionError("draft_logprobs contain NaN")
    top = float(maxima.max())
    if top > LOGPROB_ATOL:
        raise DistributionError(
            f"draft_logprobs must be log-probabilities (<= 0); an entry is {top!r}"
        )


def _check_root(root_token: int) -> int:
    if int(root_token) < -1:
        raise DistributionError(f"root_token must be >= -1, got {root_token}")
    return int(root_token)


def top_candidates(rows: torch.Tensor, m: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``m`` largest entries of each row of ``rows [..., V]`` in descending value order, on the host:
    ``(values float64, tokens int64)``, each ``[..., m]``; equal values in any order, and a NaN ranks
    first (so :func:`check_row_maxima` finds it), as torch's ``topk`` gives them. One transfer; on a
    CPU numpy selects them (module docstring). ``0 <= m <= V`` (``m = 0``: empty tables), else a
    ``ValueError`` on every path."""
    vocab = int(rows.shape[-1])
    if not 0 <= m <= vocab:
        raise ValueError(f"top_candidates needs 0 <= m <= V = {vocab}, got m = {m}")
    if m == 0:
        empty = tuple(rows.shape[:-1]) + (0,)
        return np.zeros(empty, dtype=np.float64), np.zeros(empty, dtype=np.int64)
    if rows.device.type == "cpu" and rows.dtype in (torch.float32, torch.float64):
        x = rows.detach().numpy()
        if not np.isnan(x).any():  # a NaN row takes torch's ranking, which puts the NaN first
            return host_top_candidates(x, m)
    return device_top_candidates(rows, m)


def host_top_candidates(x: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`top_candidates` of a NaN-free host array: ``argpartition``, then the ``m`` sorted."""
    vocab = x.shape[-1]
    if m < vocab:
        pick = np.argpartition(x, vocab - m, axis=-1)[..., vocab - m :]
    else:
        pick = np.broadcast_to(np.arange(vocab), x.shape)
    vals = np.take_along_axis(x, pick, axis=-1)
    order = np.argsort(-vals, axis=-1, kind="stable")
    return (
        np.take_along_axis(vals, order, axis=-1).astype(np.float64),
        np.take_along_axis(pick, order, axis=-1).astype(np.int64),
    )


def device_top_candidates(rows: torch.Tensor, m: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`top_candidates` by torch's ``topk`` on ``rows``' device, then one transfer."""
    vals, idxs = torch.topk(rows, m, dim=-1)
    host = torch.cat([vals.detach().double().flatten(), idxs.double().flatten()]).cpu().numpy()
    half = vals.numel()
    shape = tuple(vals.shape)
    return host[:half].reshape(shape), host[half:].reshape(shape).astype(np.int64)


@engine_builder("ddtree")
def build_ddtree(
    draft_logprobs, budget: int, root_token: int, *, fast: bool = True
) -> tuple[DraftTree, np.ndarray]:
    """DDTree best-first tree of at most ``budget`` non-root nodes.

    Returns the tree (nodes in best-first order: topological, non-increasing
    cumulative score) and the per-node draft log-probability
    ``log q_depth(u)(x_u)`` as a float64 array (0 at the root). Fewer than
    ``budget`` nodes are returned only when fewer prefixes have finite score.
    ``fast=False`` always takes the general rule (:func:`factorised_best_first`'s twin).
    """
    rows = _as_rows(draft_logprobs)  # [D, V]
    root = _check_root(root_token)
    vocab = rows.shape[1]
    k = candidate_width(budget, vocab)  # also rejects a bad budget
    extra = int(k < vocab)  # the (k+1)-th value shows whether the k-th place is tied
    vals, idxs = top_candidates(rows, k + extra)  # [D, k + extra], descending; one transfer
    check_row_maxima(vals[:, 0])
    if extra:
        for d in np.flatnonzero((vals[:, k] == vals[:, k - 1]) & np.isfinite(vals[:, k])):
            # tokens tied across the k-th place: rank this row exactly (value, then lower token)
            exact = rows[d].detach().to("cpu", torch.float64).numpy()[None, :]
            v, t = ranked_top_k(exact, k)
            vals[d, :k], idxs[d, :k] = v[0], t[0]
        vals, idxs = vals[:, :k], idxs[:, :k]
    if fast and (vals[:, 1:] < vals[:, :-1]).all():  # rows strictly descending: no tie to rank
        return factorised_best_first(vals, idxs, budget, root)
    bf = ddtree_prefixes(vals, idxs, budget, root_token=root)
    return bf.tree, bf.value


def factorised_best_first(
    vals: np.ndarray, idxs: np.ndarray, budget: int, root: int
) -> tuple[DraftTree, np.ndarray]:
    """:func:`exitlaw.theory.ddtree_prefixes` (its twin) for rows already ranked strictly best first,
    without its general machinery: one heap of ``(-score, depth, ranks from the root)`` -- the same
    order key -- where a child's score is its parent's plus ``vals[depth, rank]`` (the same sums).
    The ranks are kept as one integer in base ``width`` (first child: ``code * width``, next sibling:
    ``code + 1``), which orders prefixes of one depth as their rank tuples do. Candidates of score
    ``-inf`` are never pushed. Returns the tree and each node's own value."""
    rows, toks = vals.tolist(), idxs.tolist()
    horizon, width = len(rows), len(rows[0]) if rows else 0
    neg_inf = float("-inf")
    parent, token, value, score = [-1], [int(root)], [0.0], [0.0]
    heap: list[tuple] = []
    push, pop = heapq.heappush, heapq.heappop
    if budget and horizon and width and rows[0][0] > neg_inf:
        heap.append((-rows[0][0], 1, 0, 0, 0))  # (-score, depth, ranks code, parent, own rank)
    while heap and len(parent) <= budget:
        neg, d, code, par, rank = pop(heap)
        node, row = len(parent), rows[d - 1]
        parent.append(par), token.append(toks[d - 1][rank]), value.append(row[rank])
        score.append(-neg)
        if rank + 1 < width:  # next sibling
            s2 = score[par] + row[rank + 1]
            if s2 > neg_inf:
                push(heap, (-s2, d, code + 1, par, rank + 1))
        if node < budget and d < horizon:  # first child (the last chosen node needs none)
            s2 = -neg + rows[d][0]
            if s2 > neg_inf:
                push(heap, (-s2, d + 1, code * width, node, 0))
    tree = DraftTree(parent=np.array(parent), token=np.array(token))
    return tree, np.array(value, dtype=np.float64)


def build_chain(draft_logprobs, root_token: int) -> tuple[DraftTree, np.ndarray]:
    """Chain of the top-1 token per depth (stops before the first row with no finite entry)."""
    rows = _as_rows(draft_logprobs)
    root = _check_root(root_token)
    val, idx = rows.max(dim=-1)
    val = val.detach().to("cpu", torch.float64).numpy()
    idx = idx.detach().cpu().numpy()
    check_row_maxima(val)
    finite = np.isfinite(val)
    n = int(np.argmin(finite)) if not finite.all() else val.size
    tree = DraftTree.chain(idx[:n].tolist(), root_token=root)
    return tree, np.concatenate([[0.0], val[:n]])


@engine_builder("chain")
def chain_builder(draft_logprobs, budget: int, root_token: int) -> tuple[DraftTree, np.ndarray]:
    """:func:`build_chain` as a registered builder form: a chain drafts every depth (no budget)."""
    return build_chain(draft_logprobs, root_token)


__all__ = ["build_ddtree", "build_chain", "factorised_best_first", "top_candidates"]
