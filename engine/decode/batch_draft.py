"""Drafting and tree building for ``B`` sequences at once.

* :func:`dflash_draft_batch` -- one DFlash call for the whole batch. Row ``b`` feeds
  its ``C_b`` newly committed target hidden rows (padded to ``C = max_b C_b``) and
  drafts the block ``[root_b, MASK x (block_size - 1)]`` at positions
  ``start_b .. start_b + block_size - 1``. The draft cache uses the same per-row
  offsets as the target cache (:func:`~exitlaw.engine.models.target.compact_rows_`): row
  ``b``'s context K/V sit at columns ``0 .. dlen_b - 1``; an additive mask hides the
  stale columns and the padding of the new context, and after the call each row's
  new entries are moved up to its length. Row ``b``'s rows equal what
  :meth:`DFlashDrafter.draft_logprobs` gives for that sequence alone (to float
  rounding).
* Any other drafter is duck-typed: ``draft_logprobs_batch(roots, starts) -> [B, D, V]``
  log-probabilities (tests use a teacher that knows the greedy continuation).
* :func:`build_trees_batch` -- chain or DDTree trees for every row from the
  ``[B, D, V]`` rows with one device ``topk``/``max`` and one host transfer for the
  batch; the best-first rule itself is :func:`exitlaw.theory.ddtree_prefixes`, as in
  :func:`~exitlaw.engine.decode.builders.build_ddtree` (same tie handling).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from exitlaw.theory import (
    DistributionError,
    DraftTree,
    candidate_width,
    ddtree_prefixes,
    ranked_top_k,
)

from exitlaw.engine.decode.builders import check_row_maxima
from exitlaw.engine.models.dflash import DFlashDrafter, DraftCache
from exitlaw.engine.models.target import compact_rows_


@dataclass
class BatchDraftCache:
    """A DFlash :class:`DraftCache` with ``B`` rows and per-row lengths ``dlen`` (host ints)."""

    cache: DraftCache
    dlen: list[int]


@torch.no_grad()
def dflash_draft_batch(
    drafter: DFlashDrafter,
    embed_tokens,
    lm_head,
    roots: Sequence[int],
    pending: Sequence[torch.Tensor],
    starts: Sequence[int],
    dcache: BatchDraftCache,
) -> torch.Tensor:
    """Per-depth draft log-probabilities ``[B, block_size - 1, V]`` for every row in one call.

    ``pending[b] [C_b, L*H]``: target hidden rows of positions ``start_b - C_b .. start_b - 1``;
    the draft cache must hold positions ``0 .. start_b - C_b - 1`` of row ``b``.
    """
    bsz = len(roots)
    if not (len(pending) == len(starts) == len(dcache.dlen) == bsz):
        raise ValueError(f"roots, pending, starts and the draft cache must all have {bsz} rows")
    counts = [int(p.shape[0]) for p in pending]
    bad = [b for b in range(bsz) if dcache.dlen[b] != starts[b] - counts[b]]
    if bad:
        raise ValueError(
            f"rows {bad}: the draft cache length is not start - C (stale or skipped context)"
        )
    c_max, block = max(counts), drafter.block_size
    dev = pending[0].device
    width = pending[0].shape[-1]
    ctx = torch.zeros(bsz, c_max, width, dtype=pending[0].dtype, device=dev)  # [B, C, L*H]
    for b, p in enumerate(pending):
        ctx[b, : counts[b]] = p
    dlen = torch.tensor(dcache.dlen, device=dev)
    count = torch.tensor(counts, device=dev)
    ctx_pos = dlen[:, None] + torch.arange(c_max, device=dev)[None]  # [B, C]
    blk_pos = (
        torch.tensor(starts, device=dev)[:, None] + torch.arange(block, device=dev)[None]
    )  # [B, S]
    ids = torch.full((bsz, block), drafter.config.mask_token_id, dtype=torch.long, device=dev)
    ids[:, 0] = torch.tensor(list(roots), device=dev)
    emb = embed_tokens(ids)
    past = dcache.cache.length
    visible = torch.cat(
        [
            torch.arange(past, device=dev)[None] < dlen[:, None],  # cached context
            torch.arange(c_max, device=dev)[None] < count[:, None],  # new context
            torch.ones(bsz, block, dtype=torch.bool, device=dev),
        ],
        dim=1,
    )  # block: non-causal
    mask = torch.zeros(bsz, 1, block, past + c_max + block, dtype=emb.dtype, device=dev)
    mask.masked_fill_(~visible[:, None, None, :], torch.finfo(emb.dtype).min)
    h = drafter(emb, ctx.to(emb.dtype), ctx_pos, blk_pos, dcache.cache, mask)  # [B, S, H]
    src = torch.arange(c_max, device=dev)[None].expand(bsz, c_max)
    longest = max(d + c for d, c in zip(dcache.dlen, counts))
    for layer in range(len(dcache.cache.keys)):
        for store in (dcache.cache.keys, dcache.cache.values):
            compact_rows_(store[layer], past, dlen, src)
            store[layer] = store[layer][..., :longest, :]
    dcache.dlen = [d + c for d, c in zip(dcache.dlen, counts)]
    return torch.log_softmax(lm_head(h[:, 1:]).float(), dim=-1)


def build_trees_batch(
    rows: torch.Tensor, method: str, budget: int, roots: Sequence[int], active: Sequence[bool]
) -> tuple[list[DraftTree], list[np.ndarray]]:
    """One tree per row: ``method`` chain (top-1 per depth) or ddtree (``budget`` best-first prefixes).

    Inactive (finished) rows get the root-only tree. ``rows [B, D, V]`` are log-probabilities.
    Returns the trees and, per row, each node's draft log-probability ``log q_depth(u)(x_u)``
    (float64, 0 at the root), as :func:`~exitlaw.engine.decode.builders.build_ddtree` does.
    """
    if rows.ndim != 3 or 0 in rows.shape:
        raise DistributionError(
            f"draft rows must have shape [B, D, V] with B, D, V >= 1, got {tuple(rows.shape)}"
        )
    if method not in ("chain", "ddtree"):
        raise ValueError(f"unknown tree method {method!r}; choose chain or ddtree")
    bsz, _, vocab = rows.shape
    if method == "chain":
        val, idx = rows.max(dim=-1)  # [B, D]
        k, vals, idxs = 1, val[..., None], idx[..., None]
    else:
        k = candidate_width(budget, vocab)
        extra = int(k < vocab)
        vals, idxs = torch.topk(rows, k + extra, dim=-1)  # [B, D, k + extra]
    shape = tuple(vals.shape)
    host = (
        torch.cat([vals.detach().double().flatten(), idxs.double().flatten()]).cpu().numpy()
    )  # the one transfer
    half = vals.numel()
    vals, idxs = host[:half].reshape(shape), host[half:].reshape(shape).astype(np.int64)
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
        bf = ddtree_prefixes(v, t, budget, root_token=int(roots[b]))
        trees.append(bf.tree)
        logq.append(np.asarray(bf.value, dtype=np.float64))
    return trees, logq


__all__ = ["BatchDraftCache", "dflash_draft_batch", "build_trees_batch"]
