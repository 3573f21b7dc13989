"""Verdict rules and gates at their boundaries: intervals placed so that the 90 %, 95 % and 97.5 %
intervals, the point estimate, the paper's effect and the margin fall on different sides, each verdict
compared with an independent reading of the rule's text (not the code under test).

A rule that decides on the wrong interval level, or a gate that reads the point estimate instead of the
interval's end, passes every case far from a boundary; these cases sit within 0.02 standard errors of
one, at every level a rule may use.
"""

from __future__ import annotations

from statistics import NormalDist

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exitlaw.paper_repro.ledger import CLAIMS
from exitlaw.paper_repro.mini.exittrain import paper_regime_report as report
from exitlaw.paper_repro.mini.exittrain.paper_regime import PaperRegimeConfig
from exitlaw.paper_repro.mini.stats import claim_verdict, pair_verdict
from exitlaw.paper_repro.paired_effects import PairedEffectError, paired_interval
from exitlaw.paper_repro.verdicts import Interval, Rule, decide

ALPHAS = (0.05, 0.025)  # the ledger's one comparison, and each of two Bonferroni comparisons


def z(level: float) -> float:
    """Two-sided critical value of a ``level`` interval."""
    return NormalDist().inv_cdf((1 + level) / 2)


# standard-error multiples at which some level's interval end crosses a boundary: 90 %, 95 %, 97.5 %, 99 %
CRITICAL = tuple(z(level) for level in (0.90, 0.95, 0.975, 0.99))


def independent_verdict(kind, side, paper, margin, alpha, est, se) -> str:
    """The rule text of ``paper_repro.verdicts`` (R2-R4), read afresh: intervals built from ``est`` and
    ``se`` here, in the paper's direction."""
    half = z(1 - alpha) * se
    if kind == "equivalence":
        half_tost = z(1 - 2 * alpha) * se
        if -margin < est - half_tost and est + half_tost < margin:
            return "reproduced"
        if est - half > margin or est + half < -margin:
            return "contradicted"
        return "inconclusive"
    # orient so that the paper's side is positive
    lo, hi = (est - half, est + half) if side > 0 else (-(est + half), -(est - half))
    e = None if paper is None else side * paper
    excludes_zero_on_papers_side = lo > 0
    if kind == "direction" and excludes_zero_on_papers_side:
        return "reproduced"
    if kind == "size" and excludes_zero_on_papers_side:
        if lo <= e <= hi:
            return "reproduced"
        if lo > e:  # "lies beyond e (a larger effect than the paper's)"
            return "inconclusive"
        # below e: R2's "otherwise" clauses decide
    if hi < (0.0 if e is None else e):
        return "contradicted"
    return "inconclusive"


def near(boundary: float, se: float, data) -> float:
    """A point within 0.02 se of ``boundary`` shifted by one critical multiple of ``se`` either way, and
    at least 1e-6 se off it: on the boundary itself the verdict is float rounding's, not the rule's."""
    k = data.draw(st.sampled_from(CRITICAL + (0.0,)))
    sign = data.draw(st.sampled_from((-1.0, 1.0)))
    jitter = data.draw(st.floats(1e-6, 0.02)) * data.draw(st.sampled_from((-1.0, 1.0)))
    return boundary + sign * k * se + jitter * se


@settings(max_examples=400, deadline=None)
@given(
    kind=st.sampled_from(("direction", "size", "equivalence")),
    side=st.sampled_from((1, -1)),
    alpha=st.sampled_from(ALPHAS),
    se=st.floats(0.05, 5.0),
    paper_mag=st.floats(0.5, 10.0),
    quoted=st.booleans(),
    data=st.data(),
)
def test_decide_matches_the_rule_text_at_every_boundary(
    kind, side, alpha, se, paper_mag, quoted, data
):
    paper = side * paper_mag if (quoted or kind == "size") and kind != "equivalence" else None
    margin = paper_mag if kind == "equivalence" else None
    # the boundaries of this rule: 0, the paper's effect, the margin on either side
    boundaries = (
        [0.0] + ([paper] if paper is not None else []) + ([margin, -margin] if margin else [])
    )
    est = near(data.draw(st.sampled_from(boundaries)), se, data)
    rule = Rule(kind, "%", side=side, paper_effect=paper, margin=margin, alpha=alpha)
    got = decide(rule, Interval.normal(est, se, 1 - alpha)).verdict
    assert got == independent_verdict(kind, side, paper, margin, alpha, est, se)


def test_the_boundary_cases_tell_the_levels_apart():
    """The generator's cases are not vacuous: between 0 and the paper's effect the 95 % and 97.5 % rules
    disagree, and so do the 90 % and 95 % intervals of an equivalence rule."""
    se = 1.0
    est = (z(0.95) + z(0.975)) / 2  # excludes 0 at 95 %, not at 97.5 %
    rule = {
        a: Rule("direction", "%", alpha=a) for a in ALPHAS
    }  # qualitative: contradicted iff hi < 0
    v = {a: decide(rule[a], Interval.normal(est, se, 1 - a)).verdict for a in ALPHAS}
    assert v == {0.05: "reproduced", 0.025: "inconclusive"}
    for a in ALPHAS:
        assert v[a] == independent_verdict("direction", 1, None, None, a, est, se)
    with pytest.raises(
        ValueError, match="level"
    ):  # a rule never decides on another level's interval
        decide(rule[0.025], Interval.normal(est, se, 0.95))


@settings(max_examples=300, deadline=None)
@given(margin=st.floats(0.5, 10.0), data=st.data())
def test_pair_verdict_and_claim_verdict_match_the_rule_text_at_the_edges(margin, data):
    """``pair_verdict``'s docstring, read afresh, with each end of the interval just either side of 0 or
    the margin."""
    eps = data.draw(st.sampled_from((-1e-9, 1e-9, -0.01, 0.01)))
    lo = data.draw(st.sampled_from((0.0, -margin, -2 * margin))) + eps
    hi = max(
        lo,
        data.draw(st.sampled_from((0.0, margin, 2 * margin)))
        + data.draw(st.sampled_from((-1e-9, 1e-9))),
    )
    want = (
        "A > B"
        if lo > 0
        else "A < B"
        if hi < 0
        else "smaller than the paper's effect"
        if hi < margin
        else "inconclusive"
    )
    assert pair_verdict(lo, hi, margin) == want
    assert claim_verdict(want) == {
        "A > B": "reproduced",
        "A < B": "contradicted",
        "smaller than the paper's effect": "contradicted",
    }.get(want, "inconclusive")


def _normal_pair(mean: float, se: float, level: float) -> dict:
    h = z(level) * se
    return {
        "mean": mean,
        "lo": mean - h,
        "hi": mean + h,
        "rel_mean": mean,
        "rel_lo": mean - h,
        "rel_hi": mean + h,
        "rel_mde": 2.8 * se,
        "level": level,
        "seeds": 8,
        "prompts": 40,
    }


@settings(max_examples=200, deadline=None)
@given(se=st.floats(0.2, 3.0), data=st.data())
def test_paper_regime_gate_and_primary_verdicts_read_the_declared_interval_ends(se, data):
    """The precondition holds iff the 95 % interval's LOWER END of token - base is > 0 (not the point
    estimate); each primary comparison is judged on its 97.5 % interval against the paper's effect; a
    failed precondition makes every primary verdict 'outside'."""
    cfg = PaperRegimeConfig()
    means = {
        ("token", "base"): near(0.0, se, data),
        **{
            pair: near(
                data.draw(st.sampled_from((0.0, cfg.margins_pct[f"{pair[0]}-{pair[1]}"]))), se, data
            )
            for pair in report.PRIMARY
        },
    }
    levels_asked = {}

    def fake_compare(cells, cfg_, a, b, domain, t, budget, estimand, level):
        levels_asked[(a, b)] = level
        return _normal_pair(means[(a, b)], se, level)

    mp = pytest.MonkeyPatch()
    mp.setattr(report, "compare", fake_compare)
    mp.setattr(report, "_available", lambda *a, **k: False)
    try:
        out = report.analyse({}, cfg, 0.5)
    finally:
        mp.undo()
    holds = means[("token", "base")] - z(0.95) * se > 0
    assert out["precondition"]["holds"] == holds
    assert levels_asked[("token", "base")] == 0.95
    for a, b in report.PRIMARY:
        assert levels_asked[(a, b)] == 0.975
        m = cfg.margins_pct[f"{a}-{b}"]
        lo, hi = means[(a, b)] - z(0.975) * se, means[(a, b)] + z(0.975) * se
        want = "reproduced" if lo > 0 else "contradicted" if hi < 0 or hi < m else "inconclusive"
        assert out["primary"][f"{a}-{b}"]["verdict"] == (want if holds else report.OUTSIDE)


def _record(comparison: str, lo: float, hi: float, level: float, cell: str = "primary") -> dict:
    return {
        "comparison": comparison,
        "metric": "tau",
        "setting": {"cell": cell},
        "rel_pct": {"mean": (lo + hi) / 2, "lo": lo, "hi": hi},
        "level": level,
    }


def test_paired_interval_pools_at_the_records_level_and_refuses_a_mix():
    data = {"paired_effects": [_record("exit-token", -2.5, 3.5, 0.975)]}
    ci, _ = paired_interval(data, "exit-token", {"cell": "primary"}, 1)
    assert ci.level == 0.975 and ci.lo == pytest.approx(-2.5) and ci.hi == pytest.approx(3.5)
    mixed = {
        "paired_effects": [
            _record("exit-token", -2.5, 3.5, 0.975, "a"),
            _record("exit-token", -2.0, 3.0, 0.95, "b"),
        ]
    }
    with pytest.raises(PairedEffectError, match="mix interval levels"):
        paired_interval(mixed, "exit-token", {}, 2)


def test_every_ledger_row_is_decided_at_the_level_its_words_declare():
    """A claim whose estimand says 97.5 % has a rule at alpha 0.025 (and says no other level)."""
    for claim in CLAIMS:
        words = claim.estimand
        if "97.5 %" in words:
            assert claim.rule.alpha == pytest.approx(0.025), claim.key
        elif claim.rule.kind in ("direction", "size") and "95 %" in words:
            assert claim.rule.alpha == pytest.approx(0.05), claim.key


def exact_verdict(kind, side, paper, margin, lo, hi) -> str:
    """The rule text on an interval whose ends are given exactly (a computed band: every level's
    interval is ``[lo, hi]``): "excludes 0" and "inside +-m" are strict, "contains e" is closed."""
    if kind == "equivalence":
        if -margin < lo and hi < margin:
            return "reproduced"
        return "contradicted" if lo > margin or hi < -margin else "inconclusive"
    lo, hi = (lo, hi) if side > 0 else (-hi, -lo)
    e = None if paper is None else side * paper
    if lo > 0 and (kind == "direction" or lo <= e <= hi):
        return "reproduced"
    if kind == "size" and lo > 0 and lo > e:
        return "inconclusive"
    return "contradicted" if hi < (0.0 if e is None else e) else "inconclusive"


@settings(max_examples=300, deadline=None)
@given(
    kind=st.sampled_from(("direction", "size", "equivalence")),
    side=st.sampled_from((1, -1)),
    paper_mag=st.integers(1, 3),
    quoted=st.booleans(),
    ends=st.lists(st.integers(-4, 4), min_size=2, max_size=2).map(sorted),
)
def test_decide_on_ends_that_touch_a_boundary_exactly_follows_the_rule_text(
    kind, side, paper_mag, quoted, ends
):
    """Integer ends and effects, so ends equal 0, the paper's effect or the margin exactly: an interval
    that touches 0 does not exclude it, one that touches the margin is not inside it, and an end equal to
    the paper's effect contains it (a ``<=`` for a ``<`` or the reverse fails here, not on sampled data)."""
    lo, hi = ends
    paper = side * paper_mag if kind == "size" or (kind == "direction" and quoted) else None
    margin = paper_mag if kind == "equivalence" else None
    rule = Rule(kind, "%", side=side, paper_effect=paper, margin=margin)
    ci = Interval((lo + hi) / 2, lo, hi, exact=True)
    assert decide(rule, ci).verdict == exact_verdict(kind, side, paper, margin, lo, hi)
