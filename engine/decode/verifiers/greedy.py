"""Greedy verification: follow the argmax (every fixed-tree verifier at ``T = 0``; docs/design.md §1.6).

* single tree -- a host walk over the argmax tokens (:func:`verify_greedy_walk`, the registered form;
  :func:`verify_greedy` is its device twin);
* batched -- argmax per node, follow matches (one ``[B, N]`` argmax), one transfer for the batch.
"""

from __future__ import annotations

import torch

from exitlaw.engine.decode.batch_tree import BatchTree
from exitlaw.engine.decode.device_tree import DeviceTree
from exitlaw.engine.decode.reductions import first_argmax
from exitlaw.engine.decode.verifiers.result import VerifyResult, _finish, _finish_rows
from exitlaw.engine.decode.verifiers.table import engine_verifier
from exitlaw.engine.decode.verifiers.walk import _follow, _follow_rows, _walk_result


def verify_greedy(dt: DeviceTree, logits: torch.Tensor) -> VerifyResult:
    """Follow the argmax (first maximum on ties); bonus = argmax of the exit row."""
    am = first_argmax(logits)  # [N]
    v = _follow(dt, am)
    return _finish(dt, v, am.index_select(0, v.reshape(1)))


@engine_verifier("greedy")
def verify_greedy_walk(dt: DeviceTree, logits: torch.Tensor) -> VerifyResult:
    """:func:`verify_greedy` by a host walk over the argmax tokens (no ``[N, N]`` work; needs only the
    host tree, so a ``parts="walk"`` DeviceTree suffices). Same exit and bonus as its twin."""
    return _walk_result(dt, first_argmax(logits))


@engine_verifier("greedy", batched=True)
def verify_batch_greedy(bt: BatchTree, logits: torch.Tensor) -> list[VerifyResult]:
    """Follow the argmax in every row; bonus = argmax of the exit row."""
    am = first_argmax(logits)  # [B, N]
    v = _follow_rows(bt, am)
    return _finish_rows(bt, v, am.gather(1, v[:, None]).squeeze(1))


def _greedy_reference(dt: DeviceTree, logits: torch.Tensor) -> VerifyResult:
    """Host walk: at each node move to the child carrying the argmax, else exit."""
    tree, v = dt.tree, 0
    while True:
        y = int(logits[v].argmax())
        nxt = tree.child_with_token(v, y)
        if nxt is None:
            return VerifyResult(v, y, list(tree.path_nodes(v)))
        v = nxt


__all__ = ["verify_greedy", "verify_greedy_walk", "verify_batch_greedy"]
