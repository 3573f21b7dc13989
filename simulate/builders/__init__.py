"""Builders: the simulator's draft-tree builders (DDTree, chain, static, EAGLE-2, oracle, Tsubame, CaDDTree, OPT-Tree, DARTree) and their table keyed by registry name."""

from exitlaw.simulate.builders.caddtree import (
    LatencyModel,
    caddtree,
    first_decrease,
    first_decrease_misses,
    throughput_curve,
)
from exitlaw.simulate.builders.dartree import dartree
from exitlaw.simulate.builders.opt_tree import draft_expected_acceptance, opt_tree
from exitlaw.simulate.builders.table import SIM_BUILDERS, BuildFn, make_builder
from exitlaw.simulate.builders.trees import (
    Built,
    chain,
    ddtree,
    ddtree_order,
    eagle_dynamic,
    oracle,
    static_tree,
    tsubame,
)

__all__ = [
    "Built",
    "BuildFn",
    "SIM_BUILDERS",
    "make_builder",
    "ddtree_order",
    "ddtree",
    "chain",
    "static_tree",
    "eagle_dynamic",
    "oracle",
    "tsubame",
    "LatencyModel",
    "caddtree",
    "throughput_curve",
    "first_decrease",
    "first_decrease_misses",
    "dartree",
    "opt_tree",
    "draft_expected_acceptance",
]
