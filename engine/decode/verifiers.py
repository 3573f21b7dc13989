"""Tree verifiers on a torch device (docs/design.md §1.6, "Verifiers on a fixed tree").

Every verifier here is a *conditionally exact, saturating* path verifier: given
the realised tree and the target rows ``p_v = softmax(logits[v] / T)`` its
(exit, bonus) law is the block law ``P(v) p_v(y) [y not a child token of v]``.

* ``greedy``   -- follow the argmax (every kind at ``T = 0``).
* ``predraw``  -- DDTree: one sample ``R_v ~ p_v`` per node, follow the child whose
  token is ``R_v``; the exit's own draw is the bonus.
* ``residual`` -- EAGLE-style sequential: at ``v`` accept child ``u_j`` w.p.
  ``r(x_uj) / sum r``, on rejection zero it and renormalise; bonus ``~ r``.
* ``tev``      -- Tree Exit Verification, level-parallel: ``log P = A @ log a``,
  ``rho`` = residual mass (theory.law), ``w = P rho``, one exit draw ``V ~ w``, one bonus draw from
  ``p_V`` with ``V``'s child tokens masked. Only the ``K`` internal rows get a
  ``logsumexp`` and only the exit row a (float64) softmax; no ``[N, V]`` copy, no
  per-node sampling, one device-to-host transfer (exit and bonus).

Streams: acceptance decisions (predraw's ``R_v``, residual's uniforms, TEV's
exit draw) use ``generators.acceptance``; bonus draws use ``generators.bonus``
(predraw has no separate bonus draw: its bonus is ``R_exit``). Predraw draws every
row with one float64 inverse-CDF uniform (DDTree: float32 ``multinomial``, same law);
TEV and residual draw the bonus in float64.

Categorical draws over a large vocabulary are inverse-CDF draws in float64 with
one uniform (:func:`_draw`): exact to float64 rounding, free of the tail bias a
float32 Gumbel-max has on a 150k vocabulary, and ~10x cheaper than a float64
exponential race (one random number instead of ``V``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch

from exitlaw.theory import DistributionError
from exitlaw.theory.registry import ENGINE, verifier_names

from exitlaw.engine.decode.device_tree import DeviceTree
from exitlaw.engine.decode.sampling_settings import processed_rows
from exitlaw.engine.decode.reductions import first_argmax

KINDS = verifier_names(implemented=ENGINE)  # the registry's engine verifiers (dispatch.DISPATCH)


class VerifierGenerators:
    """Two independent seeded ``torch.Generator`` streams: ``acceptance`` and ``bonus``.

    The two seeds are spawned from ``numpy.random.SeedSequence(seed)``, so they
    never coincide and never overlap the drafter's stream (seed that separately).
    """

    def __init__(self, seed: int, device: torch.device | str = "cpu"):
        acc_seed, bonus_seed = (
            int(s.generate_state(1, np.uint64)[0] >> np.uint64(1))
            for s in np.random.SeedSequence(int(seed)).spawn(2)
        )
        self.seed = int(seed)
        self.device = torch.device(device)
        self.acceptance = torch.Generator(device=self.device).manual_seed(acc_seed)
        self.bonus = torch.Generator(device=self.device).manual_seed(bonus_seed)


class RowGenerators:
    """One :class:`VerifierGenerators` per batch row, for a batch whose rows are separate requests.

    A batched verifier given these draws row ``b``'s uniforms from row ``b``'s own streams only, as
    many and in the order its single-tree twin draws them for that row alone (predraw: one per real
    node, not per padding slot). A row's draws then depend on its own seed and tree, never on the
    other rows or the padded width (continuous batching, :mod:`exitlaw.engine.decode.continuous`).
    ``acceptance`` / ``bonus`` are the rows' streams as lists, which :func:`_draw_rows` accepts.
    """

    def __init__(self, rows):
        self.rows = list(rows)
        bad = [b for b, g in enumerate(self.rows) if not isinstance(g, VerifierGenerators)]
        if bad:
            raise TypeError(f"rows {bad} are not VerifierGenerators")

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, b: int) -> VerifierGenerators:
        return self.rows[b]

    @property
    def acceptance(self) -> list[torch.Generator]:
        return [g.acceptance for g in self.rows]

    @property
    def bonus(self) -> list[torch.Generator]:
        return [g.bonus for g in self.rows]


# a uniform source: one generator, or one entry per row (a generator, or None: a padding row, no draw)
Uniforms = torch.Generator | list


def uniforms(count: int, gen: Uniforms, device) -> torch.Tensor:
    """``[count, 1]`` float64 uniforms on ``device``: from ``gen`` in one call, or, with a list of
    ``count`` entries, row ``r``'s from its own generator (consecutive rows of one generator in one
    call; a ``None`` row gets 0.5 and consumes nothing). CPU streams are shape-independent, so a row
    drawn here gets the numbers its single-sequence twin draws."""
    if isinstance(gen, torch.Generator):
        return torch.rand(count, 1, dtype=torch.float64, device=device, generator=gen)
    if len(gen) != count:
        raise ValueError(f"{len(gen)} row generators for {count} rows")
    out = torch.full((count, 1), 0.5, dtype=torch.float64, device=device)
    start = 0
    while start < count:
        end = start
        while end < count and gen[end] is gen[start]:
            end += 1
        if gen[start] is not None:
            out[start:end] = torch.rand(
                end - start, 1, dtype=torch.float64, device=device, generator=gen[start]
            )
        start = end
    return out


class VerifyResult(NamedTuple):
    exit_node: int
    bonus: int
    path_nodes: list[int]  # root .. exit_node (node ids: the KV positions to commit)


# ----------------------------------------------------------------- helpers
LOG_ZERO = (
    -1e300
)  # finite stand-in for log 0: a path sum of up to 1e8 of them stays finite in float64


def _draw(weights: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Index ``i`` with probability ``weights[i] / sum(weights)`` (float64 ``[n]``, ``>= 0``, unnormalised).

    Inverse CDF in float64 with one uniform: ``c = cumsum(weights)``, the first ``i``
    with ``c[i] > U c[-1]``. A zero weight never wins (its ``c`` equals the previous
    one); float64 bounds the bias of any weight by ~1e-16 of the total, so there is
    no tail bias on a 150k vocabulary. Returns a 0-d long tensor (no host sync).
    """
    return _draw_with_total(weights, gen)[0]


def _draw_with_total(
    weights: torch.Tensor, gen: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`_draw` and the total weight (``[1]``; NaN/0 there means the weights were not a distribution):
    :func:`_draw_rows` of the one row (the same single uniform)."""
    i, total = _draw_rows(weights.reshape(1, -1), gen)
    return i.reshape(()), total


def _draw_rows(weights: torch.Tensor, gen: Uniforms) -> tuple[torch.Tensor, torch.Tensor]:
    """Per row ``b``, index ``i`` w.p. ``weights[b, i] / sum_i weights[b, i]`` (float64 ``[B, n]``).

    Inverse CDF in float64 with one uniform per row: the first ``i`` with ``c[i] > U c[-1]``
    (``c`` the row's cumulative sum; ``U`` from :func:`uniforms`, one stream or one per row). A zero weight never wins, and a ``U`` that rounds up to the
    total falls back to the last positive weight; with NaN weights the index is clamped and the
    NaN total tells the caller. Returns indices ``[B]`` (long, on the device) and totals ``[B]``.
    """
    c = weights.cumsum(-1)  # [B, n]
    total = c[:, -1:].contiguous()  # [B, 1]
    u = uniforms(c.shape[0], gen, c.device) * total
    i = torch.searchsorted(c, u, right=True)
    last = torch.searchsorted(c, total, right=False)
    return torch.minimum(i, last).clamp_(max=c.shape[1] - 1).squeeze(1), total.squeeze(1)


def _draw_logits(z: torch.Tensor, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Draw from ``softmax(z)`` (``z`` float64 ``[V]``, ``-inf`` = probability 0); overwrites ``z``.

    Returns the index and the total shifted weight (``>= 1`` for a finite row)."""
    return _draw_with_total(z.sub_(z.max()).exp_(), gen)


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
            if (
                depth[u] > best_depth
            ):  # siblings are distinct: the matching nodes form one root path
                best, best_depth = u, depth[u]
        else:
            ok[u] = False
    return best


def _walk_result(dt: DeviceTree, draw: torch.Tensor) -> VerifyResult:
    """Exit by :func:`_walk` over the proposals ``draw [N]`` (one transfer); bonus = ``draw[exit]``."""
    proposals = draw.tolist()
    v = _walk(dt.tree, proposals)
    return VerifyResult(v, int(proposals[v]), list(dt.tree.path_nodes(v)))


def verify_greedy_walk(dt: DeviceTree, logits: torch.Tensor) -> VerifyResult:
    """:func:`verify_greedy` by a host walk over the argmax tokens (no ``[N, N]`` work; needs only the
    host tree, so a ``parts="walk"`` DeviceTree suffices). Same exit and bonus as its twin."""
    return _walk_result(dt, first_argmax(logits))


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


# ----------------------------------------------------------------- verifiers
def verify_greedy(dt: DeviceTree, logits: torch.Tensor) -> VerifyResult:
    """Follow the argmax (first maximum on ties); bonus = argmax of the exit row."""
    am = first_argmax(logits)  # [N]
    v = _follow(dt, am)
    return _finish(dt, v, am.index_select(0, v.reshape(1)))


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


# ----------------------------------------------------------------- reference twins (tests only)
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


def _greedy_reference(dt: DeviceTree, logits: torch.Tensor) -> VerifyResult:
    """Host walk: at each node move to the child carrying the argmax, else exit."""
    tree, v = dt.tree, 0
    while True:
        y = int(logits[v].argmax())
        nxt = tree.child_with_token(v, y)
        if nxt is None:
            return VerifyResult(v, y, list(tree.path_nodes(v)))
        v = nxt


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


__all__ = [
    "KINDS",
    "VerifierGenerators",
    "RowGenerators",
    "uniforms",
    "VerifyResult",
    "predraw_rows",
    "verify_greedy",
    "verify_greedy_walk",
    "verify_predraw",
    "verify_residual",
    "verify_tev",
]
