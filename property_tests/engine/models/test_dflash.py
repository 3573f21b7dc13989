"""DFlash drafter: released-format checkpoint I/O with clear errors, cache and attention semantics."""

from __future__ import annotations

import json
import shutil

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from safetensors.torch import load_file, save_file

from exitlaw.engine.models.checkpoint import load_drafter, load_target, save_drafter
from exitlaw.engine.models.dflash import DFlashConfig, default_target_layer_ids
from exitlaw.engine.models.tiny import TinySpec

SPEC = TinySpec()


TINY_SEED = 5  # the shared ``tiny``/``pair`` fixtures (conftest.py) use this seed


def _copy(src, tmp_path, name="draft"):
    dst = tmp_path / name
    shutil.copytree(src, dst)
    return dst


def test_drafter_save_load_roundtrip(tiny, pair, tmp_path):
    target, drafter = pair
    out = save_drafter(drafter, tmp_path / "again")
    back = load_drafter(out)
    assert back.config == drafter.config
    assert back.state_dict().keys() == drafter.state_dict().keys()
    for k, v in drafter.state_dict().items():
        assert torch.equal(back.state_dict()[k], v), k
    hidden = torch.randn(6, len(SPEC.target_layer_ids) * SPEC.target.hidden_size)
    a = drafter.block_logits(target.embed_tokens, target.lm_head, 9, hidden, 6, drafter.new_cache())
    b = back.block_logits(target.embed_tokens, target.lm_head, 9, hidden, 6, back.new_cache())
    assert torch.equal(a, b)
    with pytest.raises(FileExistsError):
        save_drafter(drafter, out)


def test_released_config_layout_is_written(tiny):
    cfg = json.loads((tiny[1] / "config.json").read_text())
    assert cfg["block_size"] == SPEC.block_size
    assert set(cfg["dflash_config"]) == {"mask_token_id", "target_layer_ids"}
    names = set(load_file(str(tiny[1] / "model.safetensors")))
    for n in (
        "fc.weight",
        "hidden_norm.weight",
        "norm.weight",
        "layers.0.self_attn.q_proj.weight",
        "layers.0.self_attn.q_norm.weight",
        "layers.0.self_attn.k_norm.weight",
        "layers.0.mlp.gate_proj.weight",
        "layers.0.input_layernorm.weight",
        "layers.0.post_attention_layernorm.weight",
    ):
        assert n in names
    assert not any(n.startswith("model.") or "embed_tokens" in n or "lm_head" in n for n in names)


def test_missing_tensor_error_names_it(tiny, tmp_path):
    d = _copy(tiny[1], tmp_path)
    t = load_file(str(d / "model.safetensors"))
    del t["layers.0.self_attn.k_norm.weight"]
    save_file(t, str(d / "model.safetensors"))
    with pytest.raises(
        ValueError, match=r"missing tensor\(s\): layers\.0\.self_attn\.k_norm\.weight"
    ):
        load_drafter(d)


def test_misnamed_tensor_error_names_both_names(tiny, tmp_path):
    d = _copy(tiny[1], tmp_path)
    t = load_file(str(d / "model.safetensors"))
    t["layers.0.mlp.gate.weight"] = t.pop("layers.0.mlp.gate_proj.weight")
    save_file(t, str(d / "model.safetensors"))
    with pytest.raises(ValueError) as err:
        load_drafter(d)
    assert "layers.0.mlp.gate_proj.weight" in str(err.value) and "layers.0.mlp.gate.weight" in str(
        err.value
    )


def test_misshaped_tensor_error_names_it(tiny, tmp_path):
    d = _copy(tiny[1], tmp_path)
    t = load_file(str(d / "model.safetensors"))
    t["fc.weight"] = t["fc.weight"][:, :-1].contiguous()
    save_file(t, str(d / "model.safetensors"))
    with pytest.raises(ValueError, match=r"fc\.weight has shape"):
        load_drafter(d)


def test_not_a_checkpoint_errors_are_clear(tiny, tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_drafter(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="not a DFlash drafter checkpoint: it has no config.json"):
        load_drafter(tmp_path / "empty")
    with pytest.raises(ValueError, match="not a DFlash checkpoint"):
        load_drafter(tiny[0])  # a target directory
    with pytest.raises(ValueError, match="is a DFlash drafter checkpoint, not a target"):
        load_target(tiny[1])
    d = _copy(tiny[1], tmp_path)
    (d / "model.safetensors").unlink()
    with pytest.raises(ValueError, match="no model.safetensors"):
        load_drafter(d)
    cfg = json.loads((d / "config.json").read_text())
    del cfg["dflash_config"]["mask_token_id"]
    with pytest.raises(ValueError, match="mask_token_id"):
        DFlashConfig.from_dict(cfg)


def test_default_target_layer_ids_follow_the_released_rule():
    assert default_target_layer_ids(36, 5) == [1, 9, 17, 25, 33]
    assert default_target_layer_ids(36, 1) == [18]


@given(
    cuts=st.lists(st.integers(1, 5), min_size=1, max_size=4),
    root=st.integers(0, SPEC.vocab_size - 1),
)
@settings(max_examples=15)
def test_incremental_draft_cache_equals_one_call_over_the_whole_context(pair, cuts, root):
    """Feeding the context in chunks across calls (the cache keeps context only) changes nothing."""
    target, drafter = pair
    total = sum(cuts)
    hidden = torch.randn(
        total,
        len(SPEC.target_layer_ids) * SPEC.target.hidden_size,
        generator=torch.Generator().manual_seed(total),
    )
    with torch.no_grad():
        whole = drafter.block_logits(
            target.embed_tokens, target.lm_head, root, hidden, total, drafter.new_cache()
        )
        cache, pos = drafter.new_cache(), 0
        for c in cuts:
            pos += c
            last = drafter.block_logits(
                target.embed_tokens, target.lm_head, root, hidden[pos - c : pos], pos, cache
            )
            assert cache.length == pos
    torch.testing.assert_close(last, whole, atol=1e-5, rtol=1e-5)


def test_block_attends_non_causally_and_rows_are_log_probs(pair):
    target, drafter = pair
    h = torch.randn(1, 4, len(SPEC.target_layer_ids) * SPEC.target.hidden_size)
    emb = torch.randn(1, SPEC.block_size, SPEC.target.hidden_size)
    ctx_pos, blk_pos = torch.arange(4)[None], torch.arange(4, 4 + SPEC.block_size)[None]
    with torch.no_grad():
        out = drafter(emb, h, ctx_pos, blk_pos)
        emb2 = emb.clone()
        emb2[0, -1] += 1.0
        out2 = drafter(emb2, h, ctx_pos, blk_pos)
    assert not torch.allclose(out[0, 1], out2[0, 1])  # an earlier position sees a later one
    rows = drafter.draft_logprobs(
        target.embed_tokens, target.lm_head, 3, h[0], 4, drafter.new_cache()
    )
    assert rows.shape == (SPEC.block_size - 1, SPEC.vocab_size)
    torch.testing.assert_close(
        rows.exp().sum(-1), torch.ones(SPEC.block_size - 1, dtype=rows.dtype)
    )


def test_cache_length_mismatch_is_an_error(pair):
    target, drafter = pair
    h = torch.randn(3, len(SPEC.target_layer_ids) * SPEC.target.hidden_size)
    with pytest.raises(ValueError, match="draft cache holds 0 positions"):
        drafter.block_logits(target.embed_tokens, target.lm_head, 1, h, 5, drafter.new_cache())


def test_a_released_style_qwen3_4b_config_parses_and_names_its_tensors():
    """Config of the shape z-lab/Qwen3-4B-DFlash-b16 ships (Qwen3 fields + block_size + dflash_config)."""
    from exitlaw.engine.models.dflash import DFlashDrafter, expected_tensor_names

    raw = {
        "architectures": ["DFlashDraftModel"],
        "auto_map": {"AutoModel": "dflash.DFlashDraftModel"},
        "model_type": "qwen3",
        "dtype": "bfloat16",
        "attention_bias": False,
        "attention_dropout": 0.0,
        "hidden_act": "silu",
        "hidden_size": 2560,
        "intermediate_size": 9728,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "num_hidden_layers": 5,
        "num_target_layers": 36,
        "max_position_embeddings": 40960,
        "rms_norm_eps": 1e-6,
        "rope_scaling": None,
        "rope_theta": 1000000,
        "sliding_window": None,
        "use_sliding_window": False,
        "layer_types": ["full_attention"] * 5,
        "vocab_size": 151936,
        "block_size": 16,
        "dflash_config": {"mask_token_id": 151669, "target_layer_ids": [1, 9, 17, 25, 33]},
    }
    cfg = DFlashConfig.from_dict(raw)
    assert (cfg.block_size, cfg.mask_token_id, cfg.target_layer_ids, cfg.rope_theta) == (
        16,
        151669,
        (1, 9, 17, 25, 33),
        1e6,
    )
    names = expected_tensor_names(cfg)
    assert len(names) == 5 * 11 + 3
    with torch.device("meta"):
        shapes = {k: tuple(v.shape) for k, v in DFlashDrafter(cfg).state_dict().items()}
    assert shapes["fc.weight"] == (2560, 5 * 2560)
    assert shapes["layers.4.self_attn.k_proj.weight"] == (8 * 128, 2560)
    assert shapes["layers.0.self_attn.q_norm.weight"] == (128,)
    back = DFlashConfig.from_dict(cfg.to_dict())
    assert back == cfg
    with pytest.raises(ValueError, match="use_sliding_window"):
        DFlashConfig.from_dict({**raw, "use_sliding_window": True})


def _reference_block_hidden(drafter, block_embeds, target_hidden, positions):
    """The DFlash equations of :mod:`exitlaw.engine.models.dflash` written out in float64 with
    transformers' own Qwen3 rotary helper and an explicit softmax attention (no exitlaw code path):
    ctx = norm(fc(h)); per layer q from the block, k/v from [ctx; block], both roped at their positions,
    non-causal attention with K/V heads repeated, o_proj, residual, SiLU MLP; final norm."""
    from transformers.models.qwen3.modeling_qwen3 import apply_rotary_pos_emb

    c = drafter.config

    def d(t):
        return t.detach().to(torch.float64)

    def norm(x, mod):
        return d(mod.weight) * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + mod.eps)

    inv = 1.0 / (c.rope_theta ** (torch.arange(0, c.head_dim, 2, dtype=torch.float64) / c.head_dim))
    ang = positions.to(torch.float64)[..., None] * inv
    emb = torch.cat([ang, ang], dim=-1)
    cos, sin = emb.cos(), emb.sin()  # [1, C + S, D]
    ctx = norm(d(target_hidden) @ d(drafter.fc.weight).T, drafter.hidden_norm)
    x = d(block_embeds)
    n_ctx, s = ctx.shape[1], x.shape[1]
    for layer in drafter.layers:
        a = layer.self_attn
        xn = norm(x, layer.input_layernorm)
        both = torch.cat([ctx, xn], dim=1)
        q = norm((xn @ d(a.q_proj.weight).T).view(1, s, a.heads, a.head_dim), a.q_norm).transpose(
            1, 2
        )
        k = norm(
            (both @ d(a.k_proj.weight).T).view(1, n_ctx + s, a.kv_heads, a.head_dim), a.k_norm
        ).transpose(1, 2)
        v = (both @ d(a.v_proj.weight).T).view(1, n_ctx + s, a.kv_heads, a.head_dim).transpose(1, 2)
        q, _ = apply_rotary_pos_emb(q, q, cos[:, n_ctx:], sin[:, n_ctx:])
        k, _ = apply_rotary_pos_emb(k, k, cos, sin)
        k, v = (t.repeat_interleave(a.heads // a.kv_heads, dim=1) for t in (k, v))
        att = torch.softmax(q @ k.transpose(-1, -2) / a.head_dim**0.5, dim=-1) @ v
        x = x + att.transpose(1, 2).reshape(1, s, -1) @ d(a.o_proj.weight).T
        h = norm(x, layer.post_attention_layernorm)
        m = layer.mlp
        x = (
            x
            + (torch.nn.functional.silu(h @ d(m.gate_proj.weight).T) * (h @ d(m.up_proj.weight).T))
            @ d(m.down_proj.weight).T
        )
    return norm(x, drafter.norm)


@given(n_ctx=st.integers(1, 9), seed=st.integers(0, 2**16))
@settings(max_examples=10, deadline=None)
def test_drafter_forward_equals_the_dflash_equations(pair, n_ctx, seed):
    """The optimised forward (fused norms, signed-sine RoPE, projections without module calls, the fused
    context/block K/V) against an independent float64 rendering of the equations: a dropped norm, a
    wrong RoPE sign or half, a causal block mask or a mis-repeated K/V head all fail."""
    target, drafter = pair
    g = torch.Generator().manual_seed(seed)
    h = torch.randn(1, n_ctx, len(SPEC.target_layer_ids) * SPEC.target.hidden_size, generator=g)
    emb = torch.randn(1, SPEC.block_size, SPEC.target.hidden_size, generator=g)
    start = 3
    ctx_pos = torch.arange(start, start + n_ctx)[None]
    blk_pos = torch.arange(start + n_ctx, start + n_ctx + SPEC.block_size)[None]
    with torch.no_grad():
        got = drafter(emb, h, ctx_pos, blk_pos)
    want = _reference_block_hidden(drafter, emb, h, torch.cat([ctx_pos, blk_pos], dim=-1))
    torch.testing.assert_close(got.double(), want, atol=2e-5, rtol=2e-5)
