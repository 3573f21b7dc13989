"""Builders: the simulator's draft-tree builders (DDTree, chain, static, EAGLE-2, oracle, Tsubame, CaDDTree, OPT-Tree, DARTree) and their table keyed by registry name."""

from exitlaw.theory.infra import registration as _registration

from . import table, trees
from .caddtree import (
    CaDDTreeSettings,
    LatencyModel,
    caddtree,
    first_decrease,
    first_decrease_misses,
    throughput_curve,
)
from .dartree import DARTreeSettings, dartree
from .opt_tree import draft_expected_acceptance, opt_tree
from .table import *
from .trees import *

# a module added to this folder registers itself when the package loads: no line here names it
_registration.import_every_module(__name__, __path__)  # noqa: F405 (a package's own __path__)

__all__ = [
    *table.__all__,
    *trees.__all__,
    "CaDDTreeSettings",
    "DARTreeSettings",
    "LatencyModel",
    "caddtree",
    "dartree",
    "draft_expected_acceptance",
    "first_decrease",
    "first_decrease_misses",
    "opt_tree",
    "throughput_curve",
]
