"""exitlaw.theory: draft trees, exact exit laws, ceilings and oracle trees.

The numpy-only parts (trees, validation, traces, the exact-rational reference,
oracle trees) import without JAX, so the torch engine can use them. The JAX
laws (``exit_law``, ``block_law``, ...) are loaded on first access. Theory's
infrastructure (atomic writes, provenance, ``MODULE:CALLABLE`` specs) lives in
:mod:`exitlaw.theory.infra`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import best_first, sampling_settings
from .best_first import *
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
from .infra import callable_spec as _callable_spec
from .infra.callable_spec import *
from .infra.lazy import lazy_attributes
from .oracle import allocation_gap, coverage_under, oracle_tree, tree_rows

# the processed target distribution (numpy and Fraction; its exit law, ``processed_exit_law``, is in law)
from .sampling_settings import *
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

if TYPE_CHECKING:
    from .law import (
        ExitLaw,
        block_law,
        exit_depth_law,
        exit_law,
        exit_law_from_edges,
        exit_law_from_logits,
        probs_from_logits,
        processed_exit_law,
        residual_rows,
    )


# PEP 562: names whose module imports JAX load on first access (static tools read the block above)
__getattr__, __dir__ = lazy_attributes(
    __name__,
    {
        "law": "ExitLaw, block_law, exit_depth_law, exit_law, exit_law_from_edges, exit_law_from_logits, probs_from_logits, processed_exit_law, residual_rows"
    },
)


__all__ = [
    *best_first.__all__,
    *_callable_spec.__all__,
    *sampling_settings.__all__,
    "DistributionError",
    "DraftTree",
    "ExitLaw",
    "IncompleteTraceError",
    "PaddedTree",
    "ROW_SUM_ATOL",
    "ReferenceLaw",
    "Trace",
    "TraceFormatError",
    "TraceRound",
    "TraceWriter",
    "TreeError",
    "allocation_gap",
    "block_law",
    "check_edge_probs",
    "check_rows",
    "check_temperature",
    "check_tree_rows",
    "coverage_under",
    "exit_depth_law",
    "exit_law",
    "exit_law_from_edges",
    "exit_law_from_logits",
    "gather_edge_probs",
    "iter_trace",
    "json_safe",
    "oracle_tree",
    "probs_from_logits",
    "processed_exit_law",
    "read_trace",
    "reference_block_law",
    "reference_law",
    "reference_law_from_edges",
    "residual_rows",
    "softmax_with_temperature",
    "stack_trees",
    "to_fractions",
    "tree_rows",
    "write_trace",
]
