"""``exitlaw train``: the handler only parses and calls run_training (presets resolved,
explicit flags winning), and every objective runs end to end on the tiny models."""

from __future__ import annotations

import json

import pytest

from exitlaw.cli import main
from exitlaw.engine.training.config import DrafterSchedule
from exitlaw.engine.training.objectives import OBJECTIVES
from helpers.cli_argv import TINY_RUN, train_argv, write_prompts


@pytest.fixture(scope="module")
def tiny_files(tmp_path_factory):
    """The tiny models and a two-prompt file, written once for the module."""
    from exitlaw.engine.models.tiny import write_tiny_models

    root = tmp_path_factory.mktemp("train_cli")
    tdir, ddir = write_tiny_models(root / "models")
    return root, tdir, ddir, write_prompts(root / "p.jsonl")


def _argv(tiny_files, out, *extra, **flags):
    """The tiny two-step run writing to ``out``, then ``flags`` and ``extra``."""
    _, tdir, ddir, prompts = tiny_files
    return train_argv(tdir, ddir, prompts, *extra, out=out, **TINY_RUN, **flags)


def _resolved(cfg) -> tuple:
    """What a preset and the flags decide: objective, weight norm, lambda, edge floor, budget."""
    return (cfg.objective, cfg.weight_norm, cfg.lam, cfg.edge_floor, cfg.budget)


def test_the_train_handler_calls_run_training_with_the_resolved_config(monkeypatch, tiny_files):
    from exitlaw.engine.training import run as training_run

    root, tdir, ddir, prompts = tiny_files
    calls = []

    def spy(spec, data=None):
        calls.append(spec)
        return {"final_drafter": "F", "last": {"step": 2}, "rank": 0, "world_size": 1}

    monkeypatch.setattr(training_run, "run_training", spy)
    flags = dict(preset="authors-code", objective="exit-depth", chat=True, cache_dir=root / "c")
    assert main(_argv(tiny_files, root / "a", **flags)) == 0
    spec = calls[-1]
    assert (
        isinstance(spec, training_run.TrainingRunSpec)
        and spec.chat
        and spec.cache_dir == str(root / "c")
    )
    cfg = spec.config
    assert _resolved(cfg) == ("exit-depth", "nodes", 0.1, 1e-4, 32)
    assert cfg.schedule == DrafterSchedule(steps=2, batch=1, lr=1e-4, anchors=2)
    assert spec.prompts == str(prompts)
    overrides = dict(edge_floor="none", lam=0.5, budget=12, weight_norm="tree")
    main(_argv(tiny_files, root / "b", preset="authors-code", **overrides))
    assert _resolved(calls[-1].config) == ("prefix", "tree", 0.5, None, 12)
    main(_argv(tiny_files, root / "c"))  # no preset: the paper's reading
    assert _resolved(calls[-1].config) == ("exit", "batch", 1.0, None, 64)
    with pytest.raises(SystemExit):
        main(_argv(tiny_files, root / "d", "--edge-floor", "tiny"))


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_exitlaw_train_runs_every_objective_on_the_tiny_models(tiny_files, objective, capsys):
    root, tdir, ddir, prompts = tiny_files
    out = root / f"run_{objective}"
    # exit-depth runs with the preset: nodes, lambda 0.1 and the edge floor
    preset = {"preset": "authors-code"} if objective == "exit-depth" else {}
    flags = dict(objective=objective, budget=6, cache_dir=root / "cache", **preset)
    assert main(_argv(tiny_files, out, **flags)) == 0
    printed = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert printed["final_drafter"] == str(out / "final") and printed["last"]["step"] == 2
    assert printed["last"]["objective"] == objective
    saved = json.loads((out / "config.json").read_text())["train"]
    assert saved["objective"] == objective and saved["budget"] == 6
    if objective == "exit-depth":
        assert (saved["weight_norm"], saved["lam"], saved["edge_floor"]) == ("nodes", 0.1, 1e-4)
    assert (out / "final" / "model.safetensors").is_file()
    # an undefined combination is a named error, not a guess
    assert main(_argv(tiny_files, root / "bad", objective="draft-opd", weight_norm="nodes")) == 2
    assert "draft-opd" in capsys.readouterr().err and not (root / "bad").exists()


def test_exitlaw_train_vat_logs_its_reweighted_term_and_rejects_undefined_combinations(
    tiny_files, capsys
):
    root, tdir, ddir, prompts = tiny_files
    out = root / "run_vat_lam"
    assert (
        main(_argv(tiny_files, out, objective="vat", lam=0.5, budget=6, cache_dir=root / "cache"))
        == 0
    )
    last = json.loads(capsys.readouterr().out.strip().splitlines()[-1])["last"]
    # loss = CE + lambda * vat term; the term is a weighted mean of draft NLLs (> 0), the trees still scored
    assert last["objective"] == "vat" and last["lambda"] == 0.5 and last["tree"] > 0
    assert last["loss"] == pytest.approx(last["ce"] + 0.5 * last["tree"], rel=1e-5)
    assert last["coverage"] == last["coverage"]  # not NaN: trees were scored and logged
    for extra, word in ((["--weight-norm", "tree"], "vat"), (["--edge-floor", "1e-4"], "floor")):
        assert main(_argv(tiny_files, root / "bad_vat", "--objective", "vat", *extra)) == 2
        assert word in capsys.readouterr().err and not (root / "bad_vat").exists()


def test_exitlaw_train_refuses_trees_that_cannot_fit_before_training(tiny_files, capsys):
    """Every anchor's tree of a sequence is scored in one target forward: a budget whose forward
    cannot fit in free memory is refused with the estimate before any continuation is generated
    or checkpoint written."""
    root, tdir, ddir, prompts = tiny_files
    out = root / "run_huge_budget"
    cache = root / ".exitlaw-cache"
    before = sorted(p.name for p in cache.rglob("*")) if cache.exists() else []
    assert main(_argv(tiny_files, out, "--budget", "100000000", "--device", "cpu")) == 2
    err = capsys.readouterr().err
    assert "one training forward (2 anchors x 100000001 tree nodes)" in err
    assert "needs at least" in err and "GiB free" in err
    assert not (out / "final").exists() and not (out / "checkpoints").exists()
    assert (sorted(p.name for p in cache.rglob("*")) if cache.exists() else []) == before
