"""Batched generation (exitlaw.engine.decode.batch_generate): at T = 0 every row equals its own greedy
autoregressive decoding, for batch sizes 1-8, trees of mixed depth and rows finishing at
different times; the batched DFlash draft equals the per-sequence draft; the K/V of a
finished row is never written again and every row's K/V equal a fresh prefill of its
committed tokens."""

from __future__ import annotations

import pytest
import torch

from exitlaw.engine.builders.batched import build_trees_batch
from exitlaw.engine.builders.single import build_chain, build_ddtree
from exitlaw.engine.decode.batch_draft import BatchDraftCache, dflash_draft_batch
from exitlaw.engine.decode.batch_generate import (
    BatchState,
    batch_round,
    first_tokens,
    generate_ar_batch,
    generate_batch,
    prefill_batch,
    row_cache,
)
from exitlaw.engine.decode.loop import DecodeConfig, Generators, generate
from exitlaw.engine.models.target import batch_attention_mask, compact_rows_
from exitlaw.theory.sampling_settings import SamplingSettings
from helpers.decode_configs import RAGGED_PROMPTS, sampled_tree

TINY_SEED = 1  # the shared ``tiny``/``pair`` fixtures (conftest.py) use this seed

PROMPTS = RAGGED_PROMPTS
LIMITS = [14, 5, 9, 16, 3, 11, 7, 12]  # rows finish at different rounds


@pytest.fixture(scope="module")
def ar_refs(pair):
    """Each prompt's own greedy AR continuation (single-sequence engine path), 16 tokens."""
    return [
        generate(pair[0], None, p, DecodeConfig(method="ar", max_new_tokens=16)).tokens
        for p in PROMPTS
    ]


class BatchTeacher:
    """Duck-typed batched drafter whose rows favour each row's known greedy continuation (noisy, so
    trees branch and accepted paths are long and of different lengths across rows)."""

    block_size = 7

    def __init__(self, sequences: list[list[int]], vocab: int, seed: int, strength: list[float]):
        self.sequences, self.vocab, self.strength = sequences, vocab, strength
        self.gen = torch.Generator().manual_seed(seed)

    def draft_logprobs_batch(self, roots, starts):
        rows = torch.randn(len(roots), self.block_size - 1, self.vocab, generator=self.gen)
        for b, start in enumerate(starts):
            seq = self.sequences[b]
            for d in range(1, self.block_size):
                if start + d < len(seq):
                    rows[b, d - 1, seq[start + d]] += self.strength[b]
        return torch.log_softmax(rows, -1)


def _teacher(pair, ar_refs, bsz: int, seed: int) -> BatchTeacher:
    seqs = [PROMPTS[b] + ar_refs[b] for b in range(bsz)]
    return BatchTeacher(
        seqs, pair[0].vocab_size, seed, strength=[2.8 + 0.6 * (b % 4) for b in range(bsz)]
    )


@pytest.mark.parametrize("bsz", range(1, 9))
def test_at_T0_every_row_equals_its_own_greedy_AR_decoding(pair, ar_refs, bsz):
    target, _ = pair
    teacher = _teacher(pair, ar_refs, bsz, seed=bsz)
    seen = set()
    for cfg in (
        DecodeConfig(method="ddtree", verifier="tev", budget=12, max_new_tokens=16),
        DecodeConfig(method="chain", verifier="predraw", max_new_tokens=16),
    ):
        out = generate_batch(target, teacher, PROMPTS[:bsz], cfg, max_new_tokens=LIMITS[:bsz])
        for b in range(bsz):
            assert out.tokens[b] == ar_refs[b][: LIMITS[b]], (cfg.method, b)
        assert out.tau > 1.5, f"teacher drafts should be accepted (tau={out.tau})"
        if bsz >= 3:  # the batch really mixes path lengths and finishing rounds
            assert len({len(r) for r in out.block_lengths}) > 1
        seen |= {x for r in out.block_lengths for x in r}
    assert bsz < 3 or len(seen) > 3, (
        f"accepted path lengths should vary across rows and rounds, saw {seen}"
    )


def test_at_T0_the_real_dflash_drafter_and_every_budget_reproduce_AR(pair, ar_refs):
    target, drafter = pair
    for cfg in (
        DecodeConfig(method="chain", verifier="tev", max_new_tokens=10),
        DecodeConfig(method="ddtree", verifier="greedy", budget=1, max_new_tokens=10),
        DecodeConfig(method="ddtree", verifier="tev", budget=40, max_new_tokens=10),
    ):
        out = generate_batch(target, drafter, PROMPTS[:5], cfg)
        for b in range(5):
            assert out.tokens[b] == ar_refs[b][:10], (cfg, b)


def test_stop_tokens_end_rows_at_different_times_exactly_like_AR(pair, ar_refs):
    target, _ = pair
    stop = ar_refs[0][3]
    cfg = DecodeConfig(
        method="ddtree", verifier="tev", budget=10, max_new_tokens=16, stop_tokens=(stop,)
    )
    refs = [
        generate(
            target, None, p, DecodeConfig(method="ar", max_new_tokens=16, stop_tokens=(stop,))
        ).tokens
        for p in PROMPTS[:4]
    ]
    assert len({len(r) for r in refs}) > 1
    out = generate_batch(target, _teacher(pair, ar_refs, 4, seed=11), PROMPTS[:4], cfg)
    assert out.tokens == refs
    assert generate_ar_batch(target, PROMPTS[:4], cfg).tokens == refs


def test_batched_AR_baseline_equals_single_AR_and_is_seeded(pair, ar_refs):
    target, _ = pair
    out = generate_ar_batch(
        target, PROMPTS, DecodeConfig(method="ar", max_new_tokens=16), max_new_tokens=LIMITS
    )
    assert out.tokens == [r[:n] for r, n in zip(ar_refs, LIMITS)]
    assert all(x == 1 for r in out.block_lengths for x in r)
    assert out.rounds == max(LIMITS) - 1  # the first token comes from the prefill
    assert [len(r) for r in out.block_lengths] == [n - 1 for n in LIMITS]
    cfg = DecodeConfig(method="ar", settings=SamplingSettings(1.0), max_new_tokens=6, seed=3)
    a = generate_ar_batch(target, PROMPTS[:3], cfg).tokens
    assert generate_ar_batch(target, PROMPTS[:3], cfg).tokens == a
    assert (
        generate_ar_batch(target, PROMPTS[:3], DecodeConfig(**{**cfg.__dict__, "seed": 4})).tokens
        != a
    )


def test_seeded_sampling_with_the_real_drafter_is_reproducible(pair):
    target, drafter = pair
    cfg = sampled_tree(budget=8, max_new_tokens=8, seed=7)
    a = generate_batch(target, drafter, PROMPTS[:4], cfg)
    assert generate_batch(target, drafter, PROMPTS[:4], cfg).tokens == a.tokens
    assert all(len(t) == 8 and all(0 <= x < target.vocab_size for x in t) for t in a.tokens)
    assert a.num_tokens == 32 and a.tokens_per_second > 0
    assert {"draft", "build", "verify_forward", "decide", "commit"} <= set(a.stages)


def test_finished_rows_kv_is_never_written_and_every_row_matches_a_fresh_prefill(pair, ar_refs):
    target, _ = pair
    teacher = _teacher(pair, ar_refs, 6, seed=21)
    cfg = DecodeConfig(method="ddtree", verifier="tev", budget=12, max_new_tokens=16)
    gens = Generators(0)
    state: BatchState = prefill_batch(target, teacher, PROMPTS[:6], cfg, gens)
    state.limits = LIMITS[:6]
    first_tokens(state, cfg)
    snapshots, rounds_after = {}, {}
    while not all(state.done):
        batch_round(state, target, teacher, cfg, gens)
        for b, done in enumerate(state.done):
            if done and b not in snapshots:
                snapshots[b] = (state.lengths[b], row_cache(state, b))
            if done:
                rounds_after[b] = rounds_after.get(b, -1) + 1
    assert max(rounds_after.values()) >= 2, "some row must sit finished through later rounds"
    for b, (length, snap) in snapshots.items():
        assert state.lengths[b] == length
        for (k0, v0), (k1, v1) in zip(snap, row_cache(state, b)):
            assert torch.equal(k0, k1) and torch.equal(v0, v1), (
                f"row {b}: K/V changed after it finished"
            )
    for b in range(6):
        n = state.lengths[b]
        assert state.history[b][: len(PROMPTS[b])] == PROMPTS[b]
        ref = target.new_cache()
        target.prefill(ref, torch.tensor(state.history[b][:n]))
        for (k, v), layer in zip(row_cache(state, b), ref.layers):
            torch.testing.assert_close(k, layer.keys[0], atol=1e-4, rtol=1e-4)
            torch.testing.assert_close(v, layer.values[0], atol=1e-4, rtol=1e-4)
        assert state.roots[b] == state.history[b][n]


def test_batched_dflash_draft_equals_the_single_sequence_draft_over_rounds(pair):
    """Three rounds, rows feeding different amounts of new context (0 included): the masked batch
    call and the per-row draft-cache compaction give every row its single-sequence rows."""
    target, drafter = pair
    width = len(target.layer_ids) * target.model.config.hidden_size
    gen = torch.Generator().manual_seed(5)
    feeds = [[6, 0, 10], [4, 2, 9], [1, 5, 0]]
    singles = [drafter.new_cache() for _ in feeds[0]]
    batch = BatchDraftCache(drafter.new_cache(), [0, 0, 0])
    starts = [0, 0, 0]
    for rnd, feed in enumerate(feeds):
        pending = [torch.randn(c, width, generator=gen) for c in feed]
        starts = [s + c for s, c in zip(starts, feed)]
        roots = [(17 * rnd + 5 * b) % target.vocab_size for b in range(3)]
        rows = dflash_draft_batch(
            drafter, target.embed_tokens, target.lm_head, roots, pending, starts, batch
        )
        assert rows.shape == (3, drafter.block_size - 1, target.vocab_size)
        for b in range(3):
            single = drafter.draft_logprobs(
                target.embed_tokens, target.lm_head, roots[b], pending[b], starts[b], singles[b]
            )
            torch.testing.assert_close(rows[b], single, atol=1e-4, rtol=1e-4)
        assert batch.dlen == starts and batch.cache.length == max(starts)


def test_batched_tree_building_equals_the_single_row_builders():
    gen = torch.Generator().manual_seed(0)
    rows = torch.log_softmax(torch.randn(4, 5, 30, generator=gen) * 2, -1)
    rows[1, 2, 3] = rows[1, 2, 4] = rows[1, 2].max() + 0.0  # a tie at the top of one depth
    rows[1, 2] = torch.log_softmax(rows[1, 2], -1)
    roots = [3, 9, 0, 29]
    active = [True, True, False, True]
    trees, logq = build_trees_batch(rows, "ddtree", 11, roots, active)
    chains, chain_logq = build_trees_batch(rows, "chain", 11, roots, active)
    for b in range(4):
        if not active[b]:
            assert trees[b].num_nodes == 1 and chains[b].num_nodes == 1
            continue
        ref, ref_logq = build_ddtree(rows[b], 11, roots[b])
        assert (
            trees[b].token.tolist() == ref.token.tolist()
            and trees[b].parent.tolist() == ref.parent.tolist()
        )
        assert logq[b].tolist() == ref_logq.tolist()
        ref, ref_logq = build_chain(rows[b], roots[b])
        assert (
            chains[b].token.tolist() == ref.token.tolist()
            and chain_logq[b].tolist() == ref_logq.tolist()
        )


def test_batched_traces_are_readable_by_theory_one_round_per_active_row(pair, ar_refs, tmp_path):
    from exitlaw.theory import TraceWriter, read_trace

    target, _ = pair
    cfg = sampled_tree(budget=10, max_new_tokens=8, seed=2)
    with TraceWriter(tmp_path / "b.jsonl", {"test": True}) as writer:
        out = generate_batch(
            target,
            _teacher(pair, ar_refs, 3, seed=4),
            PROMPTS[:3],
            cfg,
            max_new_tokens=[8, 3, 5],
            trace=writer,
        )
    rounds = read_trace(tmp_path / "b.jsonl").rounds
    assert len(rounds) == sum(len(r) for r in out.block_lengths)
    assert sorted(r.block_length for r in rounds) == sorted(x for r in out.block_lengths for x in r)
    for r in rounds:
        assert (
            r.draft_logprob is not None
            and r.draft_logprob[0] == 0.0
            and (r.draft_logprob[1:] <= 0).all()
        )


def test_mask_and_commit_helpers_follow_the_per_row_layout_and_reject_bad_input():
    vis = torch.eye(3, dtype=torch.bool)[None].expand(2, 3, 3)
    mask = batch_attention_mask(vis, [1, 4], 4, torch.float32)
    assert mask.shape == (2, 1, 3, 7)
    assert (
        (mask[0, 0, :, :1] == 0).all()
        and (mask[0, 0, :, 1:4] < -1e30).all()
        and (mask[1, 0, :, :4] == 0).all()
    )
    with pytest.raises(ValueError, match="see itself"):
        batch_attention_mask(torch.zeros(2, 3, 3, dtype=torch.bool), [1, 4], 4, torch.float32)
    with pytest.raises(ValueError, match="context_len"):
        batch_attention_mask(vis, [1, 5], 4, torch.float32)
    with pytest.raises(ValueError, match="context_len"):
        batch_attention_mask(vis, [1], 4, torch.float32)
    # two rows, base 3, row lengths 1 and 3, keep new columns [0, 2] and [1]
    t = torch.arange(2 * 6, dtype=torch.float32).reshape(2, 1, 6, 1)
    compact_rows_(t, 3, torch.tensor([1, 3]), torch.tensor([[0, 2], [1, 1]]))
    assert t[0, 0, :3, 0].tolist() == [0.0, 3.0, 5.0] and t[1, 0, :4, 0].tolist() == [
        6.0,
        7.0,
        8.0,
        10.0,
    ]


def test_bad_batch_inputs_raise_named_errors(pair):
    target, drafter = pair
    cfg = DecodeConfig(method="ddtree", max_new_tokens=2)
    with pytest.raises(ValueError, match="empty"):
        generate_batch(target, drafter, [[1, 2], []], cfg)
    with pytest.raises(ValueError, match="outside the target's vocabulary"):
        generate_batch(target, drafter, [[1, 2], [target.vocab_size]], cfg)
    with pytest.raises(ValueError, match="one limit"):
        generate_batch(target, drafter, [[1, 2], [3]], cfg, max_new_tokens=[2])
    with pytest.raises(ValueError, match="needs a drafter"):
        generate_batch(target, None, [[1, 2]], cfg)
    with pytest.raises(TypeError, match="draft_logprobs_batch"):
        generate_batch(target, object(), [[1, 2]], cfg)
    state = prefill_batch(target, drafter, [[1, 2, 3]], cfg, Generators(0))
    with pytest.raises(ValueError, match="start - C"):
        dflash_draft_batch(
            drafter,
            target.embed_tokens,
            target.lm_head,
            [3],
            state.pending,
            [5],
            BatchDraftCache(drafter.new_cache(), [0]),
        )
