"""The simulator's builder table: each builder registers its maker with :func:`sim_builder` in the
module that defines it (docs/architecture.md §6); the registry (:mod:`exitlaw.theory.registry`)
holds its facts only.

A maker takes a config (anything with the fields it reads: the lab's ``SimConfig``), the synthetic
target and the two drafters, and returns the round's builder ``(context, draft_rng) -> Built``.
``chain`` always drafts ``horizon`` tokens (DFlash's default); ``caddtree`` picks its budget per
round in ``[1, caddtree_max_budget]``; every other builder uses ``budget``. The three Tsubame
entries build the same tree; they differ in the rule that verifies it (the registry's
``sampled_draft_rule``).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from exitlaw.theory.infra.registration import register_once
from exitlaw.theory.registry import Names, builder, builder_names

# (context, draft_rng) -> a trees.Built (not imported: the builder modules import this table)
BuildFn = Callable[[tuple[int, ...], np.random.Generator], Any]
MakeBuilder = Callable[[Any, Any, Any, Any], BuildFn]  # (cfg, target, pos, ar) -> BuildFn

# registered builder name -> its maker, filled by the @sim_builder decorators where they are defined
SIM_BUILDERS: dict[str, MakeBuilder] = {}


def sim_builder(name: str) -> Callable[[MakeBuilder], MakeBuilder]:
    """Register the decorated maker ``(cfg, target, pos, ar) -> BuildFn`` as the simulator's form of
    the registered builder ``name`` (``ValueError`` for an unknown name or a second maker)."""
    builder(name)  # ValueError naming the registered builders
    return register_once(SIM_BUILDERS, name, f"simulator builder {name!r}")


def sim_builder_names() -> Names:
    """The builders the simulator implements, in registry order."""
    return builder_names(among=SIM_BUILDERS)


def make_builder(name: str, cfg, target, pos, ar) -> BuildFn:
    """``(context, draft_rng) -> Built`` for the registered builder ``name``."""
    if name not in SIM_BUILDERS:
        raise ValueError(f"unknown builder {name!r} (known: {', '.join(sim_builder_names())})")
    return SIM_BUILDERS[name](cfg, target, pos, ar)


__all__ = ["BuildFn", "SIM_BUILDERS", "make_builder", "sim_builder", "sim_builder_names"]
