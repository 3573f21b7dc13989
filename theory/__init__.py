"""exitlaw.theory: draft trees, exact exit laws, ceilings and oracle trees.

The numpy-only parts (trees, validation, traces, the exact-rational reference,
oracle trees) import without JAX, so the torch engine can use them. The JAX
laws (``exit_law``, ``block_law``, ...) are loaded on first access. Theory's
infrastructure (atomic writes, provenance, ``MODULE:CALLABLE`` specs) lives in
:mod:`exitlaw.theory.infra`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .infra.lazy import lazy_attributes

from .best_first import (
    BestFirst,
    RankingError,
    candidate_width,
    check_budget,
    ddtree_from_rows,
    ddtree_prefixes,
    ranked_top_k,
    top_prefixes,
)
from .infra.callable_spec import CallableSpecError, load_callable
from .distributions import (
    ROW_SUM_ATOL,
    check_edge_probs,
    check_rows,
    check_temperature,
    check_tree_rows,
    gather_edge_probs,
    softmax_with_temperature,
)
from .errors import DistributionError, TreeError
from .exact import (
    ReferenceLaw,
    reference_block_law,
    reference_law,
    reference_law_from_edges,
    to_fractions,
)
from .oracle import allocation_gap, coverage_under, oracle_tree, tree_rows
from .trace.format import (
    IncompleteTraceError,
    Trace,
    TraceFormatError,
    TraceRound,
    TraceWriter,
    iter_trace,
    json_safe,
    read_trace,
    write_trace,
)
from .tree import DraftTree, PaddedTree, stack_trees

# the processed target distribution (numpy and Fraction; ``processed_exit_law`` loads JAX when called)
from .sampling_settings import (
    DEFAULT_ORDER,
    FILTERS,
    HF_ORDER,
    VLLM_ORDER,
    SamplingSettings,
    check_settings,
    keep_mask,
    process_logits,
    process_rows,
    process_rows_exact,
    processed_exit_law,
    processed_target,
)

if TYPE_CHECKING:
    from .law import (
        ExitLaw,
        block_law,
        exit_depth_law,
        exit_law,
        exit_law_from_edges,
        exit_law_from_logits,
        probs_from_logits,
        residual_rows,
    )

# PEP 562: names whose module imports JAX load on first access (static tools read the block above)
_LAZY = {
    "ExitLaw": ("law", "ExitLaw"),
    "exit_law": ("law", "exit_law"),
    "exit_law_from_edges": ("law", "exit_law_from_edges"),
    "exit_law_from_logits": ("law", "exit_law_from_logits"),
    "probs_from_logits": ("law", "probs_from_logits"),
    "block_law": ("law", "block_law"),
    "residual_rows": ("law", "residual_rows"),
    "exit_depth_law": ("law", "exit_depth_law"),
}


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY)


__all__ = [
    "DraftTree",
    "PaddedTree",
    "stack_trees",
    "TreeError",
    "DistributionError",
    "ROW_SUM_ATOL",
    "check_rows",
    "check_tree_rows",
    "check_edge_probs",
    "check_temperature",
    "softmax_with_temperature",
    "gather_edge_probs",
    "ReferenceLaw",
    "reference_law",
    "reference_law_from_edges",
    "reference_block_law",
    "to_fractions",
    "oracle_tree",
    "tree_rows",
    "coverage_under",
    "allocation_gap",
    "BestFirst",
    "RankingError",
    "candidate_width",
    "check_budget",
    "ddtree_from_rows",
    "ddtree_prefixes",
    "ranked_top_k",
    "top_prefixes",
    "Trace",
    "TraceRound",
    "TraceWriter",
    "TraceFormatError",
    "IncompleteTraceError",
    "read_trace",
    "iter_trace",
    "write_trace",
    "json_safe",
    "CallableSpecError",
    "load_callable",
    "ExitLaw",
    "exit_law",
    "exit_law_from_edges",
    "exit_law_from_logits",
    "probs_from_logits",
    "block_law",
    "residual_rows",
    "exit_depth_law",
    "SamplingSettings",
    "FILTERS",
    "VLLM_ORDER",
    "HF_ORDER",
    "DEFAULT_ORDER",
    "check_settings",
    "process_rows_exact",
    "process_rows",
    "keep_mask",
    "process_logits",
    "processed_exit_law",
    "processed_target",
]
