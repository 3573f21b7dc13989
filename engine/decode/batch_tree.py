"""``B`` draft trees of different shapes padded into one set of device tensors.

The batched analogue of :class:`~exitlaw.engine.decode.device_tree.DeviceTree` (docs/design.md
§1.6, "TEV"): row ``b`` holds tree ``b``'s ``N_b`` nodes at slots
``0 .. N_b - 1`` and *padding* slots ``N_b .. N - 1`` (``N = max_b N_b``). A padding
slot is its own only ancestor (so its attention row sees itself and is never empty),
is nobody's child, carries token 0 at depth 0, and is marked ``valid = False``; the
batched verifiers give it exit weight 0 and never follow it. Everything is built on
the host with numpy and moved to the device in one copy per field.

Vocabulary: ``B`` rows, ``N`` padded nodes, ``K`` padded internal nodes, ``M`` the
most children of one node.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from exitlaw.engine.decode.device_tree import _child_token_table
from exitlaw.engine.decode.tev_plan import TevPlan, build_plan
from exitlaw.theory import DraftTree


@dataclass(frozen=True, eq=False)
class BatchTree:
    """Padded tree tensors; ``trees[b]`` is the host tree of row ``b``."""

    trees: tuple[DraftTree, ...]
    num_nodes: tuple[int, ...]  # N_b
    token: torch.Tensor  # [B, N] long (root token clamped at 0; padding 0)
    parent: torch.Tensor  # [B, N] long (root and padding: 0)
    depth: torch.Tensor  # [B, N] long (padding: 0)
    valid: torch.Tensor  # [B, N] bool, slot < N_b
    ancestor: torch.Tensor  # [B, N, N] bool, ancestor-or-self (padding: self only)
    internal: torch.Tensor  # [B, K] long, internal node ids (padding: 0, the root)
    parent_slot: torch.Tensor  # [B, N-1] long, row of par(u) in `internal` (padding: 0)
    child_tokens: torch.Tensor  # [B, N, M] long (see device_tree._child_token_table)
    has_child: torch.Tensor  # [B, N] bool
    edge_ancestor: torch.Tensor  # [B, N, N-1] float64, ancestor[:, :, 1:] on real edges only
    draft_logprob: tuple[np.ndarray, ...] | None = (
        None  # per row [N_b] host float64, log q of each node (traces)
    )
    plan: TevPlan | None = (
        None  # TEV's padded index tensors (tev_plan.TevPlan), built with the batch
    )

    @property
    def batch_size(self) -> int:
        return len(self.trees)

    @property
    def width(self) -> int:
        """``N``, the padded node count."""
        return int(self.token.shape[1])

    @property
    def device(self) -> torch.device:
        return self.token.device

    def path_nodes(self, b: int, node: int) -> list[int]:
        return list(self.trees[b].path_nodes(node))


# the host arrays of a BatchTree that padded_fields builds, by their BatchTree field names
FIELDS = (
    "token",
    "parent",
    "depth",
    "valid",
    "ancestor",
    "internal",
    "parent_slot",
    "child_tokens",
    "has_child",
)


def padded_fields(trees: Sequence[DraftTree]) -> dict[str, np.ndarray]:
    """The host arrays of :class:`BatchTree` (same names) for every row at once, from the rows' ``parent``
    and ``token`` alone: ancestors and depths by pointer jumping (one step per depth level for the
    whole batch), children grouped by ``(row, parent)`` with a stable sort (a child's column is its
    rank among its siblings, in node order). Twin: :func:`padded_fields_loop`, tree by tree."""
    bsz = len(trees)
    sizes = np.array([t.num_nodes for t in trees], np.int64)
    n = int(sizes.max())
    slots = np.arange(n)
    valid = slots[None, :] < sizes[:, None]
    token = np.zeros((bsz, n), np.int64)
    parent = np.zeros((bsz, n), np.int64)
    token[valid] = np.concatenate([t.token for t in trees])  # row-major: row b's nodes in order
    parent[valid] = np.concatenate([t.parent for t in trees])
    token[:, 0] = np.maximum(token[:, 0], 0)  # the root token clamped at 0
    parent[:, 0] = 0
    edge = valid.copy()
    edge[:, 0] = False  # the real non-root nodes
    rows = np.arange(bsz)[:, None]
    up = np.where(edge, parent, slots[None, :])  # the root and padding point to themselves
    ancestor = np.zeros((bsz, n, n), bool)
    cur = np.broadcast_to(slots, (bsz, n)).copy()
    ancestor[rows, slots[None, :], cur] = True
    depth = np.zeros((bsz, n), np.int64)
    moving = edge.copy()
    while moving.any():  # one step up for every node not yet at the root
        cur = np.where(moving, up[rows, cur], cur)
        ancestor[rows, slots[None, :], cur] = True
        depth += moving
        moving &= cur != 0
    b_e, v_e = np.nonzero(edge)
    p_e = parent[b_e, v_e]
    has_child = np.zeros((bsz, n), bool)
    has_child[b_e, p_e] = True
    counts = has_child.sum(axis=1)
    k = max(1, int(counts.max()))
    first_internal = np.argsort(~has_child, axis=1, kind="stable")[:, :k]
    internal = np.where(np.arange(k)[None, :] < counts[:, None], first_internal, 0)
    row_of = np.cumsum(has_child, axis=1) - 1  # a node's row in `internal`
    parent_slot = np.zeros((bsz, max(n - 1, 0)), np.int64)
    parent_slot[b_e, v_e - 1] = row_of[b_e, p_e]
    order = np.argsort(b_e * n + p_e, kind="stable")
    b_s, v_s, p_s = b_e[order], v_e[order], p_e[order]
    key = b_s * n + p_s
    start = np.flatnonzero(np.r_[True, key[1:] != key[:-1]]) if key.size else key
    size = np.diff(np.r_[start, key.size])
    m = max(1, int(size.max()) if size.size else 1)
    child_tokens = np.zeros((bsz, n, m), np.int64)
    # padding: first child
    child_tokens[b_s[start], p_s[start], :] = token[b_s[start], v_s[start]][:, None]
    child_tokens[b_s, p_s, np.arange(key.size) - np.repeat(start, size)] = token[b_s, v_s]
    arrays = (token, parent, depth, valid, ancestor, internal, parent_slot, child_tokens, has_child)
    return dict(zip(FIELDS, arrays))


def padded_fields_loop(trees: Sequence[DraftTree]) -> dict[str, np.ndarray]:
    """:func:`padded_fields` tree by tree from each tree's own derived structure (its twin, for tests)."""
    bsz = len(trees)
    n = max(t.num_nodes for t in trees)
    k = max(1, max(t.internal.size for t in trees))
    m = max(1, max((len(c) for t in trees for c in t.children), default=1))
    token = np.zeros((bsz, n), np.int64)
    parent = np.zeros((bsz, n), np.int64)
    depth = np.zeros((bsz, n), np.int64)
    valid = np.zeros((bsz, n), bool)
    ancestor = np.broadcast_to(np.eye(n, dtype=bool), (bsz, n, n)).copy()
    internal = np.zeros((bsz, k), np.int64)
    slot = np.zeros((bsz, max(n - 1, 0)), np.int64)
    child_tokens = np.zeros((bsz, n, m), np.int64)
    has_child = np.zeros((bsz, n), bool)
    for b, t in enumerate(trees):
        nb = t.num_nodes
        token[b, :nb] = t.token
        token[b, 0] = max(int(t.token[0]), 0)
        parent[b, 1:nb] = t.parent[1:]
        depth[b, :nb] = t.depth
        valid[b, :nb] = True
        ancestor[b, :nb, :nb] = t.ancestor_matrix
        internal[b, : t.internal.size] = t.internal
        row_of = np.zeros(nb, np.int64)
        row_of[t.internal] = np.arange(t.internal.size)
        slot[b, : nb - 1] = row_of[t.parent[1:]]
        table = _child_token_table(t)
        child_tokens[b, :nb, : table.shape[1]] = table
        # repeat the first entry, as the table pads
        child_tokens[b, :nb, table.shape[1] :] = table[:, :1]
        has_child[b, :nb] = ~t.is_leaf
    return dict(
        zip(
            FIELDS, (token, parent, depth, valid, ancestor, internal, slot, child_tokens, has_child)
        )
    )


def to_batch_tree(
    trees: Sequence[DraftTree],
    device: torch.device | str = "cpu",
    draft_logprob: Sequence[np.ndarray] | None = None,
) -> BatchTree:
    """Pad ``trees`` (at least one) to the largest node count and copy them to ``device``.

    ``draft_logprob`` (optional, kept on the host): one ``[N_b]`` array per row, for traces.
    """
    trees = tuple(trees)
    if not trees:
        raise ValueError("to_batch_tree needs at least one tree")
    if draft_logprob is not None:
        draft_logprob = tuple(np.asarray(x, dtype=np.float64) for x in draft_logprob)
        bad = [b for b, (t, x) in enumerate(zip(trees, draft_logprob)) if x.shape != (t.num_nodes,)]
        if len(draft_logprob) != len(trees) or bad:
            raise ValueError(
                f"draft_logprob needs one [N_b] array per tree; rows {bad} (or the count) do not fit"
            )
    bad = [i for i, t in enumerate(trees) if not isinstance(t, DraftTree)]
    if bad:
        raise TypeError(f"to_batch_tree needs DraftTrees; rows {bad} are not")
    f = padded_fields(trees)
    valid, ancestor = f["valid"], f["ancestor"]
    real_edge = valid[:, None, 1:]  # [B, 1, N-1]

    def put(x, dtype=torch.long):
        return torch.as_tensor(np.ascontiguousarray(x), device=device).to(dtype)

    return BatchTree(
        trees=trees,
        num_nodes=tuple(t.num_nodes for t in trees),
        token=put(f["token"]),
        parent=put(f["parent"]),
        depth=put(f["depth"]),
        valid=put(valid, torch.bool),
        ancestor=put(ancestor, torch.bool),
        internal=put(f["internal"]),
        parent_slot=put(f["parent_slot"]),
        child_tokens=put(f["child_tokens"]),
        has_child=put(f["has_child"], torch.bool),
        edge_ancestor=put(ancestor[:, :, 1:] & real_edge, torch.float64),
        draft_logprob=draft_logprob,
        plan=build_plan(trees, device, int(valid.shape[1])),
    )


__all__ = ["BatchTree", "padded_fields", "padded_fields_loop", "to_batch_tree"]
