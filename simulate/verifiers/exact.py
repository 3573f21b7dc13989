"""Exact laws of the verifier procedures, by enumeration of every draw.

``implementation_block_law`` runs the procedure under
:func:`~exitlaw.simulate.randomness.enumerate_law` and returns an ``[N][V]``
table of ``Pr[exit = v, bonus = y]`` of the *implementation* (float64 or
``Fraction``), to be compared with the canonical block law of
:mod:`exitlaw.theory`.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Callable

import numpy as np

from exitlaw.simulate.randomness import as_number_rows, enumerate_law
from exitlaw.simulate.verifiers.procedures import PROCEDURES
from exitlaw.theory import DraftTree


def implementation_law(procedure: Callable, tree: DraftTree, probs, *, one=1.0, **kwargs) -> dict:
    """``{(exit, bonus): prob}`` of ``procedure(tree, rows, rand, **kwargs)``."""
    rows = as_number_rows(probs, one)
    return enumerate_law(lambda rand: procedure(tree, rows, rand, **kwargs), one=one)


def law_table(law: dict, num_nodes: int, vocab: int, *, one=1.0) -> list[list]:
    """Dense ``[N][V]`` table of a ``{(v, y): prob}`` law."""
    zero = one - one
    table = [[zero] * vocab for _ in range(num_nodes)]
    for (v, y), p in law.items():
        table[v][y] = table[v][y] + p
    return table


def implementation_block_law(name_or_procedure, tree: DraftTree, probs, *, one=1.0, **kwargs):
    """Block law of a verifier procedure (by name: predraw, residual, tev, greedy) as a table."""
    proc = (
        PROCEDURES[name_or_procedure] if isinstance(name_or_procedure, str) else name_or_procedure
    )
    vocab = len(probs[0])
    law = implementation_law(proc, tree, probs, one=one, **kwargs)
    table = law_table(law, tree.num_nodes, vocab, one=one)
    return table if isinstance(one, Fraction) else np.array(table, dtype=np.float64)
