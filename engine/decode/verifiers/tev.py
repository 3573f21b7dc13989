"""Tree Exit Verification on the device (docs/design.md §1.6), single tree and batched.

Level-parallel: ``log P = A @ log a``, ``rho`` = residual mass (theory.law), ``w = P rho``, one exit
draw ``V ~ w``, one bonus draw from ``p_V`` with ``V``'s child tokens masked. Only the ``K`` internal
rows get a ``logsumexp`` and only the exit row a (float64) softmax; no ``[N, V]`` copy, no per-node
sampling, one device-to-host transfer (exit and bonus). The batched form computes the same per row
as batched matmuls over the ``K`` internal rows (their log-normalisers in one call on an
accelerator, tree by tree on the CPU, where one ``[B K, V]`` copy is memory-bound), with **one**
exit draw and **one** bonus draw per row, each a float64 inverse-CDF draw (``B`` uniforms per call).
"""

from __future__ import annotations

import torch

from exitlaw.engine.decode.batch_tree import BatchTree
from exitlaw.engine.decode.device_tree import DeviceTree
from exitlaw.engine.decode.sampling_settings import processed_rows
from exitlaw.engine.decode.verifiers.draws import _draw, _draw_logits, _draw_rows, _draw_with_total
from exitlaw.engine.decode.verifiers.generators import VerifierGenerators
from exitlaw.engine.decode.verifiers.result import VerifyResult, _finish, _finish_rows
from exitlaw.engine.decode.verifiers.table import engine_verifier


LOG_ZERO = (
    -1e300
)  # finite stand-in for log 0: a path sum of up to 1e8 of them stays finite in float64


def _internal_logsumexp(
    logits: torch.Tensor, internal: torch.Tensor, inv_t: float, children: torch.Tensor | None = None
):
    """``lse[k] = log sum_y exp(logits[internal[k], y] / T)`` (float64 ``[K]``): one row copy, in place after.

    Max-shifted so no row overflows: ``m / T + log sum exp((x - m) / T)``, the exponentials in
    float32 from the exact difference ``x - m`` and the offset ``m / T`` in float64 (at a tiny ``T``
    it is huge, and float32's rounding of it would swamp ``log a = x / T - lse``). With ``children``
    (``[K, M]`` child tokens of each row) also returns ``rho [K]`` (float64), the row's mass off
    those tokens summed directly from the same exponentials (the residual-mass rule,
    :mod:`exitlaw.theory.law`): 0 exactly when they hold the whole row, a tiny residual kept.
    """
    rows = logits.index_select(0, internal)  # [K, V]: the only row copy
    if rows.dtype != torch.float32:
        rows = rows.float()
    m = rows.amax(dim=-1, keepdim=True)
    rows.sub_(m)  # x - m is rounded relative to itself (not to m / T) before 1 / T scales it
    if inv_t != 1.0:
        rows.mul_(inv_t)
    total = rows.exp_().sum(dim=-1)
    lse = total.log().double().add_(m.squeeze(-1).double(), alpha=inv_t)
    if children is None:
        return lse
    rest = rows.scatter_(1, children, 0.0).sum(dim=-1)
    return lse, rest.double() / total.double()


def _mask_children_(z: torch.Tensor, dt: DeviceTree, node: torch.Tensor) -> torch.Tensor:
    """Set ``z[y] = -inf`` for every child token ``y`` of ``node`` (a 0-d device tensor), in place."""
    at = node.reshape(
        1
    )  # index_select, not dt.child_tokens[node]: a 0-d index would sync with the host
    idx = dt.child_tokens.index_select(0, at).reshape(
        -1
    )  # [M]; padding repeats a child token, or 0 at a leaf
    keep = z.gather(0, idx)
    z.scatter_(0, idx, torch.where(dt.has_child.index_select(0, at), float("-inf"), keep))
    return z


def _tev_exit_law(dt: DeviceTree, logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """The exit law ``w = P rho`` (float64 ``[N]``) from the ``K`` internal rows only.

    ``log a(u) = logits[par u, x_u] / T - lse[par u]``; ``log P = A @ log a`` with a
    zero edge's ``-inf`` replaced by :data:`LOG_ZERO` (``0 * -inf`` would be NaN and
    poison every row of ``A``); ``rho`` by the residual-mass rule (:mod:`exitlaw.theory.law`):
    each internal row's mass off its child tokens, summed directly (never ``1 - m``), 1 at leaves.
    NaN/+inf logits or an all ``-inf`` internal row make ``sum w`` differ from 1
    (:func:`verify_tev` checks it on the device).
    """
    inv_t = 1.0 / temperature
    kids = dt.child_tokens.index_select(0, dt.internal)  # [K, M]
    lse, rest = _internal_logsumexp(logits, dt.internal, inv_t, kids)
    # [N-1] edge logits, u = 1..N-1, rounded to float32 as the rows of lse were (at a tiny T a float64
    # logit's float32 rounding error, times 1 / T, would not cancel against lse)
    log_a = logits[dt.parent[1:], dt.token[1:]].float().to(torch.float64)
    if inv_t != 1.0:
        log_a.mul_(inv_t)
    log_a.sub_(lse.index_select(0, dt.parent_slot))
    prefix = (dt.edge_ancestor @ log_a.clamp(min=LOG_ZERO)).exp_()  # P [N]
    rho = torch.ones_like(prefix).index_copy_(0, dt.internal, rest)  # [N]
    return prefix.mul_(rho)


@engine_verifier("tev")
def verify_tev(
    dt: DeviceTree, logits: torch.Tensor, temperature: float, gens: VerifierGenerators, process=None
) -> VerifyResult:
    """TEV: exit ``V ~ w``, bonus ``~ p_V^res`` (float64 exit row, child tokens masked); one transfer.

    ``process`` (:func:`~exitlaw.engine.decode.sampling_settings.rows_processor`): the sampling settings'
    filters, applied to the ``K`` internal rows the exit law reads and to the (raw) exit row only."""
    w = _tev_exit_law(dt, processed_rows(logits, dt.internal, process), temperature)
    v, w_total = _draw_with_total(w, gens.acceptance)
    z = logits.index_select(0, v.reshape(1))  # [1, V]: the exit row only
    z = (z if process is None else process(z)).reshape(-1).to(torch.float64)
    if temperature != 1.0:
        z.mul_(1.0 / temperature)
    y, z_total = _draw_logits(_mask_children_(z, dt, v), gens.bonus)
    # sum w = 1, and the shifted residual row holds its max exp(0) = 1; NaN fails both comparisons
    ok = ((w_total - 1.0).abs() < 1e-3) & (z_total >= 1.0)
    return _finish(dt, v, y, ok)


def _tev_reference(
    dt: DeviceTree, logits: torch.Tensor, temperature: float, gens: VerifierGenerators
) -> VerifyResult:
    """Per-node loop over full float64 rows (theory.exact in float); same draws as :func:`verify_tev`."""
    from exitlaw.theory import reference_law

    probs = torch.softmax(logits.to(torch.float64) / temperature, dim=-1)
    law = reference_law(dt.tree, probs.cpu().numpy().tolist(), one=1.0)
    w = torch.tensor([max(x, 0.0) for x in law.w], dtype=torch.float64, device=logits.device)
    v = _draw(w, gens.acceptance)
    res = probs[int(v)].clone()
    res[dt.tree.token[dt.tree.children[int(v)]].tolist()] = 0.0
    y = _draw(res, gens.bonus)
    return VerifyResult(int(v), int(y), list(dt.tree.path_nodes(int(v))))


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
    :func:`_internal_logsumexp`. ``per_tree`` forces either way
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
    :data:`LOG_ZERO`); ``rho`` by the residual-mass rule
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


@engine_verifier("tev", batched=True)
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


__all__ = ["verify_tev", "batch_exit_law", "verify_batch_tev"]
