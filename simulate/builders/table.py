"""The simulator's builder table: each builder registers its maker with :func:`sim_builder` in the
module that defines it (docs/architecture.md §6); the registry (:mod:`exitlaw.theory.registry`)
holds its facts only.

A maker takes a config (anything with the fields it reads: the lab's ``SimConfig``), the synthetic
target and the two drafters, and returns the round's builder ``(context, draft_rng) -> Built``.
A builder with settings of its own (EAGLE-2's depth and top-k, CaDDTree's largest budget, ...)
declares them as a frozen dataclass in its module and registers it with its maker
(``@sim_builder(name, settings=EagleSettings)``); its maker then takes the config's instance of
that dataclass as a fifth argument (``cfg.builder_settings(name)``), and a config holds one per
such builder without naming any. ``chain`` always drafts ``horizon`` tokens (DFlash's default);
``caddtree`` picks its budget per round in ``[1, max_budget]``; every other builder uses
``budget``. The three Tsubame
entries build the same tree; they differ in the rule that verifies it (the registry's
``sampled_draft_rule``).
"""

from __future__ import annotations

from dataclasses import is_dataclass
from typing import Any, Callable

import numpy as np

from exitlaw.theory.infra.registration import register_once
from exitlaw.theory.registry import Names, builder, builder_names

# (context, draft_rng) -> a trees.Built (not imported: the builder modules import this table)
BuildFn = Callable[[tuple[int, ...], np.random.Generator], Any]
# (cfg, target, pos, ar) -> BuildFn, or (cfg, target, pos, ar, settings) for a builder with settings
MakeBuilder = Callable[..., BuildFn]

# registered builder name -> its maker, filled by the @sim_builder decorators where they are defined
SIM_BUILDERS: dict[str, MakeBuilder] = {}
# registered builder name -> its settings dataclass, for the builders that have settings
SIM_SETTINGS: dict[str, type] = {}
# (cfg, settings or None) -> a count: a builder's cost facts, declared with its maker
CostRule = Callable[[Any, Any], int]
# registered builder name -> its sequential drafter calls per round (absent: one call)
DRAFTER_CALLS: dict[str, CostRule] = {}
# registered builder name -> the most nodes a round's tree may hold (absent: the config's budget)
MAX_NODES: dict[str, CostRule] = {}


def sim_builder(
    name: str,
    settings: type | None = None,
    *,
    drafter_calls: CostRule | None = None,
    max_nodes: CostRule | None = None,
) -> Callable[[MakeBuilder], MakeBuilder]:
    """Register the decorated maker ``(cfg, target, pos, ar) -> BuildFn`` as the simulator's form of
    the registered builder ``name`` (``ValueError`` for an unknown name or a second maker); with
    ``settings`` (a frozen dataclass whose every field has a default) the maker takes
    ``(cfg, target, pos, ar, settings)``. ``drafter_calls`` and ``max_nodes`` state the builder's
    costs, ``(cfg, settings) -> int``, where they are not one call and the budget (the latency model
    and the work bounds read them)."""
    builder(name)  # ValueError naming the registered builders
    if settings is not None:
        _check_settings_class(name, settings)
        register_once(SIM_SETTINGS, name, f"settings of simulator builder {name!r}")(settings)
    for table, rule, what in (
        (DRAFTER_CALLS, drafter_calls, "drafter calls"),
        (MAX_NODES, max_nodes, "node bound"),
    ):
        if rule is not None:
            register_once(table, name, f"{what} of simulator builder {name!r}")(rule)
    return register_once(SIM_BUILDERS, name, f"simulator builder {name!r}")


def _settings_of(name: str, cfg) -> Any:
    return cfg.builder_settings(name) if name in SIM_SETTINGS else None


def drafter_calls(name: str, cfg) -> int:
    """Sequential drafter calls per round of builder ``name`` under ``cfg`` (one unless it declared more)."""
    rule = DRAFTER_CALLS.get(name)
    return 1 if rule is None else int(rule(cfg, _settings_of(name, cfg)))


def max_nodes(name: str, cfg) -> int:
    """The most non-root nodes a round of builder ``name`` may build under ``cfg`` (the budget unless it
    declared otherwise)."""
    rule = MAX_NODES.get(name)
    return cfg.budget if rule is None else int(rule(cfg, _settings_of(name, cfg)))


def _check_settings_class(name: str, settings: type) -> None:
    if not (is_dataclass(settings) and settings.__dataclass_params__.frozen):
        raise ValueError(
            f"settings of builder {name!r} must be a frozen dataclass, got {settings!r}"
        )
    try:
        settings()
    except TypeError as err:
        raise ValueError(
            f"settings of builder {name!r}: every field needs a default ({err})"
        ) from None


def sim_builder_names() -> Names:
    """The builders the simulator implements, in registry order."""
    return builder_names(among=SIM_BUILDERS)


def make_builder(name: str, cfg, target, pos, ar) -> BuildFn:
    """``(context, draft_rng) -> Built`` for the registered builder ``name``."""
    if name not in SIM_BUILDERS:
        raise ValueError(f"unknown builder {name!r} (known: {', '.join(sim_builder_names())})")
    if name in SIM_SETTINGS:
        return SIM_BUILDERS[name](cfg, target, pos, ar, cfg.builder_settings(name))
    return SIM_BUILDERS[name](cfg, target, pos, ar)


__all__ = [
    "BuildFn",
    "DRAFTER_CALLS",
    "MAX_NODES",
    "SIM_BUILDERS",
    "SIM_SETTINGS",
    "drafter_calls",
    "make_builder",
    "max_nodes",
    "sim_builder",
    "sim_builder_names",
]
