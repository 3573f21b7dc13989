"""Builders: the simulator's draft-tree builders (DDTree, chain, static, EAGLE-2, oracle, Tsubame, CaDDTree, OPT-Tree, DARTree) and their table keyed by registry name."""

from .caddtree import (
    LatencyModel,
    caddtree,
    first_decrease,
    first_decrease_misses,
    throughput_curve,
)
from .dartree import dartree
from .opt_tree import draft_expected_acceptance, opt_tree
from .table import *
from .trees import *
from . import table, trees

__all__ = [
    *table.__all__,
    *trees.__all__,
    "LatencyModel",
    "caddtree",
    "dartree",
    "draft_expected_acceptance",
    "first_decrease",
    "first_decrease_misses",
    "opt_tree",
    "throughput_curve",
]
