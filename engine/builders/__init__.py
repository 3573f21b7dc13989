"""Builders: the engine's draft trees (chain and DDTree) from a drafter's per-depth rows, one sequence or a batch; each registers itself where it is defined (:mod:`.table`)."""

import pkgutil as _pkgutil
from importlib import import_module as _import_module

from . import batched, table
from .batched import *
from .single import build_chain, build_ddtree, check_row_maxima, factorised_best_first
from .table import *

# a module added to this folder registers itself when the package loads: no line here names it
for _module in _pkgutil.iter_modules(__path__):  # noqa: F405 (a package's own __path__)
    _import_module(f"{__name__}.{_module.name}")

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
