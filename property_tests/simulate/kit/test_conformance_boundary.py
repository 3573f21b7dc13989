"""Boundary-coin mode: flags the coin-0 ``<=`` acceptance (fixed-tree, late-sibling and chain ``coin <= p / q``)
and the cumulative-sum fall-off, passes the exact verifiers (saturating or not, fixed-tree and sampled-draft),
its schedules are systematic, and its Generator stand-in returns exactly the scheduled values."""

from __future__ import annotations

import json

import numpy as np
import pytest

from exitlaw.cli import main
from exitlaw.simulate.kit.boundary import (
    BOUNDARY_FAILED,
    BOUNDARY_FLAGGED,
    BOUNDARY_OK,
    EXTREMES,
    F32_BELOW_ONE,
    F64_BELOW_ONE,
    BoundaryGenerator,
    _Schedule,
    boundary_values,
    format_boundary,
    run_boundary,
    schedules,
)
from exitlaw.simulate.randomness import GeneratorRandomness
from exitlaw.simulate.verifiers import predraw, residual, tev
from exitlaw.simulate.verifiers.sampled_draft import (
    chain_speculative,
    specinfer_without_replacement,
)
from helpers.chain_samplers import chain_leq_coin
from helpers.mutants import BOUNDARY_MUTANTS, BY_NAME, MUTANTS


@pytest.mark.parametrize("name", sorted(BOUNDARY_MUTANTS))
def test_boundary_mode_flags_the_two_boundary_bugs(name):
    rep = run_boundary(BOUNDARY_MUTANTS[name], name=name)
    assert rep.verdict == BOUNDARY_FLAGGED and rep.exit_code == 1
    f = rep.flagged[0]
    assert {"case", "tree", "coin", "schedule", "draws", "emitted", "why"} <= set(f)
    if name.startswith("leq_coin"):
        assert float.fromhex(f["coin"]) == 0.0 and "zero-probability child was accepted" in f["why"]
    if (
        name == "leq_coin_late_sibling"
    ):  # reached only after the earlier siblings' coins rejected them
        assert (
            f["schedule"].startswith("draws 0..")
            and "1" in f["schedule"].split(" at ")[1].split(" ")[0]
        )
    if name == "cumsum_falloff_token_zero":
        # the draw that fell off is near 1 (the value itself or an earlier draw of the pattern)
        assert (
            max(float.fromhex(x) for x in f["draws"]) > 0.99
            and f["emitted"][1] == 0
            and "= 0" in f["why"]
        )


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


@pytest.mark.parametrize("name", ["first_child_only", "never_accept_deepest"])
def test_an_exact_non_saturating_verifier_is_never_called_not_exact(name):
    """Its bonus may be a child token of the exit node (a zero cell of the saturating block law): the
    boundary rule follows exactness (no block of target probability 0), so it passes."""
    rep = run_boundary(BY_NAME[name].sample, name=name)
    assert (
        rep.verdict == BOUNDARY_OK
        and not rep.flagged
        and not rep.errors
        and rep.calls_ok == rep.runs
    )


def test_marginal_boundary_flags_chain_leq_coin_and_passes_the_exact_sampled_draft_rules():
    bad = run_boundary(chain_leq_coin, mode="marginal", chains_only=True)
    assert bad.verdict == BOUNDARY_FLAGGED and float.fromhex(bad.flagged[0]["coin"]) == 0.0
    assert len({(str(f["tree"]), tuple(f["draws"])) for f in bad.flagged}) == len(
        bad.flagged
    )  # one per run
    # why the mode exists: the statistical kit calls it exact (a coin of exactly 0 has chance 2^-24 per draw)
    from exitlaw.simulate.kit.conformance import MARGINALLY_EXACT, run_kit

    assert run_kit(chain_leq_coin, mode="marginal", chains_only=True).verdict == MARGINALLY_EXACT
    assert "zero-probability child was accepted" in bad.flagged[0]["why"]
    for fn, chains in ((chain_speculative, True), (specinfer_without_replacement, False)):
        ok = run_boundary(fn, mode="marginal", chains_only=chains)
        assert (
            ok.verdict == BOUNDARY_OK
            and not ok.errors
            and ok.calls_ok == ok.runs
            and ok.drafts >= 20
        )
    # the hard cases: every target row forbids a token the drafter proposes
    from exitlaw.simulate.kit.cases import boundary_marginal_cases

    for case in boundary_marginal_cases(0, chains_only=False):
        rows = [case.target(()), case.target((1,)), case.draft(())]
        assert (rows[0] == 0).any() and (rows[1] == 0).any() and (rows[2] > 0).all()


def test_schedules_are_systematic_and_skip_what_a_shorter_run_never_read():
    """Every draw at the value; then for draw i every pattern of earlier draws at 0 / largest double below 1
    (2^i of them), the value at i and 0 after."""
    seen = []
    for sched in schedules([0.5], positions=3):
        seen.append((sched.prefix, [sched.next() for _ in range(4)]))  # a run that reads four draws
    top = F64_BELOW_ONE
    assert seen[0] == ((), [0.5] * 4)
    pats = [()] + [(a,) for a in EXTREMES] + [(a, b) for a in EXTREMES for b in EXTREMES]
    assert [p for p, _ in seen[1:]] == pats
    assert (
        seen[1][1] == [0.5, 0, 0, 0]
        and seen[3][1] == [top, 0.5, 0, 0]
        and seen[6][1] == [top, 0, 0.5, 0]
    )
    short = []
    for sched in schedules([0.5, 0.0], positions=4):
        short.append((sched.value, sched.prefix))
        sched.next()  # reads one draw only: no run with an earlier-draw pattern reads past it
    assert short == [(0.5, ()), (0.5, ()), (0.5, (0.0,)), (0.5, (top,)), (0.0, ())]


def test_a_boundary_run_where_every_call_fails_says_so():
    def always_fails(tree, probs, rng):
        raise RuntimeError("boom")

    rep = run_boundary(always_fails, positions=1)
    assert (
        rep.verdict == BOUNDARY_FAILED
        and rep.exit_code == 4
        and rep.calls_ok == 0
        and not rep.flagged
    )
    assert "every call of the verifier failed" in format_boundary(rep)


def test_stand_in_returns_the_scheduled_values_through_spawn_and_generator_randomness():
    g = BoundaryGenerator(_Schedule((), 0.25))
    assert g._schedule.constant
    assert g.random() == 0.25 and g.uniform(1.0, 3.0) == 1.5 and list(g.random(3)) == [0.25] * 3
    assert g.spawn(1)[0].random() == 0.25
    assert BoundaryGenerator(_Schedule((), F64_BELOW_ONE)).random(dtype=np.float32) == np.float32(
        F32_BELOW_ONE
    )
    assert (
        BoundaryGenerator(_Schedule((), 0.3)).random(dtype=np.float32) * 2**24 % 1 == 0
    )  # a float32 output
    pat = BoundaryGenerator(_Schedule((F64_BELOW_ONE, 0.0), 0.125, 0.0))
    assert [pat.random() for _ in range(4)] == [F64_BELOW_ONE, 0.0, 0.125, 0.0]
    # the verifiers' randomness interface spawns one stream per name: all share the schedule
    rand = GeneratorRandomness(BoundaryGenerator(_Schedule((), 0.0)))
    assert (
        rand.bernoulli(0.0, stream="accept") is False
        and rand.categorical([0.0, 1.0], stream="bonus") == 1
    )


def test_boundary_values_are_possible_outputs_of_random_and_hit_the_cumulative_sums():
    probs = np.array([[0.0, 0.3, 0.7], [0.5, 0.5, 0.0]])
    vals = boundary_values(probs)
    assert vals[0] == 0.0 and F64_BELOW_ONE in vals and F32_BELOW_ONE in vals
    assert all(0.0 <= v < 1.0 and (v * 2.0**53).is_integer() for v in vals)
    assert any(abs(v - 0.3) < 1e-15 for v in vals) and 0.5 in vals


def test_check_boundary_command(capsys):
    assert main(["check", "helpers.mutants:leq_coin_accepts_zero_child", "--boundary"]) == 1
    assert "ZERO-PROBABILITY BLOCK" in capsys.readouterr().out
    # the headline: the chain `coin <= p / q` sampler is flagged, its `coin < p / q` twin passes
    assert (
        main(
            [
                "check",
                "helpers.chain_samplers:chain_leq_coin",
                "--mode",
                "marginal",
                "--chains-only",
                "--boundary",
            ]
        )
        == 1
    )
    assert "ZERO-PROBABILITY BLOCK" in capsys.readouterr().out
    assert (
        main(
            [
                "check",
                "helpers.chain_samplers:chain_lt_coin",
                "--mode",
                "marginal",
                "--chains-only",
                "--boundary",
                "--json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert (
        out["verdict"] == BOUNDARY_OK
        and out["mode"] == "marginal"
        and out["calls_ok"] == out["runs"] > 1000
    )
    assert main(["check", "exitlaw.simulate.verifiers:predraw", "--boundary", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["verdict"] == BOUNDARY_OK
