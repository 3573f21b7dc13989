"""The ExitTrain unit policy (issue 49, item 4): every ExitTrain row is decided in per-step acceptance
``a = 1 - 1/tau`` with relative tau beside it, each unit with its interval and level; it shows its power
against the paper's effect in ``a`` and what it does not judge; an undecided row whose primary interval
excludes 0 is flagged "observed, not decided". A row without them fails here."""

from __future__ import annotations

import copy
import json

import pytest

from exitlaw.paper_repro.ledger import (
    ACCEPTANCE,
    CLAIMS,
    RELATIVE,
    build_ledger,
    observed_not_decided,
)
from exitlaw.paper_repro.ledger_inputs import RESULTS, gather_shipped
from exitlaw.paper_repro.mini.exittrain.authors_regime import paper_margin
from exitlaw.paper_repro.mini.exittrain.units import paper_effect_a, power_against
from exitlaw.paper_repro.verdicts import CONTRADICTED, INCONCLUSIVE, REPRODUCED, Interval

# named here, not derived from the code under test: a row that drops out of the policy fails
EXITTRAIN = (
    "exittrain_tau_gain",
    "budget_robustness",
    "exit_vs_token",
    "exit_vs_prefix",
    "exit_vs_token_authors_t0",
    "exit_vs_token_authors_t1",
    "exit_vs_prefix_authors_t0",
    "exit_vs_prefix_authors_t1",
    "exit_vs_token_sim",
    "exit_vs_prefix_sim",
    "exit_vs_token_sim_matched",
    "exit_vs_prefix_sim_matched",
    "exit_vs_token_sim_authors_t0",
    "exit_vs_token_sim_authors_t1",
    "exit_vs_prefix_sim_authors_t0",
    "exit_vs_prefix_sim_authors_t1",
)


def unit_problems(row: dict) -> list[str]:
    """What an ExitTrain row fails to show under the unit policy (empty: nothing)."""
    key, u, ci = row["key"], row.get("units"), row.get("ci")
    if ci is None:
        return [f"{key}: not measured"]
    if not isinstance(u, dict):
        return [f"{key}: no units"]
    out = []
    for side, unit in (("primary", ACCEPTANCE), ("beside", RELATIVE)):
        x = u.get(side) or {}
        if x.get("unit") != unit:
            out.append(f"{key}: {side} unit is {x.get('unit')!r}, not {unit!r}")
        if not all(isinstance(x.get(k), (int, float)) for k in ("estimate", "lo", "hi", "level")):
            out.append(f"{key}: {side} lacks its interval or level")
        elif not (x["lo"] <= x["estimate"] <= x["hi"] and 0 < x["level"] < 1):
            out.append(f"{key}: {side} interval {x} is not an interval")
    p = u.get("primary") or {}
    if p and (p.get("estimate"), p.get("lo"), p.get("hi"), p.get("level")) != (
        ci["estimate"],
        ci["lo"],
        ci["hi"],
        ci["level"],
    ):
        out.append(f"{key}: the primary unit is not the interval the verdict reads")
    if not isinstance(u.get("power"), (int, float)) or not 0 <= u["power"] <= 1:
        out.append(f"{key}: no power against the paper's effect")
    if (
        not isinstance(u.get("paper_effect_primary"), (int, float))
        or u["paper_effect_primary"] <= 0
    ):
        out.append(f"{key}: no paper effect in a")
    if not u.get("design_unit"):
        out.append(f"{key}: does not say its design's unit")
    if not row.get("omits"):
        out.append(f"{key}: does not say what it omits")
    flagged = row.get("observed") is not None
    excl = ci["lo"] > 0 or ci["hi"] < 0
    if flagged != (row["verdict"] == INCONCLUSIVE and excl):
        out.append(f"{key}: 'observed, not decided' flag is {flagged} for {row['verdict']} {ci}")
    return out


def _shipped() -> dict:
    return {r["key"]: r for r in json.loads((RESULTS / "ledger.json").read_text())["rows"]}


def _built(inputs=None) -> dict:
    if inputs is None:
        inputs, prov = gather_shipped()
    else:
        prov = {}
    return {r["key"]: r for r in build_ledger(inputs, prov)}


def test_every_exittrain_row_follows_the_unit_policy_shipped_and_rebuilt():
    for rows in (_shipped(), _built()):
        assert set(EXITTRAIN) <= set(rows)
        problems = [p for k in EXITTRAIN for p in unit_problems(rows[k])]
        assert problems == []
        for k in EXITTRAIN:
            assert "Units:" in _markdown_row(k)


def _markdown_row(key: str) -> str:
    claim = next(c for c in CLAIMS if c.key == key).claim
    lines = [
        x for x in (RESULTS / "ledger.md").read_text().splitlines() if x.startswith(f"| {claim} |")
    ]
    assert len(lines) == 1, key
    return lines[0]


@pytest.mark.parametrize(
    "plant, found",
    [
        (lambda r: r.pop("units"), "no units"),
        (lambda r: r["units"].pop("power"), "no power"),
        (lambda r: r["units"]["beside"].pop("level"), "lacks its interval or level"),
        (lambda r: r["units"]["primary"].update(unit="%"), "primary unit"),
        (
            lambda r: r["units"]["primary"].update(estimate=r["units"]["primary"]["estimate"] + 1),
            "not the interval",
        ),
        (lambda r: r.update(omits=None), "omits"),
        (lambda r: r.update(observed=None), "flag"),
    ],
)
def test_the_checker_catches_a_row_without_them(plant, found):
    row = copy.deepcopy(_shipped()["exit_vs_token_authors_t1"])  # an observed, undecided row
    assert unit_problems(row) == []
    plant(row)
    assert any(found in p for p in unit_problems(row))


def test_each_rule_reads_the_papers_effect_in_a():
    claims = {c.key: c for c in CLAIMS}
    want = {
        "exittrain_tau_gain": paper_effect_a("exit", "base"),
        "budget_robustness": paper_effect_a("exit", "base"),
        "exit_vs_token": paper_effect_a("exit", "token"),
        "exit_vs_prefix": paper_effect_a("exit", "prefix"),
        "exit_vs_token_sim": 1 / 8.36 - 1 / 8.85,  # the smaller of T = 0 and T = 1
        "exit_vs_prefix_sim": 1 / 7.72 - 1 / 8.06,
        "exit_vs_token_sim_authors_t1": paper_margin("exit", "token", 1.0),
        "exit_vs_prefix_sim_authors_t0": paper_margin("exit", "prefix", 0.0),
    }
    for k, e in want.items():
        assert claims[k].rule.unit == ACCEPTANCE and claims[k].rule.paper_effect == pytest.approx(e)
    assert claims["exit_vs_token_sim_authors_t0"].rule.alpha == pytest.approx(0.05 / 4)
    assert claims["exit_vs_token"].rule.alpha == 0.025


def test_the_power_is_the_intervals_against_the_papers_effect():
    rows = _shipped()
    for k in EXITTRAIN:
        u = rows[k]["units"]
        p = u["primary"]
        assert u["power"] == pytest.approx(
            power_against(u["paper_effect_primary"], p["lo"], p["hi"], p["level"]), abs=1e-8
        )
    assert power_against(0.01, -0.01, 0.01, 0.95) < power_against(0.01, -0.001, 0.001, 0.95)
    assert power_against(0.01, 0.0, 0.0, 0.95) == 1.0


def test_observed_not_decided_at_its_edges():
    iv = lambda lo, hi: Interval((lo + hi) / 2, lo, hi, 0.95)  # noqa: E731
    assert observed_not_decided(INCONCLUSIVE, iv(0.001, 0.02)).startswith("observed, not decided")
    assert "below 0" in observed_not_decided(INCONCLUSIVE, iv(-0.02, -0.001))
    assert observed_not_decided(INCONCLUSIVE, iv(0.0, 0.02)) is None  # lo = 0 does not exclude 0
    assert observed_not_decided(INCONCLUSIVE, iv(-0.01, 0.02)) is None
    for decided in (REPRODUCED, CONTRADICTED):
        assert observed_not_decided(decided, iv(0.001, 0.02)) is None
    assert observed_not_decided(INCONCLUSIVE, None) is None


def test_the_shipped_flags_and_omissions():
    rows = _shipped()
    flagged = {k for k in EXITTRAIN if rows[k]["observed"]}
    # exit - token on the authors' recipe at T = 1 (+0.0139 [+0.0079, +0.0199], precondition failed) and the
    # sweep's exit - token (+0.0079 [+0.0068, +0.0090], larger than the paper's smaller effect)
    assert flagged == {"exit_vs_token_authors_t1", "exit_vs_token_sim"}
    # the paper-regime rows say the run's T = 0 result they do not judge: exit - base -26.07 %
    assert "T = 0: exit - base in a -0.0481" in rows["exittrain_tau_gain"]["omits"]
    assert "relative tau -26.07 %" in rows["exittrain_tau_gain"]["omits"]
    assert "T = 0: exit - token" in rows["exit_vs_token"]["omits"]
    # the authors' rows say the precondition's level and power
    assert (
        "(95 %; power 0.99 against the paper's +0.0086)"
        in rows["exit_vs_token_authors_t0"]["reason"]
    )
    from exitlaw.paper_repro.ledger import regime_precondition

    holds, what = regime_precondition(
        gather_shipped()[0]
    )  # the paper-regime precondition: level, power
    assert holds and "in a +0.0413 [+0.0260, +0.0566] (95 %; power" in what
    assert rows["exit_vs_token"]["units"]["design_unit"].startswith("relative tau")
