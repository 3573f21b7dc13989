"""Bounds on work for decoding: refuse a round that cannot fit before any decoding starts.

One DDTree round verifies ``N = budget + 1`` nodes per sequence against a context of up to
``C = prompt + max_new_tokens + N`` positions. Its peak memory is dominated by four buffers,
each estimated from the target's config (nothing is allocated to estimate it):

* KV cache: ``2 * kv_heads * head_dim * C * R`` elements per layer (``R`` sequences);
* attention scores of the widest layer: ``R * heads * N * C`` (eager and math attention
  materialise them);
* the float additive tree mask: ``R * N * C``;
* logits of the tree forward: ``R * N * V`` in float32.

A budget of ``10**8`` or ``--max-new-tokens 10**8`` would otherwise build trees or grow a cache
until the machine stalls; :func:`check_decode_fits` refuses it with the estimate and what the
device has. The estimate is a lower bound (weights, activations and the allocator's slack
come on top), so a run it lets through can still be tight; one it refuses cannot fit.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch

GIB = float(1 << 30)


@dataclass(frozen=True)
class RoundMemory:
    """Estimated bytes of one verify round (see the module docstring)."""

    kv_cache: int
    attention_scores: int
    tree_mask: int
    logits: int

    @property
    def total(self) -> int:
        return self.kv_cache + self.attention_scores + self.tree_mask + self.logits

    def text(self) -> str:
        return (
            f"{self.total / GIB:.3g} GiB (KV cache {self.kv_cache / GIB:.3g}, attention scores "
            f"{self.attention_scores / GIB:.3g}, tree mask {self.tree_mask / GIB:.3g}, "
            f"logits {self.logits / GIB:.3g})"
        )


def _layer_dims(config) -> list[tuple[int, int, int]]:
    """``(heads, kv_heads, head_dim)`` per layer; heterogeneous configs (Gemma-4) list each layer's own."""

    def dims(layer, fallback):
        def get(name, default=None):
            try:
                value = getattr(layer, name, None)
            # a heterogeneous config refuses ambiguous global attributes (per layer)
            except RuntimeError:
                value = None
            return value if value is not None else default

        heads = int(get("num_attention_heads", fallback[0] if fallback else None))
        kv = int(get("num_key_value_heads", fallback[1] if fallback else None) or heads)
        hd = get("head_dim", fallback[2] if fallback else None)
        return heads, kv, int(hd if hd is not None else int(config.hidden_size) // heads)

    per_layer = getattr(config, "per_layer_config", None)
    if per_layer is not None:
        glob = (
            int(config.num_attention_heads),
            int(getattr(config, "num_key_value_heads", None) or config.num_attention_heads),
            None,
        )
        return [dims(layer, glob) for layer in per_layer]
    return [dims(config, None)] * int(config.num_hidden_layers)


def round_memory(
    config, *, budget: int, context: int, rows: int = 1, element_bytes: int = 4
) -> RoundMemory:
    """Bytes of one verify round of ``rows`` sequences, ``budget + 1`` nodes each, ``context`` positions."""
    if hasattr(config, "get_text_config"):  # multimodal configs nest the language model's
        config = config.get_text_config()
    n, c = int(budget) + 1, int(context) + int(budget) + 1
    layers = _layer_dims(config)
    return RoundMemory(
        kv_cache=sum(2 * kv * hd for _, kv, hd in layers) * c * rows * element_bytes,
        attention_scores=max(h for h, _, _ in layers) * rows * n * c * element_bytes,
        tree_mask=rows * n * c * element_bytes,
        logits=rows * n * int(config.vocab_size) * 4,
    )


def available_bytes(device: torch.device | str) -> int | None:
    """Free memory of ``device``: ``MemAvailable`` for the CPU, ``mem_get_info`` for CUDA; None if unknown."""
    device = torch.device(device)
    if device.type == "cuda":
        return int(torch.cuda.mem_get_info(device)[0])
    if device.type == "cpu":
        try:
            with open("/proc/meminfo", encoding="ascii") as fh:
                for line in fh:
                    if line.startswith("MemAvailable:"):
                        return int(line.split()[1]) * 1024
        except OSError:
            pass
        try:
            return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
        except (ValueError, OSError, AttributeError):
            return None
    return None


def check_decode_fits(
    config,
    *,
    budget: int,
    context: int,
    rows: int = 1,
    element_bytes: int = 4,
    device: torch.device | str = "cpu",
    available: int | None = None,
    what: str | None = None,
    advice: str = "lower --budget, --max-new-tokens or the batch size",
) -> RoundMemory:
    """Raise ``ValueError`` naming the estimate when one round cannot fit in the device's free memory.

    ``what`` names the forward in the message (default: one verify round at ``budget``).
    """
    est = round_memory(
        config, budget=budget, context=context, rows=rows, element_bytes=element_bytes
    )
    free = available_bytes(device) if available is None else available
    if free is not None and est.total > free:
        raise ValueError(
            f"{what or f'one verify round at budget {budget}'} with a context of up to {context} tokens"
            + (f" for {rows} sequences" if rows > 1 else "")
            + f" needs at least {est.text()}, but {torch.device(device).type} has {free / GIB:.3g} GiB free; {advice}"
        )
    return est


__all__ = ["RoundMemory", "round_memory", "available_bytes", "check_decode_fits"]
