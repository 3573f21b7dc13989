"""Test-only twin of the best-first rule (enumerate every prefix, sort by the stated order, keep ``B``),
and the tied and short per-depth rows both builders are checked on.

Scores are accumulated edge by edge from the root in the same order as the
rule (``s = combine(s_parent, value)``), so equal scores are equal floats on
both sides. The order is spelled out here independently of
``exitlaw.theory.best_first``: score descending, then depth ascending, then at
the first position where two prefixes differ, the sibling token of higher value
in that row, then the lower token (the rank of ``y`` in row ``r`` counts the
tokens ``z`` with ``r[z] > r[y]``, or ``r[z] == r[y]`` and ``z < y``);
``-inf`` scores are not candidates.
"""

from __future__ import annotations

import operator
from typing import Callable

import numpy as np
from hypothesis import strategies as st

from exitlaw.theory import DraftTree

Scored = list[tuple[float, tuple[int, ...], tuple[int, ...]]]  # (score, tokens, ranks)


def _rank(r: list[float], y: int) -> int:
    return sum(1 for z, v in enumerate(r) if v > r[y] or (v == r[y] and z < y))


def enumerate_prefixes(
    row: Callable[[tuple[int, ...]], np.ndarray | None],
    *,
    combine=operator.add,
    root_score: float = 0.0,
) -> Scored:
    """Every prefix with its score and ranks; ``row(prefix)`` gives the children's values, ``None`` past the horizon."""
    out: Scored = []
    frontier = [(root_score, (), ())]
    while frontier:
        nxt = []
        for s, path, ranks in frontier:
            r = row(path)
            if r is None:
                continue
            r = np.asarray(r, dtype=np.float64).tolist()
            for y, v in enumerate(r):
                c = combine(s, v)
                if c != -np.inf:
                    nxt.append((c, path + (y,), ranks + (_rank(r, y),)))
        out.extend(nxt)
        frontier = nxt
    return out


def first_of_order(scored: Scored, budget: int) -> list[tuple[float, tuple[int, ...]]]:
    """The first ``budget`` ``(score, tokens)`` of the order (all of them when fewer exist)."""
    first = sorted(scored, key=lambda spr: (-spr[0], len(spr[2]), spr[2]))[:budget]
    return [(s, p) for s, p, _ in first]


def brute_force_ddtree(logq: np.ndarray, budget: int) -> list[tuple[float, tuple[int, ...]]]:
    """Top-``budget`` prefixes of the factorised score ``sum_d logq[d, x_d]`` (all ``V^1 + .. + V^D`` scored)."""
    logq = np.asarray(logq, dtype=np.float64)
    return first_of_order(
        enumerate_prefixes(lambda p: logq[len(p)] if len(p) < logq.shape[0] else None), budget
    )


def ordered_paths(tree: DraftTree) -> list[tuple[int, ...]]:
    """Non-root node paths in node order."""
    return [tree.path(v) for v in range(1, tree.num_nodes)]


@st.composite
def tied_rows(draw, *, max_vocab: int = 4, max_depth: int = 4, zeros: bool = True) -> np.ndarray:
    """Probability rows ``q [D, V]`` on a coarse grid (counts / total): equal entries, equal rows across
    depths, entries of 1 (a child tying its parent) and, with ``zeros``, impossible tokens."""
    vocab, depth = draw(st.integers(1, max_vocab)), draw(st.integers(1, max_depth))
    counts = st.lists(st.integers(0 if zeros else 1, 3), min_size=vocab, max_size=vocab).filter(
        lambda c: sum(c) > 0
    )
    rows: list[np.ndarray] = []
    for _ in range(depth):
        if rows and draw(st.booleans()):
            rows.append(rows[draw(st.integers(0, len(rows) - 1))])  # the same row at another depth
        else:
            c = np.array(draw(counts), dtype=np.float64)
            rows.append(c / c.sum())
    return np.stack(rows)


# constructed ties: every prefix of a row pair ties (uniform row, then a certain token), the same row
# at two depths, and a tied k-th place; shortage: fewer possible prefixes than the budget
TIE_CASES = [
    (np.array([[0.5, 0.5], [1.0, 0.0]]), 3),  # (0) (1) (0,0) (1,0) all score log 1/2
    (
        np.array([[0.5, 0.5], [0.5, 0.5]]),
        5,
    ),  # (0,1) vs (1,0): equal values, the lower first token decides
    (np.array([[0.25, 0.25, 0.5], [0.25, 0.25, 0.5]]), 4),
    (np.array([[1.0, 0.0, 0.0], [0.4, 0.2, 0.4]]), 2),
    (np.array([[0.25, 0.75], [0.75, 0.25]]), 4),  # (1,1) ties (0,0): the better first token decides
]
SHORTAGE_CASES = [
    (np.array([[0.5, 0.5, 0.0]]), 5),  # two possible prefixes
    (np.array([[0.5, 0.5], [1.0, 0.0]]), 9),  # four
    (np.array([[1.0]] * 3), 7),  # one chain of three
]
