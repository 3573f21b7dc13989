"""One Qwen3 config builder: the tiny pair, gpu_check and the mini target take their configs from it."""

from __future__ import annotations

import pytest

from exitlaw.engine.models.config import (
    FAMILIES,
    QWEN3_4B,
    LMSizes,
    StackSizes,
    causal_lm_config,
    qwen3_config,
)
from exitlaw.engine.models.tiny import TinySpec, build_tiny_target

# the sizes every config of this file shares (a mini target's too)
_SIZES = StackSizes(
    hidden_size=32, intermediate_size=48, num_layers=2, num_heads=4, num_kv_heads=2, head_dim=8
)


def _fields(cfg) -> dict:
    d = cfg.to_dict()
    d.pop("transformers_version", None)
    return d


def test_qwen3_config_carries_every_size():
    rest = dict(rope_theta=5e5, tie_word_embeddings=True, init_std=0.1, rms_norm_eps=1e-5)
    s = LMSizes(vocab_size=96, stack=_SIZES, max_positions=512, **rest)
    c = qwen3_config(s)
    assert (
        c.vocab_size,
        c.hidden_size,
        c.intermediate_size,
        c.num_hidden_layers,
        c.num_attention_heads,
        c.num_key_value_heads,
        c.head_dim,
        c.max_position_embeddings,
        c.tie_word_embeddings,
        c.initializer_range,
        c.rms_norm_eps,
    ) == (96, 32, 48, 2, 4, 2, 8, 512, True, 0.1, 1e-5)
    assert c.rope_parameters["rope_theta"] == 5e5 and c.rope_parameters["rope_type"] == "default"
    assert QWEN3_4B.stack.num_layers == 36 and QWEN3_4B.vocab_size == 151936


def test_tiny_pair_gpu_check_and_mini_target_share_the_builder():
    import torch

    from exitlaw.engine.bench.gpu_check import build_pair
    from exitlaw.paper_repro.mini.target import TargetSpec, build_target

    spec = TinySpec()
    tiny = build_tiny_target(spec, seed=0).config
    assert _fields(tiny) == _fields(qwen3_config(spec.lm_sizes()))
    target, drafter = build_pair(True, "cpu", torch.float32)
    assert _fields(target.model.config) == _fields(qwen3_config(spec.lm_sizes().but(init_std=0.02)))
    assert (
        drafter.block_size == spec.block_size
        and tuple(drafter.config.target_layer_ids) == spec.target_layer_ids
    )
    ts = TargetSpec(sizes=_SIZES)
    mini = build_target(ts, vocab_size=64, seed=0).config
    assert _fields(mini) == _fields(
        qwen3_config(LMSizes(vocab_size=64, stack=_SIZES, max_positions=2048))
    )


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_gets_the_sizes(family):
    c = causal_lm_config(family, TinySpec().lm_sizes())
    assert (c.vocab_size, c.hidden_size, c.num_hidden_layers, c.num_key_value_heads) == (
        320,
        64,
        3,
        2,
    )


def test_unknown_family_is_named():
    with pytest.raises(ValueError, match="unknown model family 'mamba'"):
        causal_lm_config("mamba", TinySpec().lm_sizes())


def test_tiny_models_command_writes_the_family_with_its_chat_template(tmp_path):
    import json

    from transformers import AutoTokenizer

    from exitlaw.cli import main as cli_main

    assert cli_main(["tiny-models", "--out", str(tmp_path), "--family", "llama"]) == 0
    assert json.loads((tmp_path / "target" / "config.json").read_text())["model_type"] == "llama"
    tok = AutoTokenizer.from_pretrained(str(tmp_path / "target"))
    assert "<|start_header_id|>" in tok.chat_template and tok.eos_token == "<|eot_id|>"
