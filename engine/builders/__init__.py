"""Builders: the engine's draft trees (chain and DDTree) from a drafter's per-depth rows, one sequence or a batch."""

from exitlaw.engine.builders.batched import build_trees_batch
from exitlaw.engine.builders.single import (
    build_chain,
    build_ddtree,
    check_row_maxima,
    factorised_best_first,
)

# registered builder name -> its single-sequence builder (build_trees_batch takes the same names)
BUILDERS = {"ddtree": build_ddtree, "chain": build_chain}

__all__ = [
    "BUILDERS",
    "build_chain",
    "build_ddtree",
    "build_trees_batch",
    "check_row_maxima",
    "factorised_best_first",
]
