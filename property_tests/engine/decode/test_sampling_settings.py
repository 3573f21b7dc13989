"""Sampling settings in the engine (exitlaw.engine.decode.sampling_settings): the torch processing
equals the theory numpy and Fraction references, and generation under top-k = 1 at T = 1 is greedy
decoding token for token (single and batched, every sampling verifier and AR)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from exitlaw.engine.decode.batch_generate import generate_ar_batch, generate_batch
from exitlaw.engine.decode.batch_tree import to_batch_tree
from exitlaw.engine.decode.device_tree import to_device_tree
from exitlaw.engine.decode.dispatch import verify, verify_batch
from exitlaw.engine.decode.loop import DecodeConfig, generate, sample_token
from exitlaw.engine.decode.sampling_settings import (
    filter_logits,
    keep_mask,
    processed_draft_logprobs,
    processed_probs,
)
from exitlaw.engine.decode.verifiers import VerifierGenerators
from exitlaw.theory import DistributionError, DraftTree
from exitlaw.theory.sampling_settings import (
    FILTERS,
    HF_ORDER,
    MIN_TEMPERATURE,
    SamplingSettings,
    process_logits,
    process_rows_exact,
)
from helpers.decode_configs import sampled_tree

settings_st = st.builds(
    SamplingSettings,
    temperature=st.sampled_from([0.4, 1.0, 1.6]),
    top_k=st.none() | st.integers(1, 8),
    top_p=st.none() | st.floats(0.05, 1.0),
    min_p=st.none() | st.floats(0.0, 0.9),
    order=st.permutations(FILTERS).map(tuple),
)


@given(
    seed=st.integers(0, 2**32 - 1),
    settings=settings_st,
    dtype=st.sampled_from([torch.float32, torch.float64]),
)
def test_torch_processing_equals_the_theory_numpy_definition(seed, settings, dtype):
    rng = np.random.default_rng(seed)
    z = rng.normal(0, 2.0, size=(4, 9))
    z[rng.random(z.shape) < 0.15] = -np.inf
    z[np.arange(4), rng.integers(0, 9, 4)] = 0.5  # never a whole row -inf
    logits = torch.tensor(z, dtype=dtype)
    want = process_logits(logits.double().numpy(), settings)
    got = processed_probs(logits, settings).numpy()
    np.testing.assert_array_equal(got > 0, want > 0)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    masked = filter_logits(logits, settings)
    assert masked.dtype == dtype and masked.shape == logits.shape
    assert torch.equal(torch.isfinite(masked), torch.from_numpy(want > 0))


@given(
    row=st.lists(st.integers(0, 6), min_size=1, max_size=8).filter(any),
    top_k=st.none() | st.integers(1, 6),
    top_p=st.none() | st.sampled_from([0.125, 0.25, 0.5, 0.625, 0.875]),
    min_p=st.none() | st.sampled_from([0.125, 0.25, 0.5]),
    order=st.permutations(FILTERS).map(tuple),
)
def test_torch_mask_equals_the_exact_reference_on_tied_integer_rows(
    row, top_k, top_p, min_p, order
):
    """Integer weights and dyadic thresholds are exact in float64: the kept set must be the exact one, ties included."""
    s = SamplingSettings(1.0, top_k, top_p, min_p, order)
    exact = process_rows_exact([row], s)[0]
    assert keep_mask(torch.tensor([row], dtype=torch.float64), s)[0].tolist() == [
        x > 0 for x in exact
    ]


def test_no_filter_and_greedy_leave_the_logits_untouched_and_bad_settings_are_named():
    z = torch.randn(3, 7)
    assert (
        filter_logits(z, SamplingSettings(0.8)) is z
        and filter_logits(z, SamplingSettings(0.8, top_p=1.0, min_p=0.0)) is z
    )
    assert filter_logits(z, SamplingSettings(0.0, top_k=1)) is z
    assert torch.isneginf(filter_logits(z, SamplingSettings(1.0, top_k=2))).sum() == 3 * 5
    np.testing.assert_array_equal(
        processed_probs(z, SamplingSettings(0.0, top_p=0.1)).argmax(-1), z.argmax(-1)
    )
    with pytest.raises(DistributionError, match="temperature"):
        SamplingSettings(-1.0)
    with pytest.raises(DistributionError, match="top_p"):
        DecodeConfig(settings=SamplingSettings(1.0, top_p=0.0))
    with pytest.raises(DistributionError, match="unknown filter"):
        DecodeConfig(settings=SamplingSettings(1.0, order=("top_k", "top_p", "typical_p")))


def test_a_float_temperature_below_the_floor_is_refused_by_every_engine_entry():
    """``SamplingSettings`` (every verifier, sampler and trace takes its temperature inside one) refuses
    ``0 < T < MIN_TEMPERATURE`` with the floor's error on every engine entry; the floor itself is
    accepted."""
    below = float(np.nextafter(MIN_TEMPERATURE, 0.0))
    tree = DraftTree(parent=[-1, 0, 0, 1], token=[3, 1, 2, 5])
    logits = torch.randn(tree.num_nodes, 8, generator=torch.Generator().manual_seed(0))
    for enter in (
        SamplingSettings,
        lambda t: sample_token(logits[0], SamplingSettings(t), torch.Generator().manual_seed(0)),
        lambda t: verify(
            "tev", to_device_tree(tree), logits, SamplingSettings(t), VerifierGenerators(0)
        ),
        lambda t: verify_batch(
            "predraw",
            to_batch_tree([tree]),
            logits[None],
            SamplingSettings(t),
            VerifierGenerators(0),
        ),
    ):
        with pytest.raises(DistributionError, match="below the floor MIN_TEMPERATURE = 1e-06"):
            enter(below)
        enter(MIN_TEMPERATURE)
    assert SamplingSettings(MIN_TEMPERATURE).temperature == MIN_TEMPERATURE


def test_draft_rows_are_processed_with_the_same_settings():
    rows = torch.log_softmax(torch.randn(4, 10, generator=torch.Generator().manual_seed(3)), -1)
    s = SamplingSettings(0.7, top_k=3, top_p=0.9, order=HF_ORDER)
    got = processed_draft_logprobs(rows, s).exp().double().numpy()
    np.testing.assert_allclose(got, process_logits(rows.double().numpy(), s), atol=1e-6)
    assert processed_draft_logprobs(rows, SamplingSettings(0.7)) is rows


def test_ar_sampling_draws_only_kept_tokens():
    z = torch.randn(12, generator=torch.Generator().manual_seed(0))
    s = SamplingSettings(1.5, top_k=3)
    gen = torch.Generator().manual_seed(1)
    drawn = {sample_token(z, s, gen) for _ in range(300)}
    assert drawn == set(z.topk(3).indices.tolist())


# ----------------------------------------------------------------- top-k = 1 at T = 1 is greedy decoding
TINY_SEED = 1  # the shared ``pair`` fixture (conftest.py) uses this seed
PROMPT = [11, 42, 7, 99, 150, 3, 18]
NEW = 12


@pytest.fixture(scope="module")
def greedy_ar(pair):
    return generate(pair[0], None, PROMPT, DecodeConfig(method="ar", max_new_tokens=NEW)).tokens


class NoisyDrafter:
    """Duck-typed drafter with random rows (so its processed top-1 is often wrong and rejections happen)."""

    block_size = 5

    def __init__(self, vocab: int, seed: int):
        self.vocab, self.gen = vocab, torch.Generator().manual_seed(seed)

    def new_cache(self):
        return None

    def draft_logprobs(self, embed_tokens, lm_head, root, pending, start, cache):
        return torch.log_softmax(
            torch.randn(self.block_size - 1, self.vocab, generator=self.gen), -1
        )

    def draft_logprobs_batch(self, roots, starts):
        return torch.log_softmax(
            torch.randn(len(roots), self.block_size - 1, self.vocab, generator=self.gen), -1
        )


def test_top_k_1_at_T1_equals_greedy_ar_token_for_token(pair, greedy_ar):
    """At T = 1 the tiny target's rows are flat (top-1 mass well below 1): sampling without the filter
    leaves the greedy path within a few tokens, so this fails if any stage drops ``top_k``."""
    target, drafter = pair
    plain = generate(
        target,
        None,
        PROMPT,
        DecodeConfig(method="ar", settings=SamplingSettings(1.0), max_new_tokens=NEW, seed=4),
    )
    assert plain.tokens != greedy_ar  # the control: T = 1 alone is not greedy
    runs = [
        DecodeConfig(
            method="ar", settings=SamplingSettings(1.0, top_k=1), max_new_tokens=NEW, seed=4
        )
    ]
    runs += [
        DecodeConfig(
            method=m,
            verifier=v,
            budget=8,
            settings=SamplingSettings(1.0, top_k=1),
            max_new_tokens=NEW,
            seed=5,
        )
        for v in ("predraw", "residual", "tev")
        for m in ("chain", "ddtree")
    ]
    for cfg in runs:
        assert generate(target, drafter, PROMPT, cfg).tokens == greedy_ar, cfg
    noisy = NoisyDrafter(target.vocab_size, 2)
    for v in ("predraw", "residual", "tev"):
        cfg = sampled_tree(
            6, NEW, seed=6, verifier=v, settings=SamplingSettings(1.0, top_k=1, top_p=0.95)
        )
        assert generate(target, noisy, PROMPT, cfg).tokens == greedy_ar, cfg


def test_top_k_1_at_T1_equals_greedy_ar_in_batches(pair):
    target, _ = pair
    prompts = [PROMPT, [5], [33, 44, 91]]
    refs = generate_ar_batch(target, prompts, DecodeConfig(method="ar", max_new_tokens=8)).tokens
    plain = generate_ar_batch(
        target,
        prompts,
        DecodeConfig(method="ar", settings=SamplingSettings(1.0), max_new_tokens=8, seed=2),
    )
    assert plain.tokens != refs
    got = generate_ar_batch(
        target,
        prompts,
        DecodeConfig(
            method="ar", settings=SamplingSettings(1.0, top_k=1), max_new_tokens=8, seed=2
        ),
    )
    assert got.tokens == refs
    noisy = NoisyDrafter(target.vocab_size, 3)
    for v in ("predraw", "residual", "tev"):
        cfg = sampled_tree(6, 8, seed=7, verifier=v, settings=SamplingSettings(1.0, top_k=1))
        assert generate_batch(target, noisy, prompts, cfg).tokens == refs, cfg


def test_a_bare_float_temperature_is_refused_by_name_at_every_engine_entry():
    """Settings are typed: a float where :class:`SamplingSettings` belongs is a ``TypeError`` naming it
    (no entry re-wraps a temperature), at the dispatchers, the samplers and the processing step."""
    tree = DraftTree(parent=[-1, 0, 0, 1], token=[3, 1, 2, 5])
    logits = torch.randn(tree.num_nodes, 8, generator=torch.Generator().manual_seed(0))
    for enter in (
        lambda: verify("tev", to_device_tree(tree), logits, 1.0, VerifierGenerators(0)),
        lambda: verify_batch(
            "tev", to_batch_tree([tree]), logits[None], 1.0, VerifierGenerators(0)
        ),
        lambda: sample_token(logits[0], 0.5, torch.Generator()),
        lambda: filter_logits(logits, 0.8),
        lambda: processed_probs(logits, 1.0),
    ):
        with pytest.raises(TypeError, match="expected SamplingSettings, got float"):
            enter()
