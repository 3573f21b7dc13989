"""Drafting for ``B`` sequences at once (the batch's trees are built by
:func:`exitlaw.engine.builders.batched.build_trees_batch`).

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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch

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
    starts_t = torch.tensor(starts, device=dev)
    blk_pos = starts_t[:, None] + torch.arange(block, device=dev)[None]  # [B, S]
    ids = torch.full((bsz, block), drafter.config.mask_token_id, dtype=torch.long, device=dev)
    ids[:, 0] = torch.tensor(list(roots), device=dev)
    emb = embed_tokens(ids)
    past = dcache.cache.length
    visible = torch.cat(
        [
            torch.arange(past, device=dev)[None] < dlen[:, None],  # cached context
            torch.arange(c_max, device=dev)[None] < count[:, None],  # new context
            torch.ones(bsz, block, dtype=torch.bool, device=dev),  # block: non-causal
        ],
        dim=1,
    )
    mask = torch.zeros(bsz, 1, block, past + c_max + block, dtype=emb.dtype, device=dev)
    mask.masked_fill_(~visible[:, None, None, :], torch.finfo(emb.dtype).min)
    h = drafter(emb, ctx.to(emb.dtype), ctx_pos, blk_pos, dcache.cache, mask)  # [B, S, H]
    src = torch.arange(c_max, device=dev)[None].expand(bsz, c_max)
    longest = max(d + c for d, c in zip(dcache.dlen, counts))
    # every row's new entries already sit at its length
    in_place = all(d == past for d in dcache.dlen)
    for layer in range(len(dcache.cache.keys)):
        for store in (dcache.cache.keys, dcache.cache.values):
            if not in_place:
                compact_rows_(store[layer], past, dlen, src)
            store[layer] = store[layer][..., :longest, :]
    dcache.dlen = [d + c for d, c in zip(dcache.dlen, counts)]
    return torch.log_softmax(lm_head(h[:, 1:]).float(), dim=-1)


__all__ = ["BatchDraftCache", "dflash_draft_batch"]
