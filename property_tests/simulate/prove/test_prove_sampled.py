"""``exitlaw prove --mode marginal``: sampled-draft rules proved marginally exact with symbolic target and
draft rows (sign regions), a mutant refuted at a checked rational point, and the fixed-tree witness."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from exitlaw.cli import main
from exitlaw.simulate.prove.prover import COUNTEREXAMPLE, PROVED, UNPROVED, identities
from exitlaw.simulate.prove.sampled import (
    RULES,
    conditional_witness,
    marginal_gaps,
    prefix_rows,
    prove_marginal,
)
from exitlaw.simulate.randomness import enumerate_law
from exitlaw.simulate.verifiers.sampled_draft import verify_sampled
from exitlaw.theory import DraftTree
from helpers.cli_argv import cli_argv
from helpers.cli_verifiers import rrs_bonus_from_target


@pytest.mark.parametrize("name", ["chain", "specinfer", "without_replacement"])
def test_sampled_draft_rules_are_proved_marginally_exact_with_symbolic_drafts(name):
    rep = prove_marginal(RULES[name], name=name, max_nodes=3, vocab=2)
    assert rep.status == PROVED and rep.exit_code == 0, rep.note
    assert (
        rep.regions > rep.topologies
    )  # the rules compare p with q: more than one sign region was checked
    w = rep.conditional_witness  # and on a fixed drafted tree they are not exact
    assert w and any(w["implementation_law"][k] != w["block_law"][k] for k in w["block_law"])
    tree = DraftTree(parent=np.array(w["tree"]["parent"]), token=np.array(w["tree"]["token"]))
    p = [[Fraction(x) for x in r] for r in w["target_rows"]]
    q = [[Fraction(x) for x in r] for r in w["draft_rows"]]
    law = enumerate_law(
        lambda r: verify_sampled(
            list(tree.parent), list(tree.token), p, q, r, without_replacement=name != "specinfer"
        ),
        one=Fraction(1),
    )
    assert not identities(tree, p, law, Fraction(1))["block"]  # re-checked at the printed rows


def test_a_mutant_rule_gets_a_checked_rational_counterexample():
    rep = prove_marginal(rrs_bonus_from_target, max_nodes=2, vocab=2)
    assert rep.status == COUNTEREXAMPLE and rep.exit_code == 1
    c = rep.counterexample
    assert c["region"] and c["completed_minus_target"]
    target, draft, one, _ = prefix_rows(c["vocab"], c["horizon"])
    pt_rows = {
        tuple(int(t) for t in k.split(",") if t) if k != "()" else (): [Fraction(x) for x in r]
        for k, r in c["target_rows"].items()
    }
    q_rows = {
        tuple(int(t) for t in k.split(",") if t) if k != "()" else (): [Fraction(x) for x in r]
        for k, r in c["draft_rows"].items()
    }
    law = enumerate_law(
        lambda r: rrs_bonus_from_target(
            c["topology"], lambda s: pt_rows[tuple(s)], lambda s: q_rows[tuple(s)], r
        ),
        one=Fraction(1),
    )
    gaps = marginal_gaps(law, lambda s: pt_rows[tuple(s)], c["vocab"], c["horizon"], Fraction(1))
    assert {",".join(map(str, s)): str(g) for s, g in gaps.items() if g} == c[
        "completed_minus_target"
    ]


def test_marginal_identity_is_the_target_law_for_exact_sampling():
    target, _, one, _ = prefix_rows(2, 2)
    # emitting one exact target token is trivially marginally exact; emitting token 0 always is not
    exact = {(y,): target(())[y] for y in range(2)}
    assert all(g == 0 for g in marginal_gaps(exact, target, 2, 2, one).values())
    assert any(g != 0 for g in marginal_gaps({(0,): one}, target, 2, 2, one).values())


def test_tsubame_is_searched_at_rational_points_not_proved():
    rep = prove_marginal(
        RULES["tsubame"], name="tsubame", max_nodes=3, vocab=2, search_points=2, witness=False
    )
    assert rep.status == UNPROVED and "not symbolic" in rep.note


@pytest.mark.parametrize("name", ["chain", "specinfer", "without_replacement"])
def test_three_tokens_need_the_emptiness_certificates_and_are_proved(name):
    # with V = 3, assuming p > q on every token is a region the rules meet: certified empty, not a failure
    rep = prove_marginal(RULES[name], name=name, max_nodes=2, vocab=3, witness=False)
    assert rep.status == PROVED and rep.unresolved == 0, rep.note


def test_a_region_without_a_rational_point_makes_it_unproved_not_proved(monkeypatch):
    import exitlaw.simulate.prove.sampled as ps

    monkeypatch.setattr(
        ps, "point_in_region", lambda *a, **k: None
    )  # as if every failing region were empty
    rep = prove_marginal(rrs_bonus_from_target, max_nodes=2, vocab=2, witness=False)
    assert rep.status == UNPROVED and rep.unresolved > 0 and "not a proof" in rep.note


def test_conditional_witness_exceeds_the_ceiling_or_breaks_the_block_law():
    w = conditional_witness(max_nodes=2, vocab=2, without_replacement=True)
    assert w is not None and w["tree"]["parent"] == [-1, 0]


def _prove_marginal(verifier: str, max_nodes: int) -> int:
    """``exitlaw prove VERIFIER --mode marginal`` over two tokens; the exit status."""
    return main(cli_argv("prove", verifier, mode="marginal", max_nodes=max_nodes, vocab=2))


def test_prove_command_marginal_mode(capsys):
    assert (
        _prove_marginal("exitlaw.simulate.prove.sampled:without_replacement_rule", max_nodes=3) == 0
    )
    out = capsys.readouterr().out
    assert "PROVED (marginally exact)" in out and "NOT CONDITIONALLY EXACT (witness)" in out
    assert _prove_marginal("helpers.cli_verifiers:rrs_bonus_from_target", max_nodes=2) == 1
    assert "COUNTEREXAMPLE (not marginally exact" in capsys.readouterr().out


def test_prove_command_dispatches_marginal_mode_with_its_default_sizes(capsys):
    """``exitlaw prove --mode marginal`` (library: ``run_prove``) proves a sampled-draft rule at the
    marginal defaults (3 nodes, vocabulary 2), and refuses ``--rounds 2`` with it before any work."""
    import json

    from exitlaw.cli import main

    spec = "exitlaw.simulate.prove.sampled:without_replacement_rule"
    assert main(["prove", spec, "--mode", "marginal", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["max_nodes"] == 3 and rep["vocab"] == 2, rep
    assert main(["prove", spec, "--mode", "marginal", "--rounds", "2"]) == 2
    assert "--rounds 2 applies to fixed-tree procedures" in capsys.readouterr().err
