"""Verifiers in settings mode: raw logits plus :class:`~exitlaw.theory.SamplingSettings`, rows processed once.

``f(tree, logits, settings, rng)`` (fixed-tree) and ``f(tree, logits, draft_logits, settings, rng)``
(sampled-draft) process every row with :func:`~exitlaw.theory.process_logits` (temperature, then
the filters in ``settings.order``) and run the probability-row verifier on the processed rows, the
same rows for acceptance and for the bonus, and for ``q`` the rows the drafts were sampled from.
"""

from __future__ import annotations

import numpy as np

from exitlaw.simulate.verifiers.sampled_draft import (
    chain_speculative,
    specinfer_without_replacement,
)
from exitlaw.simulate.verifiers.sampling import predraw, residual, tev
from exitlaw.simulate.verifiers.table import sim_verifier
from exitlaw.theory import process_logits
from exitlaw.theory.registry import SETTINGS


@sim_verifier("predraw", SETTINGS)
def predraw_settings(tree, logits, settings, rng: np.random.Generator):
    return predraw(tree, process_logits(logits, settings), rng)


@sim_verifier("residual", SETTINGS)
def residual_settings(tree, logits, settings, rng: np.random.Generator):
    return residual(tree, process_logits(logits, settings), rng)


@sim_verifier("tev", SETTINGS)
def tev_settings(tree, logits, settings, rng: np.random.Generator):
    return tev(tree, process_logits(logits, settings), rng)


@sim_verifier("chain-speculative", SETTINGS)
def chain_speculative_settings(tree, logits, draft_logits, settings, rng: np.random.Generator):
    return chain_speculative(
        tree, process_logits(logits, settings), process_logits(draft_logits, settings), rng
    )


@sim_verifier("specinfer-without-replacement", SETTINGS)
def without_replacement_settings(tree, logits, draft_logits, settings, rng: np.random.Generator):
    return specinfer_without_replacement(
        tree, process_logits(logits, settings), process_logits(draft_logits, settings), rng
    )


__all__ = [
    "predraw_settings",
    "residual_settings",
    "tev_settings",
    "chain_speculative_settings",
    "without_replacement_settings",
]
