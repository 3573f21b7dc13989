"""Public sampling forms ``f(tree, probs, rng) -> (exit_node, bonus_token)``.

``probs`` is ``[N, V]``, row ``v`` the target distribution ``p_v`` at node ``v``;
``rng`` a ``numpy.random.Generator``. Inputs are validated (``TreeError`` /
``DistributionError``); pass ``validate=False`` only for rows already checked.
Each form runs the same procedure that :mod:`.exact` enumerates.
"""

from __future__ import annotations

import numpy as np

from exitlaw.simulate.randomness import GeneratorRandomness
from exitlaw.simulate.verifiers.procedures import (
    greedy_procedure,
    predraw_procedure,
    residual_procedure,
    tev_procedure,
)
from exitlaw.simulate.verifiers.table import sim_verifier
from exitlaw.theory import DraftTree, check_tree_rows


def _prepare(tree, probs, validate: bool) -> np.ndarray:
    if not isinstance(tree, DraftTree):
        raise TypeError(f"tree must be a DraftTree, got {type(tree).__name__}")
    if validate:
        return check_tree_rows(tree, probs)
    return np.asarray(probs)


@sim_verifier("predraw")
def predraw(
    tree: DraftTree, probs: np.ndarray, rng: np.random.Generator, *, validate: bool = True
) -> tuple[int, int]:
    """Predraw-and-follow (DDTree); block law ``P(v) p_v(y) [y not a child token]``."""
    rows = _prepare(tree, probs, validate)
    return predraw_procedure(tree, rows, GeneratorRandomness(rng))


@sim_verifier("residual")
def residual(
    tree: DraftTree, probs: np.ndarray, rng: np.random.Generator, *, validate: bool = True
) -> tuple[int, int]:
    """Sequential residual verification with children in node order; canonical block law."""
    rows = _prepare(tree, probs, validate)
    return residual_procedure(tree, rows, GeneratorRandomness(rng))


@sim_verifier("tev")
def tev(
    tree: DraftTree, probs: np.ndarray, rng: np.random.Generator, *, validate: bool = True
) -> tuple[int, int]:
    """Tree Exit Verification: ``V ~ w``, bonus ``~ p_V^res``; canonical block law."""
    rows = _prepare(tree, probs, validate)
    return tev_procedure(tree, rows, GeneratorRandomness(rng))


@sim_verifier("greedy")
def greedy(
    tree: DraftTree,
    probs: np.ndarray,
    rng: np.random.Generator | None = None,
    *,
    validate: bool = True,
) -> tuple[int, int]:
    """Greedy (T = 0) verification; deterministic, ``rng`` is accepted for a uniform signature."""
    rows = _prepare(tree, probs, validate)
    return greedy_procedure(tree, rows)
