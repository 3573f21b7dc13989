"""Following proposals down a tree: the deepest node whose every edge token equals the token proposed
at its parent (argmax for greedy, ``R_v`` for predraw), on the device, on the host, and per batch row."""

from __future__ import annotations

import torch

from exitlaw.engine.decode.batch_tree import BatchTree
from exitlaw.engine.decode.device_tree import DeviceTree
from exitlaw.engine.decode.verifiers.result import VerifyResult


def _follow(dt: DeviceTree, draw: torch.Tensor) -> torch.Tensor:
    """Deepest node whose every ancestor-or-self ``u != root`` has ``token[u] == draw[par(u)]``.

    ``draw[v]`` is the token "proposed" at node ``v`` (argmax, or predraw's ``R_v``).
    Siblings are distinct, so the matching nodes form one root path.
    """
    match = torch.ones_like(dt.token, dtype=torch.bool)
    match[1:] = dt.token[1:] == draw[dt.parent[1:]]
    ok = ~(dt.ancestor & ~match[None, :]).any(dim=1)  # [N]
    return torch.where(ok, dt.depth, -1).argmax()


def _walk(tree, draw: list[int]) -> int:
    """Host twin of :func:`_follow`: the deepest node whose every ancestor-or-self ``u != root`` has
    ``token[u] == draw[par(u)]``, by one pass in node order (parents come before children)."""
    parent, token = tree.parent.tolist(), tree.token.tolist()
    ok = [True] * len(parent)
    best, best_depth = 0, 0
    depth = [0] * len(parent)
    for u in range(1, len(parent)):
        p = parent[u]
        if ok[p] and token[u] == draw[p]:
            depth[u] = depth[p] + 1
            # siblings are distinct: the matching nodes form one root path
            if depth[u] > best_depth:
                best, best_depth = u, depth[u]
        else:
            ok[u] = False
    return best


def _walk_result(dt: DeviceTree, draw: torch.Tensor) -> VerifyResult:
    """Exit by :func:`_walk` over the proposals ``draw [N]`` (one transfer); bonus = ``draw[exit]``."""
    proposals = draw.tolist()
    v = _walk(dt.tree, proposals)
    return VerifyResult(v, int(proposals[v]), list(dt.tree.path_nodes(v)))


def _follow_rows(bt: BatchTree, draw: torch.Tensor) -> torch.Tensor:
    """Per row, the deepest node whose every ancestor-or-self ``u != root`` has ``token[u] == draw[par u]``."""
    match = torch.ones_like(bt.valid)
    match[:, 1:] = (bt.token[:, 1:] == draw.gather(1, bt.parent[:, 1:])) & bt.valid[:, 1:]
    ok = ~(bt.ancestor & ~match[:, None, :]).any(dim=-1)  # [B, N]
    return torch.where(ok, bt.depth, -1).argmax(dim=-1)  # [B]


__all__ = []
