"""exitlaw.theory: draft trees, exact exit laws, ceilings and oracle trees.

The numpy-only parts (trees, validation, traces, the exact-rational reference,
oracle trees) import without JAX, so the torch engine can use them. The JAX
laws (``exit_law``, ``block_law``, ...) are loaded on first access.
"""

from __future__ import annotations

from importlib import import_module

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
from .callable_spec import CallableSpecError, load_callable
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

_JAX_EXPORTS = {
    "ExitLaw": "law",
    "exit_law": "law",
    "exit_law_from_edges": "law",
    "exit_law_from_logits": "law",
    "probs_from_logits": "law",
    "block_law": "law",
    "residual_rows": "law",
    "exit_depth_law": "law",
}


# the processed target distribution (numpy and Fraction; ``processed_exit_law`` loads JAX when called)
_SETTINGS_EXPORTS = {
    name: "sampling_settings"
    for name in (
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
    )
}


def __getattr__(name: str):
    if name in _JAX_EXPORTS:
        return getattr(import_module(f".{_JAX_EXPORTS[name]}", __name__), name)
    if name in _SETTINGS_EXPORTS:
        return getattr(import_module(f".{_SETTINGS_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
    *_JAX_EXPORTS,
    *_SETTINGS_EXPORTS,
]

# Modules that moved into the trace sub-package keep their former dotted paths.
from .module_faces import alias_moved_modules  # noqa: E402

alias_moved_modules(
    __name__,
    {"trace_stream": "trace.stream", "trace_bench": "trace.bench", "summary": "trace.summary"},
)
