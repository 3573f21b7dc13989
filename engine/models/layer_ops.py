"""The elementwise pieces both decode forwards share (the target's lean forward, the DFlash drafter):
RMSNorm and the rotary rotation, each with its bit-identity argument.

* :func:`rms_norm` -- Qwen3RMSNorm's operations one by one (``weight * (x / sqrt(mean(x^2) + eps))``,
  normalised in float32, cast back before the weight): five tensor operations.
* :func:`fused_rms_norm` -- the same as one ``F.rms_norm`` with the weight. :func:`norm_for` takes it
  only for float32 on the CPU, where it is bit-identical to :func:`rms_norm` (its twin;
  ``property_tests/engine/models/test_lean_forward.py`` checks widths 1..257 and scales 1e-3..1e4):
  on other devices a fused kernel may round the mean differently, and for bfloat16 the weight would
  multiply before the cast back.
* :func:`rotate_with_sign` -- ``rotate_half(x) * sin`` as ``roll(x, D/2) * [-sin_1, sin_2]``
  (:func:`signed_sin`): ``rotate_half(x) = [-x_2, x_1]`` and ``(-a) b = a (-b)`` exactly in IEEE
  arithmetic, so the same bits with one roll in place of two slices, a negation and a cat.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """Qwen3RMSNorm.forward, operation by operation."""
    dtype = x.dtype
    h = x.to(torch.float32)
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    return weight * h.to(dtype)


def fused_rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """:func:`rms_norm` as one ``F.rms_norm`` with the weight (float32 on the CPU only, see the module)."""
    return F.rms_norm(x, (x.shape[-1],), weight, eps)


def norm_for(x: torch.Tensor, allow_fused: bool = True):
    """The norm to use on ``x``: :func:`fused_rms_norm` for float32 on the CPU (when allowed), else
    :func:`rms_norm`."""
    if allow_fused and x.dtype == torch.float32 and x.device.type == "cpu":
        return fused_rms_norm
    return rms_norm


def signed_sin(sin: torch.Tensor) -> torch.Tensor:
    """``[-sin_1, sin_2]`` (halves of the last dimension): the table :func:`rotate_with_sign` multiplies by."""
    half = sin.shape[-1] // 2
    return torch.cat((-sin[..., :half], sin[..., half:]), dim=-1)


def rotate_with_sign(x: torch.Tensor, signed: torch.Tensor) -> torch.Tensor:
    """``rotate_half(x) * sin`` given ``signed = signed_sin(sin)``: bit-identical (see the module)."""
    return torch.roll(x, x.shape[-1] // 2, -1) * signed


__all__ = ["rms_norm", "fused_rms_norm", "norm_for", "signed_sin", "rotate_with_sign"]
