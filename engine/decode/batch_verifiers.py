"""Tree verifiers for a batch of ``B`` padded trees in one set of device calls.

The batched twins of :mod:`exitlaw.engine.decode.verifiers` (docs/design.md §1.6,
"Verifiers on a fixed tree"). Row ``b`` of ``logits [B, N, V]`` is the target's
tree forward for :class:`~exitlaw.engine.decode.batch_tree.BatchTree` row ``b``; padding
slots are ignored. Per row, every verifier here has the law of its single-tree
twin, i.e. the block law ``Pr[exit = v, bonus = y] = P(v) p_v(y) [y not a child
token of v]`` (greedy: its argmax walk).

* ``greedy``  -- argmax per node, follow matches (one ``[B, N]`` argmax).
* ``predraw`` -- ``R_v ~ p_v`` for all ``B N`` rows in one inverse-CDF draw (one uniform per row), follow matches.
* ``tev``     -- per row ``log P = A @ log a``, ``rho`` = residual mass, ``w = P rho`` as batched
  matmuls over the ``K`` internal rows (their log-normalisers in one call on an
  accelerator, tree by tree on the CPU, where one ``[B K, V]`` copy is memory-bound);
  **one** exit draw ``V_b ~ w_b`` and **one** bonus draw from ``p_{V_b}`` with ``V_b``'s
  child tokens masked, per row, each a float64 inverse-CDF draw (one uniform per row,
  ``B`` uniforms per call).
* ``residual`` -- sequential by nature (data-dependent loop): rows are verified one
  by one with :func:`~exitlaw.engine.decode.verifiers.verify_residual` (one sync per level
  per row); offered for completeness, not batched.

Greedy, predraw and TEV have no data-dependent shapes and make **one** device-to-host
transfer per call for the whole batch (exit, bonus and the validity flag of every
row). Streams: one :class:`VerifierGenerators` for the batch, row ``b`` taking the
``b``-th uniform of each call, so a row's draws depend on the batch it sits in
(the law does not); or a :class:`RowGenerators` (one per row, continuous batching), each
row drawing from its own streams exactly what its single-tree twin draws (predraw: one
uniform per real node), so a seeded row decodes alike in any batch.
"""

from __future__ import annotations

import torch

from exitlaw.theory import DistributionError

from exitlaw.engine.decode.batch_tree import BatchTree
from exitlaw.engine.decode.device_tree import to_device_tree
from exitlaw.engine.decode.sampling_settings import processed_rows
from exitlaw.engine.decode.reductions import first_argmax
from exitlaw.engine.decode.verifiers import (
    LOG_ZERO,
    RowGenerators,
    VerifierGenerators,
    VerifyResult,
    _draw_rows,
    _internal_logsumexp,
    predraw_rows,
    verify_residual,
)


def _batched_internal_logsumexp(
    flat_rows: torch.Tensor,
    rows: torch.Tensor,
    inv_t: float,
    per_tree: bool | None = None,
    children: torch.Tensor | None = None,
):
    """``lse[b, k]`` of flattened logits row ``rows[b, k]`` at temperature ``1 / inv_t`` (float64 ``[B, K]``).

    On an accelerator one call over all ``B K`` rows. On the CPU one tree at a time: the
    ``[B K, V]`` row copy is memory-bound (at ``V = 32000``, ``B = 8``, ``K = 96`` it is 98 MB,
    swept four times), while one tree's ``[K, V]`` copy stays in cache; the loop is over ``B``
    (a fixed shape), and every row goes through the single-tree verifier's own
    :func:`~exitlaw.engine.decode.verifiers._internal_logsumexp`. ``per_tree`` forces either way
    (default: per tree on the CPU only). With ``children [B, K, M]`` also returns each row's
    residual mass ``rho [B, K]`` (float64; the residual-mass rule, as the single-tree twin).
    """
    if per_tree is None:
        per_tree = flat_rows.device.type == "cpu"
    if children is None:
        if per_tree:
            return torch.stack([_internal_logsumexp(flat_rows, r, inv_t) for r in rows])
        return _internal_logsumexp(flat_rows, rows.reshape(-1), inv_t).reshape(rows.shape)
    if per_tree:
        lse, rest = zip(
            *[_internal_logsumexp(flat_rows, r, inv_t, c) for r, c in zip(rows, children)]
        )
        return torch.stack(lse), torch.stack(rest)
    lse, rest = _internal_logsumexp(
        flat_rows, rows.reshape(-1), inv_t, children.reshape(-1, children.shape[-1])
    )
    return lse.reshape(rows.shape), rest.reshape(rows.shape)


def batch_exit_law(bt: BatchTree, logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """TEV's exit law ``w = P rho`` per row (float64 ``[B, N]``, 0 on padding slots).

    ``log a(u) = logits[par u, x_u] / T - lse[par u]`` with ``lse`` taken over the ``K``
    internal rows only; ``log P = A @ log a`` (a zero edge's ``-inf`` clamped to
    :data:`~exitlaw.engine.decode.verifiers.LOG_ZERO`); ``rho`` by the residual-mass rule
    (:mod:`exitlaw.theory.law`): each internal row's mass off its child tokens, summed directly, 1 at leaves.
    """
    bsz, n, vocab = logits.shape
    inv_t = 1.0 / temperature
    base = torch.arange(bsz, device=logits.device)[:, None] * n  # [B, 1] first row of each tree
    kids = bt.child_tokens.gather(
        1, bt.internal[..., None].expand(-1, -1, bt.child_tokens.shape[-1])
    )  # [B, K, M]
    lse, rest = _batched_internal_logsumexp(
        logits.reshape(bsz * n, vocab), base + bt.internal, inv_t, children=kids
    )
    flat = logits.reshape(bsz, n * vocab)
    edge = (
        flat.gather(1, bt.parent[:, 1:] * vocab + bt.token[:, 1:]).float().double()
    )  # as lse rows
    edge = edge * inv_t  # [B, N-1]
    log_a = edge - lse.gather(1, bt.parent_slot)
    log_a = torch.where(
        bt.valid[:, 1:], log_a, torch.zeros((), dtype=log_a.dtype, device=log_a.device)
    )
    prefix = (
        (bt.edge_ancestor @ log_a.clamp(min=LOG_ZERO)[..., None]).squeeze(-1).exp_()
    )  # P [B, N]
    rest = torch.where(
        bt.has_child.gather(1, bt.internal), rest, 1.0
    )  # padding slots (node 0) of a leaf root
    rho = torch.ones_like(prefix).scatter_(1, bt.internal, rest)  # [B, N]
    return (prefix * rho).masked_fill_(~bt.valid, 0.0)


def _follow_rows(bt: BatchTree, draw: torch.Tensor) -> torch.Tensor:
    """Per row, the deepest node whose every ancestor-or-self ``u != root`` has ``token[u] == draw[par u]``."""
    match = torch.ones_like(bt.valid)
    match[:, 1:] = (bt.token[:, 1:] == draw.gather(1, bt.parent[:, 1:])) & bt.valid[:, 1:]
    ok = ~(bt.ancestor & ~match[:, None, :]).any(dim=-1)  # [B, N]
    return torch.where(ok, bt.depth, -1).argmax(dim=-1)  # [B]


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


def verify_batch_greedy(bt: BatchTree, logits: torch.Tensor) -> list[VerifyResult]:
    """Follow the argmax in every row; bonus = argmax of the exit row."""
    am = first_argmax(logits)  # [B, N]
    v = _follow_rows(bt, am)
    return _finish_rows(bt, v, am.gather(1, v[:, None]).squeeze(1))


def verify_batch_predraw(
    bt: BatchTree, logits: torch.Tensor, temperature: float, gens: VerifierGenerators
) -> list[VerifyResult]:
    """DDTree predraw-and-follow for every row: ``R_v ~ p_v`` for all ``B N`` rows in one draw
    (:func:`~exitlaw.engine.decode.verifiers.predraw_rows`), follow matches."""
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


def verify_batch_tev(
    bt: BatchTree, logits: torch.Tensor, temperature: float, gens: VerifierGenerators, process=None
) -> list[VerifyResult]:
    """TEV per row: exit ``V_b ~ w_b``, bonus ``~ p_{V_b}^res``; fixed shapes, one transfer.

    ``process`` (:func:`~exitlaw.engine.decode.sampling_settings.rows_processor`): the settings' filters,
    applied to the ``B K`` internal rows and the ``B`` raw exit rows only."""
    bsz, n, vocab = logits.shape
    flat = logits.reshape(bsz * n, vocab)
    internal = (torch.arange(bsz, device=logits.device)[:, None] * n + bt.internal).reshape(-1)
    w = batch_exit_law(
        bt, processed_rows(flat, internal, process).reshape(bsz, n, vocab), temperature
    )
    v, w_total = _draw_rows(w, gens.acceptance)  # [B]
    exit_rows = torch.arange(bsz, device=logits.device) * n + v
    z = flat.index_select(0, exit_rows)  # [B, V]: exit rows only
    z = (z if process is None else process(z)).double()
    if temperature != 1.0:
        z.mul_(1.0 / temperature)
    m = bt.child_tokens.shape[-1]
    kids = bt.child_tokens.gather(1, v[:, None, None].expand(bsz, 1, m)).squeeze(1)  # [B, M]
    has = bt.has_child.gather(1, v[:, None])  # [B, 1]
    z.scatter_(1, kids, torch.where(has, float("-inf"), z.gather(1, kids)))
    z = z.sub_(z.amax(dim=-1, keepdim=True)).exp_()
    y, z_total = _draw_rows(z, gens.bonus)
    ok = ((w_total - 1.0).abs() < 1e-3) & (z_total >= 1.0)  # NaN fails both
    return _finish_rows(bt, v, y, ok)


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


__all__ = [
    "batch_exit_law",
    "verify_batch_greedy",
    "verify_batch_predraw",
    "verify_batch_tev",
    "verify_batch_residual",
]
