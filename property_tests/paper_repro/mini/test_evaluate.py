"""The mini evaluation's per-round laws: 1 + C_p of each realised tree (the Rao-Blackwellised tau) at the
decode temperature and at the scoring temperature, checked against the exact reference law."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from exitlaw.paper_repro.mini.evaluate import RoundLaws, coverage, eval_cell
from exitlaw.theory import DraftTree, SamplingSettings, reference_law_from_edges

TINY_SEED = 4


def test_coverage_equals_the_reference_law_on_a_branching_tree():
    tree = DraftTree(parent=[-1, 0, 0, 1, 1, 3], token=[0, 1, 2, 3, 4, 5])
    edges = [1, Fraction(1, 2), Fraction(1, 4), Fraction(1, 3), Fraction(1, 5), Fraction(2, 3)]
    ref = reference_law_from_edges(tree, edges)
    assert coverage(tree.parent, np.array([float(e) for e in edges])) == pytest.approx(
        float(ref.coverage), abs=1e-15
    )


def _prompts(vocab):
    rng = np.random.default_rng(0)
    return [list(rng.integers(0, vocab, size=12)) for _ in range(3)]


def test_at_temperature_zero_the_rao_blackwellised_tau_is_the_observed_block_length(pair):
    target, drafter = pair
    res = eval_cell(
        target,
        drafter,
        _prompts(target.vocab_size),
        budget=8,
        temperature=0.0,
        verifier="predraw",
        max_new_tokens=12,
        seed=0,
        scoring_temperature=0.5,
    )
    assert res["per_prompt_rb_tau"] == pytest.approx(res["per_prompt_tau"], abs=1e-12)
    assert res["scoring_temperature"] == 0.5 and len(res["per_prompt_ceiling_ts"]) == 3
    assert all(d >= 1 for d in res["per_prompt_depth"])


def test_each_round_law_is_the_exact_expected_length_of_its_tree(pair):
    from exitlaw.engine.decode.loop import generate, trace_round
    from helpers.decode_configs import sampled_tree

    target, drafter = pair
    seen = []
    laws = RoundLaws(1.0, 0.5)

    def on_round(rec):
        laws(rec)
        seen.append(
            (trace_round(rec, SamplingSettings(1.0)), trace_round(rec, SamplingSettings(0.5)))
        )

    generate(
        target,
        drafter,
        _prompts(target.vocab_size)[0],
        sampled_tree(budget=8, max_new_tokens=10, seed=3),
        on_round=on_round,
    )
    assert seen and len(laws.rb) == len(seen)
    for (at_1, at_half), rb, ts in zip(seen, laws.rb, laws.ceiling_ts):
        exact_1 = reference_law_from_edges(at_1.tree, [Fraction(float(x)) for x in at_1.edge_prob])
        exact_half = reference_law_from_edges(
            at_half.tree, [Fraction(float(x)) for x in at_half.edge_prob]
        )
        assert rb == pytest.approx(float(exact_1.expected_length), rel=1e-12)
        assert ts == pytest.approx(float(exact_half.expected_length), rel=1e-12)
    assert laws.rb != laws.ceiling_ts  # the two temperatures give different laws on these trees


def test_without_a_scoring_temperature_the_cell_keeps_its_former_fields(pair):
    target, drafter = pair
    res = eval_cell(
        target,
        drafter,
        _prompts(target.vocab_size)[:1],
        budget=4,
        temperature=0.0,
        verifier="predraw",
        max_new_tokens=4,
        seed=0,
    )
    assert "per_prompt_rb_tau" not in res and set(res) >= {"tau", "per_prompt_tau", "s_per_token"}
