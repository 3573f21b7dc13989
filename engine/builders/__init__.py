"""Builders: the engine's draft trees (chain and DDTree) from a drafter's per-depth rows, one sequence or a batch."""

from .batched import *
from .single import build_chain, build_ddtree, check_row_maxima, factorised_best_first
from . import batched


def _chain(draft_logprobs, budget: int, root_token: int):
    return build_chain(draft_logprobs, root_token)  # a chain drafts every depth: no budget


# registered builder name -> ``(draft_logprobs [D, V], budget, root_token) -> (tree, logq)``;
# build_trees_batch (batched.py) takes the registry's ENGINE_BATCHED builder names
BUILDERS = {"ddtree": build_ddtree, "chain": _chain}

__all__ = [
    *batched.__all__,
    "BUILDERS",
    "build_chain",
    "build_ddtree",
    "check_row_maxima",
    "factorised_best_first",
]
