"""Boundary-coin mode: flags the coin-0 ``<=`` acceptance and the cumulative-sum fall-off, passes the exact
verifiers, and its Generator stand-in returns exactly the scheduled values."""

from __future__ import annotations

import json

import numpy as np
import pytest

from exitlaw.cli import main
from exitlaw.simulate.kit.boundary import (
    BOUNDARY_FLAGGED,
    BOUNDARY_OK,
    F32_BELOW_ONE,
    F64_BELOW_ONE,
    BoundaryGenerator,
    _Schedule,
    boundary_values,
    run_boundary,
)
from exitlaw.simulate.randomness import GeneratorRandomness
from exitlaw.simulate.verifiers import predraw, residual, tev

from helpers.mutants import BOUNDARY_MUTANTS, MUTANTS


@pytest.mark.parametrize("name", sorted(BOUNDARY_MUTANTS))
def test_boundary_mode_flags_the_two_boundary_bugs(name):
    rep = run_boundary(BOUNDARY_MUTANTS[name], name=name)
    assert rep.verdict == BOUNDARY_FLAGGED and rep.exit_code == 1
    f = rep.flagged[0]
    assert {"case", "tree", "coin", "schedule", "emitted", "why"} <= set(f)
    if name == "leq_coin_accepts_zero_child":
        assert float.fromhex(f["coin"]) == 0.0 and "P(" in f["why"]
    else:
        assert float.fromhex(f["coin"]) > 0.99 and f["emitted"][1] == 0 and "= 0" in f["why"]


def test_the_boundary_bugs_pass_the_sampled_kit_at_its_sample_size():
    """Why the mode exists: at an ordinary sample size the coin that triggers the bug never comes up."""
    rng = np.random.default_rng(0)
    from exitlaw.simulate.kit.cases import conditional_cases
    from exitlaw.simulate.kit.checks import case_block_law
    case = next(c for c in conditional_cases(0) if c.name == "zero_edge")
    block, _ = case_block_law(case)
    for fn in BOUNDARY_MUTANTS.values():
        outs = [fn(case.tree, case.probs, rng) for _ in range(3000)]
        assert all(block[v, y] > 0 for v, y in outs)


@pytest.mark.parametrize("fn", [predraw, residual, tev], ids=["predraw", "residual", "tev"])
def test_boundary_mode_passes_the_exact_verifiers(fn):
    rep = run_boundary(fn, name=fn.__name__)
    assert rep.verdict == BOUNDARY_OK and rep.exit_code == 0 and not rep.errors
    assert rep.runs > 1000


def test_boundary_mode_also_flags_the_low_precision_cumsum_mutant_of_the_zoo():
    m = next(m for m in MUTANTS if m.name == "cumsum_boundary_zero_prob")
    assert run_boundary(m.sample).verdict == BOUNDARY_FLAGGED


def test_stand_in_returns_the_scheduled_values_through_spawn_and_generator_randomness():
    g = BoundaryGenerator(_Schedule(0.25, None))
    assert g.random() == 0.25 and g.uniform(1.0, 3.0) == 1.5 and list(g.random(3)) == [0.25] * 3
    assert g.spawn(1)[0].random() == 0.25
    assert BoundaryGenerator(_Schedule(F64_BELOW_ONE, None)).random(dtype=np.float32) == np.float32(F32_BELOW_ONE)
    at2 = BoundaryGenerator(_Schedule(0.0, 2))
    draws = [at2.random() for _ in range(4)]
    assert draws[2] == 0.0 and all(0.0 < d < 1.0 for i, d in enumerate(draws) if i != 2)
    # the verifiers' randomness interface spawns one stream per name: all share the schedule
    rand = GeneratorRandomness(BoundaryGenerator(_Schedule(0.0, None)))
    assert rand.bernoulli(0.0, stream="accept") is False and rand.categorical([0.0, 1.0], stream="bonus") == 1


def test_boundary_values_are_possible_outputs_of_random_and_hit_the_cumulative_sums():
    probs = np.array([[0.0, 0.3, 0.7], [0.5, 0.5, 0.0]])
    vals = boundary_values(probs)
    assert vals[0] == 0.0 and F64_BELOW_ONE in vals and F32_BELOW_ONE in vals
    assert all(0.0 <= v < 1.0 and (v * 2.0 ** 53).is_integer() for v in vals)
    assert any(abs(v - 0.3) < 1e-15 for v in vals) and 0.5 in vals


def test_check_boundary_command(capsys):
    assert main(["check", "helpers.mutants:leq_coin_accepts_zero_child", "--boundary"]) == 1
    assert "ZERO-PROBABILITY CELL" in capsys.readouterr().out
    assert main(["check", "exitlaw.simulate.verifiers:predraw", "--boundary", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["verdict"] == BOUNDARY_OK
