"""A :class:`~exitlaw.theory.DraftTree` moved onto a torch device, with the index
tensors the device verifiers need (docs/design.md §1.6, "TEV").

Vocabulary: ``N`` nodes, ``K`` internal nodes (nodes with at least one child),
``M`` the largest number of children of one node. Everything here is built once
per round on the host and copied to the device in one go; the verifiers then
never look at the host tree until the accepted path comes back.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from exitlaw.engine.decode.tev_plan import TevPlan, build_plan
from exitlaw.theory import DistributionError, DraftTree


@dataclass(frozen=True, eq=False)
class DeviceTree:
    """Tree tensors on one device.

    ``ancestor[v, u]`` is the ancestor-or-self matrix ``A`` (the tree-attention
    visibility mask) and ``child[v, u] = [par(u) = v]`` the child incidence ``C``:
    TEV computes ``log P = A @ log a`` and ``m = C @ a``.
    """

    tree: DraftTree
    parent: torch.Tensor  # [N] long, parent[0] = -1
    token: torch.Tensor  # [N] long, token[0] = max(root token, 0)
    depth: torch.Tensor  # [N] long
    ancestor: torch.Tensor  # [N, N] bool, ancestor-or-self
    # [N, N] bool, C[v, u] = par(u) == v (None when built with parts="walk")
    child: torch.Tensor | None
    draft_logprob: torch.Tensor | None = None  # [N] float, log q_depth(u)(x_u); 0 at the root
    # ----- derived index tensors (filled by to_device_tree) -----
    internal: torch.Tensor | None = None  # [K] long, ids of nodes with children (ascending)
    parent_slot: torch.Tensor | None = (
        None  # [N-1] long, row of par(u) inside `internal`, u = 1..N-1
    )
    child_tokens: torch.Tensor | None = None  # [N, M] long, child tokens of v, padded (see below)
    has_child: torch.Tensor | None = None  # [N] bool
    edge_ancestor: torch.Tensor | None = (
        None  # [N, N-1] float64, ancestor[:, 1:] (TEV's log P = A @ log a)
    )
    paths: torch.Tensor | None = None  # [N, N] long, row v = root .. v (node ids), padded with 0
    plan: TevPlan | None = None  # TEV's padded index tensors (parts="all"; tev_plan.TevPlan)

    def path_index(self, node: int) -> torch.Tensor:
        """Node ``node``'s root path as a device index (a view of :attr:`paths`: no host-to-device copy),
        for the KV commit and the drafter's hidden-state gather."""
        return self.paths[node, : int(self.tree.depth[node]) + 1]

    @property
    def num_nodes(self) -> int:
        return self.tree.num_nodes

    @property
    def device(self) -> torch.device:
        return self.parent.device


def _child_token_table(tree: DraftTree) -> np.ndarray:
    """``[N, M]`` child tokens; a row is padded by repeating its first child token
    (masking it twice is harmless) and a leaf row holds token 0 (the verifiers
    write back the original value there, see ``verifiers._mask_children``).

    Vectorised: children grouped by parent in node order (a stable sort), each child's rank
    among its siblings from the group starts; twin of :func:`_child_token_table_loop`."""
    n = tree.num_nodes
    parent = tree.parent[1:]
    counts = np.bincount(parent, minlength=n)
    table = np.zeros((n, max(1, int(counts.max()) if parent.size else 1)), dtype=np.int64)
    if not parent.size:
        return table
    order = np.argsort(parent, kind="stable")
    grouped = parent[order]
    first = np.cumsum(counts) - counts  # index of each parent's first child in `order`
    toks = tree.token[1:][order]
    has = counts > 0
    table[has] = toks[first[has]][:, None]  # padding: the first child token
    table[grouped, np.arange(order.size) - first[grouped]] = toks
    return table


def _child_token_table_loop(tree: DraftTree) -> np.ndarray:
    """:func:`_child_token_table` node by node (its twin, for tests)."""
    kids = tree.children
    m = max(1, max(len(k) for k in kids))
    table = np.zeros((tree.num_nodes, m), dtype=np.int64)
    for v, k in enumerate(kids):
        if len(k):
            toks = tree.token[k]
            table[v, : len(k)] = toks
            table[v, len(k) :] = toks[0]
    return table


def path_table(tree: DraftTree) -> np.ndarray:
    """``[N, N]``: row ``v`` holds ``v``'s root path (node ids, root first), then zeros. Parents precede
    children, so the path is ``v``'s ancestors-or-self in id order: a stable sort puts them first."""
    anc = tree.ancestor_matrix
    order = np.argsort(~anc, axis=1, kind="stable")
    return np.where(np.arange(tree.num_nodes)[None, :] <= tree.depth[:, None], order, 0)


# what to_device_tree builds: every tensor, or what a host walk + the tree mask need
PARTS = ("all", "walk")
SHAPE_CACHE_SIZE = 256  # tree shapes (parent arrays) whose structure tensors are kept, per process


def _structure(tree: DraftTree, device, internal: np.ndarray) -> dict[str, torch.Tensor]:
    """The tensors that depend only on the tree's shape (``parent``): built once per shape and device."""
    n = tree.num_nodes
    slot = np.full(n, -1, dtype=np.int64)
    slot[internal] = np.arange(internal.size)

    def put(x, dtype=torch.long):
        return torch.tensor(np.array(x), dtype=dtype, device=device)

    return dict(
        parent=put(tree.parent),
        depth=put(tree.depth),
        ancestor=put(tree.ancestor_matrix, torch.bool),
        child=put(tree.child_matrix, torch.bool),
        internal=put(internal),
        parent_slot=put(slot[tree.parent[1:]]),
        has_child=put(~tree.is_leaf, torch.bool),
        edge_ancestor=put(tree.ancestor_matrix[:, 1:], torch.float64),
        paths=put(path_table(tree)),
    )


_SHAPES: dict[
    tuple, dict[str, torch.Tensor]
] = {}  # (kind, device, parent bytes) -> shape-only tensors


def _cached_structure(tree: DraftTree, device, internal: np.ndarray) -> dict[str, torch.Tensor]:
    """:func:`_structure` memoised by ``(device, parent array)``: trees of one shape (every chain of one
    length; DDTree trees whose shape repeats) share these read-only tensors (no verifier writes them)."""
    key = ("all", str(torch.device(device)), tree.parent.tobytes())
    hit = _SHAPES.get(key)
    if hit is None:
        if len(_SHAPES) >= SHAPE_CACHE_SIZE:
            _SHAPES.pop(next(iter(_SHAPES)))  # oldest first
        hit = _SHAPES[key] = _structure(tree, device, internal)
    return hit


def _walk_structure(tree: DraftTree, device) -> dict[str, torch.Tensor]:
    n = tree.num_nodes
    return dict(
        parent=torch.tensor(tree.parent, dtype=torch.long, device=device),
        depth=torch.tensor(tree.depth, dtype=torch.long, device=device),
        ancestor=torch.tensor(tree.ancestor_matrix, dtype=torch.bool, device=device).reshape(n, n),
        paths=torch.tensor(path_table(tree), dtype=torch.long, device=device),
    )


def _walk_tree(tree: DraftTree, device, token: np.ndarray, dl, cache_shapes: bool) -> DeviceTree:
    """Only what a host-walk verifier (greedy, predraw, residual) and the tree-attention mask read:
    ``parent``, ``token``, ``depth`` and ``ancestor`` (no TEV matrices, no child-token table); the
    shape-only three memoised like :func:`_cached_structure` when ``cache_shapes``."""
    if cache_shapes:
        key = ("walk", str(torch.device(device)), tree.parent.tobytes())
        shape = _SHAPES.get(key)
        if shape is None:
            if len(_SHAPES) >= SHAPE_CACHE_SIZE:
                _SHAPES.pop(next(iter(_SHAPES)))
            shape = _SHAPES[key] = _walk_structure(tree, device)
    else:
        shape = _walk_structure(tree, device)
    return DeviceTree(
        tree=tree,
        token=torch.tensor(token, dtype=torch.long, device=device),
        child=None,
        draft_logprob=dl,
        **shape,
    )


def to_device_tree(
    tree: DraftTree,
    device: torch.device | str = "cpu",
    draft_logprob=None,
    *,
    parts: str = "all",
    cache_shapes: bool = False,
) -> DeviceTree:
    """Copy ``tree`` (and optional per-node draft log-probabilities) to ``device``.

    ``parts="all"`` builds every tensor (TEV needs them, and its :class:`TevPlan`); ``parts="walk"`` only ``parent``, ``token``,
    ``depth`` and ``ancestor`` (:data:`PARTS`). ``cache_shapes=True`` reuses the shape-only tensors of an
    earlier tree with the same ``parent`` array (:func:`_cached_structure`; treat them as read-only).
    """
    if not isinstance(tree, DraftTree):
        raise TypeError(f"to_device_tree needs a DraftTree, got {type(tree).__name__}")
    if parts not in PARTS:
        raise ValueError(f"unknown parts {parts!r}; choose one of {', '.join(PARTS)}")
    n = tree.num_nodes
    token = tree.token.copy()
    token[0] = max(int(token[0]), 0)

    def put(x, dtype=torch.long):
        return torch.tensor(np.array(x), dtype=dtype, device=device)

    dl = None
    if draft_logprob is not None:
        arr = (
            draft_logprob.detach().cpu().numpy()
            if isinstance(draft_logprob, torch.Tensor)
            else np.asarray(draft_logprob)
        )
        if arr.shape != (n,):
            raise DistributionError(
                f"draft_logprob must have shape ({n},), one per node, got {arr.shape}"
            )
        dl = put(arr.astype(np.float32), torch.float32)
    if parts == "walk":
        return _walk_tree(tree, device, token, dl, cache_shapes)
    internal = tree.internal
    shape = (_cached_structure if cache_shapes else _structure)(tree, device, internal)
    return DeviceTree(
        tree=tree,
        token=put(token),
        draft_logprob=dl,
        child_tokens=put(_child_token_table(tree)),
        plan=build_plan([tree], device),
        **shape,
    )


__all__ = ["DeviceTree", "to_device_tree", "path_table", "PARTS"]
