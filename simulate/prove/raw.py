"""``exitlaw prove`` for raw-uniform verifiers ``f(tree, probs, rng)`` that call a numpy ``Generator``.

Such a verifier cannot run on symbols; on every tree of :func:`~.tree_enum.all_trees` it is run
at ``search_points`` exact rational rows under the interval stand-in
(:mod:`.uniform_intervals`), which enumerates the implementation's law **exactly** (``Fraction``
branch probabilities = lengths of intervals of a real uniform). The rows are dyadic
(``p_v(y) = k / 2^m``), so the float64 array the verifier receives holds them exactly; the first
half of the points are interior rows, the rest have zero entries (boundary rows). The three
identities of :func:`~.prove.identities` are then checked at each point.

The verifier's own float arithmetic (a threshold ``r[x] / r.sum()`` rounded to a double) makes a
correct verifier's law differ from the block law by rounding; a point is a **counterexample**
only when some law cell (or E[L]) differs by more than ``tolerance`` (default ``1e-9``), and the
exact difference is reported. Otherwise the verdict is ``exact_at_points``: *evidence* at the
points searched, not a proof (exit status 3, like every non-symbolic run). A verifier doing
something the stand-in cannot follow is ``unproved`` with the reason.
"""

from __future__ import annotations

import inspect
import random
from fractions import Fraction
from typing import Callable

import numpy as np

from exitlaw.simulate.prove.prover import (
    COUNTEREXAMPLE,
    EXACT_AT_POINTS,
    EXIT_CODES,
    UNPROVED,
    ProofError,
    ProofReport,
    ReportClock,
    _counterexample,
    _validate,
    identities,
    source_sha256,
)
from exitlaw.simulate.prove.tree_enum import all_trees, tree_shapes
from exitlaw.simulate.prove.uniform_intervals import CannotFollow, TooManyBranches, raw_law

RAW_SCOPE = (
    "every rooted tree shape with <= max_nodes nodes, every child-token assignment up to a global "
    "relabelling, vocabularies 1..vocab; at each tree the verifier's exact law (real uniforms, interval "
    "branching; the verifier's float arithmetic on the rows as it is) at search_points dyadic rational "
    "rows (half interior, half with zero entries); a deviation above the tolerance is a counterexample"
)


def takes_generator(fn: Callable) -> bool:
    """Whether ``fn``'s third parameter is named ``rng`` (the kit's ``f(tree, probs, rng)`` convention)."""
    try:
        params = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return False
    return len(params) >= 3 and params[2] == "rng"


def dyadic_rows(
    num_nodes: int, vocab: int, rng: random.Random, *, bits: int = 5, zeros: bool = False
) -> list[list[Fraction]]:
    """Rows ``k_y / 2^bits`` (integers ``k_y >= 1``, or ``>= 0`` with at least one zero when ``zeros``)."""
    total = 2**bits
    rows = []
    for _ in range(num_nodes):
        lo = 0 if zeros and vocab > 1 else 1
        while True:
            cuts = sorted(rng.randint(0, total) for _ in range(vocab - 1))
            k = [b - a for a, b in zip([0] + cuts, cuts + [total])]
            if min(k) >= lo and (not zeros or vocab == 1 or min(k) == 0):
                break
        rows.append([Fraction(x, total) for x in k])
    return rows


def law_deviation(ids: dict) -> Fraction:
    """Largest ``|implementation - block law|`` over the cells, and ``|E[L] - (1 + C_p)|``."""
    impl, canon = ids["impl"], ids["canonical"]
    cells = max(abs(a - b) for ri, rc in zip(impl, canon) for a, b in zip(ri, rc))
    return max(cells, abs(ids["mean"] - ids["ceiling"]))


def _check_raw_limits(max_nodes: int, vocab: int, search_points: int) -> None:
    """Refuse sizes the raw-uniform search does not cover."""
    if not 1 <= max_nodes <= 8:
        raise ProofError(f"--max-nodes must be in 1..8 for a raw-uniform verifier, got {max_nodes}")
    if not 1 <= vocab <= 6:
        raise ProofError(f"--vocab must be in 1..6 for a raw-uniform verifier, got {vocab}")
    if search_points < 1:
        raise ProofError(f"search_points must be >= 1, got {search_points}")


def _raw_report(fn: Callable, name: str, max_nodes: int, vocab: int) -> ProofReport:
    """An empty report for a raw-uniform search (status ``exact_at_points`` until something fails)."""
    return ProofReport(
        name,
        EXACT_AT_POINTS,
        EXIT_CODES[EXACT_AT_POINTS],
        max_nodes,
        vocab,
        source_sha256(fn),
        shapes={str(n): len(tree_shapes(n)) for n in range(1, max_nodes + 1)},
        symbolic=False,
        scope=RAW_SCOPE,
    )


def _check_point(
    fn: Callable, tree, V: int, rows: list, rep: ProofReport, *, tolerance: float, max_runs: int
) -> tuple[str | None, Fraction]:
    """Run ``fn``'s exact law at one rational point; ``(UNPROVED or COUNTEREXAMPLE or None, deviation)``.

    A stopping status fills ``rep``'s note (and counterexample); the deviation is 0 when the
    three identities hold exactly.
    """
    probs = np.array([[float(x) for x in r] for r in rows], dtype=np.float64)
    try:
        law = raw_law(fn, tree, probs, max_runs=max_runs)
    except (CannotFollow, TooManyBranches) as err:
        rep.note = (
            f"the interval stand-in cannot follow the verifier: {err} (tree parent "
            f"{tree.parent.tolist()} token {tree.token.tolist()}, V={V})"
        )
        return UNPROVED, Fraction(0)
    _validate(law, tree, V)
    rep.branches += len(law)
    ids = identities(tree, rows, law, Fraction(1))
    if ids["block"] and ids["mean_length"] and ids["completed_block"]:
        return None, Fraction(0)
    dev = law_deviation(ids)
    if dev <= Fraction(tolerance):
        return None, dev
    cex = _counterexample(
        fn,
        tree,
        rows,
        law,
        ids,
        {},
        None,
        "exact law at a dyadic rational point (interval uniforms)",
    )
    cex["max_deviation"] = str(dev)
    rep.counterexample = cex
    rep.note = (
        f"raw numpy Generator verifier; law deviation {float(dev):.3g} > tolerance {tolerance:g}"
    )
    return COUNTEREXAMPLE, dev


def _agreement_note(search_points: int, worst: Fraction, tolerance: float) -> str:
    """The note of an ``exact_at_points`` verdict: exact, or within the tolerance (largest deviation)."""
    return (
        f"raw numpy Generator verifier: exact laws at {search_points} rational points per tree agree with "
        f"the block law"
        + (
            f" up to float rounding of the verifier's thresholds (largest deviation "
            f"{float(worst):.3g} <= tolerance {tolerance:g})"
            if worst
            else " exactly"
        )
        + "; evidence at the points searched, not a symbolic proof"
    )


def prove_raw(
    fn: Callable,
    *,
    name: str = "verifier",
    max_nodes: int = 3,
    vocab: int = 2,
    seed: int = 0,
    search_points: int = 4,
    tolerance: float = 1e-9,
    max_runs: int = 2_000_000,
) -> ProofReport:
    """Search every tree's exact law at rational points (module docstring); stops at the first counterexample."""
    _check_raw_limits(max_nodes, vocab, search_points)
    rng = random.Random(seed)
    rep = _raw_report(fn, name, max_nodes, vocab)
    done = ReportClock(rep).done
    worst = Fraction(0)

    for tree, V in all_trees(max_nodes, vocab):
        key = f"n={tree.num_nodes},V={V}"
        rep.trees[key] = rep.trees.get(key, 0) + 1
        for i in range(search_points):
            rows = dyadic_rows(tree.num_nodes, V, rng, zeros=i >= (search_points + 1) // 2)
            rep.variants += 1
            stop, dev = _check_point(fn, tree, V, rows, rep, tolerance=tolerance, max_runs=max_runs)
            if stop is not None:
                return done(stop)
            worst = max(worst, dev)
    rep.note = _agreement_note(search_points, worst, tolerance)
    return done(EXACT_AT_POINTS)


__all__ = ["prove_raw", "takes_generator", "dyadic_rows", "law_deviation", "EXACT_AT_POINTS"]
