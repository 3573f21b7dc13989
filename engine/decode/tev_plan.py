"""TEV's per-tree index tensors (docs/design.md §1.6, "TEV"): a :class:`TevPlan`, built with the device
tree (before the target forward) in one host-to-device copy and padded so that every shape depends on
the padded node count ``N`` (and the batch size ``B``) alone. :func:`~exitlaw.engine.decode.verifiers.tev.tev_decide`
reads it; layout in :class:`TevPlan`.

Vocabulary: ``N`` padded nodes, ``K`` internal nodes (padded to ``N + 1`` slots: the internal rows, then
row 0 repeated; slot ``K`` is every leaf's, the last slot takes the padding edges' writes), ``E = N - 1``
edges (edge ``u`` = node ``u + 1``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from exitlaw.theory import DraftTree


@dataclass(frozen=True, eq=False)
class TevPlan:
    """A tree's (or a batch's) index tensors for :func:`tev_decide`; every shape depends on ``(B, N)``.

    ``rows [B (N+1)]``: flat logits row of each padded internal slot. ``edge_row / edge_token
    [B, 1, E]`` and ``edge_parent [B, E]``: each edge's flat slot row, child token and parent node
    (padding edges: the last slot, token 0, parent -1); ``bonus_index [B, E]``: ``edge_token``'s view. ``ancestor [B, N, E]``: edge ``u`` is an ancestor-or-self of ``v``.
    ``fill [B, N, 1]``: 1 for a real node, 0 for a padding node. ``node_slot [B, N]``: each node's flat
    slot (a leaf: slot ``K``, whose residual mass is its whole row). ``row_base [B, 1]``: ``b N``.
    """

    batch: int
    nodes: int
    rows: torch.Tensor
    edge_row: torch.Tensor
    edge_token: torch.Tensor
    edge_parent: torch.Tensor
    ancestor: torch.Tensor
    fill: torch.Tensor
    row_base: torch.Tensor
    bonus_index: torch.Tensor
    num_nodes: tuple[int, ...]

    @property
    def shape(self) -> tuple[int, int]:
        """``(B, N)``: the one thing every tensor's shape depends on."""
        return self.batch, self.nodes


def plan_arrays(trees: Sequence[DraftTree], width: int | None = None) -> dict[str, np.ndarray]:
    """The host arrays of a :class:`TevPlan` for ``trees`` padded to ``width`` nodes (default: the
    widest), with numpy; see :class:`TevPlan` for the layout."""
    bsz = len(trees)
    n = max(t.num_nodes for t in trees) if width is None else int(width)
    if bsz < 1 or n < max(t.num_nodes for t in trees):
        raise ValueError(f"a plan needs >= 1 tree and width >= the widest tree, got width {n}")
    kp, e = n + 1, n - 1
    rows = np.zeros((bsz, kp), dtype=np.int64)
    edge_row = np.full((bsz, 1, e), kp - 1, dtype=np.int64)
    edge_token = np.zeros((bsz, 1, e), dtype=np.int64)
    edge_parent = np.full((bsz, e), -1, dtype=np.int64)
    ancestor = np.zeros((bsz, n, e + kp), dtype=bool)  # edge columns, then one column per slot
    fill = np.zeros((bsz, n, 1), dtype=np.float32)
    for b, t in enumerate(trees):
        nb, internal = t.num_nodes, t.internal
        k = internal.size
        slot = np.full(nb, k, dtype=np.int64)  # a leaf reads slot K: an untouched padding row
        slot[internal] = np.arange(k)
        rows[b, :k] = internal
        edge_row[b, 0, : nb - 1] = slot[t.parent[1:]]
        edge_token[b, 0, : nb - 1] = t.token[1:]
        edge_parent[b, : nb - 1] = t.parent[1:]
        ancestor[b, :nb, : nb - 1] = t.ancestor_matrix[:, 1:]
        ancestor[b, np.arange(nb), e + slot] = True  # v's own slot: its residual mass
        fill[b, :nb] = 1.0
    base = np.arange(bsz, dtype=np.int64)
    return dict(
        rows=(rows + base[:, None] * n).reshape(-1),
        edge_row=edge_row + base[:, None, None] * kp,
        edge_token=edge_token,
        edge_parent=edge_parent,
        ancestor=ancestor,
        fill=fill,
        row_base=(base * n)[:, None],
    )


_LONGS = ("rows", "edge_row", "edge_token", "edge_parent", "row_base")


def build_plan(trees: Sequence[DraftTree], device, width: int | None = None) -> TevPlan:
    """:func:`plan_arrays` moved to ``device`` in one host-to-device copy (one packed float32 buffer
    would lose tokens above 2^24, so the long fields travel as one int64 buffer, the masks after it)."""
    arrs = plan_arrays(trees, width)
    bsz, n = len(trees), arrs["ancestor"].shape[1]
    packed = np.concatenate(
        [arrs[k].reshape(-1) for k in _LONGS]
        + [arrs["ancestor"].reshape(-1).astype(np.int64), arrs["fill"].reshape(-1).astype(np.int64)]
    )
    dev = torch.from_numpy(packed).to(device)  # the one copy
    out, at = {}, 0
    for k in (*_LONGS, "ancestor", "fill"):
        size = arrs[k].size
        out[k] = dev[at : at + size].view(arrs[k].shape)
        at += size
    out["ancestor"] = out["ancestor"].bool()
    out["fill"] = out["fill"].float()
    out["bonus_index"] = out["edge_token"].view(bsz, -1)  # [B, E]: a view, made once
    return TevPlan(batch=bsz, nodes=n, num_nodes=tuple(t.num_nodes for t in trees), **out)


__all__ = ["TevPlan", "build_plan", "plan_arrays"]
