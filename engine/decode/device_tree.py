"""A :class:`~exitlaw.theory.DraftTree` moved onto a torch device, with the index
tensors the device verifiers need (DESIGN.md section 1, "TEV").

Vocabulary: ``N`` nodes, ``K`` internal nodes (nodes with at least one child),
``M`` the largest number of children of one node. Everything here is built once
per round on the host and copied to the device in one go; the verifiers then
never look at the host tree until the accepted path comes back.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from exitlaw.theory import DistributionError, DraftTree


@dataclass(frozen=True, eq=False)
class DeviceTree:
    """Tree tensors on one device.

    ``ancestor[v, u]`` is the ancestor-or-self matrix ``A`` (the tree-attention
    visibility mask) and ``child[v, u] = [par(u) = v]`` the child incidence ``C``:
    TEV computes ``log P = A @ log a`` and ``m = C @ a``.
    """

    tree: DraftTree
    parent: torch.Tensor    # [N] long, parent[0] = -1
    token: torch.Tensor     # [N] long, token[0] = max(root token, 0)
    depth: torch.Tensor     # [N] long
    ancestor: torch.Tensor  # [N, N] bool, ancestor-or-self
    child: torch.Tensor     # [N, N] bool, C[v, u] = par(u) == v
    draft_logprob: torch.Tensor | None = None  # [N] float, log q_depth(u)(x_u); 0 at the root
    # ----- derived index tensors (filled by to_device_tree) -----
    internal: torch.Tensor | None = None       # [K] long, ids of nodes with children (ascending)
    parent_slot: torch.Tensor | None = None    # [N-1] long, row of par(u) inside `internal`, u = 1..N-1
    child_tokens: torch.Tensor | None = None   # [N, M] long, child tokens of v, padded (see below)
    has_child: torch.Tensor | None = None      # [N] bool
    edge_ancestor: torch.Tensor | None = None  # [N, N-1] float64, ancestor[:, 1:] (TEV's log P = A @ log a)
    edge_child: torch.Tensor | None = None     # [N, N-1] float64, child[:, 1:] (TEV's m = C @ a)

    @property
    def num_nodes(self) -> int:
        return self.tree.num_nodes

    @property
    def device(self) -> torch.device:
        return self.parent.device


def _child_token_table(tree: DraftTree) -> np.ndarray:
    """``[N, M]`` child tokens; a row is padded by repeating its first child token
    (masking it twice is harmless) and a leaf row holds token 0 (the verifiers
    write back the original value there, see ``verifiers._mask_children``)."""
    kids = tree.children
    m = max(1, max(len(k) for k in kids))
    table = np.zeros((tree.num_nodes, m), dtype=np.int64)
    for v, k in enumerate(kids):
        if len(k):
            toks = tree.token[k]
            table[v, : len(k)] = toks
            table[v, len(k):] = toks[0]
    return table


def to_device_tree(tree: DraftTree, device: torch.device | str = "cpu", draft_logprob=None) -> DeviceTree:
    """Copy ``tree`` (and optional per-node draft log-probabilities) to ``device``."""
    if not isinstance(tree, DraftTree):
        raise TypeError(f"to_device_tree needs a DraftTree, got {type(tree).__name__}")
    n = tree.num_nodes
    internal = tree.internal
    slot = np.full(n, -1, dtype=np.int64)
    slot[internal] = np.arange(internal.size)
    token = tree.token.copy()
    token[0] = max(int(token[0]), 0)

    def put(x, dtype=torch.long):
        return torch.tensor(np.array(x), dtype=dtype, device=device)

    dl = None
    if draft_logprob is not None:
        arr = draft_logprob.detach().cpu().numpy() if isinstance(draft_logprob, torch.Tensor) else np.asarray(draft_logprob)
        if arr.shape != (n,):
            raise DistributionError(f"draft_logprob must have shape ({n},), one per node, got {arr.shape}")
        dl = put(arr.astype(np.float32), torch.float32)
    return DeviceTree(
        tree=tree,
        parent=put(tree.parent),
        token=put(token),
        depth=put(tree.depth),
        ancestor=put(tree.ancestor_matrix, torch.bool),
        child=put(tree.child_matrix, torch.bool),
        draft_logprob=dl,
        internal=put(internal),
        parent_slot=put(slot[tree.parent[1:]]),
        child_tokens=put(_child_token_table(tree)),
        has_child=put(~tree.is_leaf, torch.bool),
        edge_ancestor=put(tree.ancestor_matrix[:, 1:], torch.float64),
        edge_child=put(tree.child_matrix[:, 1:], torch.float64),
    )


__all__ = ["DeviceTree", "to_device_tree"]
