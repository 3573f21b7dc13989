"""DFlash block drafter (exitlaw's own implementation of the released z-lab format).

One draft call predicts a whole block. Inputs: the target's hidden states of the
newly committed context positions (layers ``target_layer_ids``, concatenated)
and the block ``[last token, MASK x (block_size - 1)]`` at positions
``start .. start + block_size - 1``. In every draft layer:

    ctx   = hidden_norm(fc(concat_l h_l))                  # [C, H], once per call
    q     = rope(q_norm(W_q x_block))                      # queries: block only
    k, v  = [cached ctx ; rope(k_norm(W_k ctx)) ; rope(k_norm(W_k x_block))], W_v likewise

so context enters as key/value only, and the block attends to the context and
to itself *non-causally*. The draft cache keeps only context positions (the block
is recomputed every round). The block's mask position ``d`` (1 .. block_size-1)
predicts the token at depth ``d``: ``lm_head(norm(x_d))`` with the target's
``lm_head``; the target's ``embed_tokens`` embeds the block. Checkpoint I/O lives
in :mod:`exitlaw.engine.models.checkpoint`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from exitlaw.engine.models.layer_ops import fused_rms_norm, rotate_with_sign, signed_sin


def default_target_layer_ids(num_target_layers: int, num_draft_layers: int) -> list[int]:
    """DFlash's default: ``num_draft_layers`` ids spread evenly over ``[1, num_target_layers - 3]``."""
    if num_draft_layers == 1:
        return [num_target_layers // 2]
    lo, hi = 1, num_target_layers - 3
    return [
        int(round(lo + i * (hi - lo) / (num_draft_layers - 1))) for i in range(num_draft_layers)
    ]


@dataclass(frozen=True)
class DFlashConfig:
    """The fields of a released DFlash ``config.json`` that the drafter uses."""

    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    vocab_size: int
    block_size: int
    mask_token_id: int
    target_layer_ids: tuple[int, ...]
    num_target_layers: int
    rms_norm_eps: float = 1e-6
    rope_theta: float = 1_000_000.0
    attention_bias: bool = False
    max_position_embeddings: int = 40960
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    @classmethod
    def from_dict(cls, cfg: dict[str, Any], where: str = "config.json") -> "DFlashConfig":
        """Parse a released config; every error names the missing or unsupported field."""
        dcfg = cfg.get("dflash_config") or {}
        need = [
            "hidden_size",
            "intermediate_size",
            "num_hidden_layers",
            "num_attention_heads",
            "num_key_value_heads",
            "vocab_size",
        ]
        missing = [k for k in need if k not in cfg]
        block = cfg.get("block_size", dcfg.get("block_size"))
        mask_id = dcfg.get("mask_token_id", cfg.get("mask_token_id"))
        if block is None:
            missing.append("block_size")
        if mask_id is None:
            missing.append("dflash_config.mask_token_id")
        if missing:
            raise ValueError(
                f"{where} is not a DFlash drafter config: missing {', '.join(missing)}"
            )
        if int(block) < 2:
            raise ValueError(f"{where}: block_size must be >= 2, got {block}")
        rope = cfg.get("rope_parameters") or cfg.get("rope_scaling") or {}
        rope_type = rope.get("rope_type", rope.get("type", "default"))
        if rope_type != "default":
            raise ValueError(f"{where}: rope type {rope_type!r} is not supported (only 'default')")
        theta = rope.get("rope_theta", cfg.get("rope_theta", 10000.0))
        if cfg.get("use_sliding_window"):
            raise ValueError(
                f"{where}: use_sliding_window = true is not supported (full attention only)"
            )
        layers = int(cfg["num_hidden_layers"])
        ids = dcfg.get("target_layer_ids")
        if ids is None:
            if "num_target_layers" not in cfg:
                raise ValueError(
                    f"{where}: needs dflash_config.target_layer_ids or num_target_layers"
                )
            ids = default_target_layer_ids(int(cfg["num_target_layers"]), layers)
        heads = int(cfg["num_attention_heads"])
        known = set(need) | {
            "block_size",
            "dflash_config",
            "head_dim",
            "rms_norm_eps",
            "rope_theta",
            "rope_parameters",
            "attention_bias",
            "max_position_embeddings",
            "num_target_layers",
        }
        return cls(
            hidden_size=int(cfg["hidden_size"]),
            intermediate_size=int(cfg["intermediate_size"]),
            num_hidden_layers=layers,
            num_attention_heads=heads,
            num_key_value_heads=int(cfg["num_key_value_heads"]),
            head_dim=int(cfg.get("head_dim") or int(cfg["hidden_size"]) // heads),
            vocab_size=int(cfg["vocab_size"]),
            block_size=int(block),
            mask_token_id=int(mask_id),
            target_layer_ids=tuple(int(i) for i in ids),
            num_target_layers=int(cfg.get("num_target_layers", max(ids) + 4)),
            rms_norm_eps=float(cfg.get("rms_norm_eps", 1e-6)),
            rope_theta=float(theta),
            attention_bias=bool(cfg.get("attention_bias", False)),
            max_position_embeddings=int(cfg.get("max_position_embeddings", 40960)),
            extra={k: v for k, v in cfg.items() if k not in known},
        )

    def to_dict(self) -> dict[str, Any]:
        """The released on-disk layout (Qwen3 fields + ``block_size`` + ``dflash_config``)."""
        out = dict(self.extra)
        out.update(
            {
                "architectures": ["DFlashDraftModel"],
                "model_type": "qwen3",
                "hidden_size": self.hidden_size,
                "intermediate_size": self.intermediate_size,
                "num_hidden_layers": self.num_hidden_layers,
                "num_attention_heads": self.num_attention_heads,
                "num_key_value_heads": self.num_key_value_heads,
                "head_dim": self.head_dim,
                "vocab_size": self.vocab_size,
                "rms_norm_eps": self.rms_norm_eps,
                "rope_theta": self.rope_theta,
                "attention_bias": self.attention_bias,
                "hidden_act": "silu",
                "max_position_embeddings": self.max_position_embeddings,
                "num_target_layers": self.num_target_layers,
                "block_size": self.block_size,
                "dflash_config": {
                    "mask_token_id": self.mask_token_id,
                    "target_layer_ids": list(self.target_layer_ids),
                },
            }
        )
        return out


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``weight * (x / sqrt(mean(x^2) + eps))``, normalised in float32 and cast back before the weight
        (Qwen3's order); one fused ``rms_norm`` in place of five elementwise passes, with the weight
        folded in for float32 on the CPU (bit-identical there, :mod:`.layer_ops`)."""
        if x.dtype == torch.float32 and x.device.type == "cpu":
            return fused_rms_norm(x, self.weight, self.eps)
        h = F.rms_norm(x.float(), (x.shape[-1],), eps=self.eps)
        return self.weight * h.to(x.dtype)


_INV_FREQ: dict[tuple, torch.Tensor] = {}


def rope_inv_freq(head_dim: int, theta: float, device) -> torch.Tensor:
    """``theta ** (-2i / head_dim)``, ``i < head_dim / 2`` (float32), computed once per (head_dim, theta, device)."""
    key = (int(head_dim), float(theta), str(device))
    inv = _INV_FREQ.get(key)
    if inv is None:
        # a normal tensor, usable in and out of inference mode
        with torch.inference_mode(False), torch.no_grad():
            inv = 1.0 / (
                theta
                ** (torch.arange(0, head_dim, 2, device=device, dtype=torch.float32) / head_dim)
            )
        _INV_FREQ[key] = inv
    return inv


def rope_cos_sin(positions: torch.Tensor, head_dim: int, theta: float, dtype: torch.dtype):
    """Default RoPE tables for integer ``positions [B, T]``: ``cos`` and the signed sine
    ``[-sin_1, sin_2]`` (:func:`~exitlaw.engine.models.layer_ops.signed_sin`), each ``[B, 1, T, head_dim]``
    (broadcast over heads), as :func:`apply_rope` takes them."""
    inv = rope_inv_freq(head_dim, theta, positions.device)
    ang = positions.float()[..., None] * inv
    emb = torch.cat([ang, ang], dim=-1)
    return emb.cos().to(dtype)[:, None], signed_sin(emb.sin().to(dtype))[:, None]


def apply_rope(x: torch.Tensor, cos: torch.Tensor, signed: torch.Tensor) -> torch.Tensor:
    """``x * cos + rotate_half(x) * sin`` for ``x [B, heads, T, D]`` and :func:`rope_cos_sin`'s tables
    ``[B, 1, T, D]`` (the rotation by one roll, :func:`~exitlaw.engine.models.layer_ops.rotate_with_sign`)."""
    return x * cos + rotate_with_sign(x, signed)


class DraftCache:
    """Per-layer rotated context K/V ``[B, kv_heads, C, D]``; holds context positions only."""

    def __init__(self, num_layers: int):
        self.keys: list[torch.Tensor | None] = [None] * num_layers
        self.values: list[torch.Tensor | None] = [None] * num_layers

    @property
    def length(self) -> int:
        return 0 if self.keys[0] is None else int(self.keys[0].shape[-2])

    def append(
        self, layer: int, k: torch.Tensor, v: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if self.keys[layer] is not None:
            k = torch.cat([self.keys[layer], k], dim=-2)
            v = torch.cat([self.values[layer], v], dim=-2)
        self.keys[layer], self.values[layer] = k, v
        return k, v

    def extend_with_block(
        self, layer: int, k: torch.Tensor, v: torch.Tensor, block: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``k, v [B, kv_heads, C + S, D]``: new context rows then ``block = S`` block rows. Returns the
        attention's K/V ``[cached; context; block]`` with one copy; the cache keeps a view of its first
        ``cached + C`` rows (same values as :meth:`append` of the context rows)."""
        if self.keys[layer] is not None:
            k = torch.cat([self.keys[layer], k], dim=-2)
            v = torch.cat([self.values[layer], v], dim=-2)
        keep = k.shape[-2] - block
        self.keys[layer], self.values[layer] = k[..., :keep, :], v[..., :keep, :]
        return k, v


def attend_repeated(q, k, v, attn_mask, scale: float) -> torch.Tensor:
    """Non-causal SDPA with the ``kv_heads`` K/V repeated to the query heads (grouped-query attention)."""
    groups = q.shape[1] // k.shape[1]
    return F.scaled_dot_product_attention(
        q,
        k.repeat_interleave(groups, dim=1),
        v.repeat_interleave(groups, dim=1),
        attn_mask=attn_mask,
        is_causal=False,
        scale=scale,
    )


def attend_grouped(q, k, v, attn_mask, scale: float) -> torch.Tensor:
    """:func:`attend_repeated` without the copies: SDPA's ``enable_gqa`` (query head ``h`` reads
    K/V head ``h // groups``, as ``repeat_interleave`` lays them out), with or without a mask; the same
    bits on the CPU (``test_fast_paths``), about 1.8x faster at 8 rows x 316 keys on the CPU
    (``paper_repro/results/serve_bench/cpu_reductions/reductions_timing.py``)."""
    return F.scaled_dot_product_attention(
        q,
        k,
        v,
        attn_mask=attn_mask,
        is_causal=False,
        scale=scale,
        enable_gqa=k.shape[1] != q.shape[1],
    )


class DFlashAttention(nn.Module):
    def __init__(self, c: DFlashConfig):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = (
            c.num_attention_heads,
            c.num_key_value_heads,
            c.head_dim,
        )
        self.q_proj = nn.Linear(
            c.hidden_size, c.num_attention_heads * c.head_dim, bias=c.attention_bias
        )
        self.k_proj = nn.Linear(
            c.hidden_size, c.num_key_value_heads * c.head_dim, bias=c.attention_bias
        )
        self.v_proj = nn.Linear(
            c.hidden_size, c.num_key_value_heads * c.head_dim, bias=c.attention_bias
        )
        self.o_proj = nn.Linear(
            c.num_attention_heads * c.head_dim, c.hidden_size, bias=c.attention_bias
        )
        self.q_norm = RMSNorm(c.head_dim, c.rms_norm_eps)
        self.k_norm = RMSNorm(c.head_dim, c.rms_norm_eps)

    def _kv(self, x, cos, sin):
        b, t, _ = x.shape
        k = self.k_norm(self.k_proj(x).view(b, t, self.kv_heads, self.head_dim)).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        return apply_rope(k, cos, sin), v

    fused = True  # False: the unfused twin (forward_unfused); both give bit-identical outputs

    def forward(self, x, ctx, rope, cache: DraftCache | None, layer: int, attn_mask=None):
        """``rope = (cos, signed sin)`` (:func:`rope_cos_sin`) over the positions ``[context; block]`` (``[B, 1, C + S, D]``)."""
        if not self.fused:
            c_len = ctx.shape[1]
            cos, sin = rope
            return self.forward_unfused(
                x,
                ctx,
                (cos[..., :c_len, :], sin[..., :c_len, :]),
                (cos[..., c_len:, :], sin[..., c_len:, :]),
                cache,
                layer,
                attn_mask,
            )
        b, s, _ = x.shape
        c_len = ctx.shape[1]
        cos, sin = rope
        # the projections as F.linear on the weights: the modules' own operation, without their call overhead
        wq, wk, wv, wo = self.q_proj, self.k_proj, self.v_proj, self.o_proj
        q = self.q_norm(
            F.linear(x, wq.weight, wq.bias).view(b, s, self.heads, self.head_dim)
        ).transpose(1, 2)
        q = apply_rope(q, cos[..., c_len:, :], sin[..., c_len:, :])
        # context and block rows together through k_norm and RoPE (row-wise: the same values as apart)
        k = torch.cat([F.linear(ctx, wk.weight, wk.bias), F.linear(x, wk.weight, wk.bias)], dim=1)
        k = apply_rope(
            self.k_norm(k.view(b, c_len + s, self.kv_heads, self.head_dim)).transpose(1, 2),
            cos,
            sin,
        )
        v = torch.cat([F.linear(ctx, wv.weight, wv.bias), F.linear(x, wv.weight, wv.bias)], dim=1)
        v = v.view(b, c_len + s, self.kv_heads, self.head_dim).transpose(1, 2)
        if cache is not None:
            k, v = cache.extend_with_block(layer, k, v, s)
        out = attend_grouped(q, k, v, attn_mask, self.head_dim**-0.5)
        return F.linear(out.transpose(1, 2).reshape(b, s, -1), wo.weight, wo.bias)

    def forward_unfused(
        self, x, ctx, rope_ctx, rope_blk, cache: DraftCache | None, layer: int, attn_mask=None
    ):
        """The twin of :meth:`forward`: context and block K/V apart, RoPE tables apart, K/V repeated per head."""
        b, s, _ = x.shape
        q = self.q_norm(self.q_proj(x).view(b, s, self.heads, self.head_dim)).transpose(1, 2)
        q = apply_rope(q, *rope_blk)
        k_ctx, v_ctx = self._kv(ctx, *rope_ctx)
        if cache is not None:
            k_ctx, v_ctx = cache.append(layer, k_ctx, v_ctx)
        k_blk, v_blk = self._kv(x, *rope_blk)
        k, v = torch.cat([k_ctx, k_blk], dim=-2), torch.cat([v_ctx, v_blk], dim=-2)
        return self.o_proj(
            attend_repeated(q, k, v, attn_mask, self.head_dim**-0.5)
            .transpose(1, 2)
            .reshape(b, s, -1)
        )


class DFlashLayer(nn.Module):
    def __init__(self, c: DFlashConfig):
        super().__init__()
        self.self_attn = DFlashAttention(c)
        self.mlp = nn.Module()
        self.mlp.gate_proj = nn.Linear(c.hidden_size, c.intermediate_size, bias=False)
        self.mlp.up_proj = nn.Linear(c.hidden_size, c.intermediate_size, bias=False)
        self.mlp.down_proj = nn.Linear(c.intermediate_size, c.hidden_size, bias=False)
        self.input_layernorm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(c.hidden_size, c.rms_norm_eps)

    def forward(self, x, ctx, rope, cache, layer, attn_mask=None):
        x = x + self.self_attn(self.input_layernorm(x), ctx, rope, cache, layer, attn_mask)
        h = self.post_attention_layernorm(x)
        mlp = self.mlp
        gate = F.linear(h, mlp.gate_proj.weight)
        return x + F.linear(F.silu(gate) * F.linear(h, mlp.up_proj.weight), mlp.down_proj.weight)


class DFlashDrafter(nn.Module):
    """The drafter's own weights; ``embed_tokens``/``lm_head`` are borrowed from the target (not saved)."""

    def __init__(self, config: DFlashConfig):
        super().__init__()
        self.config = config
        c = config
        self.layers = nn.ModuleList([DFlashLayer(c) for _ in range(c.num_hidden_layers)])
        self.fc = nn.Linear(len(c.target_layer_ids) * c.hidden_size, c.hidden_size, bias=False)
        self.hidden_norm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.norm = RMSNorm(c.hidden_size, c.rms_norm_eps)

    @property
    def block_size(self) -> int:
        return self.config.block_size

    def new_cache(self) -> DraftCache:
        return DraftCache(self.config.num_hidden_layers)

    def forward(
        self,
        block_embeds: torch.Tensor,
        target_hidden: torch.Tensor,
        ctx_positions: torch.Tensor,
        block_positions: torch.Tensor,
        cache: DraftCache | None = None,
        attn_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Block hidden states ``[B, S, H]`` (after the final norm).

        ``block_embeds [B, S, H]``; ``target_hidden [B, C, L*H]`` for the new
        context positions ``ctx_positions [B, C]``; ``block_positions [B, S]``.
        With ``cache``, the new context K/V are appended to it and earlier cached
        context is attended too. ``attn_mask`` (optional, float additive or bool,
        ``[B, 1, S, cached + C + S]``) is for training layouts; decoding uses none.
        """
        c = self.config
        ctx = self.hidden_norm(self.fc(target_hidden))
        # one RoPE table for context and block (elementwise: the same values as two tables)
        rope = rope_cos_sin(
            torch.cat([ctx_positions, block_positions], dim=-1),
            c.head_dim,
            c.rope_theta,
            block_embeds.dtype,
        )
        x = block_embeds
        for i, layer in enumerate(self.layers):
            x = layer(x, ctx, rope, cache, i, attn_mask)
        return self.norm(x)

    def block_logits(
        self,
        embed_tokens: nn.Module,
        lm_head: nn.Module,
        root_token: int,
        context_hidden: torch.Tensor,
        start: int,
        cache: DraftCache,
    ) -> torch.Tensor:
        """Draft logits ``[block_size - 1, V]`` for depths ``1 .. block_size - 1`` (one sequence).

        ``context_hidden [C, L*H]`` are the target hidden states of positions
        ``start - C .. start - 1`` (those committed since the last call); the cache
        must already hold positions ``0 .. start - C - 1``.
        """
        n_ctx = context_hidden.shape[0]
        if cache.length != start - n_ctx:
            raise ValueError(
                f"draft cache holds {cache.length} positions, expected start - C = {start - n_ctx}"
            )
        dev = context_hidden.device
        block = torch.full(
            (1, self.block_size), self.config.mask_token_id, dtype=torch.long, device=dev
        )
        block[0, 0] = root_token
        emb = embed_tokens(block)
        ctx_pos = torch.arange(start - n_ctx, start, device=dev)[None]
        blk_pos = torch.arange(start, start + self.block_size, device=dev)[None]
        h = self(emb, context_hidden[None].to(emb.dtype), ctx_pos, blk_pos, cache)
        return lm_head(h[0, 1:]).float()

    @torch.no_grad()
    def draft_logprobs(
        self,
        embed_tokens: nn.Module,
        lm_head: nn.Module,
        root_token: int,
        context_hidden: torch.Tensor,
        start: int,
        cache: DraftCache,
    ) -> torch.Tensor:
        """Per-depth draft log-probabilities ``log q_d`` as rows ``[block_size - 1, V]``."""
        return torch.log_softmax(
            self.block_logits(embed_tokens, lm_head, root_token, context_hidden, start, cache), -1
        )


def expected_tensor_names(config: DFlashConfig) -> list[str]:
    """Tensor names of a released checkpoint, in module order."""
    with torch.device("meta"):
        return list(DFlashDrafter(config).state_dict().keys())


__all__ = [
    "DFlashConfig",
    "DFlashDrafter",
    "DraftCache",
    "RMSNorm",
    "rope_cos_sin",
    "apply_rope",
    "default_target_layer_ids",
    "expected_tensor_names",
    "attend_grouped",
    "attend_repeated",
    "rope_inv_freq",
]
