"""Batched generation: ``B`` sequences, each with its own tree, in one target forward per round.

A batched round is the five stages of :mod:`exitlaw.engine.decode.loop`, each over the
whole batch and each timed from the outside:

    draft   -- ``[B, D, V]`` rows in one drafter call         (:func:`draft_batch_stage`)
    build   -- one tree per row, one host transfer              (:func:`build_batch_stage`)
    verify  -- one padded tree-attention forward ``[B, N, V]``  (:func:`verify_forward_batch_stage`)
    decide  -- batched verifier, one host transfer              (:func:`decide_batch_stage`)
    commit  -- per-row KV compaction, advance every row         (:func:`commit_batch_stage`)

**Cache layout: per-row offsets.** One ``DynamicCache`` of batch ``B``. Row ``b``'s
committed K/V (its context without the last committed token, the engine's cache
convention, :mod:`exitlaw.engine.models.target`) sit at columns ``0 .. length_b - 1``;
columns ``length_b ..`` of that row are stale and hidden by the float additive mask
(:func:`~exitlaw.engine.models.target.batch_attention_mask`). A round appends ``N`` columns
(the padded tree) to every row; node ``v`` of row ``b`` has position
``length_b + depth(v)``. The commit moves row ``b``'s accepted path to columns
``length_b .. length_b + L_b - 1`` and crops the cache to the longest row, so no row
is ever shifted or re-padded. Prompts are prefilled whole, right-padded into the same layout, and
each row's first token is drawn from its last prompt row (:func:`prefill_batch`).
A sliding-window target gets one mask per layer type, the window applied by position
(:mod:`exitlaw.engine.models.attention_window`; column ``j`` of a row is position ``j``).

**Finished rows** stay in the batch (fixed batch shape): from the round after a
row reaches ``max_new_tokens`` or a stop token, it is given the root-only tree, its
draft context is not fed, and its commit keeps nothing, so its committed K/V
(columns below its length) are never written again. Their per-round cost is one
query row each.

The autoregressive baseline :func:`generate_ar_batch` uses the same layout (one
query per row per step, committed with the same compaction), so tokens/s of the two
are comparable in one run.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Sequence

import torch

from exitlaw.engine.builders.batched import build_trees_batch
from exitlaw.engine.decode.batch_draft import BatchDraftCache, dflash_draft_batch
from exitlaw.engine.decode.batch_tree import BatchTree, to_batch_tree
from exitlaw.engine.decode.device_tree import to_device_tree
from exitlaw.engine.decode.dispatch import verify_batch
from exitlaw.engine.decode.loop import (
    DecodeConfig,
    Generators,
    RoundRecord,
    _append_block,
    exponential_race,
    trace_round,
)
from exitlaw.engine.decode.reductions import first_argmax
from exitlaw.engine.decode.sampling_settings import filter_logits, processed_draft_logprobs
from exitlaw.engine.decode.timing import NullTimer, StageTimer
from exitlaw.engine.decode.verifiers import VerifyResult
from exitlaw.engine.models.dflash import DFlashDrafter
from exitlaw.engine.models.target import TargetModel, TargetStep, batch_attention_mask
from exitlaw.theory import SamplingSettings, TraceRound
from exitlaw.theory.sampling_settings import check_settings


@dataclass
class BatchState:
    """What carries over between rounds for ``B`` rows (host lists indexed by row)."""

    target_cache: object
    draft_cache: BatchDraftCache | None
    lengths: list[int]  # committed target K/V per row = position of the root
    roots: list[int]  # last committed token per row (not yet in the target cache)
    # per row, target hidden rows [C_b, L*H] the drafter has not seen
    pending: list[torch.Tensor] | None
    history: list[list[int]]  # prompt + every committed token (the K/V hold history[b][:length_b])
    tokens: list[list[int]] = field(default_factory=list)  # generated (clipped at stop / budget)
    done: list[bool] = field(default_factory=list)
    block_lengths: list[list[int]] = field(default_factory=list)  # per row, per round it was active
    limits: list[int] | None = None  # per-row max_new_tokens (None: the config's)

    @property
    def active(self) -> list[bool]:
        return [not d for d in self.done]

    def append(self, b: int, block: list[int], cfg: DecodeConfig) -> None:
        """Append row ``b``'s block up to its budget; marks the row done at a stop token or its limit."""
        row_cfg = cfg if self.limits is None else replace(cfg, max_new_tokens=self.limits[b])
        self.block_lengths[b].append(len(block))
        self.done[b] = _append_block(self.tokens[b], block, row_cfg)


@dataclass
class BatchGenerationResult:
    tokens: list[list[int]]
    block_lengths: list[list[int]]
    rounds: int
    decode_seconds: float
    stages: dict[str, dict[str, float]]

    @property
    def num_tokens(self) -> int:
        return sum(len(t) for t in self.tokens)

    @property
    def decode_tokens(self) -> int:
        """Tokens produced by the timed rounds: all but each row's first token (drawn in the prefill)."""
        return sum(max(len(t) - 1, 0) for t in self.tokens)

    @property
    def tokens_per_second(self) -> float:
        """Decode rate: :attr:`decode_tokens` per second of the timed rounds (prefill excluded)."""
        return self.decode_tokens / self.decode_seconds if self.decode_seconds > 0 else float("nan")

    @property
    def tau(self) -> float:
        lengths = [x for row in self.block_lengths for x in row]
        return sum(lengths) / len(lengths) if lengths else 0.0


# ----------------------------------------------------------------- stages
def prefill_batch(
    target: TargetModel,
    drafter,
    prompts: Sequence[Sequence[int]],
    cfg: DecodeConfig,
    gens: Generators,
) -> BatchState:
    """Prefill every whole prompt (right-padded, causal) in one forward and draw each row's first token
    from its last prompt row (:func:`_sample_rows`, the bonus stream): the first root and generated token
    of the row, as the single-sequence :func:`~exitlaw.engine.decode.loop.prefill_stage` draws it."""
    if not prompts:
        raise ValueError("prefill_batch needs at least one prompt")
    short = [b for b, p in enumerate(prompts) if len(p) < 1]
    if short:
        raise ValueError(f"prompts {short} are empty; every prompt must hold at least one token")
    vocab = target.vocab_size
    bad = [b for b, p in enumerate(prompts) if any(not 0 <= int(t) < vocab for t in p)]
    if bad:
        raise ValueError(
            f"prompts {bad} hold token ids outside the target's vocabulary [0, {vocab})"
        )
    bsz, lengths = len(prompts), [len(p) for p in prompts]
    width = max(lengths)
    cache = target.new_cache()
    dev = target.device
    ids = torch.zeros(bsz, width, dtype=torch.long)
    for b, p in enumerate(prompts):
        ids[b, : lengths[b]] = torch.tensor(list(p), dtype=torch.long)
    causal = (
        torch.ones(width, width, dtype=torch.bool, device=dev)
        .tril()[None]
        .expand(bsz, width, width)
    )
    pos = torch.arange(width, device=dev)[None].expand(bsz, width)
    mask = batch_attention_mask(
        causal,
        [0] * bsz,
        0,
        target.dtype,
        check_diagonal=False,  # tril: diagonal set
        query_pos=pos,
        windows=target.windows,
    )
    last = sorted(set(n - 1 for n in lengths))  # logits of the rows' last prompt positions only
    step = target.forward_rows(cache, ids, pos, mask, logits_at=torch.tensor(last, device=dev))
    column = torch.tensor([last.index(n - 1) for n in lengths], device=dev)
    first = _sample_rows(
        step.logits[torch.arange(bsz, device=dev), column], cfg.settings, gens.verifier.bonus
    )
    pending = (
        [step.hidden[b, : lengths[b]] for b in range(bsz)] if step.hidden is not None else None
    )
    dcache = None
    if isinstance(drafter, DFlashDrafter):
        dcache = BatchDraftCache(drafter.new_cache(), [0] * bsz)
    state = BatchState(
        target_cache=cache,
        draft_cache=dcache,
        lengths=lengths,
        roots=list(first),
        pending=pending,
        history=[list(p) + [t] for p, t in zip(prompts, first)],
        tokens=[[] for _ in prompts],
        done=[False] * bsz,
        block_lengths=[[] for _ in prompts],
    )
    return state


def first_tokens(state: BatchState, cfg: DecodeConfig) -> None:
    """Emit each row's prefill token (its first root) as the row's first generated token; a row whose
    limit or stop token it reaches is done before any round (not counted in ``block_lengths``)."""
    for b, tok in enumerate(state.roots):
        row_cfg = cfg if state.limits is None else replace(cfg, max_new_tokens=state.limits[b])
        state.done[b] = _append_block(state.tokens[b], [tok], row_cfg)


def draft_batch_stage(state: BatchState, target: TargetModel, drafter) -> torch.Tensor:
    """Draft rows ``[B, D, V]`` for every row in one call (finished rows feed no context)."""
    if isinstance(drafter, DFlashDrafter):
        if state.pending is None:
            raise ValueError(
                "the DFlash drafter needs target hidden states: load the target with its layer_ids"
            )
        feed = [p if a else p[:0] for p, a in zip(state.pending, state.active)]
        starts = [
            length if a else d
            for length, a, d in zip(state.lengths, state.active, state.draft_cache.dlen)
        ]
        with target.mask_kernels(True):  # the batched draft passes a padding mask
            rows = dflash_draft_batch(
                drafter,
                target.embed_tokens,
                target.lm_head,
                state.roots,
                feed,
                starts,
                state.draft_cache,
            )
        state.pending = [p[:0] for p in state.pending]
        return rows
    if not hasattr(drafter, "draft_logprobs_batch"):
        raise TypeError(
            f"{type(drafter).__name__} is neither a DFlashDrafter nor has draft_logprobs_batch(roots, starts)"
        )
    return drafter.draft_logprobs_batch(list(state.roots), list(state.lengths))


def build_batch_stage(
    rows: torch.Tensor, cfg: DecodeConfig, state: BatchState, device
) -> BatchTree:
    # as build_stage: trees from the processed draft rows
    rows = processed_draft_logprobs(rows, cfg.settings)
    trees, logq = build_trees_batch(rows, cfg.method, cfg.budget, state.roots, state.active)
    return to_batch_tree(trees, device, logq)


def verify_forward_batch_stage(state: BatchState, target: TargetModel, bt: BatchTree) -> TargetStep:
    """One padded tree-attention forward; row ``b``'s node ``v`` at position ``length_b + depth(v)``."""
    past = state.target_cache.get_seq_length()
    lengths = torch.tensor(state.lengths, device=bt.device)
    pos = lengths[:, None] + bt.depth
    mask = batch_attention_mask(
        bt.ancestor,
        state.lengths,
        past,
        target.dtype,
        check_diagonal=False,  # padding: eye
        query_pos=pos,
        windows=target.windows,
    )
    return target.forward_rows(state.target_cache, bt.token, pos, mask)


def decide_batch_stage(
    cfg: DecodeConfig, bt: BatchTree, logits: torch.Tensor, gens: Generators
) -> list[VerifyResult]:
    return verify_batch(cfg.verifier, bt, logits, cfg.settings, gens.verifier)


def commit_batch_stage(
    state: BatchState,
    target: TargetModel,
    bt: BatchTree,
    step: TargetStep,
    past: int,
    results: list[VerifyResult],
) -> list[list[int] | None]:
    """Keep each active row's root + accepted path; finished rows keep nothing. Returns the blocks (None if finished)."""
    active = state.active
    paths = [r.path_nodes if a else [] for r, a in zip(results, active)]
    width = max(1, max(len(p) for p in paths))
    src = torch.zeros(len(paths), width, dtype=torch.long)
    for b, p in enumerate(paths):
        src[b, : len(p)] = torch.tensor(p, dtype=torch.long)
    keep = torch.tensor([len(p) for p in paths])
    new = target.commit_rows(state.target_cache, past, torch.tensor(state.lengths), src, keep)
    blocks: list[list[int] | None] = []
    for b, (p, r) in enumerate(zip(paths, results)):
        if not p:
            blocks.append(None)
            continue
        if state.pending is not None:
            idx = torch.tensor(p, device=step.hidden.device)
            state.pending[b] = torch.cat([state.pending[b], step.hidden[b].index_select(0, idx)])
        block = [int(t) for t in bt.trees[b].token[p[1:]]] + [int(r.bonus)]
        state.history[b].extend(block)
        state.roots[b] = int(r.bonus)
        blocks.append(block)
    state.lengths = [int(x) for x in new]
    return blocks


def trace_batch_round(
    bt: BatchTree,
    logits: torch.Tensor,
    results: list[VerifyResult],
    rows: Sequence[int],
    settings: SamplingSettings,
) -> list[TraceRound]:
    """The listed rows' rounds in the theory trace format (:func:`~exitlaw.engine.decode.loop.trace_round`)."""
    out = []
    for b in rows:
        n = bt.num_nodes[b]
        logq = None if bt.draft_logprob is None else bt.draft_logprob[b]
        rec = RoundRecord(
            to_device_tree(bt.trees[b], logits.device, logq), results[b], logits[b, :n]
        )
        out.append(trace_round(rec, settings))
    return out


def batch_round(
    state: BatchState,
    target: TargetModel,
    drafter,
    cfg: DecodeConfig,
    gens: Generators,
    timer=NullTimer(),
    trace=None,
    decide=None,
    append: bool = True,
) -> list[list[int] | None]:
    """One batched round: the five stages, then each active row's block appended to its tokens (rows that
    finish marked done). Returns each row's block (None: a finished row).

    ``trace`` (a TraceWriter) receives one TraceRound per active row, in row order (untimed); ``decide``
    (optional) replaces :func:`decide_batch_stage` with the same signature; ``append=False`` leaves the
    blocks to the caller (continuous batching keeps each row's limit and stop tokens itself).
    """
    rows = timer.call("draft", draft_batch_stage, state, target, drafter)
    bt = timer.call("build", build_batch_stage, rows, cfg, state, target.device)
    past = state.target_cache.get_seq_length()
    active = [b for b, a in enumerate(state.active) if a]
    step = timer.call("verify_forward", verify_forward_batch_stage, state, target, bt)
    results = timer.call("decide", decide or decide_batch_stage, cfg, bt, step.logits, gens)
    blocks = timer.call("commit", commit_batch_stage, state, target, bt, step, past, results)
    if trace is not None:
        for rec in trace_batch_round(bt, step.logits, results, active, cfg.settings):
            trace.write(rec)
    if append:
        for b, block in enumerate(blocks):
            if block is not None:
                state.append(b, block, cfg)
    return blocks


# ----------------------------------------------------------------- loops
def _result(state: BatchState, rounds: int, timer) -> BatchGenerationResult:
    stages = timer.summary()
    decode = sum(v["total_s"] for k, v in stages.items() if k != "prefill")
    return BatchGenerationResult(state.tokens, state.block_lengths, rounds, decode, stages)


def _limits(prompts, max_new_tokens) -> list[int] | None:
    if max_new_tokens is None:
        return None
    limits = [int(n) for n in max_new_tokens]
    if len(limits) != len(prompts) or min(limits, default=1) < 1:
        raise ValueError(
            f"max_new_tokens must give one limit >= 1 per prompt ({len(prompts)}), got {limits}"
        )
    return limits


def generate_batch(
    target: TargetModel,
    drafter,
    prompts: Sequence[Sequence[int]],
    cfg: DecodeConfig,
    *,
    max_new_tokens: Sequence[int] | None = None,
    timer=None,
    trace=None,
) -> BatchGenerationResult:
    """Decode every prompt with ``cfg`` (chain or ddtree) in one batch until every row has finished.

    ``max_new_tokens`` (optional) gives each row its own limit in place of ``cfg.max_new_tokens``;
    ``trace`` (a TraceWriter) receives one TraceRound per active row and round.
    """
    timer = timer if timer is not None else StageTimer(target.device)
    if cfg.method == "ar":
        return generate_ar_batch(target, prompts, cfg, max_new_tokens=max_new_tokens, timer=timer)
    if drafter is None:
        raise ValueError(f"method {cfg.method!r} needs a drafter")
    return _decode(
        target,
        drafter,
        prompts,
        cfg,
        max_new_tokens,
        timer,
        lambda state, gens: batch_round(state, target, drafter, cfg, gens, timer, trace),
    )


def _decode(target, drafter, prompts, cfg, max_new_tokens, timer, step) -> BatchGenerationResult:
    """Prefill the batch, sample each row's first token, then ``step(state, gens)`` (one round of every
    active row) until every row has finished."""
    limits = _limits(prompts, max_new_tokens)
    gens = Generators(cfg.seed, target.device)
    state = timer.call("prefill", prefill_batch, target, drafter, prompts, cfg, gens)
    state.limits = limits
    first_tokens(state, cfg)
    rounds = 0
    while not all(state.done):
        step(state, gens)
        rounds += 1
    return _result(state, rounds, timer)


def _sample_rows(logits: torch.Tensor, settings: SamplingSettings, gen) -> list[int]:
    """Per row: argmax at T = 0, else :func:`~exitlaw.engine.decode.loop.exponential_race` on the
    processed rows under ``settings`` (:class:`~exitlaw.theory.SamplingSettings`); one transfer.
    ``gen``: one stream
    for the batch, or one per row (a list: row ``b`` races on its own stream, as
    :func:`~exitlaw.engine.decode.loop.sample_token` does for that row alone)."""
    settings = check_settings(settings)
    if settings.greedy:
        return first_argmax(logits).tolist()
    z = filter_logits(logits, settings)
    if isinstance(gen, torch.Generator):
        return exponential_race(z, settings.temperature, gen).tolist()
    if len(gen) != z.shape[0]:
        raise ValueError(f"{len(gen)} row generators for {z.shape[0]} rows")
    return [int(exponential_race(z[b], settings.temperature, g)) for b, g in enumerate(gen)]


def ar_step_batch(
    state: BatchState, target: TargetModel, cfg: DecodeConfig, gens: Generators, timer=NullTimer()
) -> None:
    """One autoregressive step for every active row: one query per row, then the per-row commit."""
    for b, tok in enumerate(advance_ar(state, target, cfg.settings, gens.verifier.bonus, timer)):
        if tok is not None:
            state.append(b, [tok], cfg)


def advance_ar(
    state: BatchState, target: TargetModel, settings, bonus, timer=NullTimer()
) -> list[int | None]:
    """The forward, sample and commit of one autoregressive step; each active row's token (None: a
    finished row), left to the caller to append. ``bonus``: one stream or one per row (:func:`_sample_rows`)."""
    dev = target.device
    past = state.target_cache.get_seq_length()
    lengths = torch.tensor(state.lengths, device=dev)
    bsz = len(state.lengths)
    mask = batch_attention_mask(
        torch.ones(bsz, 1, 1, dtype=torch.bool, device=dev),
        state.lengths,
        past,
        target.dtype,
        check_diagonal=False,  # one query that sees itself
        query_pos=lengths[:, None],
        windows=target.windows,
    )
    step = timer.call(
        "target_forward",
        target.forward_rows,
        state.target_cache,
        torch.tensor(state.roots, device=dev)[:, None],
        lengths[:, None],
        mask,
    )
    toks = timer.call("sample", _sample_rows, step.logits[:, -1], settings, bonus)
    active = state.active
    keep = torch.tensor([int(a) for a in active])
    new = timer.call(
        "commit",
        target.commit_rows,
        state.target_cache,
        past,
        torch.tensor(state.lengths),
        torch.zeros(bsz, 1, dtype=torch.long),
        keep,
    )
    state.lengths = [int(x) for x in new]
    out: list[int | None] = []
    for b, tok in enumerate(toks):
        if active[b]:
            state.history[b].append(tok)
            state.roots[b] = tok
        out.append(tok if active[b] else None)
    return out


def generate_ar_batch(
    target: TargetModel,
    prompts: Sequence[Sequence[int]],
    cfg: DecodeConfig,
    *,
    max_new_tokens: Sequence[int] | None = None,
    timer=None,
) -> BatchGenerationResult:
    """Batched autoregressive baseline in the same cache layout; samples use the bonus stream."""
    timer = timer if timer is not None else StageTimer(target.device)
    return _decode(
        target,
        None,
        prompts,
        cfg,
        max_new_tokens,
        timer,
        lambda state, gens: ar_step_batch(state, target, cfg, gens, timer),
    )


def row_cache(state: BatchState, b: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Row ``b``'s committed K/V per layer (``[heads, length_b, head_dim]`` copies)."""
    n = state.lengths[b]
    return [
        (layer.keys[b, :, :n].clone(), layer.values[b, :, :n].clone())
        for layer in state.target_cache.layers
    ]


__all__ = [
    "BatchState",
    "BatchGenerationResult",
    "prefill_batch",
    "draft_batch_stage",
    "build_batch_stage",
    "verify_forward_batch_stage",
    "decide_batch_stage",
    "commit_batch_stage",
    "batch_round",
    "trace_batch_round",
    "generate_batch",
    "generate_ar_batch",
    "ar_step_batch",
    "advance_ar",
    "row_cache",
]
