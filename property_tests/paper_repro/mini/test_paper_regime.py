"""The paper-regime preset: its design's numbers, the precondition gating every ExitTrain verdict, the
primary comparisons at 97.5 %, and the whole pipeline at CI size (resumable, records the ledger reads)."""

from __future__ import annotations

import json
from dataclasses import replace
from operator import attrgetter
from pathlib import Path

import numpy as np
import pytest

from exitlaw.paper_repro.mini.exittrain.paper_regime import (
    ARMS,
    PAPER_REGIME,
    PAPER_REGIME_QUICK,
    PaperRegimeConfig,
    arm_by_name,
    arm_config,
    calibration_runs,
    cell_key,
    eval_plan,
    make_plan,
    run_names,
)
from exitlaw.paper_repro.mini.exittrain.paper_regime_report import OUTSIDE, analyse
from exitlaw.paper_repro.mini.exittrain.paper_regime_run import fresh_prompts
from exitlaw.paper_repro.paired_effects import paired_interval, records


def _get(cfg, names: str) -> tuple:
    """The attributes of ``cfg`` named (space-separated) in ``names``; a dotted name reaches inside."""
    return attrgetter(*names.split())(cfg)


def test_the_preset_holds_the_numbers_its_design_file_fixes():
    cfg = PAPER_REGIME
    assert (
        cfg.scoring_temperature == 0.5
        and cfg.fallback_temperature == 0.25
        and cfg.informative_coverage == 1.0
    )
    assert cfg.lr_grid == (5e-5, 1e-4, 2e-4, 3e-4) and max(cfg.lr_grid) <= cfg.base.distill.lr / 6
    assert cfg.steps == 512 and cfg.seeds == tuple(range(8)) and len(cfg.arms) == 9
    assert cfg.margins_pct == {"exit-prefix": 4.4, "exit-token": 5.9} and cfg.primary_level == 0.975
    lit = arm_config(cfg, arm_by_name("authors"), 3, 2e-4, 0.5)
    names = "budget schedule.anchors schedule.lr prefix_window weight_norm lam edge_floor objective"
    assert _get(lit, names + " warmup_steps min_lr_ratio") == (
        (32, 32, 1e-4, 64, "nodes", 0.1, 1e-4, "prefix", 3, 0.0)
    )
    ex = arm_config(cfg, arm_by_name("exit"), 3, 2e-4, 0.5)
    names = (
        "budget schedule.anchors schedule.lr prefix_window scoring.temperature seed warmup_steps"
    )
    assert _get(ex, names) == (64, 8, 2e-4, None, 0.5, 103, 26)
    text = (Path(__file__).resolve().parents[3] / "paper_repro" / "PAPER_REGIME.md").read_text()
    for arm in ARMS:
        assert f"`{arm.name}`" in text, f"arm {arm.name} is not in the design file"


def test_a_rate_above_the_papers_ratio_of_the_distillation_peak_is_refused():
    with pytest.raises(ValueError, match="1e-4/6e-4"):
        replace(PAPER_REGIME, lr_grid=(1e-4, 4e-4))


class _WordTokenizer:
    """Stands in for the BPE: one token per character (the sampler only needs encode)."""

    def encode(self, text, add_special_tokens=False):
        return [ord(c) % 97 for c in text]


def test_fresh_prompts_never_repeat_a_distillation_prompt_and_keep_the_prose_share():
    cfg = replace(PAPER_REGIME_QUICK, ft_prompts=40, ft_prose_share=0.25)
    length = cfg.base.prompt_tokens
    code = ["".join(chr(97 + (i * 7 + j * j) % 26) for j in range(length + 40)) for i in range(4)]
    prose = ["the quick brown fox jumps over the lazy dog " * 4]
    first, _ = fresh_prompts(cfg, _WordTokenizer(), code, prose, [])
    assert len(first) == 40 and len({tuple(p) for p in first}) == 40
    planted = first[:5]  # pretend distillation used these windows
    again, dropped = fresh_prompts(cfg, _WordTokenizer(), code, prose, planted)
    assert dropped >= 5 and len(again) == 40
    assert not {tuple(p) for p in again} & {tuple(p) for p in planted}
    prose_ids = {
        tuple(ord(c) % 97 for c in prose[0][i : i + length]) for i in range(len(prose[0]) - length)
    }
    assert sum(tuple(p) in prose_ids for p in again) == 10


def _cells(
    cfg: PaperRegimeConfig, t_s: float, effect: dict[str, float], prompts: int = 12, seed: int = 0
) -> dict:
    """Synthetic cells: per-prompt values = prompt level + arm effect + seed noise."""
    rng = np.random.default_rng(seed)
    level = 3 + rng.normal(0, 0.3, prompts)
    cells = {}
    for drafter, domain, t, b in eval_plan(cfg, t_s):
        arm = "base" if drafter == "base" else drafter.rsplit("-s", 1)[0]
        vals = level * (1 + effect.get(arm, 0.0)) + rng.normal(0, 0.01, prompts)
        rec = {
            f: list(vals)
            for f in (
                "per_prompt_rb_tau",
                "per_prompt_tau",
                "per_prompt_ceiling_ts",
                "per_prompt_depth",
            )
        }
        cells[cell_key(drafter, domain, t, b)] = rec
    return cells


def test_outside_the_papers_regime_every_exittrain_verdict_is_inconclusive():
    cfg = replace(PAPER_REGIME, seeds=(0, 1, 2))
    cells = _cells(
        cfg, 0.5, {"token": -0.02, "prefix": -0.02, "exit": 0.10}
    )  # fine-tuning harms: token < base
    res = analyse(cells, cfg, 0.5)
    assert res["precondition"]["holds"] is False
    assert {r["verdict"] for r in res["primary"].values()} == {OUTSIDE}
    assert (
        res["primary"]["exit-prefix"]["pair_verdict"] == "A > B"
    )  # the data would have said otherwise


def test_in_the_papers_regime_the_primary_rule_decides_at_97_5_percent():
    cfg = replace(PAPER_REGIME, seeds=(0, 1, 2))
    cells = _cells(cfg, 0.5, {"token": 0.05, "prefix": 0.06, "exit": 0.15})
    res = analyse(cells, cfg, 0.5)
    assert res["precondition"]["holds"] is True
    assert (
        res["primary"]["exit-prefix"]["verdict"] == "reproduced"
        and res["primary"]["exit-prefix"]["level"] == 0.975
    )
    cells = _cells(cfg, 0.5, {"token": 0.05, "prefix": 0.05, "exit": 0.05})
    res = analyse(cells, cfg, 0.5)
    assert (
        res["primary"]["exit-token"]["verdict"] == "contradicted"
    )  # no effect: below the paper's 5.9 %
    rows = {
        (r["a"], r["b"], r["domain"], r["temperature"], r["estimand"]) for r in res["secondary"]
    }
    assert ("exit-depth", "prefix-nodes", "code", 0.0, "rb_tau") in rows and (
        "authors",
        "authors-token",
        "prose",
        0.5,
        "tau",
    ) in rows
    iv, hits = paired_interval(
        {"paired_effects": res["paired_effects"]},
        "exit-prefix",
        {"regime": "paper", "role": "primary"},
        1,
    )
    assert hits[0]["level"] == 0.975 and iv.lo <= iv.estimate <= iv.hi


def test_every_run_and_cell_of_the_design_is_planned_once():
    cfg = PAPER_REGIME
    runs = run_names(cfg)
    assert (
        len(runs) == len(set(runs)) == 9 * 8 and runs[0][1] == 0 and runs[-1][1] == 7
    )  # seeds outermost
    plan = eval_plan(cfg, 0.5)
    assert len(plan) == len(set(plan))
    assert ("base", "code", 0.5, 64) in plan and ("exit-s7", "code", 0.5, 128) in plan
    assert ("authors-s0", "code", 0.5, 32) in plan and ("prefix-s0", "code", 0.5, 32) not in plan
    assert {t for _, d, t, _ in plan if d == "code"} == {0.5, 0.0, 1.0}


@pytest.mark.slow
def test_the_ci_sized_pipeline_runs_resumes_and_writes_the_ledgers_records(tmp_path, capsys):
    from exitlaw.cli import main

    out = tmp_path / "pr"
    assert (
        main(
            ["repro", "mini", "--preset", "paper-regime-quick", "--out", str(out), "--no-progress"]
        )
        == 0
    )
    res = json.loads((out / "results.json").read_text())
    assert res["schema"] == "exitlaw.paper_regime/1" and "precondition" in res["analysis"]
    assert set(res["analysis"]["primary"]) == {"exit-prefix", "exit-token"}
    assert (out / "scoring_temperature.json").is_file() and (out / "calibration.json").is_file()
    calib = json.loads((out / "calibration.json").read_text())
    assert calib["chosen_lr"] in PAPER_REGIME_QUICK.lr_grid and set(calib["grid"]) == {
        "5e-05",
        "0.0001",
    }
    assert records(res) and all(r["setting"]["regime"] == "paper" for r in records(res))
    finals = sorted((out / "arms").glob("*/final/model.safetensors"))
    assert len(finals) == 9 * 2
    stamp = {p: p.stat().st_mtime_ns for p in finals}
    capsys.readouterr()
    assert (
        main(
            ["repro", "mini", "--preset", "paper-regime-quick", "--out", str(out), "--no-progress"]
        )
        == 0
    )
    assert {p: p.stat().st_mtime_ns for p in finals} == stamp  # resumed: nothing retrained
    assert "Precondition" in capsys.readouterr().out
    from exitlaw.paper_repro.mini.exittrain.paper_regime_ship import rebuild, ship

    dest = tmp_path / "shipped"
    ship(out, dest)
    assert not list(dest.rglob("*.safetensors")), "shipping copies no weights"
    (dest / "results.json").unlink()
    rebuilt = rebuild(dest)
    assert rebuilt["analysis"] == res["analysis"] and rebuilt["arms"] == res["arms"]
    assert rebuilt["training"] == res["training"] and rebuilt["prompt_files"] == res["prompt_files"]


def _write_cells(folder, name, cells):
    (folder / "eval").mkdir(exist_ok=True)
    (folder / "eval" / name).write_text(
        "".join(json.dumps({"key": cell_key(*c), "result": {}}) + "\n" for c in cells)
    )


def test_shipping_keeps_a_drafter_s_cells_only_when_every_cell_of_that_drafter_is_done(tmp_path):
    from exitlaw.paper_repro.mini.exittrain.paper_regime_ship import finished_cells

    cfg = PAPER_REGIME
    (tmp_path / "scoring_temperature.json").write_text(json.dumps({"T_s": 0.5}))
    plan = eval_plan(cfg, 0.5)
    _write_cells(tmp_path, "cells.jsonl", [c for c in plan if c[0] == "base"])
    seed0 = [c for c in plan if c[0].endswith("-s0")]
    seed1 = [c for c in plan if c[0].endswith("-s1")]
    _write_cells(tmp_path, "cells-s0.jsonl", seed0)
    _write_cells(
        tmp_path, "cells-s1.jsonl", seed1[:-1]
    )  # the last arm one cell short: still evaluated
    kept = finished_cells(tmp_path, cfg)
    assert sorted(kept) == ["eval/cells-s0.jsonl", "eval/cells-s1.jsonl", "eval/cells.jsonl"]
    assert len(kept["eval/cells-s0.jsonl"]) == len(seed0)
    last = seed1[-1][0]
    assert {json.loads(ln)["key"] for ln in kept["eval/cells-s1.jsonl"]} == {
        cell_key(*c) for c in seed1 if c[0] != last
    }  # the unfinished arm only is left out
    _write_cells(tmp_path, "cells-s1.jsonl", seed1)
    assert len(finished_cells(tmp_path, cfg)["eval/cells-s1.jsonl"]) == len(seed1)
    _write_cells(tmp_path, "cells-s2.jsonl", [c for c in plan if c[0].endswith("-s2")][:1])
    assert "eval/cells-s2.jsonl" not in finished_cells(tmp_path, cfg)
    (tmp_path / "eval" / "cells-s3.jsonl").write_text(
        json.dumps({"key": "no-such-cell", "result": {}}) + "\n"
    )
    with pytest.raises(ValueError, match="not in the paper-regime evaluation plan"):
        finished_cells(tmp_path, cfg)
    (tmp_path / "eval" / "cells-s3.jsonl").unlink()
    _write_cells(tmp_path, "cells-x.jsonl", [])
    with pytest.raises(ValueError, match="not a cell file"):
        finished_cells(tmp_path, cfg)


def test_a_seed_trains_and_evaluates_arm_by_arm_and_skips_finished_arms(tmp_path, monkeypatch):
    from exitlaw.paper_repro.mini.exittrain import paper_regime_run as run

    cfg = PAPER_REGIME
    plan = make_plan(cfg, tmp_path, 0.5, 3e-4)
    first = f"{cfg.arms[0]}-s3"
    _write_cells(tmp_path, "cells-s3.jsonl", plan.cells_of[first])
    calls = []

    def fake_arms(base, data, runs, progress):
        calls.append(("train", [(r.arm, r.seed) for r in runs]))

    def fake_eval(plan_, base, prompts, dirs, progress, cells, shard):
        calls.append(("eval", sorted({c.drafter for c in cells}), shard))

    monkeypatch.setattr(run, "stage_arms", fake_arms)
    monkeypatch.setattr(run, "stage_evaluation", fake_eval)
    monkeypatch.setattr(run, "drafter_dirs", lambda plan_, base: {})
    run.seed_job(plan, None, None, {}, 3, progress=False)
    expected = []
    for arm in cfg.arms[1:]:
        expected += [("train", [(arm, 3)]), ("eval", [f"{arm}-s3"], "-s3")]
    assert calls == expected


def test_the_plan_is_the_design_read_once():
    """The plan holds every run with its trainer settings, every cell once, each drafter's cells, and the
    folders a run writes; it crosses a process boundary (the seed workers receive it)."""
    import pickle

    cfg = PAPER_REGIME
    plan = make_plan(cfg, tmp := Path("/nonexistent/run"), 0.5, 2e-4)
    assert [(r.arm, r.seed) for r in plan.runs] == run_names(cfg)
    assert all(
        r.config == arm_config(cfg, arm_by_name(r.arm), r.seed, 2e-4, 0.5) for r in plan.runs
    )
    assert list(plan.cells) == eval_plan(cfg, 0.5)
    assert sum(map(len, plan.cells_of.values())) == len(plan.cells)
    assert plan.runs[0].dir == tmp / "arms" / "token-s0"
    assert plan.paths.cells("-s3") == tmp / "eval" / "cells-s3.jsonl"
    assert pickle.loads(pickle.dumps(plan)) == plan
    calib = calibration_runs(cfg, plan.paths, 0.5)
    assert [r.config.schedule.lr for r in calib] == list(cfg.lr_grid)
    assert {r.config.seed for r in calib} == {cfg.calibration_seed}


def test_the_shipped_paper_regime_run_is_rebuilt_the_same_from_its_cells(tmp_path):
    """The report recomputed from the shipped cells and summaries alone equals the shipped one (but for
    the provenance of the run that wrote it), ``results.md`` byte for byte."""
    import shutil

    from exitlaw.paper_repro.mini.exittrain.paper_regime_ship import rebuild

    shipped = Path(__file__).resolve().parents[3] / "paper_repro" / "results" / "paper_regime"
    dest = tmp_path / "paper_regime"
    shutil.copytree(shipped, dest, ignore=shutil.ignore_patterns("base"))
    rebuild(dest)
    got, want = (
        json.loads((d / "results.json").read_text(encoding="utf-8")) for d in (dest, shipped)
    )
    assert got.pop("provenance") and want.pop("provenance") and got == want
    assert (dest / "results.md").read_bytes() == (shipped / "results.md").read_bytes()


def test_plan_run_report_and_ship_import_one_way():
    """The plan imports none of the others, the report neither the run nor shipping, the run not
    shipping: plan <- report <- run, plan <- report <- ship (shipping reads the cells through the plan,
    not the run), no module calls back into one that uses it."""
    import ast

    folder = Path(__file__).resolve().parents[3] / "paper_repro" / "mini" / "exittrain"
    names = ("paper_regime", "paper_regime_report", "paper_regime_run", "paper_regime_ship")
    uses = {}
    for name in names:
        tree = ast.parse((folder / f"{name}.py").read_text(encoding="utf-8"))
        found = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                found.add(node.module.rsplit(".", 1)[-1])  # from .paper_regime import x
                found.update(a.name for a in node.names)  # from exitlaw.paper_repro.mini import m
        uses[name] = found & set(names)
    assert uses == {
        "paper_regime": set(),
        "paper_regime_report": {"paper_regime"},
        "paper_regime_run": {"paper_regime", "paper_regime_report"},
        "paper_regime_ship": {"paper_regime", "paper_regime_report"},
    }
