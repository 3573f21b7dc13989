"""Draft-tree builders from a drafter's per-depth rows (DESIGN.md section 1, "Builders").

The drafter (DFlash) gives one log-probability row ``log q_d`` per depth
``d = 1..D``, shared by every node of that depth, so the score of a prefix
``x_1..x_d`` factorises: ``s(x_1..x_d) = sum_{i<=d} log q_i(x_i)``.

* :func:`build_ddtree` -- DDTree best-first: the ``B`` prefixes of highest score.
  Only the top ``k = min(B, V)`` tokens of each row can appear (a prefix using a
  token of rank ``> B`` at some depth is beaten by ``B`` prefixes that differ from
  it only there), so we take ``topk`` per depth on the device, move the ``[D, k]``
  table to the host once, and enumerate lazily with a heap: popping prefix
  ``(..., r_d)`` pushes its next sibling ``(..., r_d + 1)`` and its first child
  ``(..., r_d, 0)``. Every pushed candidate scores no higher than the popped one,
  so pops come in non-increasing score order, parents before children, and at most
  ``2 B`` heap operations are needed.
* :func:`build_chain` -- top-1 per depth (the DFlash default).

Ties break toward the shallower prefix, then toward lower per-depth ranks (the
order of ``torch.topk``). Tokens with ``log q = -inf`` are never added.
"""

from __future__ import annotations

import heapq

import numpy as np
import torch

from exitlaw.theory import DistributionError, DraftTree


LOGPROB_ATOL = 1e-5  # log_softmax may round a little above 0


def _as_rows(draft_logprobs) -> torch.Tensor:
    rows = draft_logprobs if isinstance(draft_logprobs, torch.Tensor) else torch.as_tensor(np.asarray(draft_logprobs))
    if rows.ndim != 2 or rows.shape[0] == 0 or rows.shape[1] == 0:
        raise DistributionError(f"draft_logprobs must have shape [D, V] with D, V >= 1, got {tuple(rows.shape)}")
    if not torch.is_floating_point(rows):
        raise DistributionError(f"draft_logprobs must be floating point, got {rows.dtype}")
    top = float(rows.amax())  # one pass: amax propagates NaN
    if top != top:
        raise DistributionError("draft_logprobs contain NaN")
    if top > LOGPROB_ATOL:
        raise DistributionError(f"draft_logprobs must be log-probabilities (<= 0); an entry is {top!r}")
    return rows


def _check_root(root_token: int) -> int:
    if int(root_token) < -1:
        raise DistributionError(f"root_token must be >= -1, got {root_token}")
    return int(root_token)


def build_ddtree(draft_logprobs, budget: int, root_token: int) -> tuple[DraftTree, np.ndarray]:
    """DDTree best-first tree of at most ``budget`` non-root nodes.

    Returns the tree (nodes in pop order: topological, non-increasing cumulative
    score) and the per-node draft log-probability ``log q_depth(u)(x_u)`` as a
    float64 array (0 at the root). Fewer than ``budget`` nodes are returned only
    when fewer prefixes have finite score.
    """
    rows = _as_rows(draft_logprobs)
    root = _check_root(root_token)
    if int(budget) < 0:
        raise ValueError(f"budget must be >= 0, got {budget}")
    budget = int(budget)
    depth_max, vocab = rows.shape
    k = min(max(budget, 1), vocab)
    top_val, top_idx = torch.topk(rows, k, dim=-1)  # [D, k], descending
    vals = top_val.detach().to("cpu", torch.float64).numpy()  # the one device-to-host transfer
    idxs = top_idx.detach().cpu().numpy()

    parent, token, logq = [-1], [root], [0.0]
    # heap entry: (-score, depth, rank, parent_node, parent_score); depth is 1-based
    heap: list[tuple[float, int, int, int, float]] = []
    if budget and np.isfinite(vals[0, 0]):
        heap.append((-vals[0, 0], 1, 0, 0, 0.0))
    while heap and len(parent) <= budget:
        neg, d, r, par, par_score = heapq.heappop(heap)
        node = len(parent)
        parent.append(par)
        token.append(int(idxs[d - 1, r]))
        logq.append(float(vals[d - 1, r]))
        score = -neg
        if r + 1 < k and np.isfinite(vals[d - 1, r + 1]):
            heapq.heappush(heap, (-(par_score + vals[d - 1, r + 1]), d, r + 1, par, par_score))
        if d < depth_max and np.isfinite(vals[d, 0]):
            heapq.heappush(heap, (-(score + vals[d, 0]), d + 1, 0, node, score))
    tree = DraftTree(parent=np.array(parent), token=np.array(token))
    return tree, np.array(logq, dtype=np.float64)


def build_chain(draft_logprobs, root_token: int) -> tuple[DraftTree, np.ndarray]:
    """Chain of the top-1 token per depth (stops before the first row with no finite entry)."""
    rows = _as_rows(draft_logprobs)
    root = _check_root(root_token)
    val, idx = rows.max(dim=-1)
    val = val.detach().to("cpu", torch.float64).numpy()
    idx = idx.detach().cpu().numpy()
    finite = np.isfinite(val)
    n = int(np.argmin(finite)) if not finite.all() else val.size
    tree = DraftTree.chain(idx[:n].tolist(), root_token=root)
    return tree, np.concatenate([[0.0], val[:n]])


def _brute_force_top_prefixes(draft_logprobs, budget: int) -> list[tuple[float, tuple[int, ...]]]:
    """Reference twin for tests: score every prefix of length ``1..D`` (``V^D`` of them), keep the top ``budget``."""
    rows = np.asarray(draft_logprobs, dtype=np.float64)
    scored: list[tuple[float, tuple[int, ...]]] = []
    frontier: list[tuple[float, tuple[int, ...]]] = [(0.0, ())]
    for d in range(rows.shape[0]):
        frontier = [(s + rows[d, y], p + (y,)) for s, p in frontier for y in range(rows.shape[1])
                    if np.isfinite(rows[d, y])]
        scored.extend(frontier)
    scored.sort(key=lambda sp: (-sp[0], len(sp[1])))
    return scored[:budget]


__all__ = ["build_ddtree", "build_chain"]
