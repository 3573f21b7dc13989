"""Predraw verification (DDTree; docs/design.md §1.6): one sample ``R_v ~ p_v`` per node, follow the
child whose token is ``R_v``; the exit's own draw is the bonus.

Every row is drawn with one float64 inverse-CDF uniform (DDTree: float32 ``multinomial``, same law);
the batched form draws all ``B N`` rows in one call (one uniform per row), follows matches, and makes
one transfer for the batch.
"""

from __future__ import annotations

import torch

from exitlaw.engine.decode.batch_tree import BatchTree
from exitlaw.engine.decode.device_tree import DeviceTree
from exitlaw.engine.decode.verifiers.draws import _draw_rows
from exitlaw.engine.decode.verifiers.generators import RowGenerators, Uniforms, VerifierGenerators
from exitlaw.engine.decode.verifiers.result import VerifyResult, _finish_rows
from exitlaw.engine.decode.verifiers.table import engine_verifier
from exitlaw.engine.decode.verifiers.walk import _follow_rows, _walk
from exitlaw.theory import DistributionError


def predraw_rows(
    logits: torch.Tensor, temperature: float, gen: Uniforms
) -> tuple[torch.Tensor, torch.Tensor]:
    """``R_v ~ softmax(logits[v] / T)`` for every row of ``logits [..., V]`` (flattened to ``[R]``): float64
    weights ``exp((x - max) / T)`` and one inverse-CDF uniform per row (:func:`_draw_rows`) -- the law of
    DDTree's float32 ``softmax`` + ``multinomial`` without its ``R V`` random numbers (one per row here).
    Also returns ``ok [R]`` (bool): the row is finite with positive mass (the shifted row's maximum is
    ``exp(0) = 1``, so its total is ``>= 1``; NaN/+inf or an all ``-inf`` row fail)."""
    z = logits.reshape(-1, logits.shape[-1]).to(torch.float64) * (1.0 / temperature)  # a new tensor
    draw, total = _draw_rows(z.sub_(z.amax(dim=-1, keepdim=True)).exp_(), gen)
    return draw, total >= 1.0


@engine_verifier("predraw")
def verify_predraw(
    dt: DeviceTree, logits: torch.Tensor, temperature: float, gens: VerifierGenerators
) -> VerifyResult:
    """DDTree predraw-and-follow: ``R_v ~ p_v`` for every node (:func:`predraw_rows`, one draw per row),
    follow matches by a host walk (twin: :func:`_follow` on the device); the exit's draw is the bonus."""
    draw, ok = predraw_rows(logits, temperature, gens.acceptance)
    values = torch.cat([draw, ok.all().reshape(1).to(draw.dtype)]).tolist()  # the one transfer
    if not values[-1]:
        raise DistributionError(
            "target logits of this round contain NaN/+inf, or a row is all -inf"
        )
    v = _walk(dt.tree, values)
    return VerifyResult(v, int(values[v]), list(dt.tree.path_nodes(v)))


@engine_verifier("predraw", batched=True)
def verify_batch_predraw(
    bt: BatchTree, logits: torch.Tensor, temperature: float, gens: VerifierGenerators
) -> list[VerifyResult]:
    """DDTree predraw-and-follow for every row: ``R_v ~ p_v`` for all ``B N`` rows in one draw
    (:func:`predraw_rows`), follow matches."""
    bsz, n, _ = logits.shape
    streams = gens.acceptance
    if isinstance(gens, RowGenerators):  # row b: one uniform per real node from its own stream
        streams = [
            g if v < t.num_nodes else None for g, t in zip(streams, bt.trees) for v in range(n)
        ]
    draw, ok = predraw_rows(logits, temperature, streams)
    draw = draw.reshape(bsz, n)  # [B, N]
    v = _follow_rows(bt, draw)
    return _finish_rows(
        bt, v, draw.gather(1, v[:, None]).squeeze(1), ok.reshape(bsz, n).all(dim=-1)
    )


def _predraw_reference(
    dt: DeviceTree, logits: torch.Tensor, temperature: float, gens: VerifierGenerators
) -> VerifyResult:
    """DDTree's literal loop: one multinomial per node, in node order, then follow on the host."""
    draws = []
    for v in range(dt.num_nodes):
        p = torch.softmax(logits[v].to(torch.float64) / temperature, dim=-1)
        draws.append(int(torch.multinomial(p, 1, generator=gens.acceptance)))
    tree, v = dt.tree, 0
    while True:
        nxt = tree.child_with_token(v, draws[v])
        if nxt is None:
            return VerifyResult(v, draws[v], list(tree.path_nodes(v)))
        v = nxt


__all__ = ["predraw_rows", "verify_predraw", "verify_batch_predraw"]
