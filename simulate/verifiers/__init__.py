"""Verifiers: one procedure per rule, run by sampling or by exact enumeration.

Public sampling forms ``f(tree, probs, rng) -> (exit_node, bonus_token)``:
:func:`predraw`, :func:`residual`, :func:`tev`, :func:`greedy`; in settings mode (raw logits plus
:class:`~exitlaw.theory.SamplingSettings`): :func:`predraw_settings`, :func:`residual_settings`,
:func:`tev_settings`, :func:`chain_speculative_settings`, :func:`without_replacement_settings`.
Their vectorised numpy twins (``S`` rounds on one tree at once, :data:`FAST_SAMPLERS`) live in
:mod:`.fast`.
"""

from exitlaw.theory.infra import registration as _registration

from . import fast, table, with_settings
from .exact import implementation_block_law, implementation_law, law_table
from .fast import *
from .hsd import hsd, hsd_procedure, hsd_spine
from .procedures import (
    PROCEDURES,
    child_lookup,
    greedy_procedure,
    predraw_procedure,
    residual_procedure,
    tev_procedure,
    tev_weights,
)
from .sampled_draft import (
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
from .sampling import greedy, predraw, residual, tev
from .table import *
from .univer import univer, univer_fixed_tree, univer_procedure
from .with_settings import *

# a module added to this folder registers itself when the package loads: no line here names it
_registration.import_every_module(__name__, __path__)  # noqa: F405 (a package's own __path__)

__all__ = [
    *fast.__all__,
    *table.__all__,
    *with_settings.__all__,
    "PROCEDURES",
    "RULES",
    "chain_speculative",
    "child_lookup",
    "draw_draft",
    "greedy",
    "greedy_procedure",
    "hsd",
    "hsd_procedure",
    "hsd_spine",
    "implementation_block_law",
    "implementation_law",
    "law_table",
    "plan_topology",
    "predraw",
    "predraw_procedure",
    "residual",
    "residual_procedure",
    "specinfer",
    "specinfer_without_replacement",
    "speculative_round",
    "tev",
    "tev_procedure",
    "tev_weights",
    "tsubame_round",
    "univer",
    "univer_fixed_tree",
    "univer_procedure",
    "verify_sampled",
]
