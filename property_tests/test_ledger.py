"""The claims ledger: rows computed from given result JSONs, and the status logic."""

from __future__ import annotations

import json

import pytest

from exitlaw.paper_repro.ledger import (
    CLAIMS,
    NEEDS_GPU,
    NOT_REPRODUCED,
    REPRODUCED,
    Result,
    build_ledger,
    format_markdown,
    write_ledger,
)

TABLE_KEYS = [f"B={b},T={t}" for b in (32, 64, 128) for t in (0, 1)]


def _table(values: dict) -> dict:
    return {d: {k: v + int(k.split(",")[0][2:]) / 1000 for k in TABLE_KEYS} for d, v in values.items()}


def _inputs(*, z=0.5, p=0.4, reductions=(10.0, 15.0, 20.0), exit_tau=2.4, mini=None, gap=0.5,
            marginal_tv=0.0) -> dict:
    return {
        "budget_sweep": {"rounds": 50, "rows": [
            {"builder": b, "budget": B, "tau": 3.0, "ceiling": 3.0 - 0.01 * z, "oracle_ceiling": 3.5,
             "allocation_gap": gap if b == "ddtree" else 0.0, "tau_minus_ceiling_z": z}
            for b in ("ddtree", "oracle") for B in (32, 64)]},
        "sampled_exactness": {"vocab": 3, "horizon": 2, "marginal_tv": {"speculative": marginal_tv, "tev": 0.0},
                              "trees": [{"speculative_mean_length": 2.5, "ceiling": 2.0, "speculative_tv": 0.3,
                                         "tev_tv": 0.0}, {"speculative_mean_length": 1.5, "ceiling": 1.5,
                                                          "speculative_tv": 0.1, "tev_tv": 0.0}]},
        "verifier_equivalence": {"budget": 64, "vocab": 256, "samples": 1000, "expected_length": 2.5,
                                 "mean_length": {"predraw": 2.5, "residual": 2.51, "tev": 2.49},
                                 "chisquare": {k: {"pvalue": p} for k in ("predraw", "residual", "tev")}},
        "verifier_latency": {"config": {"device": "cpu", "vocab": 320}, "rows": [
            {"shape": "deep", "budget": B, "reduction_pct": r} for B, r in zip((32, 64, 128), reductions)]},
        "exittrain_ablation": {"sources": {"simulation": {
            "label": "sim", "budgets": [32, 64, 128],
            "table": _table({"pretrained": 2.0, "token-only": 2.2, "prefix-weighted": 2.3, "exit-guided": exit_tau})}}},
        "mini": mini,
    }


def _rows(inputs) -> dict:
    return {r["key"]: r for r in build_ledger(inputs)}


def test_ledger_has_one_row_per_claim_with_every_column():
    rows = build_ledger(_inputs())
    assert [r["key"] for r in rows] == [c.key for c in CLAIMS]
    for r in rows:
        assert set(r) == {"key", "claim", "check", "paper", "exitlaw", "scale", "status"}
        assert all(str(r[k]).strip() for k in ("claim", "check", "paper", "exitlaw", "status"))


def test_status_follows_the_numbers_in_the_result_files():
    good = _rows(_inputs())
    assert good["fixed_tree_ceiling"]["status"] == REPRODUCED
    assert good["allocation_gap"]["status"] == REPRODUCED
    assert good["sampled_drafts_differ"]["status"] == REPRODUCED
    assert _rows(_inputs(gap=0.0))["allocation_gap"]["status"] == NOT_REPRODUCED
    assert _rows(_inputs(marginal_tv=0.2))["sampled_drafts_differ"]["status"] == NOT_REPRODUCED
    assert good["same_exit_law"]["status"] == REPRODUCED
    assert good["tev_stage_savings"]["status"] == REPRODUCED
    for key in ("exittrain_tau_gain", "exit_vs_token", "exit_vs_prefix", "budget_robustness"):
        assert good[key]["status"] == REPRODUCED, key
    bad = _rows(_inputs(z=9.0, p=1e-6, reductions=(10.0, -5.0, 20.0), exit_tau=2.25))
    assert bad["fixed_tree_ceiling"]["status"] == NOT_REPRODUCED
    assert bad["same_exit_law"]["status"] == NOT_REPRODUCED
    assert bad["tev_stage_savings"]["status"] == NOT_REPRODUCED
    assert bad["exit_vs_prefix"]["status"] == NOT_REPRODUCED     # 2.25 < 2.3
    assert bad["exit_vs_token"]["status"] == REPRODUCED          # 2.25 > 2.2
    assert bad["exittrain_tau_gain"]["status"] == REPRODUCED


def test_exitlaw_numbers_are_computed_from_the_inputs():
    rows = _rows(_inputs(exit_tau=2.4))
    gain = 100 * ((2.4 + 0.064) / (2.0 + 0.064) - 1)
    assert f"B=64,T=1 {gain:+.1f}%" in rows["exittrain_tau_gain"]["exitlaw"]
    assert "B=128 +20.0%" in rows["tev_stage_savings"]["exitlaw"]
    assert "p vs exact" in rows["same_exit_law"]["exitlaw"] and "0.40" in rows["same_exit_law"]["exitlaw"]


def test_claims_without_results_need_a_gpu():
    rows = _rows(_inputs())  # no mini run: nothing measured SR or engine tau
    assert rows["end_to_end_speedup"]["status"] == NEEDS_GPU
    assert rows["exittrain_sr_gain"]["status"] == NEEDS_GPU and "no SR measured" in rows["exittrain_sr_gain"]["exitlaw"]
    assert rows["engine_tau_equal"]["status"] == NEEDS_GPU


@pytest.mark.parametrize("missing", ["budget_sweep", "verifier_equivalence", "verifier_latency",
                                     "exittrain_ablation", "sampled_exactness"])
def test_missing_cpu_computable_inputs_are_errors_not_statuses(missing):
    inputs = _inputs()
    del inputs[missing]
    with pytest.raises(ValueError, match=missing):
        build_ledger(inputs)


def _mini(tev_shift=0.0, exit_sr=1.3, exit_tau=2.3, se=0.02, base_sr=1.0):
    cells = []
    for d, tau, sr in (("base", 2.0, base_sr), ("token", 2.1, 1.1), ("prefix", 2.15, 1.1), ("exit", exit_tau, exit_sr)):
        for b in (32, 64, 128):
            for t in (0.0, 1.0):
                for v in ("predraw", "tev"):
                    cells.append({"drafter": d, "domain": "code", "budget": b, "temperature": t, "verifier": v,
                                  "tau": tau + (tev_shift if v == "tev" and t else 0), "tau_se": se, "sr": sr})
    return {"config": {"preset": "t"}, "cells": cells}


def test_the_mini_run_is_the_primary_source_when_present():
    rows = _rows(_inputs(exit_tau=1.9, mini=_mini()))  # simulation says no; the mini run says yes
    assert rows["exittrain_tau_gain"]["status"] == REPRODUCED
    assert rows["exittrain_tau_gain"]["scale"].startswith("mini-scale")
    assert "simulation" in rows["exittrain_tau_gain"]["exitlaw"]
    assert rows["exittrain_sr_gain"]["status"] == REPRODUCED
    assert _rows(_inputs(mini=_mini(exit_sr=0.9)))["exittrain_sr_gain"]["status"] == NOT_REPRODUCED
    assert rows["engine_tau_equal"]["status"] == REPRODUCED
    assert _rows(_inputs(mini=_mini(tev_shift=0.5)))["engine_tau_equal"]["status"] == NOT_REPRODUCED


def test_sr_gains_where_speculation_does_not_pay_need_a_gpu():
    row = _rows(_inputs(mini=_mini(exit_sr=0.6, base_sr=0.5)))["exittrain_sr_gain"]  # +20 %, but both < 1
    assert row["status"] == NEEDS_GPU and "every SR < 1" in row["exitlaw"]
    assert _rows(_inputs(mini=_mini(exit_sr=1.2, base_sr=0.9)))["exittrain_sr_gain"]["status"] == REPRODUCED


def test_a_measured_gain_within_its_standard_error_is_not_reproduced():
    rows = _rows(_inputs(mini=_mini(exit_tau=2.03, se=0.05)))  # +1.5%, z ~ 0.4
    assert rows["exittrain_tau_gain"]["status"] == NOT_REPRODUCED
    assert "(z +0.4)" in rows["exittrain_tau_gain"]["exitlaw"]
    assert _rows(_inputs(mini=_mini(exit_tau=2.03, se=0.005)))["exittrain_tau_gain"]["status"] == REPRODUCED


def test_markdown_and_json_are_written_and_not_overwritten(tmp_path):
    rows = build_ledger(_inputs())
    md, js = write_ledger(rows, tmp_path, {"figures": "x"})
    text = md.read_text()
    assert text.count("\n| ") == len(rows) + 1 and "| claim | check | paper | exitlaw | scale | status |" in text
    assert json.loads(js.read_text())["rows"] == rows
    with pytest.raises(FileExistsError):
        write_ledger(rows, tmp_path)
    assert "a \\| b" in format_markdown([{**rows[0], "exitlaw": "a | b"}])


def test_result_rejects_unknown_status():
    with pytest.raises(ValueError, match="status"):
        Result("1", "cpu", "maybe")


def test_ledger_cli_reads_figure_data_and_writes_the_table(tmp_path, capsys):
    from exitlaw.cli import main

    figs = tmp_path / "figs"
    figs.mkdir()
    for name, data in _inputs().items():
        if name != "mini":
            (figs / f"{name}.json").write_text(json.dumps(data))
    assert main(["ledger", "--figures", str(figs), "--out", str(tmp_path / "ledger")]) == 0
    assert "| claim |" in capsys.readouterr().out
    assert (tmp_path / "ledger" / "ledger.md").is_file()
    assert main(["ledger", "--figures", str(figs), "--out", str(tmp_path / "ledger")]) == 2  # exists


def test_repro_full_prints_every_shipped_config(capsys):
    from exitlaw.cli import main
    from exitlaw.paper_repro.full_scale import config_paths, load_config

    assert main(["repro", "full", "--runs", "/data/runs"]) == 0
    out = capsys.readouterr().out
    for path in config_paths():
        assert f"# {load_config(path)['description']}" in out
    assert "exitlaw gpu-check --device cuda" in out and "exitlaw train" in out and "/data/runs/" in out


# ----- full-scale configs: every generated command uses flags the CLI really has -------------------
def test_full_scale_commands_parse_with_the_real_cli():
    from exitlaw.cli import build_parser
    from exitlaw.paper_repro.full_scale import commands, config_paths, load_config

    parser = build_parser()
    paths = config_paths()
    assert {load_config(p)["table"] for p in paths} == {"1", "2", "3", "4", "5"}
    models = {load_config(p)["model"] for p in paths if load_config(p)["table"] == "1"}
    assert models == {"qwen3_4b", "qwen3_8b", "llama3_1_8b", "gemma4_12b_it", "qwen3_coder_30b_a3b"}
    for path in paths:
        cfg = load_config(path)
        cmds = commands(cfg)
        assert cmds, path
        for argv in cmds:
            if argv[0] == "exitlaw":
                args = parser.parse_args(argv[1:])
                assert args.command in ("train", "bench", "gpu-check")
                if args.command == "bench":
                    assert args.budget == cfg["budgets"] and args.max_new_tokens == 2048
                if args.command == "gpu-check":
                    assert args.budget == cfg["budgets"] and cfg["table"] == "3"
            else:
                raise AssertionError(f"{path}: a generated command outside the exitlaw CLI: {argv}")
        if cfg["table"] != "3":
            bench = [a for a in cmds if a[1] == "bench"]
            seeds = {(a[a.index("--draft") + 1], a[a.index("--dataset") + 1], a[a.index("--seed") + 1]) for a in bench}
            assert len(seeds) == len(bench) == len(cfg["drafters"]) * (2 + 3 + 3 + 3)  # paper's repeats


def test_full_scale_config_errors_are_clear(tmp_path):
    from exitlaw.paper_repro.full_scale import load_config

    with pytest.raises(FileNotFoundError):
        load_config(tmp_path / "none.json")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"schema": "other"}))
    with pytest.raises(ValueError, match="schema"):
        load_config(bad)
