"""Generate loop: at T = 0 every verifier and budget reproduces autoregressive greedy decoding;
stop tokens, seeded streams and traces (the bench harness: engine/bench/test_decoding_bench.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from exitlaw.engine.decode.loop import DecodeConfig, Generators, generate
from exitlaw.theory import TraceWriter, read_trace
from exitlaw.theory.sampling_settings import SamplingSettings
from helpers.decode_configs import sampled_tree

VERIFIERS = ("greedy", "predraw", "residual", "tev")
PROMPT = [11, 42, 7, 99, 150, 3, 18]
NEW = 14


TINY_SEED = 1  # the shared ``tiny``/``pair`` fixtures (conftest.py) use this seed


@pytest.fixture(scope="module")
def ar_tokens(pair):
    return generate(pair[0], None, PROMPT, DecodeConfig(method="ar", max_new_tokens=NEW)).tokens


class TeacherDrafter:
    """Duck-typed drafter whose rows favour the known greedy continuation (noisy, so trees branch).

    With the random tiny drafter almost nothing is accepted; this one makes long
    accepted paths, so the multi-node KV commit is exercised too.
    """

    block_size = 6

    def __init__(self, sequence: list[int], vocab: int, seed: int):
        self.sequence, self.vocab = sequence, vocab
        self.gen = torch.Generator().manual_seed(seed)

    def new_cache(self):
        return None

    def draft_logprobs(self, embed_tokens, lm_head, root, pending, start, cache):
        rows = torch.randn(self.block_size - 1, self.vocab, generator=self.gen)
        for d in range(1, self.block_size):
            if start + d < len(self.sequence):
                rows[d - 1, self.sequence[start + d]] += 2.5
        return torch.log_softmax(rows, -1)


@pytest.mark.parametrize("verifier", VERIFIERS)
def test_at_T0_every_verifier_and_budget_reproduces_AR_greedy_tokens(pair, ar_tokens, verifier):
    target, drafter = pair
    runs = [DecodeConfig(method="chain", verifier=verifier, max_new_tokens=NEW)]
    runs += [
        DecodeConfig(method="ddtree", verifier=verifier, budget=b, max_new_tokens=NEW)
        for b in (1, 6, 40)
    ]
    for cfg in runs:
        out = generate(target, drafter, PROMPT, cfg)
        assert out.tokens == ar_tokens, cfg
        assert (
            sum(out.block_lengths) >= len(out.tokens) - 1
        )  # the rounds emit all but the prefill's token


@pytest.mark.parametrize("verifier", VERIFIERS)
def test_at_T0_long_accepted_paths_still_reproduce_AR_greedy_tokens(pair, ar_tokens, verifier):
    target, _ = pair
    teacher = TeacherDrafter(PROMPT + ar_tokens, target.vocab_size, seed=4)
    for cfg in (
        DecodeConfig(method="chain", verifier=verifier, max_new_tokens=NEW),
        DecodeConfig(method="ddtree", verifier=verifier, budget=12, max_new_tokens=NEW),
    ):
        out = generate(target, teacher, PROMPT, cfg)
        assert out.tokens == ar_tokens, cfg
        assert out.tau > 1.5, f"teacher drafts should be accepted (tau={out.tau})"


def test_stop_token_ends_generation_exactly_like_AR(pair, ar_tokens):
    target, drafter = pair
    stop = ar_tokens[4]
    ar = generate(
        target, None, PROMPT, DecodeConfig(method="ar", max_new_tokens=NEW, stop_tokens=(stop,))
    )
    assert ar.tokens == ar_tokens[: ar_tokens.index(stop) + 1]
    teacher = TeacherDrafter(PROMPT + ar_tokens, target.vocab_size, seed=2)
    out = generate(
        target,
        teacher,
        PROMPT,
        DecodeConfig(
            method="ddtree", verifier="tev", budget=8, max_new_tokens=NEW, stop_tokens=(stop,)
        ),
    )
    assert out.tokens == ar.tokens


def test_seeded_sampling_is_reproducible_and_seed_dependent(pair):
    target, drafter = pair
    cfg = sampled_tree(budget=8, max_new_tokens=10, seed=7)
    a = generate(target, drafter, PROMPT, cfg).tokens
    assert generate(target, drafter, PROMPT, cfg).tokens == a
    others = {
        tuple(generate(target, drafter, PROMPT, DecodeConfig(**{**cfg.__dict__, "seed": s})).tokens)
        for s in (8, 9, 10)
    }
    assert others != {tuple(a)}


def test_draft_acceptance_and_bonus_streams_are_distinct():
    g = Generators(3)
    draws = [torch.rand(4, generator=x) for x in (g.draft, g.verifier.acceptance, g.verifier.bonus)]
    assert (
        not torch.equal(draws[0], draws[1])
        and not torch.equal(draws[1], draws[2])
        and not torch.equal(draws[0], draws[2])
    )


def test_tree_traces_are_readable_by_theory_and_match_the_rounds(pair, ar_tokens, tmp_path):
    target, _ = pair
    teacher = TeacherDrafter(PROMPT + ar_tokens, target.vocab_size, seed=5)
    cfg = sampled_tree(budget=10, max_new_tokens=NEW, seed=1)
    with TraceWriter(tmp_path / "t.jsonl", {"test": True}) as writer:
        out = generate(target, teacher, PROMPT, cfg, trace=writer)
    trace = read_trace(tmp_path / "t.jsonl")
    assert len(trace.rounds) == len(out.block_lengths)
    assert [r.block_length for r in trace.rounds] == out.block_lengths
    for r in trace.rounds:
        assert r.draft_logprob is not None and r.draft_logprob[0] == 0.0
        assert np.all(r.draft_logprob[1:] <= 0)


def test_decode_config_rejects_unknown_names():
    with pytest.raises(ValueError, match="unknown method"):
        DecodeConfig(method="beam")
    with pytest.raises(ValueError, match="unknown verifier"):
        DecodeConfig(verifier="sequoia")


@pytest.mark.parametrize("verifier", ("predraw", "residual", "tev"))
def test_sampling_at_a_tiny_temperature_follows_the_greedy_path(pair, ar_tokens, verifier):
    """The temperature reaches the verifier: as T -> 0 every sampling verifier reproduces greedy decoding."""
    target, _ = pair
    teacher = TeacherDrafter(PROMPT + ar_tokens, target.vocab_size, seed=6)
    cfg = DecodeConfig(
        method="ddtree",
        verifier=verifier,
        budget=10,
        settings=SamplingSettings(1e-3),
        max_new_tokens=NEW,
        seed=3,
    )
    out = generate(target, teacher, PROMPT, cfg)
    assert out.tokens == ar_tokens
    assert out.tau > 1.5
