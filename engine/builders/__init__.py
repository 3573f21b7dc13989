"""Builders: the engine's draft trees (chain and DDTree) from a drafter's per-depth rows, one sequence or a batch; each registers itself where it is defined (:mod:`.table`)."""

from exitlaw.theory.infra import registration as _registration

from . import batched, table
from .batched import *
from .single import build_chain, build_ddtree, check_row_maxima, factorised_best_first
from .table import *

# a module added to this folder registers itself when the package loads: no line here names it
_registration.import_every_module(__name__, __path__)  # noqa: F405 (a package's own __path__)

# registered builder name -> ``(draft_logprobs [D, V], budget, root_token) -> (tree, logq)``: the table
BUILDERS = table.ENGINE_BUILDERS

__all__ = [
    *batched.__all__,
    *table.__all__,
    "BUILDERS",
    "build_chain",
    "build_ddtree",
    "check_row_maxima",
    "factorised_best_first",
]
