"""The target's decode forward without transformers' per-module machinery (same operations, same bits).

A Hugging Face forward of a small model spends much of its time outside arithmetic: ``nn.Module``
dispatch for ~15 modules per layer, keyword-argument decorators, output capture hooks, config
attribute lookups and output dataclasses (a 65-node tree verify of the 3-layer paper-regime target
on one CPU thread: 5.3 ms through ``model(...)``, 3.6 ms here, interleaved medians of 100 x 10
calls; the decode-round split is in ``paper_repro/results/ddtree_side_by_side/``).
:class:`LeanForward` runs the same Llama-family decoder (Qwen3, Qwen2, Llama: pre-norm RMSNorm,
rotary attention with optional per-head q/k norm, SiLU-gated MLP) as one plain function over the
model's own parameters, calling exactly the operations the transformers modules call, in their order:

    h = embed(ids);  cos, sin = rotary(positions)                  (Qwen3RotaryEmbedding.forward)
    per layer:  a = attn(rmsnorm(h)) ;  h = h + a                   (Qwen3DecoderLayer.forward)
                h = h + down(silu(gate(rmsnorm(h))) * up(rmsnorm(h)))
    logits = lm_head(rmsnorm(h)[kept rows])                         (Qwen3ForCausalLM.forward)

The mask is built by transformers' own ``create_causal_mask`` (a 4D float mask passes through
unchanged) and the attention is its own ``sdpa_attention_forward``, so the grouped-query and causal
decisions are the library's; the K/V go through ``cache.update`` as in the model. Its exact twin is
the model's ``forward``: ``property_tests/engine/models/test_lean_forward.py`` checks logits, the
selected hidden states and the cache contents bit-identical on tree, causal, single-token and batched
forwards. The RMSNorm and RoPE pieces are :mod:`.layer_ops` (a fused float32 CPU norm, a signed-sine
rotation: both bit-identical twins).

Used only for forwards without autograd (decoding). :func:`lean_support` says why a model is not
covered (other architectures, sliding layers, dynamic RoPE, hooks, a non-SDPA attention, training
mode); those keep the transformers forward.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch
import torch.nn.functional as F
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import create_causal_mask
from transformers.modeling_utils import slice_logits_to_keep

from exitlaw.engine.models.layer_ops import norm_for, rotate_with_sign, signed_sin

SUPPORTED_MODELS = ("Qwen3ForCausalLM", "Qwen2ForCausalLM", "LlamaForCausalLM")
SUPPORTED_NORMS = ("Qwen3RMSNorm", "Qwen2RMSNorm", "LlamaRMSNorm")


def lean_support(model: torch.nn.Module) -> str | None:
    """``None`` when :class:`LeanForward` reproduces ``model``'s forward; else the reason it does not."""
    name = type(model).__name__
    if name not in SUPPORTED_MODELS:
        return f"{name} is not one of {', '.join(SUPPORTED_MODELS)}"
    cfg = model.config
    if getattr(cfg, "_attn_implementation", None) != "sdpa":
        return (
            f"attention implementation {getattr(cfg, '_attn_implementation', None)!r} is not 'sdpa'"
        )
    if any(t != "full_attention" for t in (getattr(cfg, "layer_types", None) or ())):
        return "the model has sliding-window layers"
    if not getattr(cfg, "is_causal", True):
        return "config.is_causal is False"
    if getattr(cfg, "hidden_act", None) != "silu":
        return f"hidden_act {getattr(cfg, 'hidden_act', None)!r} is not 'silu'"
    if getattr(cfg, "pretraining_tp", 1) not in (1, None):
        return "pretraining_tp > 1"
    if getattr(cfg, "mlp_bias", False):
        return "mlp_bias is set"
    rotary = model.model.rotary_emb
    rope_type = getattr(rotary, "rope_type", "default")
    if "dynamic" in rope_type or rope_type == "longrope":
        return f"rope type {rope_type!r} updates its frequencies per forward"
    for mod in model.modules():
        hooks = [*mod._forward_hooks.values(), *mod._forward_pre_hooks.values()]
        if (
            any(not _is_output_capture(h) for h in hooks)
            or getattr(mod, "_hf_hook", None) is not None
        ):
            return f"a {type(mod).__name__} module has forward hooks"
        if mod.training:
            return "the model is in training mode"
    for layer in model.model.layers:
        norms = [layer.input_layernorm, layer.post_attention_layernorm]
        norms += [
            m
            for m in (
                getattr(layer.self_attn, "q_norm", None),
                getattr(layer.self_attn, "k_norm", None),
            )
            if m is not None
        ]
        bad = [type(m).__name__ for m in norms if type(m).__name__ not in SUPPORTED_NORMS]
        if bad:
            return f"norm {bad[0]} is not one of {', '.join(SUPPORTED_NORMS)}"
    linears = [model.lm_head] + [
        m
        for layer in model.model.layers
        for m in (
            layer.self_attn.q_proj,
            layer.self_attn.k_proj,
            layer.self_attn.v_proj,
            layer.self_attn.o_proj,
            layer.mlp.gate_proj,
            layer.mlp.up_proj,
            layer.mlp.down_proj,
        )
    ]
    odd = [type(m).__name__ for m in linears if type(m) is not torch.nn.Linear]
    if odd:
        return f"projection {odd[0]} is not a plain torch.nn.Linear"
    if type(model.model.embed_tokens) is not torch.nn.Embedding:
        return (
            f"embedding {type(model.model.embed_tokens).__name__} is not a plain torch.nn.Embedding"
        )
    if type(model.model.norm).__name__ not in SUPPORTED_NORMS:
        return f"final norm {type(model.model.norm).__name__} is not supported"
    return None


def _is_output_capture(hook) -> bool:
    """transformers' own output-recording hook (installed by its first ``output_hidden_states`` forward;
    inert unless a transformers forward is collecting), which the lean forward may skip."""
    return getattr(hook, "__module__", "") == "transformers.utils.output_capturing"


@dataclass(frozen=True)
class _Layer:
    index: int
    ln1: torch.Tensor
    ln1_eps: float
    q: tuple  # (weight, bias or None) of each projection: F.linear without the module call
    k: tuple
    v: tuple
    o: tuple
    q_norm: tuple[torch.Tensor, float] | None
    k_norm: tuple[torch.Tensor, float] | None
    ln2: torch.Tensor
    ln2_eps: float
    gate: tuple
    up: tuple
    down: tuple
    # the attention module (sdpa_attention_forward reads num_key_value_groups, is_causal)
    attn: torch.nn.Module


class LeanForward:
    """``model``'s forward as one function (see the module docstring); ``model`` must pass :func:`lean_support`."""

    def __init__(self, model: torch.nn.Module, *, fused_norm: bool = True):
        reason = lean_support(model)
        if reason is not None:
            raise ValueError(f"LeanForward does not cover this model: {reason}")
        self._keep = slice_logits_to_keep
        self._attend = sdpa_attention_forward
        self._causal_mask = create_causal_mask
        self.model = model
        self.fused_norm = (
            fused_norm  # False: the transformers norm operations on every device (the twin)
        )
        self.config = model.config
        base = model.model
        self.embed = base.embed_tokens
        self.rotary = base.rotary_emb
        self.final_norm = (base.norm.weight, float(base.norm.variance_epsilon))
        self.head = (model.lm_head.weight, model.lm_head.bias)
        self.num_layers = int(model.config.num_hidden_layers)
        self.tie_last_hidden = getattr(model.config, "tie_last_hidden_states", None) is not False

        def lin(m):
            return (m.weight, m.bias)

        def norm_of(m):
            return None if m is None else (m.weight, float(m.variance_epsilon))

        self.layers = []
        for i, layer in enumerate(base.layers[: self.num_layers]):
            a, m = layer.self_attn, layer.mlp
            self.layers.append(
                _Layer(
                    index=i,
                    ln1=layer.input_layernorm.weight,
                    ln1_eps=float(layer.input_layernorm.variance_epsilon),
                    q=lin(a.q_proj),
                    k=lin(a.k_proj),
                    v=lin(a.v_proj),
                    o=lin(a.o_proj),
                    q_norm=norm_of(getattr(a, "q_norm", None)),
                    k_norm=norm_of(getattr(a, "k_norm", None)),
                    ln2=layer.post_attention_layernorm.weight,
                    ln2_eps=float(layer.post_attention_layernorm.variance_epsilon),
                    gate=lin(m.gate_proj),
                    up=lin(m.up_proj),
                    down=lin(m.down_proj),
                    attn=a,
                )
            )
        self.head_dim = int(self.layers[0].attn.head_dim) if self.layers else 0
        self.scaling = float(self.layers[0].attn.scaling) if self.layers else 1.0

    def _rope(self, x: torch.Tensor, position_ids: torch.Tensor):
        """Qwen3RotaryEmbedding.forward: ``cos, sin`` of ``positions * inv_freq`` (float32), scaled, cast;
        returned as ``cos, [-sin_1, sin_2]`` ``[B, 1, S, D]`` for :func:`rotate_with_sign`."""
        inv = self.rotary.inv_freq.to(device=x.device, dtype=torch.float)
        freqs = position_ids[..., None].float() * inv
        emb = torch.cat((freqs, freqs), dim=-1)
        scale = self.rotary.attention_scaling
        cos, sin = (emb.cos() * scale).to(dtype=x.dtype), (emb.sin() * scale).to(dtype=x.dtype)
        return cos.unsqueeze(1), signed_sin(sin).unsqueeze(1)

    def __call__(
        self,
        input_ids: torch.Tensor,
        position_ids: torch.Tensor,
        attention_mask,
        cache,
        layer_ids: Sequence[int] = (),
        logits_to_keep: int | torch.Tensor = 0,
    ):
        """``input_ids, position_ids [B, S]``; ``attention_mask`` a 4D float mask or None (causal);
        ``cache`` a DynamicCache (appended to). Returns ``(logits [B, kept, V], {layer id: hidden [B, S, H]})``
        where layer ``i``'s hidden state is ``model(...).hidden_states[i + 1]``."""
        h = self.embed(input_ids)
        mask = self._causal_mask(
            config=self.config,
            inputs_embeds=h,
            attention_mask=attention_mask,
            cache=cache,
            position_ids=position_ids,
        )
        cos, sin = self._rope(h, position_ids)
        norm = norm_for(h, self.fused_norm)
        want = set(layer_ids)
        hidden: dict[int, torch.Tensor] = {}
        bsz, seq = h.shape[:2]
        hd = self.head_dim
        for L in self.layers:
            residual = h
            x = norm(h, L.ln1, L.ln1_eps)
            q = F.linear(x, *L.q).view(bsz, seq, -1, hd)
            k = F.linear(x, *L.k).view(bsz, seq, -1, hd)
            if L.q_norm is not None:
                q = norm(q, *L.q_norm)
            if L.k_norm is not None:
                k = norm(k, *L.k_norm)
            q, k = q.transpose(1, 2), k.transpose(1, 2)
            v = F.linear(x, *L.v).view(bsz, seq, -1, hd).transpose(1, 2)
            q = (q * cos) + rotate_with_sign(q, sin)
            k = (k * cos) + rotate_with_sign(k, sin)
            if cache is not None:
                k, v = cache.update(k, v, L.index)
            out, _ = self._attend(
                L.attn, q, k, v, mask, dropout=0.0, scaling=self.scaling, sliding_window=None
            )
            h = residual + F.linear(out.reshape(bsz, seq, -1).contiguous(), *L.o)
            residual = h
            x = norm(h, L.ln2, L.ln2_eps)
            h = residual + F.linear(F.silu(F.linear(x, *L.gate)) * F.linear(x, *L.up), *L.down)
            if L.index in want:
                hidden[L.index] = h
        h = norm(h, *self.final_norm)
        last = self.num_layers - 1
        if last in want and self.tie_last_hidden:
            hidden[last] = h  # transformers reports the normed output as the last hidden state
        logits = F.linear(self._keep(h, logits_to_keep), *self.head)
        return logits, hidden


__all__ = ["LeanForward", "lean_support", "SUPPORTED_MODELS"]
