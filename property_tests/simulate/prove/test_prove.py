"""``exitlaw prove``: symbolic rows, the tree enumeration, proofs of the exact verifiers, a rational
counterexample for every enumerable mutant of the zoo, and the certificate."""

from __future__ import annotations

import itertools
import json
from fractions import Fraction

import numpy as np
import pytest

from exitlaw.cli import main
from exitlaw.simulate.kit.conformance import NOT_EXACT, NOT_SATURATING
from exitlaw.simulate.prove.prover import COUNTEREXAMPLE, PROVED, UNPROVED, identities, prove
from exitlaw.simulate.prove.symbolic import SymbolicError, rows_at, symbolic_one, symbolic_rows
from exitlaw.simulate.prove.tree_enum import all_trees, token_assignments, tree_shapes
from exitlaw.simulate.randomness import enumerate_law
from exitlaw.simulate.verifiers import (
    greedy_procedure,
    predraw_procedure,
    residual_procedure,
    tev_procedure,
)
from exitlaw.theory import DraftTree
from exitlaw.theory.exact import reference_block_law, reference_law
from helpers.mutants import MUTANTS


def test_tree_shapes_are_the_rooted_trees_counted_by_a000081():
    assert [len(tree_shapes(n)) for n in range(1, 9)] == [1, 1, 2, 4, 9, 20, 48, 115]
    for n in range(1, 7):
        shapes = tree_shapes(n)
        for parent in shapes:
            DraftTree(
                parent=np.array(parent), token=np.array([-1] + list(range(n - 1)))
            )  # valid topology
        assert len({_canon(p) for p in shapes}) == len(shapes)  # pairwise non-isomorphic


def _canon(parent):
    kids = [[] for _ in parent]
    for u in range(1, len(parent)):
        kids[parent[u]].append(u)

    def c(v):
        return tuple(sorted(c(u) for u in kids[v]))

    return c(0)


def _canon_tokens(parent, token):
    """The first-use relabelling of a token assignment (the orbit representative)."""
    relabel, out = {}, [-1]
    for t in token[1:]:
        relabel.setdefault(t, len(relabel))
        out.append(relabel[t])
    return out


@pytest.mark.parametrize("vocab", [2, 3])
def test_token_assignments_meet_every_relabelling_orbit(vocab):
    for parent in tree_shapes(5):
        listed = [tuple(t) for t in token_assignments(parent, vocab)]
        kids = [[u for u in range(1, len(parent)) if parent[u] == v] for v in range(len(parent))]
        every = [
            (-1,) + t
            for t in itertools.product(range(vocab), repeat=len(parent) - 1)
            if all(len({t[u - 1] for u in k}) == len(k) for k in kids)
        ]
        assert set(listed) <= set(every)
        assert {tuple(_canon_tokens(parent, t)) for t in every} == set(listed)


def test_symbolic_rows_sum_to_one_and_comparisons_that_depend_on_the_point_raise():
    rows = symbolic_rows(2, 3)
    one = symbolic_one(2, 3)
    assert sum(rows[0][1:], rows[0][0]) == one
    assert rows[0][0] > 0 and rows[0][0] < 1 and not rows[1][2] <= 0
    with pytest.raises(SymbolicError, match="depends on the rows"):
        _ = rows[0][0] >= Fraction(3, 10)
    with pytest.raises(SymbolicError):
        float(rows[0][0])
    with pytest.raises(SymbolicError):
        np.asarray(rows[0], dtype=np.float64)
    point = {0: Fraction(2), 1: Fraction(1, 3), 2: Fraction(5), 3: Fraction(1)}
    assert rows_at(2, 3, point)[0] == [Fraction(6, 10), Fraction(1, 10), Fraction(3, 10)]
    assert rows[0][0].at(point) == Fraction(6, 10)


def test_identities_match_the_exact_reference_on_rational_rows():
    tree = DraftTree.from_paths([(0,), (1,), (0, 2), (1, 0)])
    rows = rows_at(tree.num_nodes, 3, {i: Fraction(i + 1, 3) for i in range(tree.num_nodes * 2)})
    one = Fraction(1)
    law = enumerate_law(lambda r: predraw_procedure(tree, rows, r), one=one)
    ids = identities(tree, rows, law, one)
    assert ids["block"] and ids["mean_length"] and ids["completed_block"]
    assert ids["canonical"] == reference_block_law(tree, rows, one)
    assert ids["ceiling"] == reference_law(tree, rows, one).expected_length == ids["mean"]


@pytest.mark.parametrize(
    "name,proc,orders",
    [
        ("predraw", predraw_procedure, False),
        ("residual", residual_procedure, True),
        ("tev", tev_procedure, False),
    ],
)
def test_exact_verifiers_are_proved_on_every_tree_up_to_six_nodes(name, proc, orders):
    rep = prove(proc, name=name, max_nodes=6, vocab=2, every_child_order=orders)
    assert rep.status == PROVED and rep.exit_code == 0, rep.counterexample
    assert rep.shapes == {"1": 1, "2": 1, "3": 2, "4": 4, "5": 9, "6": 20}
    assert sum(rep.trees.values()) == sum(1 for _ in all_trees(6, 2))
    if orders:
        assert rep.variants > sum(rep.trees.values())  # more than one child order was run
    print(
        f"{name}: proved on {sum(rep.trees.values())} trees ({rep.variants} runs) in {rep.seconds:.1f} s "
        f"({rep.cpu_seconds:.1f} s CPU)"
    )


def test_greedy_is_not_symbolic_and_a_rational_counterexample_is_found():
    rep = prove(greedy_procedure, name="greedy", max_nodes=3, vocab=2)
    assert rep.status == COUNTEREXAMPLE and "not symbolic" in rep.note


ENUMERABLE = [m for m in MUTANTS if m.procedure is not None]


@pytest.mark.parametrize("mutant", ENUMERABLE, ids=[m.name for m in ENUMERABLE])
def test_every_enumerable_mutant_gets_a_checked_rational_counterexample(mutant):
    rep = prove(mutant.procedure, name=mutant.name, max_nodes=4, vocab=3)
    assert rep.status == COUNTEREXAMPLE and rep.exit_code == 1, rep.note
    c = rep.counterexample
    assert (
        c["verdict"]
        == {NOT_EXACT: "not exact", NOT_SATURATING: "exact but not saturating"}[mutant.expected]
    )
    # re-check the counterexample independently: exact enumeration at the printed rational rows
    tree = DraftTree(parent=np.array(c["tree"]["parent"]), token=np.array(c["tree"]["token"]))
    rows = [[Fraction(x) for x in r] for r in c["rows"]]
    assert all(sum(r) == 1 and min(r) > 0 for r in rows)
    law = enumerate_law(lambda r: mutant.procedure(tree, rows, r), one=Fraction(1))
    canon = reference_block_law(tree, rows, Fraction(1))
    impl = {k: Fraction(0) for k in itertools.product(range(tree.num_nodes), range(len(rows[0])))}
    for k, p in law.items():
        impl[k] += p
    assert any(impl[(v, y)] != canon[v][y] for v, y in impl)
    assert {k: str(v) for k, v in impl.items() if v or canon[k[0]][k[1]]} == {
        tuple(map(int, k.split(","))): v for k, v in c["implementation_law"].items()
    }


def _compares_probabilities(tree, rows, rand):
    """Exact (predraw), but branches on a comparison of probabilities before drawing."""
    if rows[0][0] >= rows[0][-1]:
        return predraw_procedure(tree, rows, rand)
    return predraw_procedure(tree, [list(r) for r in rows], rand)


def test_a_verifier_that_compares_probabilities_is_unproved_not_proved():
    rep = prove(_compares_probabilities, max_nodes=3, vocab=2, search_points=2)
    assert rep.status == UNPROVED and rep.exit_code == 3 and "not symbolic" in rep.note


def test_prove_command_writes_a_certificate(tmp_path, capsys):
    out = tmp_path / "cert"
    assert (
        main(
            [
                "prove",
                "exitlaw.simulate.verifiers:tev_procedure",
                "--max-nodes",
                "4",
                "--vocab",
                "2",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert "PROVED" in capsys.readouterr().out
    cert = json.loads((out / "results.json").read_text())
    assert cert["status"] == PROVED and len(cert["source_sha256"]) == 64 and cert["seconds"] > 0
    assert 0 < cert["cpu_seconds"]
    assert cert["shapes"] == {"1": 1, "2": 1, "3": 2, "4": 4} and sum(cert["trees"].values()) > 4
    assert (
        main(
            [
                "prove",
                "exitlaw.simulate.verifiers:tev_procedure",
                "--max-nodes",
                "2",
                "--out",
                str(out),
            ]
        )
        == 2
    )


def test_prove_command_prints_the_counterexample_of_a_mutant(capsys):
    assert main(["prove", "helpers.mutants:bonus_full_row", "--max-nodes", "3"]) == 1
    out = capsys.readouterr().out
    assert "COUNTEREXAMPLE (not exact" in out and "p_0 = [" in out and "<-" in out


@pytest.mark.parametrize(
    "spec,message",
    [
        ("exitlaw.simulate.verifiers:chain_speculative", "cannot be called as f(tree, rows, rand"),
        ("no_such_module_xyz:f", "cannot import module"),
    ],
)
def test_prove_command_rejects_what_it_cannot_prove(spec, message, capsys):
    assert main(["prove", spec, "--max-nodes", "2"]) == 2
    assert message in capsys.readouterr().err


def _specinfer_uniform_draft(tree, rows, rand):
    """Recursive rejection (without replacement) against a uniform drafter, on the realised tree."""
    from exitlaw.simulate.verifiers.sampled_draft import verify_sampled

    vocab = len(rows[0])
    q = [[Fraction(1, vocab)] * vocab for _ in rows]
    return verify_sampled(
        list(tree.parent), list(tree.token), rows, q, rand, without_replacement=True
    )


def test_sampled_draft_rule_gets_an_exact_witness_that_it_is_not_conditionally_exact():
    rep = prove(_specinfer_uniform_draft, max_nodes=3, vocab=2, search_points=20)
    assert rep.status == COUNTEREXAMPLE, rep.note
    assert (
        "not symbolic" in rep.note
    )  # it branches on the sign of p - q, so rational points were searched
    assert "block" in rep.counterexample["failed"]


def test_installed_script_imports_a_verifier_module_from_the_current_directory(tmp_path):
    """``exitlaw prove mymodule:fn`` (the console script, whose sys.path lacks the current directory)
    finds ``./mymodule.py``, as ``python -m`` would; the raw mutants are reachable from the repo root."""
    import subprocess
    import sys
    from pathlib import Path

    script = Path(sys.executable).parent / "exitlaw"
    (tmp_path / "myver.py").write_text(
        "from exitlaw.simulate.verifiers import tev_procedure as proc\n"
    )
    done = subprocess.run(
        [str(script), "prove", "myver:proc", "--max-nodes", "2", "--vocab", "2"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "status: proved" in done.stdout
    root = Path(__file__).resolve().parents[3]  # the repository root
    done = subprocess.run(
        [
            str(script),
            "prove",
            "property_tests.helpers.mutants:shared_uniform_across_levels_verifier",
            "--max-nodes",
            "3",
            "--vocab",
            "2",
        ],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1 and "status: counterexample" in done.stdout, (
        done.stdout + done.stderr
    )
