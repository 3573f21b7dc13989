"""The mutant zoo: deliberately wrong verifiers, most modelled on bugs seen in public code.

Every mutant has the public signature ``f(tree, probs, rng) -> (exit_node, bonus_token)``.
Mutants written over the randomness interface (``procedure`` set) also have an
exactly computable law, so the suite can compute the kit's power against them.
``expected`` is the verdict the kit must give.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable

import numpy as np

from exitlaw.simulate.kit.conformance import NOT_EXACT, NOT_SATURATING
from exitlaw.simulate.randomness import GeneratorRandomness
from exitlaw.simulate.verifiers import child_lookup, predraw_procedure, residual_procedure
from exitlaw.theory import DraftTree


@dataclass(frozen=True)
class Mutant:
    name: str
    bug: str
    expected: str
    sample: Callable  # f(tree, probs, rng)
    procedure: Callable | None = None  # f(tree, rows, rand), when the law can be enumerated


# The enumerable mutants are written over plain lists and the number type of the rows (float, numpy
# float, Fraction or the prover's symbolic rationals), like the correct procedures, so ``exitlaw prove``
# can run them on symbols (or, where a mutant compares probabilities, on exact rational points).
def _zero(rows):
    return rows[0][0] - rows[0][0]


def _sum(r):
    return sum(r[1:], r[0])


def _masked(tree, rows, v):
    r = list(rows[v])
    for u in tree.children[v]:
        r[int(tree.token[u])] = _zero(rows)
    return r


def _prefix(tree, rows):
    one = _zero(rows) + 1
    pre = [one] * tree.num_nodes
    for u in range(1, tree.num_nodes):
        pre[u] = pre[int(tree.parent[u])] * rows[int(tree.parent[u])][int(tree.token[u])]
    return pre


def _renormalised(r, x):
    return r[x] / _sum(r)


def _zero_token(r, x, rows):
    r[x] = _zero(rows)


def _residual_walk(tree, rows, rand, accept_chance=_renormalised, reject=_zero_token):
    """Sequential residual acceptance; returns the exit node and its residual row. Correct with the
    defaults; a mutant swaps in its own ``accept_chance(r, x)`` or ``reject(r, x, rows)`` (which updates
    the residual ``r`` after child token ``x`` was rejected)."""
    v = 0
    while True:
        r = list(rows[v])
        nxt = None
        for u in tree.children[v]:
            x = int(tree.token[u])
            if rand.bernoulli(accept_chance(r, x), stream="accept"):
                nxt = int(u)
                break
            reject(r, x, rows)
        if nxt is None:
            return v, r
        v = nxt


def _children_zeroed_or_own_residual(tree, rows, v, row):
    """``row`` with ``v``'s child tokens zeroed; ``v``'s own residual where that leaves no mass."""
    r = list(row)
    for u in tree.children[v]:
        r[int(tree.token[u])] = _zero(rows)
    if _sum(r) <= 0:
        r = _masked(tree, rows, v)
    return r


# ----- residual family -----------------------------------------------------------------------
def residual_no_renormalise(tree, rows, rand):
    def unnormalised(r, x):
        return r[x]  # BUG: r(x) not divided by the remaining mass

    v, r = _residual_walk(tree, rows, rand, accept_chance=unnormalised)
    # (children covering the row can all be rejected here; the buggy code then emits from the row)
    return v, rand.categorical(r if _sum(r) > 0 else rows[v], stream="bonus")


def residual_wrong_row(tree, rows, rand):
    v, _ = _residual_walk(tree, rows, rand)
    w = min(v + 1, tree.num_nodes - 1)  # BUG: residual built from the next node's row
    return v, rand.categorical(
        _children_zeroed_or_own_residual(tree, rows, v, _masked(tree, rows, w)), stream="bonus"
    )


def bonus_full_row(tree, rows, rand):
    v, _ = _residual_walk(tree, rows, rand)
    return v, rand.categorical(rows[v], stream="bonus")  # BUG: child tokens not masked


def bonus_parent_row(tree, rows, rand):
    v, _ = _residual_walk(tree, rows, rand)
    src = int(tree.parent[v]) if v else 0  # BUG: the parent's row
    return v, rand.categorical(
        _children_zeroed_or_own_residual(tree, rows, v, rows[src]), stream="bonus"
    )


def duplicated_token_at_boundary(tree, rows, rand):
    def zero_next_token(
        r, x, rows
    ):  # BUG: off-by-one mask, the rejected token x stays in the residual
        y = (x + 1) % len(r)
        r[y] = _zero(rows) if _sum(r) - r[y] > 0 else r[y]

    v, r = _residual_walk(tree, rows, rand, reject=zero_next_token)
    return v, rand.categorical(r, stream="bonus")


def stale_residual_last_depth(tree, rows, rand):
    v, r_prev = 0, None
    deepest = tree.max_depth
    while True:
        last_level = tree.depth[v] == deepest - 1
        r = (
            list(rows[v])
            if not (last_level and r_prev is not None and _sum(r_prev) > 0)
            else list(r_prev)
        )  # BUG: residual not reset before the last level
        nxt = None
        for u in tree.children[v]:
            x = int(tree.token[u])
            if _sum(r) > 0 and rand.bernoulli(r[x] / _sum(r), stream="accept"):
                nxt = int(u)
                break
            r[x] = _zero(rows)
        if nxt is None:
            if _sum(r) <= 0:
                r = _masked(tree, rows, v)
            return v, rand.categorical(r, stream="bonus")
        r_prev, v = r, nxt


def threshold_acceptance(tree, rows, rand, threshold=Fraction(3, 10)):
    kids = child_lookup(tree)
    v = 0
    while True:
        row = rows[v]
        ok = [
            (row[x], u) for x, u in kids[v].items() if row[x] >= threshold
        ]  # BUG: lossy by design
        if not ok:
            masked = _masked(tree, rows, v)
            return v, rand.categorical(masked if _sum(masked) > 0 else row, stream="bonus")
        v = max(ok)[1]


# ----- TEV family ----------------------------------------------------------------------------
def exit_proportional_to_prefix(tree, rows, rand):
    pre = _prefix(tree, rows)
    w = [pre[v] if _sum(_masked(tree, rows, v)) > 0 else _zero(rows) for v in range(tree.num_nodes)]
    v = rand.categorical(w, stream="exit")  # BUG: exit ~ P instead of w = P rho
    return v, rand.categorical(_masked(tree, rows, v), stream="bonus")


def rho_from_floored_probs(tree, rows, rand, step=Fraction(1, 8)):
    pre = _prefix(tree, rows)
    w = []
    for v in range(tree.num_nodes):
        mass = sum(
            (math.floor(rows[v][int(tree.token[u])] / step) * step for u in tree.children[v]),
            Fraction(0),
        )
        w.append(
            pre[v] * (1 - mass) if _sum(_masked(tree, rows, v)) > 0 else _zero(rows)
        )  # BUG: floored a(u)
    v = rand.categorical(w, stream="exit")
    return v, rand.categorical(_masked(tree, rows, v), stream="bonus")


def wrong_parent_edge(tree, rows, rand):
    one = _zero(rows) + 1
    pre = [one] * tree.num_nodes
    for u in range(1, tree.num_nodes):
        pre[u] = (
            pre[int(tree.parent[u])] * rows[u][int(tree.token[u])]
        )  # BUG: a(u) read from u's own row
    w = [pre[v] * _sum(_masked(tree, rows, v)) for v in range(tree.num_nodes)]
    v = rand.categorical(w, stream="exit")
    return v, rand.categorical(_masked(tree, rows, v), stream="bonus")


# ----- predraw family ----------------------------------------------------------------------------
def temperature_twice(tree, rows, rand):
    sharp = [
        [x * x for x in r] for r in rows
    ]  # BUG: temperature 1/2 applied again (p^2, renormalised)
    return predraw_procedure(tree, [[x / _sum(s) for x in s] for s in sharp], rand)


def wrong_depth(tree, rows, rand):
    shifted = [
        rows[int(tree.parent[v])] if v else rows[0] for v in range(tree.num_nodes)
    ]  # BUG: one level up
    return predraw_procedure(tree, shifted, rand)


# ----- exact but not saturating --------------------------------------------------------------
def never_accept_deepest(tree, rows, rand):
    keep = [u for u in range(tree.num_nodes) if tree.depth[u] < max(tree.max_depth, 1)]
    pruned = DraftTree(
        parent=tree.parent[keep], token=tree.token[keep]
    )  # ids of kept nodes unchanged
    v, y = residual_procedure(pruned, [rows[u] for u in keep], rand)
    return keep[v], y


def first_child_only(tree, rows, rand):
    v = 0
    while True:
        y = rand.categorical(rows[v], stream="predraw")
        kids = tree.children[v]
        if (
            len(kids) and int(tree.token[kids[0]]) == y
        ):  # siblings after the first are never followed
            v = int(kids[0])
            continue
        return v, y


# ----- raw-uniform bugs (not enumerable) ------------------------------------------------------
def inverse_cdf(row, u):
    """Inverse CDF of the unnormalised ``row`` at ``u`` in [0, 1), never past the last positive weight."""
    cdf = np.cumsum(row)
    i = int(np.searchsorted(cdf, u * cdf[-1], side="right"))
    return min(i, int(np.flatnonzero(np.asarray(row) > 0)[-1]))


def coin_reused_for_bonus(tree, probs, rng):
    v = 0
    while True:
        r = np.array(probs[v], dtype=np.float64)
        nxt, u = None, rng.random()
        for c in tree.children[v]:
            x = int(tree.token[c])
            u = rng.random()
            if u < r[x] / r.sum():
                nxt = int(c)
                break
            r[x] = 0.0
        if nxt is None:
            return v, inverse_cdf(r, u)  # BUG: the rejecting coin (u >= threshold) drives the bonus
        v = nxt


def shared_uniform_across_levels(tree, probs, rng):
    u = rng.random()  # BUG: one uniform for every level
    kids = child_lookup(tree)
    v = 0
    while True:
        y = inverse_cdf(probs[v], u)
        if y not in kids[v]:
            return v, y
        v = kids[v][y]


def cumsum_boundary_zero_prob(tree, probs, rng, bits: int = 8):
    kids = child_lookup(tree)
    v = 0
    while True:
        u = np.floor(rng.random() * 2**bits) / 2**bits  # a low-precision coin, 0 included
        cdf = np.cumsum(probs[v])
        y = int(
            np.searchsorted(cdf, u, side="left")
        )  # BUG: first y with u <= cdf[y]: u = 0 picks a p=0 token
        if y not in kids[v]:
            return v, y
        v = kids[v][y]


def low_precision_gumbel_tail(tree, probs, rng, bits: int = 6):
    """Gumbel-max bonus with uniforms quantised to ``bits`` bits and clipped away from 0 and 1: the
    fp32 truncation at a 150k vocabulary, scaled down to the kit's vocabulary of 50."""
    v, r = _residual_walk(tree, probs, GeneratorRandomness(rng))
    r = np.asarray(r, dtype=np.float64)
    eps = 2.0**-bits
    u = np.clip(
        np.round(rng.random(r.size) / eps) * eps, eps, 1 - eps
    )  # BUG: tail of the Gumbel truncated
    with np.errstate(divide="ignore"):
        score = np.log(r) - np.log(-np.log(u))
    return v, int(np.argmax(score))


# ----- boundary-coin bugs (found by `exitlaw check --boundary`, not by sampling) -------------------
def _numpy_residual_walk(tree, probs, accepts):
    """Sequential residual acceptance over float64 numpy rows; ``accepts(j, x, r)`` draws its own coin and
    decides the ``j``-th child (token ``x``) under the residual ``r``. Returns the exit node and its residual."""
    v = 0
    while True:
        r = np.array(probs[v], dtype=np.float64)
        nxt = None
        for j, c in enumerate(tree.children[v]):
            x = int(tree.token[c])
            if accepts(j, x, r):
                nxt = int(c)
                break
            r[x] = 0.0
        if nxt is None:
            return v, r
        v = nxt


def leq_coin_accepts_zero_child(tree, probs, rng):
    """Sequential residual with a float32 coin and ``coin <= p``: a coin of exactly 0 (chance 2^-23 per
    test in float32) accepts a child whose target probability is 0."""

    def accepts(j, x, r):
        return (
            rng.random(dtype=np.float32) <= r[x] / r.sum()
        )  # BUG: <= accepts p = 0 when the coin is 0

    v, r = _numpy_residual_walk(tree, probs, accepts)
    return v, inverse_cdf(r, rng.random())


def cumsum_falloff_token_zero(tree, probs, rng):
    """Predraw whose inverse-CDF loop runs in float32: a double coin near 1 rounds up to 1.0 in float32,
    ``coin * total`` reaches the last cumulative sum, the loop falls off its end and returns token 0."""
    kids = child_lookup(tree)
    v = 0
    while True:
        row = np.asarray(probs[v], dtype=np.float32)
        cdf = np.cumsum(row)
        u = np.float32(rng.random()) * cdf[-1]  # BUG: float32(coin) can be 1.0
        y = 0  # BUG: the default when no cumulative sum exceeds u
        for i, c in enumerate(cdf):
            if u < c:
                y = i
                break
        if y not in kids[v]:
            return v, y
        v = kids[v][y]


def leq_coin_late_sibling(tree, probs, rng):
    """Sequential residual whose ``coin <= p`` slip sits only on siblings after the first: reached only when
    every earlier sibling was rejected, so a boundary schedule must set the earlier coins, not leave them
    to a seeded stream."""

    def accepts(j, x, r):
        coin, t = rng.random(), r[x] / r.sum()
        return coin < t or (
            j > 0 and coin == t
        )  # BUG: <= on later siblings accepts p = 0 at a coin of 0

    v, r = _numpy_residual_walk(tree, probs, accepts)
    return v, inverse_cdf(r, rng.random())


def _sampling(proc):
    def f(tree, probs, rng):
        return proc(tree, probs, GeneratorRandomness(rng))

    f.__name__ = proc.__name__
    return f


_ZOO = [
    (
        "residual_no_renormalise",
        "residual zeroes the rejected token without renormalising",
        NOT_EXACT,
        residual_no_renormalise,
    ),
    (
        "residual_wrong_row",
        "bonus residual built from the wrong node's row",
        NOT_EXACT,
        residual_wrong_row,
    ),
    (
        "bonus_full_row",
        "bonus drawn from the full row instead of the residual",
        NOT_EXACT,
        bonus_full_row,
    ),
    ("bonus_parent_row", "bonus drawn from the parent's row", NOT_EXACT, bonus_parent_row),
    (
        "duplicated_token_at_boundary",
        "off-by-one residual mask: a rejected child token is re-emitted",
        NOT_EXACT,
        duplicated_token_at_boundary,
    ),
    (
        "stale_residual_last_depth",
        "stale residual carried into the last level",
        NOT_EXACT,
        stale_residual_last_depth,
    ),
    (
        "threshold_acceptance",
        "threshold (typical) acceptance: lossy by design",
        NOT_EXACT,
        threshold_acceptance,
    ),
    (
        "exit_proportional_to_prefix",
        "TEV exit drawn proportional to P instead of w",
        NOT_EXACT,
        exit_proportional_to_prefix,
    ),
    (
        "rho_from_floored_probs",
        "rho computed from floored probabilities",
        NOT_EXACT,
        rho_from_floored_probs,
    ),
    (
        "wrong_parent_edge",
        "edge probability read from the node's own row, not its parent's",
        NOT_EXACT,
        wrong_parent_edge,
    ),
    ("temperature_twice", "temperature (1/2) applied twice", NOT_EXACT, temperature_twice),
    ("wrong_depth", "nodes verified with the row one level up", NOT_EXACT, wrong_depth),
    (
        "never_accept_deepest",
        "never accepts the deepest level (exact, loses length)",
        NOT_SATURATING,
        never_accept_deepest,
    ),
    (
        "first_child_only",
        "follows only the first child of each node (exact, loses length)",
        NOT_SATURATING,
        first_child_only,
    ),
]
_RAW = [
    (
        "coin_reused_for_bonus",
        "acceptance coin reused for the bonus draw",
        NOT_EXACT,
        coin_reused_for_bonus,
    ),
    (
        "shared_uniform_across_levels",
        "one uniform shared across levels",
        NOT_EXACT,
        shared_uniform_across_levels,
    ),
    (
        "cumsum_boundary_zero_prob",
        "coin <= cumsum boundary accepts a zero-probability token",
        NOT_EXACT,
        cumsum_boundary_zero_prob,
    ),
    (
        "low_precision_gumbel_tail",
        "low-precision Gumbel noise truncates the tail on a large vocabulary",
        NOT_EXACT,
        low_precision_gumbel_tail,
    ),
]
# boundary-coin bugs: no sample size finds them; `exitlaw check --boundary` must
BOUNDARY_MUTANTS = {
    "leq_coin_accepts_zero_child": leq_coin_accepts_zero_child,
    "cumsum_falloff_token_zero": cumsum_falloff_token_zero,
    "leq_coin_late_sibling": leq_coin_late_sibling,
}

MUTANTS = [Mutant(n, b, e, _sampling(p), p) for n, b, e, p in _ZOO] + [
    Mutant(n, b, e, f) for n, b, e, f in _RAW
]
BY_NAME = {m.name: m for m in MUTANTS}
# importable by the CLI: `exitlaw check property_tests.helpers.mutants:<name>` from the repository root
globals().update({f"{m.name}_verifier": m.sample for m in MUTANTS})


# ----- callables with broken contracts (the kit must give a clear error) ---------------------
def returns_none(tree, probs, rng):
    return None


def returns_out_of_range(tree, probs, rng):
    return 0, probs.shape[1] + 5


def returns_fraction_node(tree, probs, rng):
    return 0.5, 1


def wrong_signature(tree, probs):
    return 0, 0


# ----- exit-law weights (not verifiers: ``f(tree, rows) -> w``) -------------------------------------
def tev_weights_without_residual_correction(tree, rows):
    """The simulated TEV weights from ``rho = 1 - m`` alone (BUG: no direct residual sum, so a node whose
    children cover its row up to rounding gets a positive weight and a tiny true residual is rounded)."""
    edge = np.ones(tree.num_nodes)
    edge[1:] = rows[tree.parent[1:], tree.token[1:]]
    prefix = np.ones(tree.num_nodes)
    for u in range(1, tree.num_nodes):
        prefix[u] = prefix[tree.parent[u]] * edge[u]
    mass = np.zeros(tree.num_nodes)
    np.add.at(mass, tree.parent[1:], edge[1:])
    return prefix * np.maximum(1.0 - mass, 0.0)
