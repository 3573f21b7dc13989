"""The simulator's verifier tables: each verifier's simulator forms register themselves here, where
they are defined, with :func:`sim_verifier` (docs/architecture.md §6).

One table per place (:mod:`exitlaw.theory.registry`): ``SIMULATOR`` (a sampling form
``f(tree, probs, rng) -> (exit, bonus)``, or a sampled-draft rule), ``PROCEDURE`` (an
exact-enumeration procedure ``f(tree, rows, rand)``), ``FAST`` (a vectorised sampler
``f(tree, probs, rng, num_samples)``) and ``SETTINGS`` (a settings-mode form on raw logits plus
:class:`~exitlaw.theory.SamplingSettings`). Where a verifier is implemented is read from them
(:func:`implemented`), never written in the registry.
"""

from __future__ import annotations

from typing import Callable

from exitlaw.theory.infra.registration import register_once
from exitlaw.theory.registry import (
    FAST,
    PROCEDURE,
    SETTINGS,
    SIMULATOR,
    Names,
    verifier,
    verifier_names,
)

TABLES: dict[str, dict[str, Callable]] = {SIMULATOR: {}, PROCEDURE: {}, FAST: {}, SETTINGS: {}}


def sim_verifier(name: str, place: str = SIMULATOR) -> Callable[[Callable], Callable]:
    """Register the decorated function as the registered verifier ``name``'s form in ``place``
    (one of :data:`TABLES`). ``ValueError`` for an unknown name or place, or a second function."""
    verifier(name)  # ValueError naming the registered verifiers
    if place not in TABLES:
        raise ValueError(f"unknown simulator place {place!r}; places: {', '.join(TABLES)}")
    return register_once(TABLES[place], name, f"simulator verifier {name!r} ({place} form)")


def implemented(place: str, **facts) -> Names:
    """The verifiers with a form registered in ``place``, in registry order, filtered by the
    registry's facts (``kind=``, ``sampling=``, ``saturating=``, ...)."""
    if place not in TABLES:
        raise ValueError(f"unknown simulator place {place!r}; places: {', '.join(TABLES)}")
    return verifier_names(among=TABLES[place], **facts)


def sim_function(name: str, place: str = SIMULATOR) -> Callable:
    """The function registered for verifier ``name`` in ``place`` (``ValueError`` naming those there)."""
    table = TABLES[place]
    if name not in table:
        raise ValueError(
            f"verifier {name!r} has no {place} form; registered there: {', '.join(implemented(place))}"
        )
    return table[name]


__all__ = ["TABLES", "implemented", "sim_function", "sim_verifier"]
