"""Tiny random-initialised checkpoints in the real on-disk formats.

``write_tiny_models(out)`` writes ``out/target`` (a Qwen3ForCausalLM saved with
``save_pretrained`` plus a small byte-level BPE tokenizer with a Qwen-style chat
template) and ``out/draft`` (a DFlash drafter in the released layout), so tests
and smoke runs load through exactly the code path of real checkpoints.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from .checkpoint import save_drafter
from .dflash import DFlashConfig, DFlashDrafter

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>", "<|mask|>"]

CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n"
    "{% if enable_thinking is defined and enable_thinking is false %}<think>\n\n</think>\n\n{% endif %}"
    "{% endif %}"
)

_CORPUS = (
    "Tree speculative decoding drafts a tree of tokens and verifies it with one target forward. "
    "The exit law w(v) = P(v) rho(v) sums to one; coverage is the expected number of accepted tokens. "
    "def add(a, b):\n    return a + b\n\nfor i in range(10):\n    print(i * i)\n"
    "Question: what is 12 + 30? Answer: 42. Please reason step by step."
) * 4


@dataclass(frozen=True)
class TinySpec:
    """Sizes of the tiny pair (hidden 64, vocab ~300: tests run in seconds)."""

    vocab_size: int = 320
    hidden_size: int = 64
    intermediate_size: int = 128
    target_layers: int = 3
    draft_layers: int = 1
    heads: int = 4
    kv_heads: int = 2
    head_dim: int = 16
    block_size: int = 8
    target_layer_ids: tuple[int, ...] = (0, 1)
    init_std: float = 0.2  # peakier rows than the HF default 0.02, so greedy ties are unlikely


def build_tokenizer(vocab_size: int):
    """A byte-level BPE tokenizer (trained on a fixed string) wrapped as a ``PreTrainedTokenizerFast``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator([_CORPUS], trainer=trainer)
    if tok.get_vocab_size() > vocab_size:
        raise ValueError(f"tokenizer has {tok.get_vocab_size()} tokens, more than vocab_size {vocab_size}")
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                   additional_special_tokens=SPECIAL_TOKENS)
    fast.chat_template = CHAT_TEMPLATE
    return fast


def build_tiny_target(spec: TinySpec, seed: int):
    from transformers import Qwen3Config, Qwen3ForCausalLM

    cfg = Qwen3Config(vocab_size=spec.vocab_size, hidden_size=spec.hidden_size,
                      intermediate_size=spec.intermediate_size, num_hidden_layers=spec.target_layers,
                      num_attention_heads=spec.heads, num_key_value_heads=spec.kv_heads, head_dim=spec.head_dim,
                      max_position_embeddings=4096, initializer_range=spec.init_std, tie_word_embeddings=False,
                      rope_parameters={"rope_type": "default", "rope_theta": 10000.0})
    torch.manual_seed(seed)
    return Qwen3ForCausalLM(cfg).eval()


def build_tiny_drafter(spec: TinySpec, mask_token_id: int, seed: int) -> DFlashDrafter:
    cfg = DFlashConfig(hidden_size=spec.hidden_size, intermediate_size=spec.intermediate_size,
                       num_hidden_layers=spec.draft_layers, num_attention_heads=spec.heads,
                       num_key_value_heads=spec.kv_heads, head_dim=spec.head_dim, vocab_size=spec.vocab_size,
                       block_size=spec.block_size, mask_token_id=mask_token_id,
                       target_layer_ids=tuple(spec.target_layer_ids), num_target_layers=spec.target_layers,
                       rope_theta=10000.0, max_position_embeddings=4096)
    gen = torch.Generator().manual_seed(seed + 1)
    drafter = DFlashDrafter(cfg)
    with torch.no_grad():
        for name, p in drafter.named_parameters():
            if name.endswith("norm.weight"):
                p.fill_(1.0)
            else:
                p.copy_(torch.randn(p.shape, generator=gen) * spec.init_std)
    return drafter.eval()


def write_tiny_models(out: str | Path, *, seed: int = 0, spec: TinySpec = TinySpec(),
                      overwrite: bool = False) -> tuple[Path, Path]:
    """Write ``out/target`` and ``out/draft``; returns both paths."""
    out = Path(out)
    tdir, ddir = out / "target", out / "draft"
    for d in (tdir, ddir):
        if (d / "config.json").exists() and not overwrite:
            raise FileExistsError(f"{d} already holds a checkpoint; pass --overwrite to replace it")
    tokenizer = build_tokenizer(spec.vocab_size)
    mask_id = tokenizer.convert_tokens_to_ids("<|mask|>")
    model = build_tiny_target(spec, seed)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.save_pretrained(str(tdir))
    tokenizer.save_pretrained(str(tdir))
    save_drafter(build_tiny_drafter(spec, mask_id, seed), ddir, overwrite=overwrite)
    return tdir, ddir


__all__ = ["TinySpec", "write_tiny_models", "build_tokenizer", "build_tiny_target", "build_tiny_drafter",
           "CHAT_TEMPLATE", "SPECIAL_TOKENS"]
