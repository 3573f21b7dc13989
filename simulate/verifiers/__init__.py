"""Verifiers: one procedure per rule, run by sampling or by exact enumeration.

Public sampling forms ``f(tree, probs, rng) -> (exit_node, bonus_token)``:
:func:`predraw`, :func:`residual`, :func:`tev`, :func:`greedy`; in settings mode (raw logits plus
:class:`~exitlaw.theory.SamplingSettings`): :func:`predraw_settings`, :func:`residual_settings`,
:func:`tev_settings`, :func:`chain_speculative_settings`, :func:`without_replacement_settings`.
Their vectorised numpy twins (``S`` rounds on one tree at once, :data:`FAST_SAMPLERS`) live in
:mod:`.fast`.
"""

from exitlaw.simulate.verifiers.fast import (
    FAST_SAMPLERS,
    chain_speculative_many,
    greedy_many,
    predraw_many,
    recursive_rejection_many,
    residual_many,
    tev_many,
)
from exitlaw.simulate.verifiers.exact import implementation_block_law, implementation_law, law_table
from exitlaw.simulate.verifiers.procedures import (
    PROCEDURES,
    child_lookup,
    greedy_procedure,
    predraw_procedure,
    residual_procedure,
    tev_procedure,
    tev_weights,
)
from exitlaw.simulate.verifiers.sampled_draft import (
    RULES,
    chain_speculative,
    draw_draft,
    plan_topology,
    specinfer,
    specinfer_without_replacement,
    speculative_round,
    tsubame_round,
    verify_sampled,
)
from exitlaw.simulate.verifiers.sampling import greedy, predraw, residual, tev
from exitlaw.simulate.verifiers.hsd import hsd, hsd_procedure, hsd_spine
from exitlaw.simulate.verifiers.univer import univer, univer_fixed_tree, univer_procedure
from exitlaw.simulate.verifiers.with_settings import (
    chain_speculative_settings,
    predraw_settings,
    residual_settings,
    tev_settings,
    without_replacement_settings,
)

__all__ = [
    "predraw",
    "residual",
    "tev",
    "greedy",
    "predraw_procedure",
    "residual_procedure",
    "tev_procedure",
    "greedy_procedure",
    "PROCEDURES",
    "child_lookup",
    "tev_weights",
    "implementation_law",
    "implementation_block_law",
    "law_table",
    "RULES",
    "verify_sampled",
    "draw_draft",
    "speculative_round",
    "plan_topology",
    "tsubame_round",
    "chain_speculative",
    "specinfer",
    "specinfer_without_replacement",
    "hsd",
    "hsd_procedure",
    "hsd_spine",
    "univer",
    "univer_procedure",
    "univer_fixed_tree",
    "predraw_settings",
    "residual_settings",
    "tev_settings",
    "chain_speculative_settings",
    "without_replacement_settings",
    "predraw_many",
    "residual_many",
    "tev_many",
    "greedy_many",
    "chain_speculative_many",
    "recursive_rejection_many",
    "FAST_SAMPLERS",
]
