"""ExitTrain verdicts say their scale, temperatures and level (issue 34, item 4).

Every ExitTrain row of the ledger names the regime its evidence comes from (paper_repro/regimes.py): the
scale and model sizes, the fine-tuning steps, the temperature of its fine-tuning data, of its tree weights'
scoring and of its judging, and the level of its interval, read from the source run's own records. A
mini-scale row reads *reproduced / not reproduced / inconclusive at mini scale*, never a bare
*contradicted* beside a Qwen3-4B number; the simulated rows follow the size rule (R3); the primary rows'
level is the declared alpha 0.025 (97.5 %).
"""

from __future__ import annotations

import copy
import json
from dataclasses import fields

import pytest

from exitlaw.paper_repro.ledger import CLAIMS, PRIMARY_ALPHA, build_ledger
from exitlaw.paper_repro.ledger_inputs import RESULTS, gather_shipped
from exitlaw.paper_repro.regimes import (
    SWEEP_DEFAULT_TRAIN_TEMPERATURE,
    Regime,
    RegimeError,
    authors_regime_run,
    paper_regime_run,
)
from exitlaw.paper_repro.verdicts import (
    CONTRADICTED,
    INCONCLUSIVE,
    MINI_WORDS,
    REPRODUCED,
    VERDICTS,
    Interval,
    Rule,
    decide,
)

# the ExitTrain rows, named here (not derived from the code under test): a row that loses its regime fails
ENGINE = ("exittrain_tau_gain", "budget_robustness", "exit_vs_token", "exit_vs_prefix")
SIMULATED = (
    "exit_vs_token_sim",
    "exit_vs_prefix_sim",
    "exit_vs_token_sim_matched",
    "exit_vs_prefix_sim_matched",
)
AUTHORS = (
    "exit_vs_token_authors_t0",
    "exit_vs_token_authors_t1",
    "exit_vs_prefix_authors_t0",
    "exit_vs_prefix_authors_t1",
)
SIM_AUTHORS = (
    "exit_vs_token_sim_authors_t0",
    "exit_vs_token_sim_authors_t1",
    "exit_vs_prefix_sim_authors_t0",
    "exit_vs_prefix_sim_authors_t1",
)
EXITTRAIN = ENGINE + SIMULATED + AUTHORS + SIM_AUTHORS
REGIME_FIELDS = ("scale", "models", "steps", "data_temperature", "scoring_temperature")


def regime_problems(row: dict) -> list[str]:
    """What an ExitTrain row fails to say about its regime (empty: nothing)."""
    key, text, reg = row["key"], str(row.get("verdict_text", "")), row.get("regime")
    if row.get("ci") is None:  # nothing measured (GPU, not run; input missing): no regime to state
        return []
    out = []
    if text in VERDICTS or text.split(" (")[0] in VERDICTS and "[" not in text:
        out.append(f"{key}: bare verdict {text!r}")
    if not isinstance(reg, dict):
        return out + [f"{key}: no regime"]
    for f in REGIME_FIELDS:
        if reg.get(f) in (None, ""):
            out.append(f"{key}: regime without {f}")
    if not reg.get("judged_temperatures"):
        out.append(f"{key}: regime names no judged temperature")
    if reg.get("level") is None:
        out.append(f"{key}: regime names no level")
    elif abs(reg["level"] - row["ci"]["level"]) > 1e-12:
        out.append(f"{key}: regime level {reg['level']} is not the interval's {row['ci']['level']}")
    for words in ("data at T=", "weights scored at T=", "judged at T=", "% CI (alpha"):
        if words not in text:
            out.append(f"{key}: verdict {text!r} does not say {words!r}")
    for f in ("models", "steps"):
        if str(reg.get(f)) not in text:
            out.append(f"{key}: verdict does not name the {f}")
    if reg.get("scale") == "mini" and not text.startswith(MINI_WORDS[row["verdict"]]):
        out.append(
            f"{key}: mini-scale verdict {text!r} does not read {MINI_WORDS[row['verdict']]!r}"
        )
    return out


def _shipped_rows() -> dict:
    return {r["key"]: r for r in json.loads((RESULTS / "ledger.json").read_text())["rows"]}


def _built(inputs=None) -> dict:
    if inputs is None:
        inputs, prov = gather_shipped()
    else:
        prov = {}
    return {r["key"]: r for r in build_ledger(inputs, prov)}


# ----- every ExitTrain row states its regime -----------------------------------------------------------------
def test_every_shipped_exittrain_row_says_its_scale_temperatures_and_level():
    for rows in (_shipped_rows(), _built()):
        assert [p for k in EXITTRAIN for p in regime_problems(rows[k])] == []
        for k in EXITTRAIN:
            assert rows[k]["ci"] is not None, k  # each is measured from a shipped run
        for k in ENGINE:
            reg = rows[k]["regime"]
            assert reg["scale"] == "mini" and rows[k]["verdict_text"].startswith(
                MINI_WORDS[rows[k]["verdict"]]
            )
            assert "target 3 layers, hidden 96, vocabulary 512" in reg["models"]
            assert reg["data_temperature"] == reg["scoring_temperature"] == 0.5
            assert reg["judged_temperatures"] == [0.5]
        for k in SIM_AUTHORS:  # the authors' recipe simulated: greedy data, weights at T = 1
            reg = rows[k]["regime"]
            assert reg["scale"] == "simulation" and reg["judged_temperatures"] == [float(k[-1])]
            assert (reg["data_temperature"], reg["scoring_temperature"]) == (0.0, 1.0)
        for k in (
            SIMULATED
        ):  # judged where the pooled records were: the sweep's T = 0 and 1, the matched T = 0.5
            assert rows[k]["regime"]["scale"] == "simulation"
            assert rows[k]["regime"]["judged_temperatures"] == (
                [0.5] if k.endswith("_matched") else [0.0, 1.0]
            )
    md = (RESULTS / "ledger.md").read_text()
    for (
        k
    ) in ENGINE:  # the markdown prints the words and the regime, never "contradicted (mini-scale"
        assert f"**{_shipped_rows()[k]['verdict_text']}**" in md
    assert "**contradicted (mini-scale" not in md and "**reproduced (mini-scale" not in md


@pytest.mark.parametrize(
    "plant, found",
    [
        (lambda r: r.update(verdict_text="contradicted"), "bare verdict"),
        (lambda r: r.update(verdict_text="contradicted (mini-scale, CPU)"), "bare verdict"),
        (lambda r: r.update(regime=None), "no regime"),
        (lambda r: r["regime"].update(data_temperature=None), "without data_temperature"),
        (lambda r: r["regime"].update(scoring_temperature=None), "without scoring_temperature"),
        (lambda r: r["regime"].update(judged_temperatures=[]), "no judged temperature"),
        (lambda r: r["regime"].update(level=None), "no level"),
        (lambda r: r["regime"].update(level=0.95), "is not the interval's"),
        (lambda r: r["regime"].update(steps="512 steps"), "does not name the steps"),
        (
            lambda r: r.update(verdict_text=r["verdict_text"].replace("inconclusive at", "at")),
            "does not read 'inconclusive at mini scale'",
        ),
    ],
)
def test_the_regime_checker_catches_a_planted_row(plant, found):
    row = copy.deepcopy(_shipped_rows()["exit_vs_token"])
    assert regime_problems(row) == []
    plant(row)
    assert any(found in p for p in regime_problems(row)), regime_problems(row)


def test_the_regime_is_read_from_the_runs_records_not_typed():
    inputs, _ = gather_shipped()
    changed = copy.deepcopy(inputs)
    changed["paper_regime_data"]["continuation_temperature"] = 0.0
    changed["paper_regime"]["config"]["base"]["target"]["num_layers"] = 7
    changed["sim_exittrain_matched"][0]["config"]["train_temperature"] = 0.25
    r = _built(changed)
    reg = r["exit_vs_token"]["regime"]
    assert (
        reg["data_temperature"] == 0.0
        and "data at T=0 (greedy)" in r["exit_vs_token"]["verdict_text"]
    )
    assert "target 7 layers" in reg["models"]
    assert r["exit_vs_token_sim_matched"]["regime"]["data_temperature"] == 0.25
    no_data = {
        **inputs,
        "paper_regime_data": None,
    }  # a row that cannot state its regime is not decided
    row = _built(no_data)["exit_vs_prefix"]
    assert row["verdict"] == INCONCLUSIVE and "input missing: paper_regime_data" in row["reason"]


def test_the_default_sweep_temperature_is_the_sweeps_own_default():
    """The shipped sweep's config records no ``train_temperature``: the reader uses the sweep's default."""
    pytest.importorskip("jax")
    from exitlaw.simulate.exittrain.sweep import SweepConfig

    default = {f.name: f.default for f in fields(SweepConfig)}["train_temperature"]
    assert default == SWEEP_DEFAULT_TRAIN_TEMPERATURE
    reg = _shipped_rows()["exit_vs_token_sim"]["regime"]
    assert reg["data_temperature"] == reg["scoring_temperature"] == default
    assert reg["judged_temperatures"] == [0.0, 1.0]  # pooled over the sweep's T = 0 and T = 1 cells


def test_the_steps_are_the_runs_own_schedule():
    from exitlaw.paper_repro.mini.exittrain.paper_regime import PaperRegimeConfig

    cfg = json.loads((RESULTS / "paper_regime" / "paper_regime_config.json").read_text())
    ours = PaperRegimeConfig()
    assert (cfg["epochs"], cfg["ft_prompts"], cfg["batch_size"]) == (
        ours.epochs,
        ours.ft_prompts,
        ours.batch_size,
    )
    assert _shipped_rows()["exit_vs_token"]["regime"]["steps"].startswith(
        f"{ours.steps} fine-tuning steps"
    )


def test_a_regime_with_other_temperatures_is_described_by_the_same_record():
    """E.g. the authors' recipe: greedy data, weights scored at T = 1, judged at T = 0 and at T = 1."""
    authors = Regime(
        scale="mini",
        run="a later run",
        models="target 3 layers",
        steps="512 fine-tuning steps",
        data_temperature=0.0,
        scoring_temperature=1.0,
        source="its results.json",
    ).judged([1.0, 0.0], 1 - PRIMARY_ALPHA)
    assert authors.judged_temperatures == (0.0, 1.0) and authors.complete
    assert authors.tag() == (
        "mini scale (CPU): target 3 layers; 512 fine-tuning steps; data at T=0 (greedy), weights scored "
        "at T=1, judged at T=0 (greedy) and T=1; 97.5 % CI (alpha 0.025)"
    )
    assert authors.to_json()["judged_temperatures"] == [0.0, 1.0]
    for bad in (dict(scale="gpu"), dict(data_temperature=-1.0), dict(level=1.0), dict(models=" ")):
        kw = dict(
            scale="mini",
            run="r",
            models="m",
            steps="s",
            data_temperature=0.0,
            scoring_temperature=1.0,
            source="f",
        )
        with pytest.raises(RegimeError):
            Regime(**{**kw, **bad})
    with pytest.raises(RegimeError, match="one temperature"):
        authors.judged([], 0.95)


# ----- the level: the declared alpha ---------------------------------------------------------------------------
def test_the_primary_rows_are_judged_at_the_declared_alpha():
    assert PRIMARY_ALPHA == 0.025
    cfg = json.loads((RESULTS / "paper_regime" / "paper_regime_config.json").read_text())
    assert cfg["primary_level"] == 1 - PRIMARY_ALPHA and cfg["secondary_level"] == 0.95
    claims = {c.key: c for c in CLAIMS}
    rows = _shipped_rows()
    for k in ("exit_vs_token", "exit_vs_prefix"):
        assert claims[k].rule.alpha == PRIMARY_ALPHA
        assert rows[k]["ci"]["level"] == rows[k]["regime"]["level"] == 1 - PRIMARY_ALPHA
        assert "97.5 % CI (alpha 0.025)" in rows[k]["verdict_text"]
    for k in ("exittrain_tau_gain", "budget_robustness", *SIMULATED):
        assert claims[k].rule.alpha == 0.05 and rows[k]["regime"]["level"] == 0.95


def test_a_run_declaring_another_level_does_not_decide_the_row():
    inputs, _ = gather_shipped()
    other = copy.deepcopy(inputs)
    other["paper_regime"]["config"]["primary_level"] = 0.95
    r = _built(other)
    for k in ("exit_vs_token", "exit_vs_prefix"):
        assert r[k]["verdict"] == INCONCLUSIVE
        assert "not the level the run declares for its primary comparisons (0.95)" in r[k]["reason"]
    assert (
        r["exittrain_tau_gain"]["verdict"] == REPRODUCED
    )  # a secondary row: its own declared level
    with pytest.raises(RegimeError, match="records no config"):
        paper_regime_run({}, {"continuation_temperature": 0.5}, role="primary", level=0.975)


# ----- the size rule of the simulated rows ---------------------------------------------------------------------
def test_the_simulated_rows_declare_the_size_rule_with_the_papers_smallest_effect():
    """Issue 34's size rule, in the unit policy's primary unit a (issue 49): the paper's smaller effect in a
    over T = 0 and T = 1 (Table 2), or the effect at the one temperature a row is judged at."""
    claims = {c.key: c for c in CLAIMS}
    token, prefix = (
        min(1 / 8.36 - 1 / 8.85, 1 / 7.47 - 1 / 8.06),
        min(1 / 8.21 - 1 / 8.85, 1 / 7.72 - 1 / 8.06),
    )
    for k, e, alpha in (
        ("exit_vs_token_sim", token, 0.05),
        ("exit_vs_prefix_sim", prefix, 0.05),
        ("exit_vs_token_sim_matched", token, 0.05),
        ("exit_vs_prefix_sim_matched", prefix, 0.05),
        ("exit_vs_token_sim_authors_t1", 1 / 7.47 - 1 / 8.06, 0.0125),
        ("exit_vs_prefix_sim_authors_t0", 1 / 8.21 - 1 / 8.85, 0.0125),
    ):
        rule = claims[k].rule
        assert (rule.kind, rule.unit, rule.alpha) == ("size", "a (= 1 - 1/tau)", alpha)
        assert rule.paper_effect == pytest.approx(e)
        assert "contains the paper's effect" in rule.text()
    for k in ENGINE:  # the engine rows keep their declared direction rule, now in a
        assert claims[k].rule.kind == "direction" and claims[k].rule.unit == "a (= 1 - 1/tau)"


SIZE = Rule("size", "%", paper_effect=5.9)
EPS = 1e-9


@pytest.mark.parametrize(
    "lo, hi, verdict, words",
    [
        (
            0.15,
            0.79,
            CONTRADICTED,
            "the direction holds",
        ),  # the matched sim's +0.47 %: was "reproduced"
        (
            3.70,
            4.99,
            CONTRADICTED,
            "the size is not reproduced",
        ),  # the sweep's +4.3 %: was "reproduced"
        (0.5, 5.9, REPRODUCED, "contains the paper's effect"),  # hi touches the paper's effect
        (0.5, 5.9 - EPS, CONTRADICTED, "below the paper's effect"),
        (5.9, 7.0, REPRODUCED, "contains the paper's effect"),  # lo touches it
        (5.9 + EPS, 7.0, INCONCLUSIVE, "the effect is larger"),
        (0.0, 7.0, INCONCLUSIVE, "CI contains 0"),  # lo = 0 does not exclude 0
        (EPS, 7.0, REPRODUCED, "excludes 0"),
        (-1.0, 5.9 - EPS, CONTRADICTED, "on the other side"),
        (-1.0, 5.9, INCONCLUSIVE, "CI contains 0"),
    ],
)
def test_the_size_rule_at_its_boundaries(lo, hi, verdict, words):
    v = decide(SIZE, Interval((lo + hi) / 2, lo, hi))
    assert v.verdict == verdict and words in v.reason, v


def test_the_unit_policy_changed_exactly_three_verdicts():
    """Issue 49: deciding in a instead of each design's relative tau changed three verdicts, each from
    "contradicted" to "inconclusive": the paper-regime exit - token and exit - prefix (at tau 2.5 the paper's
    effect in a is inside their intervals) and the sweep's exit - token (above the paper's smaller effect
    in a). Re-deciding every other ExitTrain row on its relative-tau interval with its old rule gives its
    shipped verdict."""
    rows = _shipped_rows()
    old_rules = {
        "exittrain_tau_gain": Rule("direction", "%", paper_effect=8.8),
        "budget_robustness": Rule("direction", "%", paper_effect=11.6),
        "exit_vs_token": Rule("direction", "%", paper_effect=5.9, alpha=0.025),
        "exit_vs_prefix": Rule("direction", "%", paper_effect=4.4, alpha=0.025),
        "exit_vs_token_sim": SIZE,
        "exit_vs_prefix_sim": Rule("size", "%", paper_effect=4.4),
        "exit_vs_token_sim_matched": SIZE,
        "exit_vs_prefix_sim_matched": Rule("size", "%", paper_effect=4.4),
    }
    changed = {}
    for k, rule in old_rules.items():
        b = rows[k]["units"]["beside"]
        old = decide(rule, Interval(b["estimate"], b["lo"], b["hi"], b["level"])).verdict
        if old != rows[k]["verdict"]:
            changed[k] = (old, rows[k]["verdict"])
    assert changed == {
        "exit_vs_token": (CONTRADICTED, INCONCLUSIVE),
        "exit_vs_prefix": (CONTRADICTED, INCONCLUSIVE),
        "exit_vs_token_sim": (CONTRADICTED, INCONCLUSIVE),
    }


# ----- the authors'-recipe run (AUTHORS_REGIME.md): four co-primary rows in per-step acceptance -------------
def test_the_authors_rows_say_their_regime_and_read_inconclusive_outside_it():
    """Shipped: greedy data, weights at T = 1, each row judged at its own temperature at 98.75 %; the
    precondition fails at both temperatures, so every row is inconclusive and says why, with its numbers."""
    for rows in (_shipped_rows(), _built()):
        for k in AUTHORS:
            r, t = rows[k], float(k[-1])
            reg = r["regime"]
            assert reg["scale"] == "mini" and reg["data_temperature"] == 0.0
            assert reg["scoring_temperature"] == 1.0 and reg["judged_temperatures"] == [t]
            assert reg["level"] == r["ci"]["level"] == pytest.approx(1 - 0.05 / 4)
            assert r["verdict"] == INCONCLUSIVE
            assert r["reason"].startswith(
                "outside the paper's regime: T = 0: token - base in a -0.0025"
            )
            assert r["verdict_text"].startswith(MINI_WORDS[INCONCLUSIVE])


def _authors_inputs(holds: bool, level: float | None = None) -> dict:
    inputs, _ = gather_shipped()
    res = copy.deepcopy(inputs["authors_regime"])
    res["analysis"]["precondition"]["holds"] = holds
    if level is not None:
        res["config"]["primary_level"] = level
    return {**inputs, "authors_regime": res}


def test_with_the_precondition_held_the_authors_rows_follow_the_designs_rule():
    """AUTHORS_REGIME.md: reproduced when the 98.75 % interval in a is above 0; not reproduced when its upper
    end is below the paper's effect in a (Table 2); inconclusive otherwise. The shipped intervals, read as if
    the precondition held: exit - token at T = 1 is above 0; exit - prefix at T = 0 ends below 0.0088."""
    rows = _built(_authors_inputs(holds=True))
    assert rows["exit_vs_token_authors_t1"]["verdict"] == REPRODUCED  # [+0.0079, +0.0199]
    assert (
        rows["exit_vs_prefix_authors_t0"]["verdict"] == CONTRADICTED
    )  # [-0.0027, +0.0005] < 0.0088
    assert (
        rows["exit_vs_token_authors_t0"]["verdict"] == CONTRADICTED
    )  # [-0.0047, +0.0020] < 0.0066
    assert (
        rows["exit_vs_prefix_authors_t1"]["verdict"] == INCONCLUSIVE
    )  # [-0.0036, +0.0085] holds 0.0055
    assert rows["exit_vs_prefix_authors_t0"]["verdict_text"].startswith(
        "not reproduced at mini scale"
    )
    margins = {k: c.rule.paper_effect for c in CLAIMS for k in AUTHORS if c.key == k}
    assert margins == pytest.approx(
        {
            "exit_vs_token_authors_t0": 1 / 8.36 - 1 / 8.85,
            "exit_vs_token_authors_t1": 1 / 7.47 - 1 / 8.06,
            "exit_vs_prefix_authors_t0": 1 / 8.21 - 1 / 8.85,
            "exit_vs_prefix_authors_t1": 1 / 7.72 - 1 / 8.06,
        }
    )
    assert {c.rule.alpha for c in CLAIMS if c.key in AUTHORS} == {0.05 / 4}


def test_an_authors_run_declaring_another_level_does_not_decide_its_rows():
    rows = _built(_authors_inputs(holds=True, level=0.95))
    for k in AUTHORS:
        assert rows[k]["verdict"] == INCONCLUSIVE and rows[k]["ci"] is None
        assert "not the level the run declares" in rows[k]["reason"]


def test_the_authors_regime_is_read_from_the_runs_records():
    inputs, _ = gather_shipped()
    data = {**inputs["authors_regime_data"], "continuation_temperature": 0.7}
    reg = authors_regime_run(inputs["authors_regime"], data, level=1 - 0.05 / 4)
    assert reg.data_temperature == 0.7 and reg.scoring_temperature == 1.0
    with pytest.raises(RegimeError, match="continuation_temperature"):
        authors_regime_run(inputs["authors_regime"], {}, level=1 - 0.05 / 4)
