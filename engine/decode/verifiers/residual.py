"""Residual verification (EAGLE-style sequential; docs/design.md §1.6): at ``v`` accept child ``u_j``
w.p. ``r(x_uj) / sum r``, on rejection zero it and renormalise; bonus ``~ r``, drawn in float64.

Sequential by nature (a data-dependent loop): the batched form verifies rows one by one with the
single-tree form (one sync per level per row); offered for completeness, not batched.
"""

from __future__ import annotations

import numpy as np
import torch

from exitlaw.engine.decode.batch_tree import BatchTree
from exitlaw.engine.decode.device_tree import DeviceTree, to_device_tree
from exitlaw.engine.decode.verifiers.draws import _draw_logits
from exitlaw.engine.decode.verifiers.generators import RowGenerators, VerifierGenerators
from exitlaw.engine.decode.verifiers.result import VerifyResult
from exitlaw.engine.decode.verifiers.table import engine_verifier
from exitlaw.theory import DistributionError


@engine_verifier("residual")
def verify_residual(
    dt: DeviceTree, logits: torch.Tensor, temperature: float, gens: VerifierGenerators, process=None
) -> VerifyResult:
    """EAGLE-style sequential residual verification (children in node-id order), one sync per level.

    ``process`` (:func:`~exitlaw.engine.decode.sampling_settings.rows_processor`): the sampling settings'
    filters, applied to each row on the path as it is read (only those rows are processed)."""
    tree = dt.tree
    v = 0
    while True:
        row = logits[v] if process is None else process(logits[v : v + 1])[0]
        z = row.to(torch.float64) / temperature
        kids = tree.children[v]
        if kids.size == 0:
            break
        r = torch.softmax(z, dim=-1)  # [V]
        toks = torch.as_tensor(tree.token[kids], device=logits.device)
        u = torch.rand(
            kids.size, generator=gens.acceptance, dtype=torch.float64, device=logits.device
        )
        pr, uu = torch.stack([r[toks], u]).tolist()
        remaining, nxt = 1.0, None
        for j, child in enumerate(kids):
            # accept w.p. r(x) / sum r, where sum r = 1 - (mass of rejected siblings)
            if remaining > 0 and uu[j] * remaining < pr[j]:
                nxt = int(child)
                break
            remaining -= pr[j]
        if nxt is None:
            z[toks] = float("-inf")
            break
        v = nxt
    bonus, total = _draw_logits(z, gens.bonus)
    bonus, total = torch.cat([bonus.reshape(1).to(torch.float64), total]).tolist()
    if not (np.isfinite(total) and total > 0):
        raise DistributionError(
            f"the exit row of node {v} holds NaN/+inf or no mass outside the children"
        )
    return VerifyResult(v, int(bonus), list(tree.path_nodes(v)))


@engine_verifier("residual", batched=True)
def verify_batch_residual(
    bt: BatchTree, logits: torch.Tensor, temperature: float, gens: VerifierGenerators, process=None
) -> list[VerifyResult]:
    """Sequential residual verification, row by row (not batched: its loop is data-dependent); with
    :class:`RowGenerators` each row on its own streams."""
    return [
        verify_residual(
            to_device_tree(t, logits.device),
            logits[b, : t.num_nodes],
            temperature,
            gens[b] if isinstance(gens, RowGenerators) else gens,
            process,
        )
        for b, t in enumerate(bt.trees)
    ]


__all__ = ["verify_residual", "verify_batch_residual"]
