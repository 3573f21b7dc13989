"""Continuous batching: sequences join and leave a running batch between rounds, each still exact and its own.

A :class:`RunningBatch` holds the rows of one decode setting (method, verifier, budget and sampling
settings: the batched verifiers take one temperature and one set of filters per call, so rows of
other settings run in another batch). Between rounds:

* :meth:`RunningBatch.admit` prefills new prompts (one forward for all of them, right-padded,
  :func:`~exitlaw.engine.decode.batch_generate.prefill_batch`) and splices their K/V, draft
  context and hidden rows into the running batch's per-row layout: the new rows' columns past their
  lengths are zeros, hidden by the additive mask as every stale column is
  (:mod:`exitlaw.engine.decode.batch_generate`, "Cache layout").
* :meth:`RunningBatch.step` runs one round for every row (one draft call, one tree forward, one
  batched decision, one commit; AR: one query per row) and appends each row's block under the
  row's own limit and stop tokens; a row that finishes is dropped at once.
* :meth:`RunningBatch.evict` drops rows (cancelled requests): their K/V go, the cache is cropped
  to the longest row left.

**Each row its own.** Row ``b`` carries its own seed's streams (:class:`RowGenerators`): the first
token races on its own bonus stream, every verifier draws from its own acceptance and bonus
streams exactly what its single-sequence twin draws (predraw one uniform per real node). A row's
tokens are therefore a function of its prompt, settings and seed only, equal to
:func:`~exitlaw.engine.decode.loop.generate` with that seed up to the float rounding of the padded
batched forward (a near-tie at ``T = 0``, a uniform within rounding of a CDF step at ``T > 0``).
A user's verifier (``decide``) runs row by row on the row's own tree and logits.

**A lone row** runs the single-sequence round (:func:`~exitlaw.engine.decode.loop.speculative_round`,
AR: :meth:`~exitlaw.engine.models.target.TargetModel.decode` and
:func:`~exitlaw.engine.decode.loop.sample_token`) on its own state: with one row the batch layout is the
single-sequence layout (cache columns = positions, the draft cache at the row's context length), so the
state is read and written in place, and the row decodes exactly what ``generate`` decodes, at the
single loop's cost per round (the batched round's per-row masks and compaction buy nothing for one row).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable, Sequence

import torch
import torch.nn.functional as F

from exitlaw.engine.decode.batch_generate import BatchState, advance_ar, batch_round, prefill_batch
from exitlaw.engine.decode.device_tree import to_device_tree
from exitlaw.engine.decode.dispatch import verify, verify_batch
from exitlaw.engine.decode.loop import (
    DecodeConfig,
    DecodeState,
    _append_block,
    sample_token,
    speculative_round,
)
from exitlaw.engine.decode.verifiers import RowGenerators, VerifierGenerators
from exitlaw.engine.models.dflash import DFlashDrafter
from exitlaw.engine.models.target import TargetModel, _kv_layers


@dataclass
class Row:
    """One sequence of a running batch: its prompt, its own decode config (seed, ``max_new_tokens``,
    stop tokens) and optional ``decide`` (a user's verifier, :func:`~exitlaw.engine.serve.user_verifier.user_decide`)."""

    key: object  # the caller's handle
    prompt: list[int]
    cfg: DecodeConfig
    decide: Callable | None = None
    tokens: list[int] = field(default_factory=list)
    block_lengths: list[int] = field(default_factory=list)  # one per round (the first token: none)
    rounds: int = 0
    done: bool = False
    gens: VerifierGenerators | None = None


class _RowStreams:
    """What :func:`prefill_batch` and the verify stage read as ``gens``: the rows' own streams."""

    def __init__(self, rows: Sequence[Row]):
        self.verifier = RowGenerators([r.gens for r in rows])


class RunningBatch:
    """The rows of one decode setting (``cfg``'s method, verifier, budget and settings), decoded a
    round at a time while rows join and leave (module docstring)."""

    def __init__(self, target: TargetModel, drafter, cfg: DecodeConfig):
        if cfg.method != "ar" and drafter is None:
            raise ValueError(f"method {cfg.method!r} needs a drafter")
        self.target, self.drafter, self.cfg = target, drafter, cfg
        self.rows: list[Row] = []
        self.state: BatchState | None = None

    def __len__(self) -> int:
        return len(self.rows)

    def _check(self, row: Row) -> None:
        shared = ("method", "verifier", "budget", "settings")
        other = [n for n in shared if getattr(row.cfg, n) != getattr(self.cfg, n)]
        if other:
            raise ValueError(
                f"row {row.key!r} differs from this batch in {', '.join(other)}: a running batch "
                "holds one decode setting"
            )

    # ------------------------------------------------------------------ join
    def admit(self, rows: Sequence[Row]) -> list[tuple[Row, list[int]]]:
        """Prefill ``rows`` in one forward, draw each first token on the row's own bonus stream, and
        join them to the batch. Returns ``(row, [first token])`` for each; a row that its first token
        finishes (a stop token, ``max_new_tokens = 1``) is returned done and not kept."""
        rows = list(rows)
        if not rows:
            return []
        for row in rows:
            self._check(row)
            row.gens = VerifierGenerators(row.cfg.seed, self.target.device)
        new = prefill_batch(
            self.target, self.drafter, [r.prompt for r in rows], self.cfg, _RowStreams(rows)
        )
        out, keep = [], []
        for b, (row, tok) in enumerate(zip(rows, new.roots)):
            row.done = _append_block(row.tokens, [tok], row.cfg)
            out.append((row, [tok]))
            if not row.done:
                keep.append(b)
        if keep:
            new = _select(new, keep)
            self.state = new if self.state is None else _join(self.state, new)
            self.rows += [rows[b] for b in keep]
        return out

    # ------------------------------------------------------------------ one round
    def step(self) -> list[tuple[Row, list[int]]]:
        """One round for every row; returns ``(row, block)`` per row (the block clipped at the row's
        limit or stop token) and drops the rows that finished."""
        if not self.rows:
            return []
        streams = _RowStreams(self.rows)
        if len(self.rows) == 1 and (
            self.cfg.method == "ar" or isinstance(self.drafter, DFlashDrafter)
        ):
            blocks = [self._step_alone()]
        elif self.cfg.method == "ar":
            blocks = [
                [t]
                for t in advance_ar(
                    self.state, self.target, self.cfg.settings, streams.verifier.bonus
                )
            ]
        else:
            decide = self._decide_rows if any(r.decide for r in self.rows) else _decide_batch
            blocks = batch_round(
                self.state,
                self.target,
                self.drafter,
                self.cfg,
                streams,
                decide=decide,
                append=False,
            )
        out = []
        for row, block in zip(self.rows, blocks):
            before = len(row.tokens)
            row.done = _append_block(row.tokens, block, row.cfg)
            row.rounds += 1
            row.block_lengths.append(len(block))
            out.append((row, row.tokens[before:]))
        finished = [r.key for r in self.rows if r.done]
        if finished:
            self.evict(finished)
        return out

    def _step_alone(self) -> list[int]:
        """One round of the lone row through the single-sequence loop, on the batch state in place."""
        st, row = self.state, self.rows[0]
        if self.cfg.method == "ar":
            logits = self.target.decode(st.target_cache, st.roots[0])
            block = [sample_token(logits, self.cfg.settings, row.gens.bonus)]
            st.lengths = [st.lengths[0] + 1]
        else:
            one = DecodeState(
                st.target_cache,
                st.draft_cache.cache,
                st.lengths[0],
                st.roots[0],
                None if st.pending is None else st.pending[0],
            )
            streams = _RowStreams([row])
            streams.verifier = row.gens
            block, _ = speculative_round(
                one, self.target, self.drafter, row.cfg, streams, decide=row.decide
            )
            st.lengths = [one.start]
            st.pending = None if st.pending is None else [one.pending_hidden]
            st.draft_cache.dlen = [one.draft_cache.length]
        st.roots = [block[-1]]
        st.history[0].extend(block)
        return block

    def _decide_rows(self, cfg, bt, logits, gens):
        """Row by row: a row's user verifier on its own tree and logits, else the registered verifier
        on its own streams (the single-tree twin of the batched call)."""
        out = []
        for b, (row, tree) in enumerate(zip(self.rows, bt.trees)):
            logq = None if bt.draft_logprob is None else bt.draft_logprob[b]
            dt = to_device_tree(tree, logits.device, logq)
            rows = logits[b, : tree.num_nodes]
            if row.decide is not None:
                out.append(row.decide(cfg, dt, rows, gens.verifier[b]))
            else:
                out.append(verify(cfg.verifier, dt, rows, cfg.settings, gens.verifier[b]))
        return out

    # ------------------------------------------------------------------ leave
    def evict(self, keys) -> list[Row]:
        """Drop the rows with these keys (finished or cancelled); returns them."""
        keys = set(keys)
        gone = [r for r in self.rows if r.key in keys]
        if not gone:
            return []
        keep = [b for b, r in enumerate(self.rows) if r.key not in keys]
        self.rows = [self.rows[b] for b in keep]
        self.state = _select(self.state, keep) if keep else None
        return gone


def _decide_batch(cfg, bt, logits, gens):
    return verify_batch(cfg.verifier, bt, logits, cfg.settings, gens.verifier)


# ----------------------------------------------------------------- splicing the per-row layout
def _pad_to(x: torch.Tensor, width: int) -> torch.Tensor:
    """``x [B, H, S, D]`` zero-padded along ``S`` to ``width`` columns."""
    return F.pad(x, (0, 0, 0, width - x.shape[-2])) if x.shape[-2] < width else x


def _stack(a: torch.Tensor | None, b: torch.Tensor | None, rows_a: int, rows_b: int):
    """Rows of ``a`` then rows of ``b`` (``[B, H, S, D]``), the shorter zero-padded; ``None`` is an
    empty store (no column yet) of its batch's rows."""
    if a is None and b is None:
        return None
    like = a if a is not None else b
    if a is None:
        a = like.new_zeros(rows_a, *like.shape[1:-2], 0, like.shape[-1])
    if b is None:
        b = like.new_zeros(rows_b, *like.shape[1:-2], 0, like.shape[-1])
    width = max(a.shape[-2], b.shape[-2])
    return torch.cat([_pad_to(a, width), _pad_to(b, width)])


def _join(a: BatchState, b: BatchState) -> BatchState:
    """The rows of ``a`` then those of ``b`` in one state (the K/V and draft context of each row kept
    at its own columns)."""
    na, nb = len(a.lengths), len(b.lengths)
    for (_, la), (_, lb) in zip(_kv_layers(a.target_cache), _kv_layers(b.target_cache)):
        la.keys = _stack(la.keys, lb.keys, na, nb)
        la.values = _stack(la.values, lb.values, na, nb)
    if a.draft_cache is not None:
        da, db = a.draft_cache.cache, b.draft_cache.cache
        for i in range(len(da.keys)):
            da.keys[i] = _stack(da.keys[i], db.keys[i], na, nb)
            da.values[i] = _stack(da.values[i], db.values[i], na, nb)
        a.draft_cache.dlen = a.draft_cache.dlen + b.draft_cache.dlen
    a.lengths = a.lengths + b.lengths
    a.roots = a.roots + b.roots
    a.pending = None if a.pending is None else a.pending + b.pending
    a.history = a.history + b.history
    a.tokens = a.tokens + b.tokens
    a.done = a.done + b.done
    a.block_lengths = a.block_lengths + b.block_lengths
    return a


def _select(state: BatchState, keep: list[int]) -> BatchState:
    """Only rows ``keep`` (in that order); the target cache cropped to the longest kept row, the draft
    cache to its longest kept context."""
    idx = torch.tensor(keep, dtype=torch.long)
    longest = max(state.lengths[b] for b in keep)
    for _, layer in _kv_layers(state.target_cache):
        layer.keys = layer.keys.index_select(0, idx.to(layer.keys.device))[..., :longest, :]
        layer.values = layer.values.index_select(0, idx.to(layer.values.device))[..., :longest, :]
    if state.draft_cache is not None:
        dc = state.draft_cache
        dlen = [dc.dlen[b] for b in keep]
        for i in range(len(dc.cache.keys)):
            if dc.cache.keys[i] is not None:
                dev = dc.cache.keys[i].device
                dc.cache.keys[i] = dc.cache.keys[i].index_select(0, idx.to(dev))[
                    ..., : max(dlen), :
                ]
                dc.cache.values[i] = dc.cache.values[i].index_select(0, idx.to(dev))[
                    ..., : max(dlen), :
                ]
        dc.dlen = dlen
    pick = lambda xs: None if xs is None else [xs[b] for b in keep]  # noqa: E731
    state.lengths, state.roots = pick(state.lengths), pick(state.roots)
    state.pending, state.history = pick(state.pending), pick(state.history)
    state.tokens, state.done = pick(state.tokens), pick(state.done)
    state.block_lengths = pick(state.block_lengths)
    state.limits = pick(state.limits)
    return state


def row_config(
    cfg: DecodeConfig, *, seed: int, max_new_tokens: int, stop_tokens=()
) -> DecodeConfig:
    """A row's own config: the batch's setting with its seed, limit and stop tokens."""
    return replace(
        cfg, seed=int(seed), max_new_tokens=int(max_new_tokens), stop_tokens=tuple(stop_tokens)
    )


__all__ = ["Row", "RunningBatch", "row_config"]
