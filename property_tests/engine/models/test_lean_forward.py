"""The lean target forward (:mod:`exitlaw.engine.models.lean_forward`) against its exact twin, the
transformers forward of the same model: bit-identical logits, selected hidden states (the last layer's
included) and cache contents on tree, causal (prefill, prefill onto a cache, a DFlash chain), single-token
and batched forwards, for Qwen3, Qwen2 and Llama targets with grouped-query attention; the engine takes
it for decoding (in inference mode), not with autograd, and every uncovered model keeps the transformers
forward with a stated reason."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import AutoModelForCausalLM, Qwen2Config, Qwen2ForCausalLM

from exitlaw.engine.decode.loop import DecodeConfig, generate
from exitlaw.engine.models.config import causal_lm_config, config_fields
from exitlaw.engine.models.lean_forward import LeanForward, lean_support
from exitlaw.engine.models.target import TargetModel, batch_attention_mask, tree_attention_mask
from exitlaw.engine.models.tiny import build_tiny_drafter, build_tiny_target
from exitlaw.theory import DraftTree
from helpers.decode_configs import sampled_tree
from helpers.hf_forward import transformers_forward
from helpers.tiny_specs import SMALL_SPEC

# layer 2 is the last: its hidden is normed
SPEC = replace(SMALL_SPEC, vocab_size=96, block_size=6, target_layer_ids=(0, 2))


def qwen2(seed: int):
    # Qwen2 is no family of causal_lm_config: the shared config fields, at transformers' default init
    s = SPEC.lm_sizes().but(max_positions=512, tie_word_embeddings=False, init_std=0.02)
    cfg = Qwen2Config(**config_fields(s))
    cfg._attn_implementation = "sdpa"
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(cfg).eval()
    with torch.no_grad():  # the default init leaves the q/k/v biases at 0: make them count
        for layer in model.model.layers:
            for proj in (layer.self_attn.q_proj, layer.self_attn.k_proj, layer.self_attn.v_proj):
                proj.bias.normal_(0, 0.3)
    return model


def llama(seed: int):
    cfg = causal_lm_config("llama", SPEC.lm_sizes())
    cfg._attn_implementation = "sdpa"
    torch.manual_seed(seed)
    return AutoModelForCausalLM.from_config(cfg).eval()


FAMILIES = {"qwen3": lambda seed: build_tiny_target(SPEC, seed), "qwen2": qwen2, "llama": llama}


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def model(request):
    m = FAMILIES[request.param](3)
    assert lean_support(m) is None, lean_support(m)
    return m


def hf_forward(model, ids, pos, mask, cache, logits_to_keep=0):
    return transformers_forward(model, ids, pos, mask, cache, SPEC.target_layer_ids, logits_to_keep)


def cache_after(model, prefix: list[int]):
    """A cache holding ``prefix`` (from the transformers forward), or an empty one."""
    cache = TargetModel(model, lean=False).new_cache()
    if prefix:
        with torch.no_grad():
            model(input_ids=torch.tensor([prefix]), cache=cache, use_cache=True)
    return cache


def assert_twins(model, prefix, ids, pos, mask, logits_to_keep=0):
    """One forward through each path on equal caches (the lean forward with the fused float32 CPU norm and
    with the transformers norm operations): every output and the appended K/V bit-identical."""
    c0 = cache_after(model, prefix)
    with torch.inference_mode():
        want_logits, want_hidden = hf_forward(model, ids, pos, mask, c0, logits_to_keep)
    for fused in (True, False):
        c = cache_after(model, prefix)
        with torch.inference_mode():
            got_logits, got_hidden = LeanForward(model, fused_norm=fused)(
                ids, pos, mask, c, SPEC.target_layer_ids, logits_to_keep
            )
        assert torch.equal(got_logits, want_logits)
        assert sorted(got_hidden) == sorted(want_hidden)
        assert all(torch.equal(got_hidden[i], want_hidden[i]) for i in want_hidden)
        for a, b in zip(c0.layers, c.layers):
            assert torch.equal(a.keys, b.keys) and torch.equal(a.values, b.values)


@settings(max_examples=60, deadline=None)
@given(
    width=st.sampled_from([1, 7, 8, 16, 32, 96, 128, 257]),
    rows=st.integers(1, 40),
    scale=st.sampled_from([1e-3, 1.0, 30.0, 1e4]),
    seed=st.integers(0, 2**16),
)
def test_fused_cpu_norm_and_signed_rotation_are_bit_identical_to_the_transformers_operations(
    width, rows, scale, seed
):
    from transformers.models.qwen3.modeling_qwen3 import rotate_half

    from exitlaw.engine.models.layer_ops import (
        fused_rms_norm,
        rms_norm,
        rotate_with_sign,
        signed_sin,
    )

    g = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, width, generator=g) * scale
    w = torch.randn(width, generator=g)
    assert torch.equal(fused_rms_norm(x, w, 1e-6), rms_norm(x, w, 1e-6))
    if width % 2 == 0:
        sin = torch.randn(rows, width, generator=g)
        assert torch.equal(rotate_with_sign(x, signed_sin(sin)), rotate_half(x) * sin)


tokens = st.lists(st.integers(0, SPEC.vocab_size - 1), min_size=1, max_size=12)


@settings(max_examples=12, deadline=None)
@given(prefix=st.lists(st.integers(0, SPEC.vocab_size - 1), max_size=10), new=tokens)
def test_causal_forwards_are_bit_identical(model, prefix, new):
    """Prefill from empty, prefill onto a cache (a DFlash chain's verify) and one-token decode steps."""
    start = len(prefix)
    pos = torch.arange(start, start + len(new))[None]
    assert_twins(model, prefix, torch.tensor([new]), pos, None)
    assert_twins(model, prefix, torch.tensor([new]), pos, None, logits_to_keep=1)


@settings(max_examples=12, deadline=None)
@given(
    prefix=st.lists(st.integers(0, SPEC.vocab_size - 1), min_size=1, max_size=10),
    parents=st.lists(st.integers(0, 40), min_size=1, max_size=14),
    data=st.data(),
)
def test_tree_forward_is_bit_identical(model, prefix, parents, data):
    parent = [-1] + [
        p % (i + 1) for i, p in enumerate(parents)
    ]  # any rooted tree, parents before children
    tree = DraftTree(parent=parent, token=list(range(len(parent))))
    tok = data.draw(
        st.lists(st.integers(0, SPEC.vocab_size - 1), min_size=len(parent), max_size=len(parent))
    )
    start = len(prefix)
    anc = torch.tensor(tree.ancestor_matrix, dtype=torch.bool)
    mask = tree_attention_mask(anc, start, torch.float32)
    pos = (start + torch.tensor(tree.depth))[None]
    assert_twins(model, prefix, torch.tensor([tok]), pos, mask)


def test_batched_forward_with_per_row_lengths_is_bit_identical(model):
    """Two rows with different committed lengths under the batch mask, logits at chosen columns."""
    g = torch.Generator().manual_seed(0)
    prefix = torch.randint(0, SPEC.vocab_size, (2, 6), generator=g)
    c1, c2 = TargetModel(model, lean=False).new_cache(), TargetModel(model, lean=False).new_cache()
    with torch.no_grad():
        for c in (c1, c2):
            model(input_ids=prefix, cache=c, use_cache=True)
    visible = torch.tril(torch.ones(3, 3, dtype=torch.bool)).expand(2, 3, 3).clone()
    mask = batch_attention_mask(visible, [6, 4], 6, torch.float32)
    ids = torch.randint(0, SPEC.vocab_size, (2, 3), generator=g)
    pos = torch.tensor([[6, 7, 8], [4, 5, 6]])
    at = torch.tensor([0, 2])
    with torch.inference_mode():
        want, want_h = hf_forward(model, ids, pos, mask, c1, logits_to_keep=at)
        got, got_h = LeanForward(model)(ids, pos, mask, c2, SPEC.target_layer_ids, at)
    assert torch.equal(got, want) and all(torch.equal(got_h[i], want_h[i]) for i in want_h)
    assert all(
        torch.equal(a.keys, b.keys) and torch.equal(a.values, b.values)
        for a, b in zip(c1.layers, c2.layers)
    )


def test_the_engine_decodes_through_the_lean_path_with_the_same_tokens(model, monkeypatch):
    """``generate`` calls the lean forward for every decode forward (in inference mode) and emits exactly
    what the transformers forward gives, greedy and sampled (same seeds, bit-identical rows)."""
    drafter = build_tiny_drafter(SPEC, mask_token_id=SPEC.vocab_size - 1, seed=4)
    lean_target = TargetModel(model, SPEC.target_layer_ids)
    plain_target = TargetModel(model, SPEC.target_layer_ids, lean=False)
    assert lean_target.lean_reason is None and plain_target.lean_reason == "lean=False"
    calls = []
    original = LeanForward.__call__

    def spy(self, *args, **kwargs):
        calls.append(torch.is_inference_mode_enabled())
        return original(self, *args, **kwargs)

    monkeypatch.setattr(LeanForward, "__call__", spy)
    prompt = [5, 9, 13, 2, 7]
    for cfg in (
        DecodeConfig(method="ddtree", verifier="greedy", budget=8, max_new_tokens=12),
        DecodeConfig(method="chain", verifier="greedy", max_new_tokens=12),
        sampled_tree(budget=8, max_new_tokens=12, seed=3),
        DecodeConfig(method="ar", max_new_tokens=6),
    ):
        n = len(calls)
        plain = generate(plain_target, drafter, prompt, cfg)
        assert len(calls) == n  # lean=False never takes it
        lean = generate(lean_target, drafter, prompt, cfg)
        assert len(calls) > n and all(calls)
        assert lean.tokens == plain.tokens and lean.block_lengths == plain.block_lengths


def test_autograd_and_training_mode_take_the_transformers_forward(model, monkeypatch):
    target = TargetModel(model, SPEC.target_layer_ids)
    monkeypatch.setattr(LeanForward, "__call__", lambda *a, **k: pytest.fail("lean path taken"))
    anc = torch.tensor(
        DraftTree(parent=[-1, 0, 0], token=[1, 2, 3]).ancestor_matrix, dtype=torch.bool
    )
    cache = target.new_cache()
    step = target.tree_forward(
        cache, torch.tensor([1, 2, 3]), torch.tensor([0, 1, 1]), anc
    )  # grad enabled
    assert step.logits.requires_grad or not any(p.requires_grad for p in model.parameters())
    model.train()
    try:
        with torch.no_grad():
            target.prefill(target.new_cache(), torch.tensor([1, 2, 3]))
    finally:
        model.eval()
    hook = model.register_forward_pre_hook(lambda *_: None)
    try:
        with torch.no_grad():
            target.prefill(target.new_cache(), torch.tensor([1, 2, 3]))
    finally:
        hook.remove()
    seen = []  # a global module hook (e.g. a profiler's) must see the model's own modules run
    hook = torch.nn.modules.module.register_module_forward_hook(
        lambda mod, *_: seen.append(type(mod).__name__)
    )
    try:
        with torch.no_grad():
            target.prefill(target.new_cache(), torch.tensor([1, 2, 3]))
    finally:
        hook.remove()
    assert any(name.endswith("DecoderLayer") for name in seen)


def test_uncovered_models_keep_the_transformers_forward_with_a_reason():
    gemma = AutoModelForCausalLM.from_config(
        causal_lm_config("gemma4", SPEC.lm_sizes(), sliding_window=5)
    ).eval()
    assert "Gemma" in lean_support(gemma) or "sliding" in lean_support(gemma)
    assert TargetModel(gemma, SPEC.target_layer_ids)._lean is None
    eager = build_tiny_target(SPEC, 0)
    eager.config._attn_implementation = "eager"
    assert "eager" in lean_support(eager)
    hooked = build_tiny_target(SPEC, 0)
    hooked.model.layers[1].mlp.register_forward_hook(lambda *_: None)
    assert "hooks" in lean_support(hooked)
    assert TargetModel(hooked, SPEC.target_layer_ids).lean_reason.startswith("a Qwen3MLP")
    training = build_tiny_target(SPEC, 0).train()
    assert "training" in lean_support(training)
    with pytest.raises(ValueError, match="does not cover"):
        LeanForward(gemma)
