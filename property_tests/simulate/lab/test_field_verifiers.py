"""UniVer and HSD: exact laws of the implementations (enumeration of every draw), mutants caught.

Marginal exactness (docs/design.md §1.8, "Verifiers over sampled drafts"): the tree's tokens are
drawn from the drafter inside the enumerated procedure, the emitted block is completed
by exact target sampling, and the law of the completed block must be the target's law.
Rows are exact rationals (``ToyModel``), so equality is exact.
"""

from __future__ import annotations

import json
from fractions import Fraction
from importlib import import_module

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exitlaw.paper_repro.paired_effects import records
from exitlaw.simulate.lab.field_lab import FieldLabConfig, expected_length, run_seed, summarise
from exitlaw.simulate.lab.toy_target import ToyModel, complete_block
from exitlaw.simulate.randomness import enumerate_law
from exitlaw.simulate.verifiers import (
    hsd,
    hsd_procedure,
    univer,
    univer_fixed_tree,
    univer_procedure,
    verify_sampled,
)
from exitlaw.simulate.verifiers.sampled_draft import _path, draw_draft
from exitlaw.theory import DistributionError, DraftTree, reference_law

# the modules (the package's attributes ``hsd`` and ``univer`` are the sampling functions)
hsd_module = import_module("exitlaw.simulate.verifiers.hsd")
univer_module = import_module("exitlaw.simulate.verifiers.univer")
ONE = Fraction(1)
TREES = (
    [-1, 0, 0],
    [-1, 0, 0, 1],
    [-1, 0, 0, 1, 1],
    [-1, 0, 0, 1, 2],
    [-1, 0, 1, 0],
    [-1, 0, 0, 0],
)


def _depth(topology):
    d = [0] * len(topology)
    for u in range(1, len(topology)):
        d[u] = d[topology[u]] + 1
    return d


def completed_law(procedure, topology, target, drafter, *, without_replacement: bool):
    """Law of the completed block when the tree is drafted inside the enumeration."""
    horizon = max(_depth(topology)) + 1

    def run(r):
        toks = draw_draft(topology, drafter, r, without_replacement=without_replacement)
        p = [target(_path(topology, toks, v)) for v in range(len(topology))]
        q = [drafter(_path(topology, toks, v)) for v in range(len(topology))]
        v, y = procedure(topology, toks, p, q, r)
        return complete_block(_path(topology, toks, v) + (y,), target, r, horizon)

    return enumerate_law(run, one=ONE), target.sequence_law(horizon)


@settings(max_examples=12)
@given(seed=st.integers(0, 10**6), depth=st.integers(1, 3), vocab=st.integers(2, 4))
def test_hsd_completed_block_law_equals_target_law(seed, depth, vocab):
    target, drafter = ToyModel(vocab, seed), ToyModel(vocab, seed + 7, zero_prob=0.3)
    law, truth = completed_law(
        hsd_procedure, list(range(-1, depth)), target, drafter, without_replacement=False
    )
    assert law == truth


@settings(max_examples=10)
@given(seed=st.integers(0, 10**6), shape=st.sampled_from(TREES), vocab=st.integers(3, 4))
def test_univer_completed_block_law_equals_target_law(seed, shape, vocab):
    target, drafter = ToyModel(vocab, seed), ToyModel(vocab, seed + 7, zero_prob=0.0)
    law, truth = completed_law(
        univer_procedure, list(shape), target, drafter, without_replacement=True
    )
    assert law == truth


def test_univer_on_a_chain_is_hsd():
    target, drafter = ToyModel(3, 5), ToyModel(3, 12, zero_prob=0.0)
    topo = [-1, 0, 1, 2]
    a, _ = completed_law(univer_procedure, topo, target, drafter, without_replacement=False)
    b, _ = completed_law(hsd_procedure, topo, target, drafter, without_replacement=False)
    assert a == b


# ----- helpers.mutants: each is caught by the same exact check ---------------------------------------
def _uncapped_levels(spine, tokens, p_rows, q_rows):
    """Mutant: cap the *uncapped* products, ``min(P_k, Q_k)``, instead of the recursive cap."""
    zero = p_rows[0][0] - p_rows[0][0]
    P, Q = [zero + 1], [zero + 1]
    for k in range(1, len(spine)):
        par, x = spine[k - 1], int(tokens[spine[k]])
        P.append(P[-1] * p_rows[par][x])
        Q.append(Q[-1] * q_rows[par][x] / sum(q_rows[par], zero))
    return [min(a, b) for a, b in zip(P, Q)], Q


def _sibling_plan_with_replacement(r, q, siblings, tokens, rand):
    """Mutant: the later siblings treated as i.i.d. draws (the drawn token is never removed from ``q``)."""
    zero = r[0] - r[0]
    for u in siblings:
        x = int(tokens[u])
        sr, sq = sum(r, zero), sum(q, zero)
        if rand.bernoulli(min(zero + 1, (r[x] / sr) / (q[x] / sq)), stream="accept"):
            return u, r
        r = [max(ri / sr - qi / sq, zero) for ri, qi in zip(r, q)]
    return None, r


def _seeds_caught(procedure, parent, vocab, zero_prob, wor) -> int:
    """On how many of six seeds the completed law of ``procedure`` on the tree ``parent`` differs
    from the truth (``wor``: siblings drawn without replacement)."""
    caught = 0
    for seed in range(6):
        target, draft = ToyModel(vocab, seed), ToyModel(vocab, seed + 7, zero_prob=zero_prob)
        law, truth = completed_law(procedure, parent, target, draft, without_replacement=wor)
        caught += law != truth
    return caught


def test_hsd_mutant_without_the_recursive_cap_is_caught(monkeypatch):
    monkeypatch.setattr(hsd_module, "spine_levels", _uncapped_levels)
    assert _seeds_caught(hsd_procedure, [-1, 0, 1], vocab=2, zero_prob=0.3, wor=False) >= 1


def test_univer_mutant_with_replacement_siblings_is_caught(monkeypatch):
    monkeypatch.setattr(univer_module, "sibling_plan", _sibling_plan_with_replacement)
    assert _seeds_caught(univer_procedure, [-1, 0, 0, 0], vocab=4, zero_prob=0.0, wor=True) >= 1


# ----- conditionally (on a realised tree) the rules are not exact -----------------------------
def test_hsd_conditional_length_exceeds_the_fixed_tree_ceiling():
    """p = q uniform on a one-token chain: HSD accepts surely, E[L] = 2 > 1 + C_p = 1.5."""
    half = [Fraction(1, 2)] * 2
    law = enumerate_law(
        lambda r: hsd_procedure([-1, 0], [-1, 0], [half, half], [half, half], r), one=ONE
    )
    tree = DraftTree.chain([0])
    mean_len = sum((v + 1) * p for (v, _), p in law.items())
    assert mean_len == 2 and reference_law(tree, [half, half]).expected_length == Fraction(3, 2)


def test_sampling_forms_validate_and_run():
    tree = DraftTree.from_paths([(0,), (1,), (0, 2)])
    p = np.full((4, 3), 1 / 3)
    rng = np.random.default_rng(0)
    v, y = univer(tree, p, p, rng)
    assert 0 <= v < 4 and 0 <= y < 3
    assert univer_fixed_tree(tree, p, rng)[0] in range(4)
    with pytest.raises(ValueError, match="chain"):
        hsd(tree, p, p, rng)
    q = p.copy()
    q[0] = [0.0, 0.5, 0.5]  # node 1's token 0 has draft probability 0: it cannot have been drawn
    with pytest.raises(DistributionError, match="draft probability 0"):
        univer(tree, p, q, rng)


def test_expected_length_is_the_mean_of_the_enumerated_law():
    target, drafter = ToyModel(3, 2, exact=False), ToyModel(3, 9, zero_prob=0.0, exact=False)
    topo, toks = [-1, 0, 0, 1], [-1, 0, 1, 2]
    p = [target(_path(topo, toks, v)) for v in range(4)]
    q = [drafter(_path(topo, toks, v)) for v in range(4)]
    law = enumerate_law(lambda r: univer_procedure(topo, toks, p, q, r), one=1.0)
    full = sum(p_ * (_depth(topo)[v] + 1) for (v, _), p_ in law.items())
    assert expected_length(univer_procedure, topo, toks, p, q) == pytest.approx(full, abs=1e-12)
    law = enumerate_law(
        lambda r: verify_sampled(topo, toks, p, q, r, without_replacement=True), one=1.0
    )
    full = sum(p_ * (_depth(topo)[v] + 1) for (v, _), p_ in law.items())
    assert expected_length(
        verify_sampled, topo, toks, p, q, without_replacement=True
    ) == pytest.approx(full, abs=1e-12)


def test_field_lab_writes_ledger_records():
    cfg = FieldLabConfig.from_dict(dict(vocab=16, budget=4, horizon=3, seeds=2, contexts=4))
    summary = summarise(cfg, [run_seed(cfg, s) for s in range(2)])
    recs = records({"paired_effects": summary["paired_effects"]})
    assert {r["comparison"] for r in recs} == {"univer-rrs_wo", "univer-rrs_iid", "hsd-chain_sd"}
    for r in recs:
        assert r["diff"]["lo"] <= r["diff"]["mean"] <= r["diff"]["hi"] and r["n_seeds"] == 2
    assert all(v["mean_ceiling"] >= 1.0 for v in summary["rules"].values())


def test_field_lab_writes_json_and_markdown_and_never_overwrites(tmp_path):
    from exitlaw.simulate.lab.field_lab import run_field_lab

    cfg = FieldLabConfig.from_dict(dict(vocab=12, budget=3, horizon=2, seeds=2, contexts=3))
    out = tmp_path / "lab.json"
    result = run_field_lab([cfg], out, progress=False)
    assert out.exists() and out.with_suffix(".md").exists()
    assert records(result) == result["runs"][0]["paired_effects"]
    assert "univer-rrs_wo" in out.with_suffix(".md").read_text()
    with pytest.raises(FileExistsError, match="already exists"):
        run_field_lab([cfg], out, progress=False)
    with pytest.raises(ValueError, match="seeds"):
        FieldLabConfig(seeds=1)


def test_field_lab_command_writes_the_record_file(tmp_path, capsys):
    from exitlaw.cli import main

    out = tmp_path / "lab"
    assert (
        main(
            [
                "simulate",
                "field-lab",
                "--out",
                str(out),
                "--seeds",
                "2",
                "--contexts",
                "2",
                "--budget",
                "3",
                "--horizon",
                "2",
                "--vocab",
                "12",
                "--noise",
                "1.0",
            ]
        )
        == 0
    )
    assert "univer-rrs_wo" in capsys.readouterr().out
    assert len(records(json.loads((out / "field_lab.json").read_text()))) == 3
    assert (out / "field_lab.md").is_file()


def test_univer_rejects_a_repeated_sibling():
    """Siblings drawn without replacement never repeat: a repeated token cannot have been drawn."""
    half = [Fraction(1, 2)] * 2
    rows = [[Fraction(1, 4), Fraction(3, 4)]] + [half] * 3
    with pytest.raises(DistributionError, match="repeated sibling"):
        # root children 0, 0 (node 2 repeats node 1): reached when the spine walks back to the root
        enumerate_law(
            lambda r: univer_procedure([-1, 0, 0, 1], [-1, 0, 0, 1], rows, [half] * 4, r), one=ONE
        )
