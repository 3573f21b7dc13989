"""The mini reproduction: never overwrites a run without --overwrite, resumes, writes its table."""

from __future__ import annotations

import json

import pytest

from exitlaw.paper_repro.mini.pipeline import config_for, prepare_out
from helpers.mini_configs import micro_config


def test_prepare_out_accepts_the_same_configuration_and_refuses_another(tmp_path):
    out = tmp_path / "run"
    cfg = config_for("quick")
    prepare_out(out, cfg, overwrite=False)
    (out / "artefact.txt").write_text("kept")
    prepare_out(out, cfg, overwrite=False)  # same config: resume, nothing touched
    assert (out / "artefact.txt").read_text() == "kept"
    other = config_for("quick", seed=1)
    with pytest.raises(FileExistsError, match="seed"):
        prepare_out(out, other, overwrite=False)
    assert (out / "artefact.txt").read_text() == "kept"


def test_overwrite_moves_the_old_run_aside_instead_of_deleting_it(tmp_path):
    out = tmp_path / "run"
    prepare_out(out, config_for("quick"), overwrite=False)
    (out / "artefact.txt").write_text("kept")
    prepare_out(out, config_for("quick", seed=1), overwrite=True)
    aside = [p for p in tmp_path.iterdir() if p.name.startswith("run.old-")]
    assert len(aside) == 1 and (aside[0] / "artefact.txt").read_text() == "kept"
    assert json.loads((out / "mini_config.json").read_text())["seed"] == 1


def test_prepare_out_refuses_a_foreign_nonempty_directory(tmp_path):
    (tmp_path / "x.txt").write_text("not a run")
    with pytest.raises(FileExistsError, match="not a mini run"):
        prepare_out(tmp_path, config_for("quick"), overwrite=False)


def test_unknown_preset_is_named():
    with pytest.raises(ValueError, match="preset"):
        config_for("huge")


@pytest.mark.slow
def test_micro_pipeline_runs_end_to_end_and_a_rerun_resumes_from_cache(tmp_path):
    import torch

    from exitlaw.paper_repro.mini.pipeline import run_mini

    torch.set_num_threads(1)
    cfg = micro_config()
    res = run_mini(tmp_path / "run", cfg, progress=False)
    keys = {
        (c["drafter"], c["domain"], c["budget"], c["temperature"], c["verifier"])
        for c in res["cells"]
    }
    assert len(keys) == 4 * 2 * 2 * 2 * 2 and all(c["tau"] >= 1 for c in res["cells"])
    t0 = [c for c in res["cells"] if c["temperature"] == 0.0 and c["verifier"] == "tev"]
    assert t0 and all(c["same_as"] == "predraw" for c in t0)
    md = (tmp_path / "run" / "results.md").read_text()
    assert "exit-guided" in md and "prefix-weighted" in md and "token-only" in md
    before = json.loads((tmp_path / "run" / "timings.json").read_text())
    again = run_mini(
        tmp_path / "run", cfg, progress=False
    )  # every stage cached: same cells, no retraining
    assert [c["tau"] for c in again["cells"]] == [c["tau"] for c in res["cells"]]
    after = json.loads((tmp_path / "run" / "timings.json").read_text())
    assert after["target"] - before["target"] < 5.0


def _tiny(preset: str, **kw):
    """The micro run with the paper's drafter shape and a few more evaluation prompts."""
    drafter = dict(draft_layers=1, draft_intermediate=64, target_layer_ids=(0, 1))
    lengths = dict(vocab_size=300, prompt_tokens=32, eval_prompts=3, eval_prompt_tokens=32)
    batches = dict(distill_anchors=8, ft_batch=2, ft_anchors=4)
    return micro_config(preset, **drafter, **lengths, **batches, **kw)


def test_deep_preset_is_the_deep_tree_setting_with_seeds_and_powered_evaluation():
    cfg = config_for("deep")
    assert cfg.block_size >= 16 and cfg.gen_temperature == 0.0
    assert (
        len(cfg.ft_seeds) >= 3
        and cfg.eval_prompts >= 40
        and 64 in cfg.budgets
        and 0.0 in cfg.temperatures
    )
    with pytest.raises(ValueError, match="ft_seeds"):
        config_for("deep", ft_seeds=(1, 1))
    with pytest.raises(ValueError, match="objectives"):
        config_for("deep", objectives=("exit", "exit-weighted"))


def test_mini_objective_names_are_the_trainers():
    from exitlaw.engine.training.objectives import OBJECTIVES as TRAINER
    from exitlaw.paper_repro.mini.config import ENGINE_OBJECTIVES

    assert ENGINE_OBJECTIVES == TRAINER


@pytest.mark.slow
def test_deep_preset_path_at_tiny_size_writes_paired_comparisons_and_verdicts(tmp_path):
    """The deep preset's stages (block 16, greedy continuations, seeds x objectives, paired report) at toy size."""
    import torch

    from exitlaw.paper_repro.mini.pipeline import drafter_names, run_mini, stage_objectives

    torch.set_num_threads(1)
    cfg = _tiny("deep", ft_seeds=(0, 1), budgets=(16,))
    res = run_mini(tmp_path / "run", cfg, progress=False)
    names = drafter_names(cfg)
    assert set(names) == {"base"} | {
        f"{o}-s{s}" for o in ("token", "prefix", "exit") for s in (0, 1)
    }
    assert {c["drafter"] for c in res["cells"]} == set(names)
    assert all(
        len(c["per_prompt_tau"]) == 3 and min(c["per_prompt_tau"]) >= 1 for c in res["cells"]
    )
    pa = res["paired"]
    assert pa["primary"] == {
        "domain": "code",
        "temperature": 0.0,
        "budget": 16,
        "verifier": "predraw",
    }
    assert set(pa["verdicts"]) == {"exit - prefix", "exit - token"}
    base_cell = next(c for c in res["cells"] if c["drafter"] == "base" and c["domain"] == "code")
    assert pa["base_tau_primary"] == base_cell["tau"] and pa["deep_enough"] == (
        base_cell["tau"] >= 4
    )
    prim = next(c for c in pa["cells"] if c["domain"] == "code")
    pair = prim["pairs"]["exit - prefix"]
    assert pair["seeds"] == 2 and pair["prompts"] == 3 and pair["lo"] <= pair["mean"] <= pair["hi"]
    by = {(c["drafter"], c["domain"]): c["per_prompt_tau"] for c in res["cells"]}
    d = [by[("exit-s1", "code")][p] - by[("prefix-s1", "code")][p] for p in range(3)]
    assert pair["per_seed_mean"][1] == pytest.approx(sum(d) / 3)  # seed 1's paired mean difference
    assert res["machine"]["cpu_flags"] and res["machine"]["torch_threads"] == 1
    md = (tmp_path / "run" / "results.md").read_text()
    assert "Verdicts" in md and "exit beats prefix" in md
    # the objective runs differ only by seed and objective; both seeds were trained
    runs = sorted(p.name for p in (tmp_path / "run").glob("ft_*"))
    assert runs == sorted(f"ft_{n}" for n in names if n != "base")
    seeds = {
        json.loads((tmp_path / "run" / r / "config.json").read_text())["train"]["seed"]
        for r in runs
    }
    assert seeds == {cfg.seed + 100, cfg.seed + 101}
    run = tmp_path / "run"
    finals = stage_objectives(
        run, cfg, run / "target", run / "drafter_base" / "final", None, progress=False
    )  # all cached: no data needed, nothing retrained
    assert set(finals) == set(names)


def test_cli_preset_flag_selects_the_preset_and_refuses_a_contradiction(
    tmp_path, monkeypatch, capsys
):
    import exitlaw.paper_repro.mini.pipeline as mini
    from exitlaw.cli import main

    seen = {}

    def fake_run(
        out, cfg, **kw
    ):  # records the configuration the handler chose, writes the table it prints
        seen["preset"] = cfg.preset
        (tmp_path / "results.md").write_text("table")
        return {"cells": []}

    monkeypatch.setattr(mini, "run_mini", fake_run)
    assert main(["repro", "mini", "--out", str(tmp_path), "--preset", "deep", "--no-progress"]) == 0
    assert seen["preset"] == "deep"
    assert main(["repro", "mini", "--out", str(tmp_path), "--quick", "--no-progress"]) == 0
    assert seen["preset"] == "quick"
    assert main(["repro", "mini", "--out", str(tmp_path), "--quick", "--preset", "deep"]) != 0
    assert "contradicts" in capsys.readouterr().err


def test_eval_cells_drop_an_append_cut_off_by_a_kill_and_name_a_corrupt_line(tmp_path, capsys):
    from exitlaw.paper_repro.mini.pipeline import read_cells

    path = tmp_path / "cells.jsonl"
    whole = json.dumps({"key": "a", "result": {"tau": 2.0}}) + "\n"
    path.write_text(whole + '{"key": "b", "res')  # the second append was cut off
    assert read_cells(path) == {"a": {"tau": 2.0}}
    assert "cut-off" in capsys.readouterr().out and path.read_text() == whole
    path.write_text(whole + "garbage\n" + whole)
    with pytest.raises(ValueError, match=r"cells.jsonl line 2 .*corrupt"):
        read_cells(path)
    assert read_cells(tmp_path / "none.jsonl") == {}


def test_a_drafter_save_cut_off_leaves_no_config_so_the_stage_is_redone(tmp_path, monkeypatch):
    import exitlaw.engine.models.checkpoint as checkpoint
    from exitlaw.engine.models.checkpoint import save_drafter
    from exitlaw.engine.models.dflash import DFlashConfig, DFlashDrafter

    drafter = DFlashDrafter(
        DFlashConfig(
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            num_key_value_heads=1,
            head_dim=8,
            vocab_size=40,
            block_size=4,
            mask_token_id=3,
            target_layer_ids=(0,),
            num_target_layers=1,
        )
    )

    def cut(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(checkpoint, "save_file", cut)  # the name save_drafter calls
    with pytest.raises(KeyboardInterrupt):
        save_drafter(drafter, tmp_path / "init")
    assert (
        not (tmp_path / "init" / "config.json").exists()
        and not (tmp_path / "init" / "model.safetensors").exists()
    )
    monkeypatch.undo()
    save_drafter(drafter, tmp_path / "init")
    assert sorted(p.name for p in (tmp_path / "init").iterdir()) == [
        "config.json",
        "model.safetensors",
    ]


def test_a_truncated_run_configuration_is_an_error_naming_the_file(tmp_path):
    out = tmp_path / "run"
    prepare_out(out, config_for("quick"), overwrite=False)
    marker = out / "mini_config.json"
    marker.write_text(marker.read_text()[:40])
    with pytest.raises(
        ValueError, match=r"mini_config.json \(the run's configuration\) is truncated or corrupt"
    ):
        prepare_out(out, config_for("quick"), overwrite=False)
