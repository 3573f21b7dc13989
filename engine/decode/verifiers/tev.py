"""Tree Exit Verification on the device (docs/design.md §1.6), single tree and batched: one
fixed-shape, level-parallel decision per tree, as the paper describes it.

A decision is one device function, :func:`tev_decide`, on the target logits, a :class:`TevPlan` (the
tree's index tensors, built once per tree *before* the target forward and padded so that every shape
depends on the padded node count ``N`` alone) and two tensors of exponential random numbers drawn from
the engine's per-round streams. Its steps (``K`` internal rows, padded to ``N + 1``; ``E = N - 1``
edges):

1. node-local reductions: ``p_k = softmax(logits[k] / T)`` for the padded internal rows only; each
   edge's probability ``a(u) = p_{par u}(x_u)`` by one gather; the residual mass
   ``rho(k) = sum_y p_k(y) [y not a child token of k]`` by zeroing the child cells (one index-put) and
   summing (the residual-mass rule of :mod:`exitlaw.theory.law`: never ``1 - m``);
2. depth-wise propagation: ``P(v) = prod_{u in anc(v)} a(u)`` by one masked product over the
   ancestor matrix (Lemma 1's path probability), and ``w = P rho`` (Theorem 1's exit law);
3. one exit draw ``V ~ w`` and one bonus draw ``Y ~ p_V`` with ``V``'s child tokens masked, each an
   exponential race in float64 (``argmax_i w_i / E_i`` with ``E_i ~ Exp(1)`` is ``w``-distributed:
   exact, no tail bias, and a zero weight never wins);
4. one host read of ``(exit, bonus)`` (``exit = -1`` flags NaN/+inf logits or an all ``-inf`` row).

No data-dependent shape, no host-to-device copy and no host read before the end, so the function
compiles to one graph (``torch.compile(fullgraph=True)``, :func:`compiled_decide`) and, on CUDA, can
be replayed as one CUDA graph per padded shape (:class:`TevGraphs`; its capture is untested on a GPU). Padding: internal slots beyond ``K``
repeat row 0; slot ``K`` (untouched, its ``rho = 1``) is every leaf's; the last slot takes the padding
edges' writes; padding nodes (batched rows narrower than ``N``) get ``P = 0``.

Streams: the exit's exponentials come from ``generators.acceptance`` (one per real node), the bonus's
from ``generators.bonus`` (one per vocabulary entry); a :class:`RowGenerators` row draws exactly what
its single-tree twin draws, so a seeded row decodes alike alone or in any batch.
"""

from __future__ import annotations

import weakref
from typing import Callable, Sequence

import torch

from exitlaw.engine.decode.batch_tree import BatchTree
from exitlaw.engine.decode.device_tree import DeviceTree
from exitlaw.engine.decode.tev_plan import TevPlan, build_plan
from exitlaw.engine.decode.verifiers.generators import RowGenerators, VerifierGenerators, uniforms
from exitlaw.engine.decode.verifiers.result import VerifyResult
from exitlaw.engine.decode.verifiers.table import engine_verifier
from exitlaw.theory import DistributionError, DraftTree, reference_law

INVALID = -1  # the exit read back when the round's logits are not distributions


_PLANS: "weakref.WeakKeyDictionary[object, TevPlan]" = weakref.WeakKeyDictionary()


def tev_plan(tree: DeviceTree | BatchTree) -> TevPlan:
    """The plan of a device tree or batch: the one built with it (``to_device_tree(parts="all")`` and
    ``to_batch_tree`` build it before the target forward, so the decision copies nothing to the device);
    for a tree built without one (``parts="walk"``), built on first use and kept with the tree."""
    if getattr(tree, "plan", None) is not None:
        return tree.plan
    plan = _PLANS.get(tree)
    if plan is None:
        if isinstance(tree, BatchTree):
            plan = build_plan(tree.trees, tree.device, tree.width)
        elif isinstance(tree, DeviceTree):
            plan = build_plan([tree.tree], tree.device)
        else:
            raise TypeError(
                f"a TEV plan needs a DeviceTree or BatchTree, got {type(tree).__name__}"
            )
        _PLANS[tree] = plan
    return plan


# 0-d constants per (device, dtype): made once, so a decision allocates nothing from the host
_CONSTANTS: dict[tuple[str, torch.dtype, float], torch.Tensor] = {}


def _constant(value: float, like: torch.Tensor) -> torch.Tensor:
    key = (str(like.device), like.dtype, value)
    c = _CONSTANTS.get(key)
    if c is None:
        c = _CONSTANTS[key] = torch.full((), value, dtype=like.dtype, device=like.device)
    return c


def exit_law(
    logits: torch.Tensor, plan: TevPlan, inv_t: float, process: Callable | None = None
) -> torch.Tensor:
    """Steps 1-2: TEV's exit law ``w = P rho`` (float32 ``[B, N]``, 0 on padding nodes) from the
    padded internal rows of ``logits [B, N, V]`` only (see the module docstring)."""
    bsz, n, vocab = logits.shape
    return _exit_law(logits.reshape(bsz * n, vocab), plan, inv_t, process)


def row_reductions(
    flat: torch.Tensor, plan: TevPlan, inv_t: float, process: Callable | None = None
) -> torch.Tensor:
    """Step 1, the node-local reductions: ``[B, 1, E + N + 1]``, each edge's ``a(u) = p_par(u)(x_u)``
    then each padded slot's residual mass ``rho`` (``flat``: the ``[B N, V]`` logits)."""
    rows = flat.index_select(0, plan.rows)  # [B (N+1), V]
    if process is not None:
        rows = process(rows)
    if inv_t != 1.0:  # x - max is rounded relative to itself before 1 / T scales it (a tiny T)
        rows = rows.float()
        rows = (rows - rows.amax(dim=-1, keepdim=True)).mul_(inv_t)
    probs = torch.softmax(rows, dim=-1, dtype=torch.float32)
    a = probs[plan.edge_row, plan.edge_token]  # [B, 1, E] edge probabilities
    probs.index_put_((plan.edge_row, plan.edge_token), _constant(0.0, probs))
    rho = probs.sum(dim=-1)  # [B (N+1)] residual masses, summed directly
    return torch.cat([a, rho.view(plan.batch, 1, -1)], dim=-1)


def propagate(factors: torch.Tensor, plan: TevPlan) -> torch.Tensor:
    """Step 2, the depth-wise propagation: ``w(v) = P(v) rho(v)`` (float32 ``[B, N]``), the product of
    ``v``'s ancestor-or-self edges' ``a`` (Lemma 1) times its slot's ``rho`` (Theorem 1's exit law)."""
    return torch.where(plan.ancestor, factors, plan.fill).prod(dim=-1)


def _exit_law(flat: torch.Tensor, plan: TevPlan, inv_t: float, process) -> torch.Tensor:
    return propagate(row_reductions(flat, plan, inv_t, process), plan)


def _mask_children(z: torch.Tensor, plan: TevPlan, v: torch.Tensor) -> torch.Tensor:
    """``z [B, V]`` with ``-inf`` at the child tokens of each row's exit ``v [B, 1]``: one scatter-add of
    ``-inf`` on the exit's child edges and 0 elsewhere (a token shared with other parents' edges gets
    only zeros from them, so the result does not depend on the order of the writes)."""
    hit = plan.edge_parent == v  # [B, E]: the exit's child edges
    mask = torch.where(hit, _constant(-torch.inf, z), _constant(0.0, z))
    return z.scatter_add(1, plan.bonus_index, mask)


def tev_decide(
    logits: torch.Tensor,
    plan: TevPlan,
    inv_t: float,
    exit_noise: torch.Tensor,
    bonus_uniform: torch.Tensor,
    process: Callable | None = None,
) -> torch.Tensor:
    """One fixed-shape TEV decision per row: ``[B, 2]`` long, (exit or :data:`INVALID`, bonus).

    ``logits [B, N, V]``; ``exit_noise [B, N]`` float64 ``Exp(1)`` draws (the exit's race);
    ``bonus_uniform [B, 1]`` float64 ``U(0, 1)`` (the bonus's inverse CDF); ``process``: the sampling
    settings' filters, applied to the internal rows and the exit row only."""
    bsz, n, vocab = logits.shape
    flat = logits.reshape(bsz * n, vocab)
    factors = row_reductions(flat, plan, inv_t, process)
    return tev_finish(flat, plan, inv_t, factors, exit_noise, bonus_uniform, process)


def tev_finish(
    flat: torch.Tensor,
    plan: TevPlan,
    inv_t: float,
    factors: torch.Tensor,
    exit_noise: torch.Tensor,
    bonus_uniform: torch.Tensor,
    process: Callable | None = None,
) -> torch.Tensor:
    """Steps 2-4 of :func:`tev_decide` from the row reductions' ``factors`` (``flat``: ``[B N, V]``
    logits). Split out so a benchmark can time what the authors' released code times after its
    forward window (it computes the internal rows' softmax inside that window)."""
    bsz = plan.batch
    w = propagate(factors, plan)
    exit_score, v = (w / exit_noise).max(dim=-1, keepdim=True)  # [B, 1]: V ~ w, an exponential race
    at = (v if bsz == 1 else v + plan.row_base).view(-1)
    z = flat.index_select(0, at)  # [B, V]: the exit rows only
    if process is not None:
        z = process(z)
    z = _mask_children(z, plan, v)
    if inv_t != 1.0:
        z = z.double() * inv_t
    cdf = torch.softmax(z, dim=-1, dtype=torch.float64).cumsum_(dim=-1)  # p_V^res, masked
    total = cdf[:, -1:]  # NaN for NaN/+inf logits or an all -inf row
    # [B, 1]: the first c_i > U c[-1]; U in [0, 1) is a multiple of 2^-53, so fl(U c[-1]) < c[-1] and
    # some c_i exceeds it, and a zero weight (c_i = c_(i-1)) is never the first
    y = torch.searchsorted(cdf, bonus_uniform * total, right=True)
    ok = torch.isfinite(exit_score + total)
    return torch.cat([torch.where(ok, v, INVALID), y], dim=1)  # [B, 2]


def draw_noise(
    plan: TevPlan, gens: VerifierGenerators | RowGenerators, device
) -> tuple[torch.Tensor, torch.Tensor]:
    """The decision's random numbers: ``Exp(1)`` float64 ``[B, N]`` from the acceptance stream(s) (the
    exit's race) and one ``U(0, 1)`` float64 per row ``[B, 1]`` from the bonus stream(s). With
    :class:`RowGenerators` row ``b`` draws from its own streams exactly what its single-tree twin
    draws (one exponential per real node; padding nodes get 1, their weight is 0); with one
    :class:`VerifierGenerators` the batch draws in one call each."""
    shape = (plan.batch, plan.nodes)
    if isinstance(gens, RowGenerators):
        if len(gens) != plan.batch:
            raise ValueError(f"{len(gens)} row generators for {plan.batch} rows")
        exit_noise = torch.ones(shape, dtype=torch.float64, device=device)
        for b, (g, nb) in enumerate(zip(gens.rows, plan.num_nodes)):
            exit_noise[b, :nb].exponential_(generator=g.acceptance)
        bonus = uniforms(plan.batch, gens.bonus, device)
    else:  # one stream for the batch: a row's draws depend on the batch it sits in (its law does not)
        exit_noise = torch.empty(shape, dtype=torch.float64, device=device)
        exit_noise.exponential_(generator=gens.acceptance)
        bonus = uniforms(plan.batch, gens.bonus, device)
    # an exponential of exactly 0 at a zero-weight node would make 0 / 0 = NaN (read as invalid logits):
    # the smallest normal double instead leaves every other draw, and the law, unchanged
    return exit_noise.clamp_min_(_TINY), bonus


_TINY = torch.finfo(torch.float64).tiny


def read_decision(
    out: torch.Tensor, plan: TevPlan, trees: Sequence[DraftTree], vocab: int
) -> list[VerifyResult]:
    """The decision's one host read (``[B, 2]``: exit, bonus), checked; the paths from the host trees."""
    pairs = out.tolist()
    bad = [b for b, (v, y) in enumerate(pairs) if v == INVALID or y < 0 or y >= vocab]
    if bad:
        where = "this round" if plan.batch == 1 else f"rows {bad}"
        raise DistributionError(
            f"target logits of {where} contain NaN/+inf, or a row TEV reads is all -inf"
        )
    return [
        VerifyResult(int(v), int(y), list(t.path_nodes(int(v)))) for (v, y), t in zip(pairs, trees)
    ]


def _decide(tree, logits3: torch.Tensor, temperature: float, gens, process) -> torch.Tensor:
    plan = tev_plan(tree)
    exit_noise, bonus_uniform = draw_noise(plan, gens, logits3.device)
    decide = _DECIDERS.get(logits3.device.type, tev_decide)
    return decide(logits3, plan, 1.0 / temperature, exit_noise, bonus_uniform, process)


@engine_verifier("tev")
def verify_tev(
    dt: DeviceTree, logits: torch.Tensor, temperature: float, gens: VerifierGenerators, process=None
) -> VerifyResult:
    """TEV on one tree: :func:`tev_decide` on ``logits [N, V]``, one host read of (exit, bonus).

    ``process`` (:func:`~exitlaw.engine.decode.sampling_settings.rows_processor`): the sampling settings'
    filters, applied to the internal rows the exit law reads and to the exit row only."""
    out = _decide(dt, logits.unsqueeze(0), temperature, gens, process)
    return read_decision(out, tev_plan(dt), [dt.tree], int(logits.shape[-1]))[0]


@engine_verifier("tev", batched=True)
def verify_batch_tev(
    bt: BatchTree, logits: torch.Tensor, temperature: float, gens: VerifierGenerators, process=None
) -> list[VerifyResult]:
    """TEV per row of a padded batch (``logits [B, N, V]``): one decision, one host read for the batch;
    with :class:`RowGenerators` each row on its own streams, as its single-tree twin."""
    out = _decide(bt, logits, temperature, gens, process)
    return read_decision(out, tev_plan(bt), bt.trees, int(logits.shape[-1]))


def _tev_exit_law(dt: DeviceTree, logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """TEV's exit law on one tree (``[N]``, float32 values as float64): :func:`exit_law` of its plan."""
    return exit_law(logits.unsqueeze(0), tev_plan(dt), 1.0 / temperature)[0].double()


def batch_exit_law(bt: BatchTree, logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """TEV's exit law per row of a batch (``[B, N]``, float32 values as float64, 0 on padding nodes)."""
    return exit_law(logits, tev_plan(bt), 1.0 / temperature).double()


# ----------------------------------------------------------------- compiled and graphed forms
_DECIDERS: dict[str, Callable] = {}  # device type -> the decision function verify_tev runs there


def compiled_decide(**options) -> Callable:
    """:func:`tev_decide` under ``torch.compile(fullgraph=True, dynamic=False)``: one graph per padded
    shape and temperature (``options`` go to ``torch.compile``, e.g. ``backend`` or ``mode``)."""
    return torch.compile(tev_decide, fullgraph=True, dynamic=False, **options)


def use_decider(device_type: str, decide: Callable | None) -> None:
    """Make ``verify_tev`` / ``verify_batch_tev`` run ``decide`` (e.g. :func:`compiled_decide`, or a
    :class:`TevGraphs`) on ``device_type`` devices; ``None`` restores the eager :func:`tev_decide`."""
    if decide is None:
        _DECIDERS.pop(device_type, None)
    else:
        _DECIDERS[device_type] = decide


def _static_plan(plan: TevPlan) -> TevPlan:
    """A plan of fresh buffers shaped like ``plan`` (a graph's inputs; ``bonus_index`` a view again)."""
    fields = {**plan.__dict__, **{k: getattr(plan, k).clone() for k in _TENSORS}}
    fields["bonus_index"] = fields["edge_token"].view(plan.batch, -1)
    return TevPlan(**fields)


class TevGraphs:
    """:func:`tev_decide` replayed as one CUDA graph per ``(B, N, V, dtype, T)``: static buffers per
    shape, the round's logits, plan and random numbers copied into them, then one replay. On a CPU the
    same buffers run :func:`tev_decide` eagerly (no graph exists there), so the shape bookkeeping is
    tested anywhere. ``captures`` counts graphs; a new tree of a known budget must not add one."""

    def __init__(self, warmup: int = 2):
        self.warmup = int(warmup)
        self._slots: dict[tuple, dict] = {}

    @property
    def captures(self) -> int:
        return len(self._slots)

    def _slot(self, logits, plan, inv_t, exit_noise, bonus_uniform) -> dict:
        key = (*logits.shape, logits.dtype, str(logits.device), inv_t)
        slot = self._slots.get(key)
        if slot is None:
            static = dict(
                logits=logits.clone(),
                plan=_static_plan(plan),
                exit_noise=exit_noise.clone(),
                bonus_uniform=bonus_uniform.clone(),
            )
            slot = dict(static=static, graph=None, out=None)
            if logits.device.type == "cuda":
                args = (
                    static["logits"],
                    static["plan"],
                    inv_t,
                    static["exit_noise"],
                    static["bonus_uniform"],
                )
                stream = torch.cuda.Stream()
                stream.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(stream):
                    for _ in range(self.warmup):
                        tev_decide(*args)
                torch.cuda.current_stream().wait_stream(stream)
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    slot["out"] = tev_decide(*args)
                slot["graph"] = graph
            self._slots[key] = slot
        return slot

    def __call__(
        self, logits, plan, inv_t, exit_noise, bonus_uniform, process=None
    ) -> torch.Tensor:
        if process is not None:  # filters may hold data-dependent work: run them eagerly
            return tev_decide(logits, plan, inv_t, exit_noise, bonus_uniform, process)
        slot = self._slot(logits, plan, inv_t, exit_noise, bonus_uniform)
        static = slot["static"]
        static["logits"].copy_(logits)
        for k in _TENSORS:
            getattr(static["plan"], k).copy_(getattr(plan, k))
        static["exit_noise"].copy_(exit_noise)
        static["bonus_uniform"].copy_(bonus_uniform)
        if slot["graph"] is None:
            return tev_decide(
                static["logits"],
                static["plan"],
                inv_t,
                static["exit_noise"],
                static["bonus_uniform"],
            )
        slot["graph"].replay()
        return slot["out"]

    def static_pointers(self) -> list[tuple[int, ...]]:
        """Every slot's buffer addresses (a replayed graph reads these; they must never move)."""
        return [
            (
                s["static"]["logits"].data_ptr(),
                *(getattr(s["static"]["plan"], k).data_ptr() for k in _TENSORS),
                s["static"]["exit_noise"].data_ptr(),
                s["static"]["bonus_uniform"].data_ptr(),
            )
            for s in self._slots.values()
        ]


_TENSORS = ("rows", "edge_row", "edge_token", "edge_parent", "ancestor", "fill", "row_base")
# bonus_index is a view of edge_token: copying edge_token refreshes it


def _draw_with_uniform(weights: torch.Tensor, u: float) -> int:
    """Host inverse CDF: the first ``i`` with ``cumsum(weights)[i] > u * sum(weights)``."""
    c = (weights / weights.sum()).cumsum(0)
    return int(torch.searchsorted(c, c[-1:] * u, right=True))


def _tev_reference(
    dt: DeviceTree, logits: torch.Tensor, temperature: float, gens: VerifierGenerators
) -> VerifyResult:
    """Per-node float64 law on full rows (:func:`exitlaw.theory.reference_law`), raced with the same
    exponentials :func:`verify_tev` draws: the twin its draws are tested against."""
    probs = torch.softmax(logits.to(torch.float64) / temperature, dim=-1)
    law = reference_law(dt.tree, probs.cpu().numpy().tolist(), one=1.0)
    w = torch.tensor([max(x, 0.0) for x in law.w], dtype=torch.float64, device=logits.device)
    exit_noise, bonus_uniform = draw_noise(tev_plan(dt), gens, logits.device)
    v = int((w / exit_noise[0]).argmax())
    res = probs[v].clone()
    res[dt.tree.token[dt.tree.children[v]].tolist()] = 0.0
    y = _draw_with_uniform(res, float(bonus_uniform))
    return VerifyResult(v, y, list(dt.tree.path_nodes(v)))


__all__ = [
    "INVALID",
    "TevGraphs",
    "TevPlan",
    "batch_exit_law",
    "build_plan",
    "compiled_decide",
    "draw_noise",
    "exit_law",
    "tev_decide",
    "tev_plan",
    "use_decider",
    "verify_batch_tev",
    "verify_tev",
]
