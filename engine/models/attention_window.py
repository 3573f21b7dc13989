"""Sliding-window attention in the engine's float masks: the one place that knows the window rule.

Some targets mix full-attention layers with sliding-window layers (Gemma-4 alternates
``"sliding_attention"`` and ``"full_attention"`` via ``config.layer_types`` and
``config.sliding_window``). transformers' rule (``masking_utils.sliding_window_overlay``):
a query at position ``q`` of a sliding layer with window ``W`` sees key positions
``k`` with ``k > q - W``, i.e. ``q - W + 1 .. q`` on top of the causal/tree rule.

The engine keeps *every* position in every cache layer (:func:`full_cache`, a
``DynamicCache`` built without the config, so no layer rolls), so commit and crop
work unchanged, and applies the window in the mask instead: the model is given
``attention_mask={layer_type: mask}`` (:func:`layer_masks`), which the sliding
models' forwards accept in place of the masks they would build. Memory: a sliding
layer then holds the whole context rather than its last ``W - 1`` positions.
"""

from __future__ import annotations

from typing import Mapping

import torch
from transformers import DynamicCache

FULL, SLIDING = "full_attention", "sliding_attention"


def layer_windows(config) -> dict[str, int | None]:
    """``{layer type: window}`` of a causal LM's text config (``None``: full attention).

    Only ``"full_attention"`` and ``"sliding_attention"`` layers are supported; any other
    type (chunked, linear, ...) raises ``ValueError`` naming it.
    """
    text = config.get_text_config(decoder=True) if hasattr(config, "get_text_config") else config
    types = getattr(text, "layer_types", None)
    window = getattr(text, "sliding_window", None)
    if types is None:
        types = [SLIDING if window is not None else FULL]
    unknown = sorted(set(types) - {FULL, SLIDING})
    if unknown:
        raise ValueError(f"layer types {unknown} are not supported (only {FULL!r} and {SLIDING!r})")
    if (
        getattr(text, "use_bidirectional_attention", None) == "all"
        or getattr(text, "is_causal", True) is False
    ):
        raise ValueError(
            "the target is not causal (bidirectional attention); the engine needs a causal LM"
        )
    out: dict[str, int | None] = {}
    for t in types:
        if t == SLIDING:
            if not isinstance(window, int) or window < 1:
                raise ValueError(
                    f"sliding_attention layers need an integer sliding_window >= 1, got {window!r}"
                )
            out[t] = window
        else:
            out[t] = None
    return out


def is_windowed(windows: Mapping[str, int | None] | None) -> bool:
    return windows is not None and any(w is not None for w in windows.values())


def full_cache() -> DynamicCache:
    """A ``DynamicCache`` whose layers keep every position (built without the config: no rolling
    sliding-window layers), so :meth:`~exitlaw.engine.models.target.TargetModel.commit` and ``crop`` apply."""
    return DynamicCache()


def to_additive(visible: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Bool ``[B, Q, K]`` -> float additive mask ``[B, 1, Q, K]`` (0 visible, ``finfo.min`` hidden).

    The mask must be float: a bool mask is silently added as 0/1 by eager attention.
    """
    mask = torch.zeros(visible.shape[0], 1, *visible.shape[1:], dtype=dtype, device=visible.device)
    return mask.masked_fill_(~visible[:, None], torch.finfo(dtype).min)


def in_window(query_pos: torch.Tensor, key_pos: torch.Tensor, window: int) -> torch.Tensor:
    """Bool ``[B, Q, K]``: key position ``k`` lies in the window of query position ``q``, ``k > q - W``."""
    return key_pos[:, None, :] > query_pos[:, :, None] - window


def layer_masks(
    visible: torch.Tensor,
    dtype: torch.dtype,
    windows: Mapping[str, int | None] | None = None,
    *,
    query_pos: torch.Tensor | None = None,
    key_pos: torch.Tensor | None = None,
) -> torch.Tensor | dict[str, torch.Tensor]:
    """The ``attention_mask`` to pass the model for the bool visibility ``visible [B, Q, K]``.

    Without a sliding layer in ``windows`` (:func:`layer_windows`): one float mask
    ``[B, 1, Q, K]``. With one: ``{layer type: float mask}``, the sliding type's mask
    additionally hiding keys outside the window (:func:`in_window`), which needs the
    positions ``query_pos [B, Q]`` and ``key_pos [B, K]`` (RoPE positions).
    """
    if not is_windowed(windows):
        return to_additive(visible, dtype)
    b, q, k = visible.shape
    if query_pos is None or key_pos is None or query_pos.shape != (b, q) or key_pos.shape != (b, k):
        raise ValueError(
            f"a sliding-window mask needs query_pos [B={b}, Q={q}] and key_pos [B={b}, K={k}], got "
            f"{None if query_pos is None else tuple(query_pos.shape)}, "
            f"{None if key_pos is None else tuple(key_pos.shape)}"
        )
    qp, kp = query_pos.to(visible.device), key_pos.to(visible.device)
    return {
        t: to_additive(visible if w is None else visible & in_window(qp, kp, w), dtype)
        for t, w in windows.items()
    }


def mask_to(
    mask: torch.Tensor | dict[str, torch.Tensor] | None, device
) -> torch.Tensor | dict | None:
    """Move a mask (or a per-layer-type mapping of masks) to ``device``."""
    if isinstance(mask, dict):
        return {t: m.to(device) for t, m in mask.items()}
    return None if mask is None else mask.to(device)


__all__ = [
    "FULL",
    "SLIDING",
    "layer_windows",
    "is_windowed",
    "full_cache",
    "to_additive",
    "in_window",
    "layer_masks",
    "mask_to",
]
