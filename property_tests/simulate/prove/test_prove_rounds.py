"""``exitlaw prove --rounds 2``: two-round losslessness with symbolic target rows, proved for the exact
verifiers and refuted (with a checked rational point) for a mutant verifier and for a dropped context."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from exitlaw.cli import main
from exitlaw.simulate.prove.prover import COUNTEREXAMPLE, PROVED
from exitlaw.simulate.prove.rounds import prove_two_rounds, trees, two_round_law
from exitlaw.simulate.prove.sampled import marginal_gaps
from exitlaw.simulate.verifiers import predraw_procedure, residual_procedure, tev_procedure
from exitlaw.theory import DraftTree
from helpers.mutants import residual_no_renormalise


@pytest.mark.parametrize(
    "name,proc",
    [("residual", residual_procedure), ("predraw", predraw_procedure), ("tev", tev_procedure)],
)
def test_exact_verifiers_are_lossless_over_two_rounds(name, proc):
    rep = prove_two_rounds(proc, name=name, max_nodes=3, vocab=2)
    assert rep.status == PROVED and rep.exit_code == 0 and rep.symbolic
    assert rep.pairs == len(trees(3, 2)) ** 2 == 25


def _recheck(proc, c, context=None):
    t1 = DraftTree(parent=np.array(c["tree1"]["parent"]), token=np.array(c["tree1"]["token"]))
    t2 = DraftTree(parent=np.array(c["tree2"]["parent"]), token=np.array(c["tree2"]["token"]))
    rows = {
        tuple(int(x) for x in k.split(",")) if k != "()" else (): [Fraction(x) for x in r]
        for k, r in c["target_rows"].items()
    }
    law = two_round_law(proc, t1, t2, lambda s: rows[tuple(s)], Fraction(1), context)
    gaps = marginal_gaps(law, lambda s: rows[tuple(s)], c["vocab"], c["horizon"], Fraction(1))
    assert {",".join(map(str, s)): str(g) for s, g in gaps.items() if g} == c[
        "completed_minus_target"
    ]


def test_a_mutant_verifier_is_refuted_over_two_rounds():
    rep = prove_two_rounds(residual_no_renormalise, max_nodes=3, vocab=2)
    assert rep.status == COUNTEREXAMPLE and rep.exit_code == 1
    _recheck(residual_no_renormalise, rep.counterexample)


def test_a_dropped_context_in_round_two_is_refuted():
    drop = lambda b1: b1[:-1]  # noqa: E731 -- round two verified without the first block's bonus token
    rep = prove_two_rounds(residual_procedure, max_nodes=2, vocab=2, context=drop)
    assert rep.status == COUNTEREXAMPLE
    _recheck(residual_procedure, rep.counterexample, drop)


def test_prove_command_two_rounds(capsys):
    assert (
        main(
            [
                "prove",
                "exitlaw.simulate.verifiers:tev_procedure",
                "--rounds",
                "2",
                "--max-nodes",
                "2",
            ]
        )
        == 0
    )
    assert "PROVED (lossless over two rounds)" in capsys.readouterr().out
    assert main(["prove", "helpers.mutants:residual_no_renormalise", "--rounds", "2"]) == 1
    assert "COUNTEREXAMPLE (not lossless over two rounds)" in capsys.readouterr().out
