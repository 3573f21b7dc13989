"""Tree building for ``B`` sequences at once: the batched twin of :mod:`exitlaw.engine.builders.single`.

:func:`build_trees_batch` -- chain or DDTree trees for every row from the ``[B, D, V]`` draft rows
with one device ``topk``/``max`` and one host transfer for the batch; the best-first rule itself is
:func:`exitlaw.theory.ddtree_prefixes`, as in :func:`~exitlaw.engine.builders.single.build_ddtree`
(same tie handling; rows already strictly descending take its twin
:func:`~exitlaw.engine.builders.single.factorised_best_first`, as ``build_ddtree`` does).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from exitlaw.engine.builders.single import check_row_maxima, factorised_best_first, top_candidates
from exitlaw.theory import (
    DistributionError,
    DraftTree,
    candidate_width,
    ddtree_prefixes,
    ranked_top_k,
)
from exitlaw.theory.registry import builder_names

# the registered builders this module builds for a whole batch (its one function, by name)
BATCHED_BUILDERS = builder_names(among=("chain", "ddtree"))


def build_trees_batch(
    rows: torch.Tensor, method: str, budget: int, roots: Sequence[int], active: Sequence[bool]
) -> tuple[list[DraftTree], list[np.ndarray]]:
    """One tree per row: ``method`` chain (top-1 per depth) or ddtree (``budget`` best-first prefixes).

    Inactive (finished) rows get the root-only tree. ``rows [B, D, V]`` are log-probabilities.
    Returns the trees and, per row, each node's draft log-probability ``log q_depth(u)(x_u)``
    (float64, 0 at the root), as :func:`~exitlaw.engine.builders.single.build_ddtree` does.
    """
    if rows.ndim != 3 or 0 in rows.shape:
        raise DistributionError(
            f"draft rows must have shape [B, D, V] with B, D, V >= 1, got {tuple(rows.shape)}"
        )
    if method not in BATCHED_BUILDERS:
        raise ValueError(f"unknown tree method {method!r}; choose {' or '.join(BATCHED_BUILDERS)}")
    bsz, _, vocab = rows.shape
    if method == "chain":  # the top-1 as build_chain takes it (max), so ties resolve alike
        val, idx = rows.max(dim=-1)  # [B, D]
        k = 1
        host = torch.cat([val.detach().double().flatten(), idx.double().flatten()]).cpu().numpy()
        vals = host[: val.numel()].reshape(*val.shape, 1)  # the one transfer
        idxs = host[val.numel() :].reshape(*val.shape, 1).astype(np.int64)
    else:
        k = candidate_width(budget, vocab)
        extra = int(k < vocab)
        vals, idxs = top_candidates(rows, k + extra)  # [B, D, k + extra]; the one transfer
    check_row_maxima(vals[..., 0])  # every row's maximum (topk / max rank a NaN first)
    trees, logq = [], []
    for b in range(bsz):
        if not active[b]:
            trees.append(DraftTree.chain([], root_token=int(roots[b])))
            logq.append(np.zeros(1))
            continue
        v, t = vals[b].copy(), idxs[b].copy()
        if method == "chain":
            finite = np.isfinite(v[:, 0])
            n = int(np.argmin(finite)) if not finite.all() else v.shape[0]
            trees.append(DraftTree.chain(t[:n, 0].tolist(), root_token=int(roots[b])))
            logq.append(np.concatenate([[0.0], v[:n, 0]]))
            continue
        if v.shape[1] > k:
            for d in np.flatnonzero((v[:, k] == v[:, k - 1]) & np.isfinite(v[:, k])):
                # tokens tied across the k-th place: rank this depth exactly, as build_ddtree does
                exact = rows[b, d].detach().to("cpu", torch.float64).numpy()[None, :]
                ev, et = ranked_top_k(exact, k)
                v[d, :k], t[d, :k] = ev[0], et[0]
            v, t = v[:, :k], t[:, :k]
        if (
            v[:, 1:] < v[:, :-1]
        ).all():  # rows strictly descending: no tie to rank (as build_ddtree)
            tree, value = factorised_best_first(v, t, budget, int(roots[b]))
        else:
            bf = ddtree_prefixes(v, t, budget, root_token=int(roots[b]))
            tree, value = bf.tree, bf.value
        trees.append(tree)
        logq.append(np.asarray(value, dtype=np.float64))
    return trees, logq


__all__ = ["BATCHED_BUILDERS", "build_trees_batch"]
