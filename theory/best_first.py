"""The one best-first rule: the top-``B`` prefixes of a tree-structured score (docs/architecture.md §4).

A *tree-structured score* gives every token prefix ``x = x_1..x_d`` a score
built edge by edge, ``s(x) = combine(s(x_1..x_{d-1}), v(x_d | x_1..x_{d-1}))``
from ``s(()) = root_score``, and never increases along a path:

* DDTree: ``v = log q_d(x_d)`` (one draft row per depth), ``combine = +``,
  ``s(x) = sum_{i<=d} log q_i(x_i)`` (docs/design.md §1.9, "Builders");
* the oracle tree: ``v = p(x_d | c, x_<d)`` (a target row per prefix),
  ``combine = *``, ``s(x) = P(x)`` (docs/design.md §1.5, "Oracle").

**Order (total, so the result is deterministic).** A node's children are
*ranked* best first: higher value, then lower token. Prefix ``x`` comes before
``y`` when ``s(x) > s(y)``; on equal scores, when ``x`` is shallower; on equal
depths, when at the first position where they differ (the two tokens are
siblings under a common prefix) ``x``'s token ranks better, i.e. has the higher
value there, or the lower token on equal values. Equivalently, the sequences of
ranks are compared lexicographically. Siblings of equal value therefore go to
the lower token, and a token ranked ``>= B`` in its row is never chosen (the
``B`` better-ranked replacements come first). Distinct prefixes always differ in
one of these keys. The result is the first ``B`` prefixes of this order. Since
``s`` never increases along a path and a parent is shallower than its child, a
parent always comes before its children: the chosen set is prefix-closed, and
its nodes are listed in this order (parents before children, non-increasing
score). (Ranks, not token ids, decide after the depth because floating point
can give equal scores to siblings of different value, e.g. ``0 * p``.)

**Shortage.** A prefix of score ``-inf`` is impossible (a token the drafter
gives probability zero) and is never a candidate; a node with no ranked
children (past the drafter's horizon) has none. When fewer than ``B``
candidates exist, the result is all of them: the full tree, smaller than
``B``. The budget is what the verifier may spend, not a demand: every prefix
the drafter can produce is already drafted, a padding node would be one the
drafter says cannot occur, and failing would stop a decode whose tree is
merely complete (a small vocabulary at a short horizon, or a peaked row with
zeros). Callers that need exactly ``B`` nodes check ``tree.budget``.

**Algorithm.** Best-first with lazy sibling enumeration: each node's children
are ranked once, best first (value descending, then lower token); a popped
node pushes its own best child and its next-ranked sibling. Every not-yet
pushed prefix comes after some pushed one in the order above (a child after its
parent: lower-or-equal score and deeper; a next sibling after its predecessor:
lower or equal score, and a worse rank), so the heap pops exactly the
order above, with at most ``2 B`` pushes.

Numpy only (no JAX): the torch engine calls it after its per-depth ``topk``.
"""

from __future__ import annotations

import heapq
import operator
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from .errors import DistributionError
from .tree import ROOT_TOKEN, DraftTree

_NEG_INF = float("-inf")

# prefix -> (tokens [k], values [k]) of its children, ranked best first; empty when it has none
Children = Callable[[tuple[int, ...]], tuple[Sequence[int], Sequence[float]]]


class RankingError(ValueError):
    """A node's children were not ranked best first (value descending, then lower token)."""


@dataclass(frozen=True, eq=False)
class BestFirst:
    """The chosen prefixes in best-first order: node ``i`` is the ``i``-th of the order (root 0)."""

    tree: DraftTree
    value: np.ndarray  # [N]; v of each node's own edge (log q_d(x_d) for DDTree), 0 at the root
    score: np.ndarray  # [N]; s of each node's prefix, root_score at the root


def _order_key(score: float, ranks: tuple[int, ...]) -> tuple:
    """Sort key of a prefix with the given per-depth sibling ranks: higher score, then shallower,
    then lexicographically smaller ranks."""
    return (-score, len(ranks), ranks)


def check_budget(budget) -> int:
    """``budget`` as an ``int``; a named error unless it is an integer ``>= 0``."""
    if isinstance(budget, bool) or not isinstance(budget, (int, np.integer)) or budget < 0:
        raise ValueError(f"budget must be >= 0 and an integer, got {budget!r}")
    return int(budget)


def top_prefixes(
    children: Children,
    budget: int,
    *,
    combine: Callable[[float, float], float] = operator.add,
    root_score: float = 0.0,
    root_token: int = ROOT_TOKEN,
) -> BestFirst:
    """The first ``min(budget, #candidates)`` prefixes of the order in the module docstring.

    ``children(prefix)`` returns the prefix's children as ``(tokens, values)``,
    ranked best first (lists are fastest); it is called once per chosen node
    that still needs expanding, so a target model is queried lazily (``O(B)``
    rows). A child's score is ``combine(parent score, value)``; it must not
    exceed the parent's for the result to be the top-``B`` prefixes (the
    result is prefix-closed in any case).
    """
    budget = check_budget(budget)
    parent, token, value, score = [-1], [int(root_token)], [0.0], [root_score]
    paths: list[tuple[int, ...]] = [()]  # tokens from the root
    ranks: list[tuple[int, ...]] = [()]  # sibling rank at each depth, the order's last key
    # (tokens, values, count)
    ranked: list[tuple[Sequence[int], Sequence[float], int] | None] = [None]
    heap: list[
        tuple
    ] = []  # (order key, score, parent node, rank among siblings, ranks from the root)
    heappush, key = heapq.heappush, _order_key

    def push(par: int, rank: int) -> None:
        toks, vals, count = ranked[par]
        if rank >= count:
            return
        v = vals[rank]
        if rank and (v > vals[rank - 1] or (v == vals[rank - 1] and toks[rank] <= toks[rank - 1])):
            raise RankingError(
                f"children of prefix {paths[par]} are not ranked best first: rank {rank - 1} is "
                f"(token {toks[rank - 1]}, value {vals[rank - 1]}), rank {rank} is "
                f"(token {toks[rank]}, value {v})"
            )
        s = combine(score[par], v)
        if s > _NEG_INF:
            r = ranks[par] + (rank,)
            heappush(heap, (key(s, r), s, par, rank, r))
        elif s != s:
            raise DistributionError(f"score of child {toks[rank]} of prefix {paths[par]} is NaN")
        # s == -inf: impossible, and so is every later sibling

    def expand(node: int) -> None:
        toks, vals = children(paths[node])
        if len(toks) != len(vals):
            raise RankingError(
                f"children of prefix {paths[node]}: {len(toks)} tokens but {len(vals)} values"
            )
        ranked[node] = (toks, vals, len(toks))
        push(node, 0)

    if budget:
        expand(0)
    while heap and len(parent) <= budget:
        _, s, par, rank, r = heapq.heappop(heap)
        toks, vals, _ = ranked[par]
        tok, node = int(toks[rank]), len(parent)
        parent.append(par), token.append(tok), value.append(vals[rank]), score.append(s)
        paths.append(paths[par] + (tok,)), ranks.append(r), ranked.append(None)
        push(par, rank + 1)
        if node < budget:  # the last chosen node needs no children
            expand(node)
    tree = DraftTree(parent=np.array(parent), token=np.array(token))
    return BestFirst(tree, np.array(value, dtype=np.float64), np.array(score, dtype=np.float64))


def candidate_width(budget: int, vocab: int) -> int:
    """``k = min(max(B, 1), V)``: the per-depth candidates DDTree needs.

    A prefix whose token at some depth ranks ``>= B`` in that depth's row comes
    after the ``B`` prefixes that replace only that token by a better-ranked one
    (same depth, score no lower, better rank where they differ), so it is never
    chosen.
    """
    return min(max(check_budget(budget), 1), int(vocab))


def ranked_top_k(rows: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` best entries of each row, best first: ``(values [D, k], tokens [D, k])``.

    Exact under the tie rule (value descending, then lower token), including ties
    across the ``k``-th place, which a plain ``argpartition``/``topk`` resolves
    arbitrarily. ``-inf`` entries may fill the tail.
    """
    rows = np.asarray(rows, dtype=np.float64)
    if rows.ndim != 2 or rows.shape[1] == 0:
        raise DistributionError(f"rows must have shape [D, V] with V >= 1, got {rows.shape}")
    if np.isnan(rows).any():
        raise DistributionError(
            f"rows contain NaN (row {int(np.flatnonzero(np.isnan(rows).any(1))[0])})"
        )
    depth, vocab = rows.shape
    if not 1 <= k <= vocab:
        raise ValueError(f"k must lie in [1, V={vocab}], got {k}")
    tokens = np.empty((depth, k), dtype=np.int64)
    for d in range(depth):
        row = rows[d]
        if k < vocab:
            cut = np.partition(row, vocab - k)[vocab - k]  # the k-th largest value
            ids = np.flatnonzero(row >= cut)  # every token tied with it too
        else:
            ids = np.arange(vocab)
        # stable: ties keep ascending tokens
        tokens[d] = ids[np.argsort(-row[ids], kind="stable")[:k]]
    return np.take_along_axis(rows, tokens, axis=1), tokens


def ddtree_prefixes(
    values: np.ndarray, tokens: np.ndarray, budget: int, *, root_token: int = ROOT_TOKEN
) -> BestFirst:
    """DDTree from per-depth candidates: ``values[d], tokens[d]`` (``[D, k]``) list row ``d+1``'s best entries.

    ``s(x) = sum_d log q_d(x_d)`` (docs/design.md §1.9, "Builders"). Row ``d``
    must list its ``k >= min(B, V)`` best tokens under the tie rule
    (:func:`ranked_top_k`, or a device ``topk`` whose boundary ties were
    resolved), in any order: they are ranked here. ``-inf`` entries are never
    used. Nodes come in best-first order, so any prefix ``0..n`` of them is the
    DDTree at budget ``n``.
    """
    values = np.asarray(values, dtype=np.float64)
    tokens = np.asarray(tokens)
    if values.ndim != 2 or values.shape != tokens.shape:
        raise DistributionError(
            f"values and tokens must both have shape [D, k], got {values.shape} and {tokens.shape}"
        )
    if not np.issubdtype(tokens.dtype, np.integer):
        raise DistributionError(f"tokens must be integers, got dtype {tokens.dtype}")
    if np.isnan(values).any():
        raise DistributionError(
            f"values contain NaN (row {int(np.flatnonzero(np.isnan(values).any(1))[0])})"
        )
    # (a negative or repeated token in a row is a TreeError from DraftTree, naming the node)
    if not (
        values[:, 1:] < values[:, :-1]
    ).all():  # not already strictly descending (a device topk usually is)
        order = np.lexsort((tokens, -values), axis=-1)  # [D, k]: value descending, then lower token
        values, tokens = (
            np.take_along_axis(values, order, axis=1),
            np.take_along_axis(tokens, order, axis=1),
        )
    vals, toks = values.tolist(), tokens.tolist()
    horizon = len(vals)

    def children(path: tuple[int, ...]) -> tuple[list[int], list[float]]:
        d = len(path)
        return (toks[d], vals[d]) if d < horizon else ((), ())

    return top_prefixes(children, budget, root_token=root_token)


def ddtree_from_rows(logq: np.ndarray, budget: int, *, root_token: int = ROOT_TOKEN) -> BestFirst:
    """DDTree from full per-depth log-probability rows ``logq [D, V]`` (host arrays)."""
    logq = np.asarray(logq, dtype=np.float64)
    if logq.ndim != 2:
        raise DistributionError(f"logq must have shape [D, V], got {logq.shape}")
    if logq.shape[0] == 0 or logq.shape[1] == 0:
        check_budget(budget)
        return top_prefixes(lambda path: ((), ()), budget, root_token=root_token)
    vals, toks = ranked_top_k(logq, candidate_width(budget, logq.shape[1]))
    return ddtree_prefixes(vals, toks, budget, root_token=root_token)


__all__ = [
    "BestFirst",
    "RankingError",
    "candidate_width",
    "check_budget",
    "ddtree_from_rows",
    "ddtree_prefixes",
    "ranked_top_k",
    "top_prefixes",
]
