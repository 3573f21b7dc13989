"""The simulator's builder table: one entry per registered builder (:mod:`exitlaw.theory.registry`).

An entry takes a config (anything with the fields below: the lab's ``SimConfig``), the synthetic
target and the two drafters, and returns the round's builder ``(context, draft_rng) -> Built``.
Fields read: ``budget``, ``horizon``, ``static_branching``, ``eagle_depth``, ``eagle_top_k``,
``caddtree_max_budget``, ``dartree_widen`` and ``latency_model()``. ``chain`` always drafts
``horizon`` tokens (DFlash's default); ``caddtree`` picks its budget per round in
``[1, caddtree_max_budget]``; every other builder uses ``budget``. The three Tsubame entries build the
same tree; they differ in the rule that verifies it (the registry's ``sampled_draft_rule``).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from exitlaw.simulate.builders.caddtree import caddtree
from exitlaw.simulate.builders.dartree import dartree
from exitlaw.simulate.builders.opt_tree import opt_tree
from exitlaw.simulate.builders.trees import (
    Built,
    chain,
    ddtree,
    eagle_dynamic,
    oracle,
    static_tree,
    tsubame,
)

BuildFn = Callable[[tuple[int, ...], np.random.Generator], Built]
MakeBuilder = Callable[[Any, Any, Any, Any], BuildFn]  # (cfg, target, pos, ar) -> BuildFn


def _tsubame(cfg, target, pos, ar) -> BuildFn:
    return lambda c, rng: tsubame(pos.marginals(c, cfg.horizon), cfg.budget, rng)


def _caddtree(cfg, target, pos, ar) -> BuildFn:
    lat = cfg.latency_model()
    return lambda c, rng: caddtree(
        pos.marginals(c, cfg.horizon), lat, max_budget=cfg.caddtree_max_budget
    )[0]


# keyed by the registry's simulator builder names, in registry order (property_tests/test_registry.py)
SIM_BUILDERS: dict[str, MakeBuilder] = {
    "ddtree": lambda cfg, target, pos, ar: (
        lambda c, rng: ddtree(pos.marginals(c, cfg.horizon), cfg.budget)
    ),
    "chain": lambda cfg, target, pos, ar: (
        lambda c, rng: chain(pos.marginals(c, cfg.horizon), cfg.horizon)
    ),
    "static": lambda cfg, target, pos, ar: (
        lambda c, rng: static_tree(pos.marginals(c, cfg.horizon), cfg.budget, cfg.static_branching)
    ),
    "eagle": lambda cfg, target, pos, ar: (
        lambda c, rng: eagle_dynamic(
            ar, c, cfg.budget, depth=cfg.eagle_depth, top_k=cfg.eagle_top_k
        )
    ),
    "oracle": lambda cfg, target, pos, ar: lambda c, rng: oracle(target, c, cfg.budget),
    "caddtree": _caddtree,
    "tsubame": _tsubame,
    "tsubame-rrs": _tsubame,
    "opt-tree": lambda cfg, target, pos, ar: (
        lambda c, rng: opt_tree(ar, c, cfg.budget, depth=cfg.horizon)
    ),
    "dartree": lambda cfg, target, pos, ar: (
        lambda c, rng: dartree(
            pos.marginals(c, cfg.horizon), ar, c, cfg.budget, widen=cfg.dartree_widen
        )
    ),
    "tsubame-univer": _tsubame,
}


def make_builder(name: str, cfg, target, pos, ar) -> BuildFn:
    """``(context, draft_rng) -> Built`` for the registered builder ``name``."""
    if name not in SIM_BUILDERS:
        raise ValueError(f"unknown builder {name!r} (known: {', '.join(SIM_BUILDERS)})")
    return SIM_BUILDERS[name](cfg, target, pos, ar)


__all__ = ["BuildFn", "SIM_BUILDERS", "make_builder"]
