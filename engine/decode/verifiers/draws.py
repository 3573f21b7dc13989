"""Categorical draws by inverse CDF in float64 with one uniform per row (docs/design.md §1.6).

Categorical draws over a large vocabulary are inverse-CDF draws in float64 with one uniform
(:func:`_draw`): exact to float64 rounding, free of the tail bias a float32 Gumbel-max has on a 150k
vocabulary, and ~10x cheaper than a float64 exponential race (one random number instead of ``V``).
"""

from __future__ import annotations

import torch

from exitlaw.engine.decode.verifiers.generators import Uniforms, uniforms


def _draw(weights: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Index ``i`` with probability ``weights[i] / sum(weights)`` (float64 ``[n]``, ``>= 0``, unnormalised).

    Inverse CDF in float64 with one uniform: ``c = cumsum(weights)``, the first ``i``
    with ``c[i] > U c[-1]``. A zero weight never wins (its ``c`` equals the previous
    one); float64 bounds the bias of any weight by ~1e-16 of the total, so there is
    no tail bias on a 150k vocabulary. Returns a 0-d long tensor (no host sync).
    """
    return _draw_with_total(weights, gen)[0]


def _draw_with_total(
    weights: torch.Tensor, gen: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`_draw` and the total weight (``[1]``; NaN/0 there means the weights were not a distribution):
    :func:`_draw_rows` of the one row (the same single uniform)."""
    i, total = _draw_rows(weights.reshape(1, -1), gen)
    return i.reshape(()), total


def _draw_rows(weights: torch.Tensor, gen: Uniforms) -> tuple[torch.Tensor, torch.Tensor]:
    """Per row ``b``, index ``i`` w.p. ``weights[b, i] / sum_i weights[b, i]`` (float64 ``[B, n]``).

    Inverse CDF in float64 with one uniform per row: the first ``i`` with ``c[i] > U c[-1]``
    (``c`` the row's cumulative sum; ``U`` from :func:`uniforms`, one stream or one per row). A zero weight never wins, and a ``U`` that rounds up to the
    total falls back to the last positive weight; with NaN weights the index is clamped and the
    NaN total tells the caller. Returns indices ``[B]`` (long, on the device) and totals ``[B]``.
    """
    c = weights.cumsum(-1)  # [B, n]
    total = c[:, -1:].contiguous()  # [B, 1]
    u = uniforms(c.shape[0], gen, c.device) * total
    i = torch.searchsorted(c, u, right=True)
    last = torch.searchsorted(c, total, right=False)
    return torch.minimum(i, last).clamp_(max=c.shape[1] - 1).squeeze(1), total.squeeze(1)


def _draw_logits(z: torch.Tensor, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Draw from ``softmax(z)`` (``z`` float64 ``[V]``, ``-inf`` = probability 0); overwrites ``z``.

    Returns the index and the total shifted weight (``>= 1`` for a finite row)."""
    return _draw_with_total(z.sub_(z.max()).exp_(), gen)


__all__ = []
