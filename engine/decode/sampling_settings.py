"""The processed target distribution on a torch device: one processing step before every verifier.

The torch twin of :mod:`exitlaw.theory.sampling_settings` (same definition, same comparisons,
tested against its numpy and Fraction references): temperature first, then top-k / top-p / min-p
in ``settings.order``, each a threshold mask on the float64 weights ``e = exp((z - max z) / T)``
of the survivors of the previous filters, ties kept.

:func:`filter_logits` returns the logits with every filtered token set to ``-inf`` (same dtype,
same shape), so the processed row is ``softmax(filter_logits(z) / T)`` and every verifier, AR
sampler and trace runs unchanged on it: the settings are a step applied to the rows *before* the
verifier, never inside it. ``T = 0`` (greedy) and settings without an active filter return the
logits untouched (every filter keeps the argmax, so greedy is the same under every setting).

Shapes are fixed (``topk``/``sort`` over the last axis, no data-dependent sizes), so TEV and the
batched verifiers keep one host transfer per round.
"""

from __future__ import annotations

from typing import Callable

import torch

from exitlaw.theory.sampling_settings import SamplingSettings, check_settings, filter_record

# filter name -> its torch keep rule ``(live [..., V] float64, value) -> bool mask``, registered below
TORCH_RULES: dict[str, Callable[[torch.Tensor, object], torch.Tensor]] = {}


def torch_filter(name: str) -> Callable[[Callable], Callable]:
    """Register the decorated function as the torch twin of filter ``name``'s keep rule (the filter's
    record, :data:`~exitlaw.theory.sampling_settings.FILTER_RECORDS`, holds everything else)."""
    filter_record(name)  # DistributionError naming the filters

    def register(fn: Callable) -> Callable:
        TORCH_RULES[name] = fn
        return fn

    return register


@torch_filter("top_k")
def top_k_keep(live: torch.Tensor, k: int) -> torch.Tensor:
    k = min(k, live.shape[-1])
    return live >= live.topk(k, dim=-1).values[..., k - 1 : k]


@torch_filter("min_p")
def min_p_keep(live: torch.Tensor, m: float) -> torch.Tensor:
    return live >= live.amax(dim=-1, keepdim=True) * m


@torch_filter("top_p")
def top_p_keep(live: torch.Tensor, t: float) -> torch.Tensor:
    desc = live.sort(dim=-1, descending=True).values
    above = desc.cumsum(dim=-1).sub_(desc)  # mass strictly before each place
    bar = desc.sum(dim=-1, keepdim=True) * t
    last = (above < bar).sum(dim=-1, keepdim=True).sub_(1)  # >= 0: above[0] = 0 < bar
    return live >= desc.gather(-1, last)


def keep_mask(weights: torch.Tensor, settings: SamplingSettings) -> torch.Tensor:
    """Boolean ``[..., V]``: the tokens the filters keep, from non-negative float64 weights
    (:func:`exitlaw.theory.sampling_settings.keep_mask`, the same comparisons)."""
    keep = weights > 0
    for name in settings.active():
        if name not in TORCH_RULES:
            raise ValueError(f"filter {name!r} has no torch rule (register one with @torch_filter)")
        keep &= TORCH_RULES[name](torch.where(keep, weights, 0.0), getattr(settings, name))
    return keep


def filter_logits(logits: torch.Tensor, settings: SamplingSettings) -> torch.Tensor:
    """``logits`` with the tokens the settings' filters remove set to ``-inf`` (a new tensor when a
    filter is active; ``logits`` itself at ``T = 0`` or with no active filter)."""
    settings = check_settings(settings)
    if settings.greedy or not settings.filtered:
        return logits
    if settings.active() == ("top_k",):
        # top-k alone: the k-th largest logit is the threshold (exp is monotone, ties are equal logits), so
        # no float64 row is formed; it differs from the weights' test only for a token whose weight
        # exp((z - max) / T) underflows to 0 inside the top k, which has probability 0 either way
        k = min(settings.top_k, logits.shape[-1])
        return logits.masked_fill(
            logits < logits.topk(k, dim=-1).values[..., k - 1 : k], float("-inf")
        )
    z = logits.to(torch.float64)
    e = (z - z.amax(dim=-1, keepdim=True)).div_(settings.temperature).exp_()
    return logits.masked_fill(~keep_mask(e, settings), float("-inf"))


def rows_processor(settings: SamplingSettings) -> Callable[[torch.Tensor], torch.Tensor] | None:
    """``rows -> filter_logits(rows, settings)`` for verifiers that read only some rows (TEV: the ``K``
    internal rows and the exit row; residual: the rows on its path), or ``None`` when nothing is filtered.
    A processor is applied once, to raw rows (top-p is not idempotent: never filter a filtered row)."""
    settings = check_settings(settings)
    if settings.greedy or not settings.filtered:
        return None
    return lambda rows: filter_logits(rows, settings)


def processed_rows(logits: torch.Tensor, rows: torch.Tensor, process) -> torch.Tensor:
    """``logits`` with the rows ``rows`` (dim 0) replaced by their processed copies (one ``[N, V]`` copy,
    ``len(rows)`` rows processed); ``logits`` itself when ``process`` is ``None``."""
    if process is None:
        return logits
    return logits.index_copy(0, rows, process(logits.index_select(0, rows)))


def processed_probs(logits: torch.Tensor, settings: SamplingSettings) -> torch.Tensor:
    """The processed rows in float64 (``T = 0``: one-hot first argmax); tests and traces."""
    settings = check_settings(settings)
    if settings.greedy:
        out = torch.zeros(logits.shape, dtype=torch.float64, device=logits.device)
        return out.scatter_(-1, logits.argmax(dim=-1, keepdim=True), 1.0)
    return torch.softmax(
        filter_logits(logits, settings).to(torch.float64) / settings.temperature, dim=-1
    )


def processed_draft_logprobs(rows: torch.Tensor, settings: SamplingSettings) -> torch.Tensor:
    """Draft log-probability rows ``log q`` processed with the same settings, ``log q'`` with
    ``q' = filters(softmax(log q / T))`` (``-inf`` where filtered), so a tree built from them never
    spends budget on a token the processed drafter rules out. Untouched when no filter is active or
    at ``T = 0`` (the trees are then built from the raw rows, as before)."""
    settings = check_settings(settings)
    if settings.greedy or not settings.filtered:
        return rows
    return torch.log_softmax(filter_logits(rows, settings).float() / settings.temperature, dim=-1)


__all__ = [
    "TORCH_RULES",
    "torch_filter",
    "keep_mask",
    "filter_logits",
    "rows_processor",
    "processed_rows",
    "processed_probs",
    "processed_draft_logprobs",
]
