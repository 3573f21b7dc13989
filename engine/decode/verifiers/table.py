"""The engine's verifier table: each verifier module registers its single-tree and batched forms here,
where they are defined, with :func:`engine_verifier` (docs/architecture.md §6).

Which verifiers the engine implements is read from this table (:func:`engine_names`), never written
in the registry, which holds their facts (:mod:`exitlaw.theory.registry`); the dispatch table
(:data:`exitlaw.engine.decode.dispatch.DISPATCH`) is a view of it.
"""

from __future__ import annotations

from typing import Callable

from exitlaw.theory.infra.registration import register_once
from exitlaw.theory.registry import Names, verifier, verifier_names

SINGLE: dict[str, Callable] = {}  # name -> f(device_tree, logits, T, gens[, process])
BATCHED: dict[str, Callable] = {}  # name -> f(batch_tree, logits, T, gens[, process])


def engine_verifier(name: str, *, batched: bool = False) -> Callable[[Callable], Callable]:
    """Register the decorated function as the engine's single-tree form of the registered verifier
    ``name`` (``batched=True``: its batched form). ``ValueError`` if ``name`` is not registered or
    already has a different function in that form."""
    verifier(name)  # ValueError naming the registered verifiers
    table, form = (BATCHED, "batched") if batched else (SINGLE, "single-tree")

    return register_once(table, name, f"engine verifier {name!r} ({form} form)")


def engine_names(*, batched: bool = False, **facts) -> Names:
    """The verifiers with a registered single-tree form (``batched=True``: a batched form), in
    registry order, filtered by the registry's facts (``sampling=``, ``sequential=``, ...)."""
    return verifier_names(among=BATCHED if batched else SINGLE, **facts)


__all__ = ["engine_names", "engine_verifier"]
