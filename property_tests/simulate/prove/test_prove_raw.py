"""``exitlaw prove`` on raw numpy-Generator verifiers: the interval-uniform stand-in's exact laws, a checked
counterexample for each raw-uniform mutant of the zoo, and correct raw verifiers not flagged."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

from exitlaw.cli import main
from exitlaw.simulate.prove.prover import COUNTEREXAMPLE, EXACT_AT_POINTS, UNPROVED
from exitlaw.simulate.prove.raw import dyadic_rows, prove_raw, takes_generator
from exitlaw.simulate.prove.uniform_intervals import CannotFollow, raw_law
from exitlaw.simulate.randomness import GeneratorRandomness
from exitlaw.simulate.verifiers import residual_procedure
from exitlaw.theory import DraftTree
from exitlaw.theory.exact import reference_block_law
from helpers.cli_verifiers import numpy_predraw
from helpers.mutants import BOUNDARY_MUTANTS, BY_NAME, MUTANTS, inverse_cdf

RAW = [
    "coin_reused_for_bonus",
    "shared_uniform_across_levels",
    "cumsum_boundary_zero_prob",
    "low_precision_gumbel_tail",
]


# ----- correct raw verifiers (numpy, rng.random() directly) ----------------------------------------
def numpy_residual(tree, probs, rng):
    """Sequential residual acceptance, fresh coin per test and for the bonus."""
    v = 0
    while True:
        r = np.array(probs[v], dtype=np.float64)
        nxt = None
        for c in tree.children[v]:
            x = int(tree.token[c])
            if rng.random() < r[x] / r.sum():
                nxt = int(c)
                break
            r[x] = 0.0
        if nxt is None:
            return v, inverse_cdf(r, rng.random())
        v = nxt


def numpy_quantised_predraw(tree, probs, rng, bits=5):
    """Predraw with a coin quantised to ``bits`` bits (cell midpoints): exact at rows on the 2^-bits grid."""
    kids = [{int(tree.token[c]): int(c) for c in tree.children[v]} for v in range(tree.num_nodes)]
    v = 0
    while True:
        u = (np.floor(rng.random() * 2**bits) + 0.5) / 2**bits
        y = int(np.searchsorted(np.cumsum(probs[v]), u, side="right"))
        if y not in kids[v]:
            return v, y
        v = kids[v][y]


def _check_counterexample(fn, c):
    """Re-derive the counterexample independently: the exact law at the printed rows differs from the block law."""
    tree = DraftTree(parent=np.array(c["tree"]["parent"]), token=np.array(c["tree"]["token"]))
    rows = [[Fraction(x) for x in r] for r in c["rows"]]
    assert all(sum(r) == 1 and min(r) >= 0 for r in rows)
    probs = np.array([[float(x) for x in r] for r in rows])
    assert all(
        Fraction(float(x)) == x for r in rows for x in r
    )  # dyadic: the float rows are the rows
    law = raw_law(fn, tree, probs)
    canon = reference_block_law(tree, rows, Fraction(1))
    impl = {k: Fraction(0) for k in itertools.product(range(tree.num_nodes), range(len(rows[0])))}
    for k, p in law.items():
        impl[k] += p
    assert sum(impl.values()) == 1
    dev = max(abs(impl[(v, y)] - canon[v][y]) for v, y in impl)
    assert Fraction(1, 10**6) < dev <= Fraction(c["max_deviation"])
    assert {k: str(v) for k, v in impl.items() if v or canon[k[0]][k[1]]} == {
        tuple(map(int, k.split(","))): v for k, v in c["implementation_law"].items()
    }


@pytest.mark.parametrize("name", RAW)
def test_every_raw_uniform_mutant_gets_a_checked_counterexample(name):
    fn = BY_NAME[name].sample
    rep = prove_raw(fn, name=name, max_nodes=3, vocab=3 if name == "coin_reused_for_bonus" else 2)
    assert rep.status == COUNTEREXAMPLE and rep.exit_code == 1, rep.note
    assert rep.counterexample["verdict"] == "not exact"
    _check_counterexample(fn, rep.counterexample)


def test_coin_reuse_is_invisible_with_two_tokens():
    # with V = 2 the residual after a rejection has one token, so reusing the coin changes nothing: exact
    rep = prove_raw(BY_NAME["coin_reused_for_bonus"].sample, max_nodes=3, vocab=2)
    assert rep.status == EXACT_AT_POINTS and rep.exit_code == 3


@pytest.mark.parametrize(
    "fn,max_nodes", [(numpy_residual, 3), (numpy_predraw, 3), (numpy_quantised_predraw, 2)]
)
def test_correct_raw_verifiers_are_exact_at_the_points_searched_not_flagged(fn, max_nodes):
    # (a quantised coin branches into its 2^5 cells per level: two levels keep the run short)
    rep = prove_raw(fn, name=fn.__name__, max_nodes=max_nodes, vocab=3, search_points=4)
    assert rep.status == EXACT_AT_POINTS and rep.exit_code == 3, rep.counterexample
    assert (
        "not a symbolic proof" in rep.note
        and rep.branches > 0
        and rep.variants == 4 * sum(rep.trees.values())
    )


def test_interval_law_of_a_correct_raw_verifier_is_the_block_law_up_to_rounding():
    tree = DraftTree(parent=np.array([-1, 0, 0, 1]), token=np.array([-1, 0, 1, 2]))
    rows = [
        [Fraction(1, 4), Fraction(1, 2), Fraction(1, 4)],
        [Fraction(1, 8), Fraction(3, 8), Fraction(1, 2)],
        [Fraction(1, 2), Fraction(1, 4), Fraction(1, 4)],
        [Fraction(3, 4), Fraction(1, 8), Fraction(1, 8)],
    ]
    law = raw_law(numpy_predraw, tree, np.array(rows, dtype=float))
    canon = reference_block_law(tree, rows, Fraction(1))
    assert all(
        law.get((v, y), 0) == canon[v][y] for v in range(4) for y in range(3)
    )  # no rounding in predraw
    # the two-call interface driven through GeneratorRandomness(rng) gives the same exact law
    law2 = raw_law(
        lambda t, p, rng: residual_procedure(t, p, GeneratorRandomness(rng)),
        tree,
        np.array(rows, dtype=float),
    )
    assert max(
        abs(law2.get((v, y), 0) - canon[v][y]) for v in range(4) for y in range(3)
    ) < Fraction(1, 10**12)


@pytest.mark.parametrize(
    "mutant", [m for m in MUTANTS if m.procedure is not None][:5], ids=lambda m: m.name
)
def test_enumerable_mutants_behind_the_kit_signature_are_caught_too(mutant):
    rep = prove_raw(mutant.sample, name=mutant.name, max_nodes=3, vocab=3)
    assert rep.status == COUNTEREXAMPLE, rep.note


def test_what_the_stand_in_cannot_follow_is_unproved_with_the_reason():
    rep = prove_raw(BOUNDARY_MUTANTS["cumsum_falloff_token_zero"], max_nodes=2, vocab=2)
    assert (
        rep.status == UNPROVED
        and rep.exit_code == 3
        and "cannot follow" in rep.note
        and "numpy array" in rep.note
    )
    rep = prove_raw(BOUNDARY_MUTANTS["leq_coin_accepts_zero_child"], max_nodes=2, vocab=2)
    assert rep.status == UNPROVED and "float32" in rep.note

    def gumbel(tree, probs, rng):
        return 0, int(np.argmax(np.log(probs[0]) - np.log(-np.log(rng.random(probs.shape[1])))))

    with pytest.raises(CannotFollow, match="np.log"):
        raw_law(
            gumbel, DraftTree(parent=np.array([-1]), token=np.array([-1])), np.array([[0.5, 0.5]])
        )
    with pytest.raises(CannotFollow, match="Generator.integers"):
        raw_law(
            lambda t, p, rng: (0, int(rng.integers(2))),
            DraftTree(parent=np.array([-1]), token=np.array([-1])),
            np.array([[0.5, 0.5]]),
        )


def test_dyadic_rows_are_exact_in_float_and_sum_to_one():
    import random

    rng = random.Random(1)
    for zeros in (False, True):
        rows = dyadic_rows(4, 3, rng, zeros=zeros)
        assert all(sum(r) == 1 and all(Fraction(float(x)) == x for x in r) for r in rows)
        assert all((min(r) == 0) == zeros for r in rows)


def test_prove_command_detects_a_raw_verifier_and_prints_its_counterexample(capsys):
    assert takes_generator(BY_NAME["shared_uniform_across_levels"].sample)
    assert (
        main(
            [
                "prove",
                "helpers.mutants:shared_uniform_across_levels_verifier",
                "--max-nodes",
                "3",
                "--vocab",
                "2",
            ]
        )
        == 1
    )
    out = capsys.readouterr().out
    assert "COUNTEREXAMPLE (not exact" in out and "largest deviation" in out and "<-" in out
    assert (
        main(["prove", "helpers.cli_verifiers:numpy_predraw", "--max-nodes", "2", "--vocab", "2"])
        == 3
    )
    assert "EXACT AT THE POINTS SEARCHED (evidence, not a proof)" in capsys.readouterr().out


LAZY_PROVER = """
import sys
import exitlaw.simulate as s
heavy = [m for m in ("sympy", "scipy", "exitlaw.simulate.prove.prover") if m in sys.modules]
import exitlaw.simulate.prove.prover as p, exitlaw.simulate.prove.raw as r
import exitlaw.simulate.kit.conformance as c, exitlaw.simulate.kit.boundary as b
same = [s.prove_verifier is p.prove, s.prove_raw_verifier is r.prove_raw, s.check_verifier is c.check_verifier,
        s.run_boundary is b.run_boundary, s.format_proof is p.format_proof]
print(heavy, same)
sys.exit(1 if heavy or not all(same) else 0)
"""


def test_prover_and_checkers_are_lazy_exports_of_exitlaw_simulate():
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-c", LAZY_PROVER], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
