"""The authors-regime preset: the numbers its design file fixes, the calibration and fallback rules, the
measured strength, the precondition at both cells, verdicts in per-step acceptance that name their scale,
and the whole pipeline at CI size (fallback base, resume, ship and rebuild)."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from exitlaw.paper_repro.mini.exittrain.authors_regime import (
    AUTHORS_ARMS,
    AUTHORS_REGIME,
    AUTHORS_REGIME_QUICK,
    AuthorsRegimeConfig,
    acceptance,
    config_from_json,
    paper_margin,
    translated_relative,
)
from exitlaw.paper_repro.mini.exittrain.authors_regime_report import OUTSIDE, precondition, primary
from exitlaw.paper_repro.mini.exittrain.authors_regime_run import choose_rate, measured_strength
from exitlaw.paper_repro.mini.exittrain.paper_regime import (
    PAPER_REGIME,
    arm_config,
    cell_key,
    eval_plan,
)

DESIGN_FILE = Path(__file__).resolve().parents[3] / "paper_repro" / "AUTHORS_REGIME.md"


def test_the_preset_holds_the_numbers_its_design_file_fixes():
    cfg, text = AUTHORS_REGIME, DESIGN_FILE.read_text(encoding="utf-8")
    assert cfg.data_temperature == 0.0 and cfg.scoring_temperature == 1.0
    assert cfg.judged_temperatures == (0.0, 1.0) and cfg.primary_level == 1 - 0.05 / 4
    assert cfg.precondition_level == 0.95 and cfg.depth_tolerance == 0.10
    assert cfg.fallback_base_step == 1500 and cfg.strength_of_ce == 0.02
    assert cfg.base == PAPER_REGIME.base and cfg.steps == 512 and cfg.seeds == tuple(range(8))
    assert cfg.lr_grid == PAPER_REGIME.lr_grid and cfg.eval_prompts == 40
    for arm in AUTHORS_ARMS:
        assert f"`{arm.name}`" in text, f"arm {arm.name} is not in the design file"
    # the margins table of the design file is the rounding of what the code derives from Table 2
    for a, b in (("exit", "token"), ("exit", "prefix"), ("token", "base")):
        row = re.search(rf"\| {a} - {b} \|[^|]*= ([0-9.]+) \|[^|]*= ([0-9.]+) \|", text)
        assert row, f"no margin row for {a} - {b}"
        for t, shown in zip((0.0, 1.0), row.groups()):
            assert round(paper_margin(a, b, t), 5) == float(shown)
    ex = arm_config(cfg, cfg.arm("exit"), 2, 2e-4, cfg.scoring_temperature)
    assert ex.scoring.temperature == 1.0 and ex.lam == 0.1 and ex.weight_norm == "batch"
    lit = arm_config(cfg, cfg.arm("authors"), 2, 2e-4, 1.0)
    assert (lit.budget, lit.schedule.anchors, lit.schedule.lr, lit.prefix_window) == (
        32,
        32,
        1e-4,
        64,
    )


def test_the_strength_arm_cannot_run_before_its_lambda_is_measured():
    with pytest.raises(ValueError, match="measured at calibration"):
        AUTHORS_REGIME.arm("exit-strength")
    assert replace(AUTHORS_REGIME, strength_lam=0.034).arm("exit-strength").lam == 0.034


def test_a_fallback_step_that_is_not_a_checkpoint_of_the_distillation_is_refused():
    with pytest.raises(ValueError, match="not a checkpoint"):
        replace(AUTHORS_REGIME, fallback_base_step=1000)
    with pytest.raises(ValueError, match="earlier checkpoint"):
        replace(AUTHORS_REGIME, fallback_base_step=3000)


def test_every_drafter_is_judged_at_both_temperatures_and_the_literal_arms_also_at_their_budget():
    plan = eval_plan(AUTHORS_REGIME, 1.0)
    assert len(plan) == len({c.key for c in plan}) == 2 + 8 * (4 * 2 + 2 * 4)
    assert {c.temperature for c in plan} == {0.0, 1.0} and {c.domain for c in plan} == {"code"}
    assert {c.drafter.rsplit("-s", 1)[0] for c in plan if c.budget == 32} == {
        "authors",
        "authors-token",
    }


def test_the_configuration_round_trips_through_its_json_as_its_own_class():
    back = config_from_json(json.loads(json.dumps(AUTHORS_REGIME.to_json())))
    assert isinstance(back, AuthorsRegimeConfig) and back == AUTHORS_REGIME


def test_the_unit_and_the_translation():
    assert acceptance(1.0) == 0.0 and acceptance(4.0) == 0.75
    with pytest.raises(ValueError, match="at least 1"):
        acceptance(0.5)
    # a gain of delta a over tau_b: tau' = 1 / (1/tau_b - delta a)
    assert translated_relative(0.05, 2.0) == pytest.approx(100 * (1 / 0.45 / 2 - 1))
    # the paper's exit - token effect at T = 0, translated to its own token tau, is its own +5.9 %
    assert translated_relative(paper_margin("exit", "token", 0.0), 8.36) == pytest.approx(
        100 * (8.85 / 8.36 - 1)
    )
    with pytest.raises(ValueError, match="Table 2"):
        paper_margin("exit-strength", "token", 0.0)


def _cell(values):
    return {"per_prompt_rb_tau": list(values)}


def test_calibration_chooses_the_best_mean_gain_and_a_smaller_rate_within_the_tolerance():
    cfg = AUTHORS_REGIME
    base = {"0": _cell([2.0, 2.0]), "1": _cell([2.0, 2.0])}
    runs = {
        1e-4: {"0": _cell([2.10, 2.10]), "1": _cell([2.0, 2.0])},  # score +2.5 %
        2e-4: {
            "0": _cell([2.11, 2.11]),
            "1": _cell([2.0, 2.0]),
        },  # +2.75 %: best, 1e-4 within 0.5 pt
        3e-4: {"0": _cell([2.0, 2.0]), "1": _cell([2.0, 2.0])},
    }
    rule = choose_rate(cfg, base, runs)
    assert rule["chosen_lr"] == 1e-4 and rule["grid"]["0.0002"]["score"] == pytest.approx(0.0275)
    assert not rule["gains_all"]  # no rate beats the base at T = 1: the fallback applies
    runs[3e-4] = {"0": _cell([2.01, 2.01]), "1": _cell([2.01, 2.01])}
    assert choose_rate(cfg, base, runs)["gains_all"]
    tight = replace(cfg, tie_tolerance=0.001)
    assert choose_rate(tight, base, runs)["chosen_lr"] == 2e-4


def test_the_strength_is_two_percent_of_ce_over_the_logged_exit_term(tmp_path):
    lines = [{"ce": 9.0, "tree": 9.0}] * 5 + [{"ce": 4.0, "tree": 2.0}] * 10
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    got = measured_strength(AUTHORS_REGIME, tmp_path)
    assert got["lambda"] == 0.04 and got["steps"] == 10  # only the last 10 logged steps
    lines[-1] = {"ce": 4.0, "tree": 2.2}
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert measured_strength(AUTHORS_REGIME, tmp_path)["lambda"] == float(f"{0.02 * 4 / 2.02:.3g}")
    (tmp_path / "metrics.jsonl").write_text(json.dumps({"ce": 4.0, "tree": 0.0}) + "\n")
    with pytest.raises(ValueError, match="no positive logged exit term"):
        measured_strength(AUTHORS_REGIME, tmp_path)


def _cells(cfg, tau: dict, depth: dict, prompts: int = 40, noise: float = 0.01):
    """Synthetic cells: arm -> (T -> mean RB tau), per-prompt values with seeded noise; depth per arm."""
    rng = np.random.default_rng(0)
    base_prompt = rng.uniform(2.0, 3.0, prompts)
    cells = {}
    for arm, by_t in tau.items():
        drafters = ["base"] if arm == "base" else [f"{arm}-s{s}" for s in cfg.seeds]
        for d in drafters:
            for t, shift in by_t.items():
                vals = base_prompt + shift + rng.normal(0, noise, prompts)
                cells[cell_key(d, "code", t, cfg.eval_budget)] = {
                    "per_prompt_rb_tau": list(vals),
                    "per_prompt_tau": list(vals),
                    "per_prompt_depth": [depth[arm]] * prompts,
                    "per_prompt_ceiling_ts": list(vals),
                }
    return cells


def test_the_precondition_needs_a_gain_and_an_unchanged_depth_at_both_cells():
    cfg = replace(AUTHORS_REGIME, arms=("token",))
    gain = {0.0: 0.2, 1.0: 0.2}
    cells = _cells(cfg, {"base": {0.0: 0, 1.0: 0}, "token": gain}, {"base": 4.0, "token": 4.2})
    assert precondition(cells, cfg)["holds"]
    shallower = _cells(cfg, {"base": {0.0: 0, 1.0: 0}, "token": gain}, {"base": 4.0, "token": 3.5})
    pre = precondition(shallower, cfg)
    assert not pre["holds"] and pre["per_temperature"]["0"]["token_beats_base"]
    assert not pre["per_temperature"]["0"]["depth_guard_passes"]
    one_cell = _cells(
        cfg, {"base": {0.0: 0, 1.0: 0}, "token": {0.0: 0.2, 1.0: -0.2}}, {"base": 4.0, "token": 4.0}
    )
    pre = precondition(one_cell, cfg)
    assert not pre["holds"] and pre["per_temperature"]["0"]["holds"]


@pytest.mark.parametrize(
    "token_depth, passes",
    [
        (4.45, False),
        (4.5, True),
        (4.55, True),
        (6.0, True),
    ],  # ratio 0.89, 0.90 (the edge), 0.91, 1.2
)
def test_the_depth_guard_is_one_sided_below_at_and_above_its_threshold(token_depth, passes):
    """Issue 52: fails only a fine-tuning that shrinks depth beyond the tolerance; growing deeper passes."""
    cfg = replace(AUTHORS_REGIME, arms=("token",))
    gain = {0.0: 0.2, 1.0: 0.2}
    cells = _cells(
        cfg, {"base": {0.0: 0, 1.0: 0}, "token": gain}, {"base": 5.0, "token": token_depth}
    )
    pre = precondition(cells, cfg)
    for cell in pre["per_temperature"].values():
        assert cell["depth_ratio"] == pytest.approx(token_depth / 5.0)
        assert cell["token_beats_base"] and cell["depth_guard_passes"] is passes
    assert pre["holds"] is passes


def _between_levels(cfg, arm: str, other: str, shift_of):
    """Cells whose ``arm - other`` interval in ``a`` excludes 0 at 95 % but not at 98.75 %, found by bisection
    on a tau shift (the same at both temperatures); the cells and the shift."""
    from exitlaw.paper_repro.mini.exittrain.authors_regime_report import compare

    lo, hi = 0.0, 0.05
    for _ in range(60):
        mid = (lo + hi) / 2
        cells = shift_of(mid)
        a95 = compare(cells, cfg, arm, other, 1.0, cfg.eval_budget, 0.95)["delta_a"]["lo"]
        a9875 = compare(cells, cfg, arm, other, 1.0, cfg.eval_budget, 0.9875)["delta_a"]["lo"]
        if a95 > 0 and a9875 < 0:
            return cells
        lo, hi = (mid, hi) if a95 <= 0 else (lo, mid)
    raise AssertionError("no shift puts the interval between the two levels")


def test_the_precondition_is_judged_at_95_percent_and_the_family_at_98_75():
    """Issue 52: a token - base interval between the 95 % and 98.75 % bounds passes the precondition; an
    exit - token interval there is not reproduced (a test whose gain sits far above every interval could
    not tell the levels apart)."""
    cfg = replace(AUTHORS_REGIME, arms=("token",))
    assert cfg.precondition_level == 0.95 and cfg.primary_level == 0.9875
    cells = _between_levels(
        cfg,
        "token",
        "base",
        lambda s: _cells(
            cfg, {"base": {0.0: s, 1.0: 0}, "token": {0.0: s, 1.0: s}}, {"base": 4.0, "token": 4.0}
        ),
    )
    cell = precondition(cells, cfg)["per_temperature"]["1"]
    assert cell["token_beats_base"] and cell["precondition_level"] == 0.95
    lo = cell["token_minus_base"]["delta_a"]["lo"]
    assert lo > 0 and cell["token_minus_base"]["level"] == 0.95
    cfg3 = replace(AUTHORS_REGIME, arms=("token", "prefix", "exit"))
    flat = {0.0: 0.0, 1.0: 0.0}
    cells = _between_levels(
        cfg3,
        "exit",
        "token",
        lambda s: _cells(
            cfg3,
            {"base": flat, "token": flat, "prefix": flat, "exit": {0.0: s, 1.0: s}},
            {"base": 4.0, "token": 4.0, "prefix": 4.0, "exit": 4.0},
        ),
    )
    row = next(
        r
        for r in primary(cells, cfg3, holds=True)
        if (r["a"], r["b"], r["temperature"]) == ("exit", "token", 1.0)
    )
    assert row["level"] == 0.9875 and row["delta_a"]["lo"] < 0 < row["delta_a"]["hi"]
    assert row["verdict"] != "reproduced at mini scale"


def test_primary_verdicts_are_in_acceptance_against_the_papers_margin_and_name_their_regime():
    cfg = replace(AUTHORS_REGIME, arms=("token", "prefix", "exit"))
    flat = {0.0: 0.0, 1.0: 0.0}
    cells = _cells(
        cfg,
        {"base": flat, "token": flat, "prefix": flat, "exit": {0.0: 0.3, 1.0: 0.0}},
        {"base": 4.0, "token": 4.0, "prefix": 4.0, "exit": 4.0},
        noise=0.002,
    )
    rows = {(r["a"], r["b"], r["temperature"]): r for r in primary(cells, cfg, holds=True)}
    assert len(rows) == 4 and all(r["level"] == cfg.primary_level for r in rows.values())
    assert rows[("exit", "token", 0.0)]["verdict"] == "reproduced at mini scale"
    # no effect, measured tightly: the paper's effect is excluded
    assert rows[("exit", "token", 1.0)]["verdict"] == "not reproduced at mini scale"
    for r in rows.values():
        assert r["margin_delta_a"] == paper_margin(r["a"], r["b"], r["temperature"])
        assert "mini scale" in r["regime"] and f"judged at T = {r['temperature']:g}" in r["regime"]
        assert "data T = 0" in r["regime"] and "weights T = 1" in r["regime"]
        assert "98.75 % interval" in r["regime"]
    outside = primary(cells, cfg, holds=False)
    assert {r["verdict"] for r in outside} == {OUTSIDE}


def test_the_ci_sized_pipeline_runs_the_fallback_resumes_ships_and_rebuilds(tmp_path, capsys):
    from exitlaw.cli import main
    from exitlaw.paper_repro.mini.exittrain.authors_regime_report import rebuild
    from exitlaw.paper_repro.mini.exittrain.paper_regime_ship import ship

    out = tmp_path / "ar"
    argv = ["repro", "mini", "--preset", "authors-regime-quick", "--out", str(out), "--no-progress"]
    assert main(argv + ["--seeds", "0"]) == 0
    assert "not every seed is done" in capsys.readouterr().out
    assert not (out / "results.json").exists()
    assert main(argv) == 0
    res = json.loads((out / "results.json").read_text())
    calib = json.loads((out / "calibration.json").read_text())
    # the quick base cannot gain in 4 steps: the pre-registered fallback was built and used
    assert calib["fallback_applied"] and calib["base"] == "fallback"
    step = AUTHORS_REGIME_QUICK.fallback_base_step
    assert calib["base_drafter"].endswith(f"checkpoints/step_{step:06d}")
    assert [a["base"] for a in calib["attempts"]] == ["full", "fallback"]
    run_info = json.loads((out / "arms" / "exit-s1" / "config.json").read_text())
    assert run_info["init"] == str(out / calib["base_drafter"])
    assert (
        json.loads((out / "ft_data" / "fresh_prompts.json").read_text())["continuation_temperature"]
        == 0.0
    )
    assert res["schema"] == "exitlaw.authors_regime/1" and res["scale"].startswith("mini scale")
    assert len(res["analysis"]["primary"]) == 4
    assert res["calibration"]["strength"]["lambda"] == calib["strength"]["lambda"] > 0
    finals = sorted((out / "arms").glob("*/final/model.safetensors"))
    assert len(finals) == 6 * 2
    stamp = {p: p.stat().st_mtime_ns for p in finals}
    assert main(argv) == 0
    assert {p: p.stat().st_mtime_ns for p in finals} == stamp  # resumed: nothing retrained
    dest = tmp_path / "shipped"
    ship(out, dest)
    assert not list(dest.rglob("*.safetensors"))
    (dest / "results.json").unlink()
    rebuilt = rebuild(dest)
    assert rebuilt["analysis"] == res["analysis"] and rebuilt["arms"] == res["arms"]
    assert rebuilt["training"] == res["training"]
