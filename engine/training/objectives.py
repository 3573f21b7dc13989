"""The ExitTrain objective vocabulary (torch-free): weights, normalisations, edge floor.

One set of names shared by the engine's torch trainer (:mod:`.exittrain`) and the
simulated trainer (``exitlaw.simulate``); the formulas are in :mod:`.exittrain`'s
docstring. Importing this module loads no torch, so configuration and the command
line can check options cheaply.
"""

from __future__ import annotations

import math

OBJECTIVES = ("token", "prefix", "exit", "exit-depth", "draft-opd", "vat")
NORMALISATIONS = ("batch", "tree", "nodes")
AUTHORS_EDGE_FLOOR = 1e-4  # alpha of the authors' public code (P from max(a, alpha))
AUTHORS_LAMBDA = 0.1  # their loss: 1.0 * CE + 0.1 * (tree term over tree nodes)


class ObjectiveError(ValueError):
    """An unknown objective or normalisation, or options that do not go together."""


def check_edge_floor(edge_floor: float | None) -> None:
    """Raise :class:`ObjectiveError` unless ``edge_floor`` is ``None`` or in ``(0, 1)``."""
    if edge_floor is not None and not (math.isfinite(edge_floor) and 0 < edge_floor < 1):
        raise ObjectiveError(f"edge floor alpha must be in (0, 1) or None, got {edge_floor!r}")


def check_objective(
    objective: str, normalisation: str = "batch", edge_floor: float | None = None
) -> None:
    """Raise :class:`ObjectiveError` unless the three options name a defined objective."""
    if objective not in OBJECTIVES:
        raise ObjectiveError(f"objective must be one of {OBJECTIVES}, got {objective!r}")
    if normalisation not in NORMALISATIONS:
        raise ObjectiveError(
            f"normalisation must be one of {NORMALISATIONS}, got {normalisation!r}"
        )
    check_edge_floor(edge_floor)
    if objective == "draft-opd" and normalisation != "batch":
        raise ObjectiveError(
            "draft-opd averages over the states verification visits (normalisation 'batch'); "
            f"{normalisation!r} is not defined for it"
        )
    if objective == "vat" and normalisation != "batch":
        raise ObjectiveError(
            "vat is a weighted mean over the batch's positions (normalisation 'batch'); "
            f"{normalisation!r} is not defined for it"
        )
    if objective == "vat" and edge_floor is not None:
        raise ObjectiveError("vat uses no tree probabilities: an edge floor means nothing there")


__all__ = [
    "OBJECTIVES",
    "NORMALISATIONS",
    "AUTHORS_EDGE_FLOOR",
    "AUTHORS_LAMBDA",
    "ObjectiveError",
    "check_edge_floor",
    "check_objective",
]
