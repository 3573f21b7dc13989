"""Hugging Face configs of target architectures, built in one place.

:class:`StackSizes` holds a decoder stack's sizes (a target's, its drafter's: the mini target, the
tiny pair), :class:`LMSizes` those and the rest that every decoder-only family shares; :func:`qwen3_config`
is the one ``Qwen3Config`` builder (the tiny test pair, ``gpu_check``'s Qwen3-4B shape, the
mini target); :func:`causal_lm_config` gives the same sizes to the other families the
paper's configs name (Llama-3, Qwen3-MoE, Gemma-4), for random-weight stand-ins.
"""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class StackSizes:
    """Sizes of a decoder stack: width, MLP width, depth and attention heads (names follow the Qwen3
    config). No vocabulary: a DFlash drafter is its target's stack with its own depth and MLP width."""

    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int

    def but(self, **changes) -> "StackSizes":
        return replace(self, **changes)

    def hf_fields(self) -> dict:
        """The Hugging Face config keyword arguments of these sizes (a target's ``*Config``,
        ``DFlashConfig``): the one mapping from the names here to theirs."""
        return dict(
            hidden_size=self.hidden_size,
            intermediate_size=self.intermediate_size,
            num_hidden_layers=self.num_layers,
            num_attention_heads=self.num_heads,
            num_key_value_heads=self.num_kv_heads,
            head_dim=self.head_dim,
        )


@dataclass(frozen=True)
class LMSizes:
    """Sizes of a decoder-only causal LM: its vocabulary, its stack, positions and initialisation."""

    vocab_size: int
    stack: StackSizes
    max_positions: int = 4096
    rope_theta: float = 10000.0
    tie_word_embeddings: bool = False
    init_std: float = 0.02
    rms_norm_eps: float = 1e-6

    def but(self, **changes) -> "LMSizes":
        return replace(self, **changes)


QWEN3_4B = LMSizes(
    vocab_size=151936,
    stack=StackSizes(
        hidden_size=2560,
        intermediate_size=9728,
        num_layers=36,
        num_heads=32,
        num_kv_heads=8,
        head_dim=128,
    ),
    max_positions=40960,
    rope_theta=1_000_000.0,
    tie_word_embeddings=True,
)

FAMILIES = ("qwen3", "llama", "qwen3_moe", "gemma4", "gemma4_full")


def config_fields(s: LMSizes) -> dict:
    """The ``*Config`` keyword arguments of ``s`` that every decoder-only family spells the same way (the
    Qwen3 names): the one mapping from :class:`LMSizes` to Hugging Face config fields."""
    return dict(
        vocab_size=s.vocab_size,
        **s.stack.hf_fields(),
        max_position_embeddings=s.max_positions,
        initializer_range=s.init_std,
        rms_norm_eps=s.rms_norm_eps,
        tie_word_embeddings=s.tie_word_embeddings,
    )


def _transformers():
    """``transformers``, loaded on the first config built: its config classes load torch."""
    import transformers  # lazy: `exitlaw --help` reads FAMILIES from this module without torch (property_tests/test_faces.py)

    return transformers


def qwen3_config(sizes: LMSizes):
    """The ``Qwen3Config`` of ``sizes`` (default RoPE with ``sizes.rope_theta``)."""
    return _transformers().Qwen3Config(
        **config_fields(sizes),
        rope_parameters={"rope_type": "default", "rope_theta": sizes.rope_theta},
    )


def causal_lm_config(family: str, sizes: LMSizes, *, sliding_window: int = 64):
    """A config of ``family`` (:data:`FAMILIES`) with ``sizes``.

    ``qwen3_moe``: every layer sparse, 4 experts of ``intermediate_size // 2``, 2 per token.
    ``gemma4``: the text model, sliding-window (window ``sliding_window``) and full-attention layers
    alternating as in the released configs (every second layer and the last one full
    here), no per-layer input embeddings. ``gemma4_full``: the same with every layer full
    attention (no sliding window).
    """
    rope = {"rope_type": "default", "rope_theta": sizes.rope_theta}
    if family == "qwen3":
        return qwen3_config(sizes)
    if family == "llama":
        return _transformers().LlamaConfig(**config_fields(sizes), rope_parameters=rope)
    if family == "qwen3_moe":
        return _transformers().Qwen3MoeConfig(
            **config_fields(sizes),
            rope_parameters=rope,
            num_experts=4,
            num_experts_per_tok=2,
            moe_intermediate_size=max(1, sizes.stack.intermediate_size // 2),
            decoder_sparse_step=1,
        )
    if family in ("gemma4", "gemma4_full"):
        n = sizes.stack.num_layers
        layer_types = [
            "full_attention"
            if i % 2 or i == n - 1 or family == "gemma4_full"
            else "sliding_attention"
            for i in range(n)
        ]
        return _transformers().Gemma4TextConfig(
            **config_fields(sizes),
            layer_types=layer_types,
            sliding_window=sliding_window,
            hidden_size_per_layer_input=0,
            vocab_size_per_layer_input=sizes.vocab_size,
            rope_parameters={"sliding_attention": dict(rope), "full_attention": dict(rope)},
        )
    raise ValueError(f"unknown model family {family!r}; choose {', '.join(FAMILIES)}")


__all__ = [
    "StackSizes",
    "LMSizes",
    "QWEN3_4B",
    "FAMILIES",
    "config_fields",
    "qwen3_config",
    "causal_lm_config",
]
