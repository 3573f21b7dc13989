"""Tiny random-initialised checkpoints in the real on-disk formats.

``write_tiny_models(out)`` writes ``out/target`` (a Qwen3ForCausalLM saved with
``save_pretrained`` plus a small byte-level BPE tokenizer with a Qwen3-style chat
template, :mod:`.tiny_tokenizer`) and ``out/draft`` (a DFlash drafter in the released
layout), so tests and smoke runs load through exactly the code path of real
checkpoints. ``family=`` swaps in a Llama-3, Qwen3-MoE or Gemma-4 target of the same
sizes, with that family's tokenizer conventions.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, Qwen3ForCausalLM

from exitlaw.engine.models.checkpoint import save_drafter
from exitlaw.engine.models.config import LMSizes, StackSizes, causal_lm_config, qwen3_config
from exitlaw.engine.models.dflash import DFlashConfig, DFlashDrafter
from exitlaw.engine.models.tiny_tokenizer import QWEN3_TEMPLATE as CHAT_TEMPLATE
from exitlaw.engine.models.tiny_tokenizer import STYLES, build_tokenizer, stop_token_ids

SPECIAL_TOKENS = list(STYLES["qwen3"].special_tokens)
FAMILY_STYLE = {
    "qwen3": "qwen3",
    "qwen3_moe": "qwen3",
    "llama": "llama3",  # chat style per model family
    "gemma4": "gemma",
    "gemma4_full": "gemma",
}


# the tiny target's stack (hidden 64: tests run in seconds)
TINY_STACK = StackSizes(
    hidden_size=64, intermediate_size=128, num_layers=3, num_heads=4, num_kv_heads=2, head_dim=16
)


@dataclass(frozen=True)
class TinySpec:
    """Sizes of the tiny pair: the target's stack, the drafter's depth (its stack is the target's
    with ``draft_layers`` layers: :meth:`drafter_sizes`), the vocabulary (~300) and the block."""

    vocab_size: int = 320
    target: StackSizes = TINY_STACK
    draft_layers: int = 1
    block_size: int = 8
    target_layer_ids: tuple[int, ...] = (0, 1)
    init_std: float = 0.2  # peakier rows than the HF default 0.02, so greedy ties are unlikely
    sliding_window: int = (
        16  # Gemma-4 sliding layers: shorter than the dry run's prompts, so the window slides
    )

    def lm_sizes(self) -> LMSizes:
        """The target's sizes."""
        return LMSizes(vocab_size=self.vocab_size, stack=self.target, init_std=self.init_std)

    def drafter_sizes(self) -> StackSizes:
        """The drafter's stack: the target's widths, ``draft_layers`` layers."""
        return self.target.but(num_layers=self.draft_layers)


def build_tiny_target(spec: TinySpec, seed: int, family: str = "qwen3"):
    """A random-weight causal LM of ``family`` (:data:`.model_config.FAMILIES`) with the tiny sizes."""
    torch.manual_seed(seed)
    if family == "qwen3":
        return Qwen3ForCausalLM(qwen3_config(spec.lm_sizes())).eval()
    cfg = causal_lm_config(family, spec.lm_sizes(), sliding_window=spec.sliding_window)
    return AutoModelForCausalLM.from_config(cfg).eval()


def build_tiny_drafter(spec: TinySpec, mask_token_id: int, seed: int) -> DFlashDrafter:
    cfg = DFlashConfig(
        **spec.drafter_sizes().hf_fields(),
        vocab_size=spec.vocab_size,
        block_size=spec.block_size,
        mask_token_id=mask_token_id,
        target_layer_ids=tuple(spec.target_layer_ids),
        num_target_layers=spec.target.num_layers,
        rope_theta=10000.0,
        max_position_embeddings=4096,
    )
    gen = torch.Generator().manual_seed(seed + 1)
    drafter = DFlashDrafter(cfg)
    with torch.no_grad():
        for name, p in drafter.named_parameters():
            if name.endswith("norm.weight"):
                p.fill_(1.0)
            else:
                p.copy_(torch.randn(p.shape, generator=gen) * spec.init_std)
    return drafter.eval()


def write_tiny_models(
    out: str | Path,
    *,
    seed: int = 0,
    spec: TinySpec = TinySpec(),
    overwrite: bool = False,
    family: str = "qwen3",
) -> tuple[Path, Path]:
    """Write ``out/target`` (a ``family`` model with its family's tokenizer style) and ``out/draft``."""
    if family not in FAMILY_STYLE:
        raise ValueError(f"unknown model family {family!r}; choose {', '.join(FAMILY_STYLE)}")
    style = FAMILY_STYLE[family]
    out = Path(out)
    tdir, ddir = out / "target", out / "draft"
    for d in (tdir, ddir):
        if (d / "config.json").exists() and not overwrite:
            raise FileExistsError(f"{d} already holds a checkpoint; pass --overwrite to replace it")
    tokenizer = build_tokenizer(spec.vocab_size, style)
    mask_id = tokenizer.convert_tokens_to_ids(STYLES[style].mask)
    model = build_tiny_target(spec, seed, family)
    stops = stop_token_ids(tokenizer, style)
    model.generation_config.eos_token_id = stops[0] if len(stops) == 1 else stops
    model.save_pretrained(str(tdir))
    tokenizer.save_pretrained(str(tdir))
    save_drafter(build_tiny_drafter(spec, mask_id, seed), ddir, overwrite=overwrite)
    return tdir, ddir


__all__ = [
    "TINY_STACK",
    "TinySpec",
    "write_tiny_models",
    "build_tokenizer",
    "build_tiny_target",
    "build_tiny_drafter",
    "CHAT_TEMPLATE",
    "SPECIAL_TOKENS",
    "FAMILY_STYLE",
]
