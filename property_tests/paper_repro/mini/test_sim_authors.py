"""The simulated authors' recipe judged (paper_repro/mini/exittrain/sim_authors.py): both units, the
one-sided depth guard at its edge, the 98.75 % level of the co-primary family, the size rule beside the
design's, and the shipped results re-judged from their own simulation file."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from exitlaw.paper_repro.mini.exittrain.sim_authors import (
    OUTSIDE,
    PRIMARY_LEVEL,
    analyse,
    paired_t,
    paper_relative,
    precondition,
    report,
)

SHIPPED = Path(__file__).resolve().parents[3] / "paper_repro" / "results" / "sim_exittrain_authors"
STRENGTHS = ["literal", 0.02]


def _raw(
    exit_gain=(0.0, 0.0),
    depth_ratio=1.0,
    token_gain=1.0,
    noise=0.01,
    seeds=10,
    exact=None,
    exit_noise=0.0,
):
    """A synthetic simulation: start tau 8 / 7, token + ``token_gain``, exit@literal + ``exit_gain`` (tau)."""
    rng = np.random.default_rng(0)
    start = np.stack([np.full(seeds, 8.0), np.full(seeds, 7.0)], 1) + rng.normal(
        0, noise, (seeds, 2)
    )
    arms = ["token"] + [
        f"{w}@{'literal' if s == 'literal' else f'{100 * s:g}% of CE'}"
        for s in STRENGTHS
        for w in ("prefix", "exit", "exit-depth")
    ]
    tau = {a: start + token_gain + rng.normal(0, noise, (seeds, 2)) for a in arms}
    tau["exit@literal"] = (
        tau["token"] + np.asarray(exit_gain)[None] + rng.normal(0, exit_noise, (seeds, 2))
    )
    if exact is not None:
        tau["exit@literal"] = tau["token"] + exact
    return {
        "config": {"strengths": STRENGTHS},
        "arms": arms,
        "temperatures": [0.0, 1.0],
        "start_tau": start.tolist(),
        "start_depth": [5.0] * seeds,
        "tau": {a: v.tolist() for a, v in tau.items()},
        "depth": {a: [5.0 * depth_ratio] * seeds for a in arms},
    }


def test_the_depth_guard_is_one_sided_and_its_edge_passes():
    assert not precondition(_raw(depth_ratio=0.89))["depth_guard_passes"]
    at = precondition(_raw(depth_ratio=0.90))
    assert at["depth_ratio"] == pytest.approx(0.90) and at["depth_guard_passes"] and at["holds"]
    deeper = precondition(_raw(depth_ratio=1.30))  # a fine-tuning that grows deeper trees passes
    assert deeper["depth_guard_passes"] and deeper["holds"]
    assert not precondition(_raw(depth_ratio=0.89))["holds"]


def test_a_failed_precondition_puts_every_primary_verdict_outside_the_regime():
    res = analyse(_raw(exit_gain=(2.0, 2.0), token_gain=-0.5))
    assert not res["precondition"]["holds"]
    assert {r["verdict_a"] for r in res["primary"]} == {OUTSIDE}
    assert {r["size_verdict_relative_tau_pct"] for r in res["primary"]} == {OUTSIDE}


def test_both_units_and_both_rules():
    # a gain of the paper's relative size at both cells: reproduced under both rules in both units
    big = (
        9.0 * paper_relative("exit", "token", 0.0) / 100,
        8.0 * paper_relative("exit", "token", 1.0) / 100,
    )
    rows = {
        (r["a"], r["b"], r["temperature"]): r
        for r in analyse(_raw(exit_gain=big, exit_noise=0.25))["primary"]
    }
    r = rows[("exit@literal", "token", 1.0)]
    assert r["verdict_a"] == r["verdict_relative"] == "reproduced in simulation"
    assert (
        r["size_verdict_delta_a"]
        == r["size_verdict_relative_tau_pct"]
        == "reproduced in simulation"
    )
    raw = _raw(exit_gain=big, exit_noise=0.25)
    ta, tb = np.asarray(raw["tau"]["exit@literal"])[:, 1], np.asarray(raw["tau"]["token"])[:, 1]
    assert r["delta_a"]["mean"] == pytest.approx(np.mean(1 / tb - 1 / ta))
    assert r["relative_tau_pct"]["mean"] == pytest.approx(np.mean(100 * (ta / tb - 1)))
    # a tiny sure gain: the direction holds, the paper's size does not
    tiny = {
        (x["a"], x["b"], x["temperature"]): x
        for x in analyse(_raw(exit_gain=(0.01, 0.01)))["primary"]
    }
    t = tiny[("exit@literal", "token", 0.0)]
    assert t["verdict_a"] == "reproduced in simulation"
    assert t["size_verdict_delta_a"] == "not reproduced in simulation"


def test_the_co_primary_family_is_judged_at_98_75_percent():
    """An interval whose 95 % bound excludes 0 and whose 98.75 % bound does not: not reproduced."""
    n = 10
    q95, q9875 = stats.t.ppf(0.975, n - 1), stats.t.ppf(1 - 0.0125, n - 1)
    z = np.random.default_rng(1).normal(size=n)
    z = (z - z.mean()) / z.std(ddof=1)  # mean 0, sd 1 exactly
    ratio = (q95 + q9875) / 2  # mean / se between the two quantiles
    gain = 0.05 * (z + ratio / np.sqrt(n))  # mean / (sd / sqrt n) = ratio
    exact = np.stack([gain, gain], 1)
    res = analyse(_raw(exact=exact, noise=0.0))
    r = next(x for x in res["primary"] if x["b"] == "token" and x["temperature"] == 1.0)
    assert r["delta_a"]["level"] == PRIMARY_LEVEL
    assert r["relative_tau_pct"]["lo"] < 0 < paired_t(r["relative_tau_pct"]["per_seed"], 0.95)["lo"]
    assert r["verdict_relative"] != "reproduced in simulation"


def test_power_and_mde_follow_the_interval():
    d = np.random.default_rng(2).normal(0.01, 0.002, 10)
    lo = paired_t(d, 0.95, 0.005)
    hi = paired_t(d, 0.9875, 0.005)
    assert hi["hi"] - hi["lo"] > lo["hi"] - lo["lo"] and hi["mde"] > lo["mde"]
    assert paired_t(d, 0.95, 0.02)["power_vs_paper"] > lo["power_vs_paper"] > 0.5
    with pytest.raises(ValueError, match="per-seed"):
        paired_t([1.0], 0.95)


def test_the_shipped_results_are_the_shipped_simulation_judged():
    raw = json.loads((SHIPPED / "simulation.json").read_text(encoding="utf-8"))
    shipped = json.loads((SHIPPED / "results.json").read_text(encoding="utf-8"))
    again = json.loads(json.dumps(report(raw)["analysis"]))
    assert again == shipped["analysis"]
    verdicts = {
        (r["a"], r["b"], r["temperature"]): r["size_verdict_delta_a"] for r in again["primary"]
    }
    assert set(verdicts.values()) == {"not reproduced in simulation"}
    assert again["precondition"]["holds"] and len(raw["seeds"]) == 10


@pytest.mark.parametrize(
    "lo, hi",
    [
        (0.5, 5.9),
        (0.5, 5.9 - 1e-9),
        (5.9, 7.0),
        (5.9 + 1e-9, 7.0),
        (0.0, 7.0),
        (1e-9, 7.0),
        (-1.0, 5.0),
        (-1.0, 6.0),
        (-3.0, -1.0),
    ],
)
def test_the_local_size_rule_is_the_ledgers(lo, hi):
    """paper_repro/mini may not import the ledger's verdicts; its copy of R3 must agree with them."""
    from exitlaw.paper_repro.mini.exittrain.sim_authors import size_rule
    from exitlaw.paper_repro.verdicts import Interval, Rule, decide

    want = decide(Rule("size", "%", paper_effect=5.9), Interval((lo + hi) / 2, lo, hi)).verdict
    assert size_rule(lo, hi, 5.9) == want
