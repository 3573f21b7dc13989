"""The precondition pilot's statistics and rule (paper_repro/PILOT_PRECONDITION.md): per-prompt acceptance
from exact coverage, crossed variance components, projected power, the one-sided depth guard at its edge
and the base-choosing rule, on synthetic evaluations (the pilot's torch stages are its shipped run)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from exitlaw.paper_repro.mini.exittrain.authors_regime import paper_margin
from exitlaw.paper_repro.mini.exittrain.pilot import (
    PAPER_EXIT_TOKEN,
    PAPER_TOKEN_BASE,
    PilotConfig,
    analyse,
    analyse_cell,
    choose_base,
    components,
    per_prompt_acceptance,
    power,
    projected_se,
    seeds_needed,
)

CFG = PilotConfig()
SHIPPED = Path(__file__).resolve().parents[3] / "paper_repro" / "results" / "pilot_precondition"


def test_the_design_numbers():
    assert CFG.sharp_temperature == 0.5 and CFG.level == 0.95
    assert CFG.primary_level == pytest.approx(0.9875) and CFG.depth_tolerance == 0.10
    for t in (0.0, 1.0):
        assert PAPER_TOKEN_BASE[t] == pytest.approx(paper_margin("token", "base", t))
        assert PAPER_EXIT_TOKEN[t] == pytest.approx(paper_margin("exit", "token", t))


def test_per_prompt_acceptance_is_one_minus_one_over_the_mean_block():
    cp = np.array([1.0, 3.0, 0.0, 0.0])
    a = per_prompt_acceptance(cp, np.array([0, 0, 1, 1]))
    assert a == pytest.approx([1 - 1 / 3.0, 0.0])
    with pytest.raises(ValueError):
        per_prompt_acceptance(np.array([-1.0]), np.array([0]))


def test_components_recover_known_variances():
    rng = np.random.default_rng(0)
    s, p = 60, 80
    d = rng.normal(0, 0.3, (s, 1)) + rng.normal(0, 0.5, (1, p)) + rng.normal(0, 0.2, (s, p))
    c = components(d)
    assert c["seed"] == pytest.approx(0.09, rel=0.35)
    assert c["prompt"] == pytest.approx(0.25, rel=0.35)
    assert c["residual"] == pytest.approx(0.04, rel=0.1)
    assert projected_se(c, 8, 40) == pytest.approx(
        np.sqrt(c["seed"] / 8 + c["prompt"] / 40 + c["residual"] / 320)
    )


def test_power_and_the_seeds_it_needs():
    assert power(0.0, 1.0, 0.95) == pytest.approx(0.025)
    assert power(2.8, 1.0, 0.95) == pytest.approx(0.80, abs=0.01)
    assert power(1.0, 0.0, 0.95) == 1.0
    n = seeds_needed(lambda k: 1.0 / np.sqrt(k), 1.0, 0.95, 0.8)
    assert n == 8 and power(1.0, 1 / np.sqrt(n - 1), 0.95) < 0.8
    assert seeds_needed(lambda k: 10.0, 1.0, 0.95, 0.8, cap=20) is None


@pytest.mark.parametrize("ratio, passes", [(0.89, False), (0.90, True), (0.91, True), (1.3, True)])
def test_the_depth_guard_is_one_sided_at_its_edge(ratio, passes):
    rng = np.random.default_rng(1)
    base = rng.uniform(0.6, 0.8, 40)
    tok = base[None] + 0.03 + rng.normal(0, 0.005, (3, 40))
    cell = analyse_cell(base, tok, ratio, 0.0, CFG)
    assert cell["depth_guard_passes"] is passes
    assert cell["qualifies"] is passes  # every other condition holds here


def _cell(qualifies: bool, power_et: float, gain: float) -> dict:
    return {
        "qualifies": qualifies,
        "exit_token_power": power_et,
        "token_minus_base": {"mean": gain},
    }


def test_the_rule_chooses_by_power_then_gain_and_needs_both_cells():
    both = lambda p, g: {"0": _cell(True, p, g), "1": _cell(True, p, g)}  # noqa: E731
    assert choose_base({"a": both(0.9, 0.01), "b": both(0.95, 0.001)})["chosen"] == "b"
    # within 0.01 of the best power: the larger gain wins
    assert choose_base({"a": both(0.945, 0.01), "b": both(0.95, 0.001)})["chosen"] == "a"
    one_cell = {"0": _cell(True, 0.99, 0.1), "1": _cell(False, 0.99, 0.1)}
    assert choose_base({"a": one_cell, "b": both(0.85, 0.01)}) == {
        "qualifying": ["b"],
        "chosen": "b",
    }
    assert choose_base({"a": one_cell}) == {"qualifying": [], "chosen": None}


def _record(cp0, cp1, depth, prompts):
    return {"digest": "d", "prompt": prompts, "cp_T0": cp0, "cp_T1_sharp": cp1, "depth": depth}


def test_analyse_refuses_evaluations_on_other_anchors():
    prompts = [0, 0, 1, 1]
    r = _record([1.0] * 4, [0.5] * 4, [3] * 4, prompts)
    bad = {**r, "digest": "other"}
    with pytest.raises(ValueError, match="different anchors"):
        analyse({"full": {"base": r, "tokens": [r, bad]}}, CFG)


def test_the_shipped_pilot_is_its_evaluations_analysed():
    res = json.loads((SHIPPED / "pilot.json").read_text())
    evals = {}
    for c in res["candidates_run"]:
        read = lambda n: json.loads((SHIPPED / "eval" / f"{n}.json").read_text())  # noqa: E731
        evals[c] = {
            "base": read(f"{c}-base"),
            "tokens": [read(f"{c}-token-s{s}") for s in CFG.tune_seeds],
        }
    again = json.loads(json.dumps(analyse(evals, CFG)))
    assert again == res["analysis"]
    # the rule's outcome and the numbers the README quotes
    assert again["rule"] == {"qualifying": [], "chosen": None}
    fb = again["per_candidate"]["fallback"]
    assert fb["1"]["qualifies"] and not fb["0"]["qualifies"]
    assert fb["0"]["precondition_power"] == pytest.approx(0.48, abs=0.01)
    assert fb["0"]["addendum_prompts_for_precondition"] == 90
    assert (
        again["per_candidate"]["other-data"]["0"]["depth_ratio"] > 1.1
    )  # passes the one-sided guard
