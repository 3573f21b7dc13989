"""A verifier's result (exit node, bonus token, the path to commit), the one device-to-host transfer
that produces it (single tree and batch), and the checks on a single-tree round's inputs."""

from __future__ import annotations

from typing import NamedTuple

import torch

from exitlaw.engine.decode.batch_tree import BatchTree
from exitlaw.engine.decode.device_tree import DeviceTree
from exitlaw.theory import DistributionError


class VerifyResult(NamedTuple):
    exit_node: int
    bonus: int
    path_nodes: list[int]  # root .. exit_node (node ids: the KV positions to commit)


def _finish(
    dt: DeviceTree, exit_node: torch.Tensor, bonus: torch.Tensor, ok: torch.Tensor | None = None
) -> VerifyResult:
    """The single device-to-host transfer of a round."""
    parts = [exit_node.reshape(1), bonus.reshape(1).to(exit_node.dtype)]
    if ok is not None:
        parts.append(ok.reshape(1).to(exit_node.dtype))
    out = torch.cat(parts).tolist()
    if ok is not None and not out[2]:
        raise DistributionError(
            "target logits of this round contain NaN/+inf, or an internal row is all -inf"
        )
    v = int(out[0])
    return VerifyResult(v, int(out[1]), list(dt.tree.path_nodes(v)))


def _finish_rows(
    bt: BatchTree, exit_node: torch.Tensor, bonus: torch.Tensor, ok: torch.Tensor | None = None
) -> list[VerifyResult]:
    """The single device-to-host transfer of a batched round."""
    parts = [exit_node, bonus.to(exit_node.dtype)]
    if ok is not None:
        parts.append(ok.to(exit_node.dtype))
    out = torch.stack(parts).tolist()  # [2 or 3, B]
    if ok is not None and not all(out[2]):
        bad = [b for b, f in enumerate(out[2]) if not f]
        raise DistributionError(
            f"rows {bad}: target logits contain NaN/+inf, or an internal row is all -inf"
        )
    return [
        VerifyResult(int(v), int(y), bt.path_nodes(b, int(v)))
        for b, (v, y) in enumerate(zip(out[0], out[1]))
    ]


def _check(tree: DeviceTree, logits: torch.Tensor) -> None:
    if not isinstance(tree, DeviceTree):
        raise TypeError(
            f"verify needs a DeviceTree (see to_device_tree), got {type(tree).__name__}"
        )
    if logits.ndim != 2 or logits.shape[0] != tree.num_nodes:
        raise DistributionError(
            f"logits must have shape [N={tree.num_nodes}, V], got {tuple(logits.shape)}"
        )
    if not torch.is_floating_point(logits):
        raise DistributionError(f"logits must be floating point, got {logits.dtype}")
    tree.tree.check_vocab(int(logits.shape[1]))


__all__ = ["VerifyResult"]
