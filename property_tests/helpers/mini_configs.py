"""The mini pipeline cut down to seconds: the configuration the paper-repro tests run end to end."""

from __future__ import annotations

from exitlaw.paper_repro.mini.pipeline import config_for
from exitlaw.paper_repro.mini.target import TargetSpec

_SIZES = dict(hidden_size=32, intermediate_size=64, num_layers=2, num_heads=2, num_kv_heads=1)
MICRO_TARGET = TargetSpec.from_json(dict(**_SIZES, head_dim=16, steps=20, batch_size=4, seq_len=64))
_DATA = dict(train_tokens=60_000, tokenizer_docs=20, train_prompts=12, continuation_tokens=24)
_STEPS = dict(distill_steps=6, ft_steps=3, eval_prompts=1, eval_new_tokens=8, budgets=(32, 64))


def micro_config(preset: str = "quick", **overrides):
    """``preset`` with a two-layer target, a few thousand tokens and a handful of steps; ``overrides`` win."""
    return config_for(preset, **{"target": MICRO_TARGET, **_DATA, **_STEPS, **overrides})
