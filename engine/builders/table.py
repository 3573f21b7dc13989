"""The engine's builder table: each builder registers its single-sequence form here, where it is
defined, with :func:`engine_builder` (docs/architecture.md §6); the registry
(:mod:`exitlaw.theory.registry`) holds its facts only.

A form is ``(draft_logprobs [D, V], budget, root_token) -> (tree, logq)``. The batched builder,
:func:`~exitlaw.engine.builders.batched.build_trees_batch`, builds the names it declares
(:data:`~exitlaw.engine.builders.batched.BATCHED_BUILDERS`) for a whole batch.
"""

from __future__ import annotations

from typing import Callable

from exitlaw.theory.infra.registration import register_once
from exitlaw.theory.registry import Names, builder, builder_names

# registered builder name -> its single-sequence form, filled by the @engine_builder decorators
ENGINE_BUILDERS: dict[str, Callable] = {}


def engine_builder(name: str) -> Callable[[Callable], Callable]:
    """Register the decorated function as the engine's form of the registered builder ``name``
    (``ValueError`` for an unknown name or a second function)."""
    builder(name)  # ValueError naming the registered builders
    return register_once(ENGINE_BUILDERS, name, f"engine builder {name!r}")


def engine_builder_names() -> Names:
    """The builders the engine implements, in registry order."""
    return builder_names(among=ENGINE_BUILDERS)


__all__ = ["ENGINE_BUILDERS", "engine_builder", "engine_builder_names"]
