"""Real checkpoints load strictly, a resumed run must match the saved one in every setting that
changes what is trained, and checkpoints are never half-written (tiny models, real on-disk formats)."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace

import pytest
import torch

from exitlaw.engine.models.checkpoint import load_drafter, load_pair, load_target
from exitlaw.engine.training.checkpoint import (
    latest_checkpoint,
    truncate_metrics,
    verify_checkpoint,
)
from exitlaw.engine.training.config import DrafterSchedule, preset_config
from exitlaw.engine.training.run import check_resume, run_settings, run_training
from exitlaw.theory.infra.flat_fields import replace_flat
from exitlaw.theory.sampling_settings import SamplingSettings
from helpers.cli_argv import write_prompts
from helpers.training_runs import tiny_run_spec


def _copy(src, dst):
    shutil.copytree(src, dst)
    return dst


def _edit_tensors(folder, edit):
    from safetensors.torch import load_file, save_file

    path = folder / "model.safetensors"
    tensors = load_file(str(path))
    edit(tensors)
    save_file(tensors, str(path), metadata={"format": "pt"})


@pytest.mark.parametrize(
    "edit, names",
    [
        (lambda t: t.pop("lm_head.weight"), ["missing", "lm_head.weight"]),
        (
            lambda t: t.__setitem__("model.norm.weightX", t.pop("model.norm.weight")),
            ["missing", "model.norm.weight", "unexpected", "model.norm.weightX"],
        ),
        (lambda t: t.__setitem__("extra.bias", torch.zeros(3)), ["unexpected", "extra.bias"]),
    ],
)
def test_target_with_a_missing_or_renamed_tensor_is_refused_naming_it(tiny, tmp_path, edit, names):
    target = _copy(tiny[0], tmp_path / "target")
    _edit_tensors(target, edit)
    with pytest.raises(ValueError) as info:
        load_target(target)
    assert all(n in str(info.value) for n in names) and str(target) in str(info.value)


def test_target_with_a_misshaped_tensor_is_refused(tiny, tmp_path):
    target = _copy(tiny[0], tmp_path / "target")
    _edit_tensors(
        target,
        lambda t: t.__setitem__(
            "model.norm.weight", torch.ones(t["model.norm.weight"].numel() + 1)
        ),
    )
    with pytest.raises(ValueError, match="model.norm.weight"):
        load_target(target)


@pytest.mark.parametrize("which", ["target", "draft"])
def test_truncated_safetensors_name_the_checkpoint(tiny, tmp_path, which):
    folder = _copy(tiny[0] if which == "target" else tiny[1], tmp_path / which)
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    with pytest.raises(ValueError, match=str(folder)):
        (load_target if which == "target" else load_drafter)(folder)


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("vocab_size", 999, "drafter vocab_size 999 != target vocab_size"),
        ("hidden_size", 48, r"fc.weight has shape \(64, 128\), expected \(48, 96\)"),
    ],
)
def test_drafter_that_does_not_fit_the_target_is_refused(tiny, tmp_path, field, value, message):
    draft = _copy(tiny[1], tmp_path / "draft")
    cfg = json.loads((draft / "config.json").read_text())
    cfg[field] = value
    (draft / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match=message):
        load_pair(tiny[0], draft)


def test_drafter_layer_ids_outside_the_target_are_refused(tiny, tmp_path):
    draft = _copy(tiny[1], tmp_path / "draft")
    cfg = json.loads((draft / "config.json").read_text())
    cfg["dflash_config"]["target_layer_ids"] = [0, 99]
    (draft / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match="99"):
        load_pair(tiny[0], draft)


# ----- resume ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def finished_run(tiny, tmp_path_factory):
    root = tmp_path_factory.mktemp("run")
    prompts = write_prompts(root / "p.jsonl", ["def add(a, b):", "for i in range"])
    schedule = DrafterSchedule(steps=2, batch=1, lr=1e-4, anchors=2)
    cfg = preset_config("paper", budget=6, schedule=schedule, checkpoint_every=1)
    spec = tiny_run_spec(tiny[0], tiny[1], prompts, root, cfg)
    run_training(spec)
    return spec, root


def _changed(spec, root, what):
    if what == "target":  # a different target: same files, one weight changed (a corrupted copy)
        target = _copy(spec.target, root / f"target-{len(list(root.iterdir()))}")
        _edit_tensors(
            target, lambda t: t.__setitem__("model.norm.weight", t["model.norm.weight"] + 1)
        )
        return replace(spec, target=str(target)), "target_fingerprint"
    if what == "draft":
        draft = _copy(spec.draft, root / f"draft-{len(list(root.iterdir()))}")
        _edit_tensors(draft, lambda t: [t.__setitem__(k, v + 1) for k, v in list(t.items())[:1]])
        return replace(spec, draft=str(draft)), "draft_fingerprint"
    if what == "prompts":
        other = root / "other.jsonl"
        other.write_text(json.dumps({"prompt": "while True:"}) + "\n")
        return replace(spec, prompts=str(other)), "prompts"
    if what == "gen_temperature":
        return replace(spec, generation=SamplingSettings(0.5)), what
    changes = {"max_new_tokens": 9, "dtype": "bfloat16", "prompt_limit": 1, "chat": True}
    if what in changes:
        return replace(spec, **{what: changes[what]}), what
    train_changes = {
        "objective": "prefix",
        "lam": 0.5,
        "weight_norm": "nodes",
        "budget": 7,
        "edge_floor": 0.1,
        # the schedule's fields, named by their flat keys in config.json
        "steps": 3,
        "batch_size": 2,
        "anchors_per_seq": 3,
        "lr": 5e-4,
    }
    return replace(
        spec, config=replace_flat(spec.config, **{what: train_changes[what]})
    ), f"train.{what}"


@pytest.mark.parametrize(
    "what",
    [
        "target",
        "draft",
        "prompts",
        "max_new_tokens",
        "gen_temperature",
        "dtype",
        "prompt_limit",
        "chat",
        "objective",
        "lam",
        "weight_norm",
        "budget",
        "edge_floor",
        "steps",
        "batch_size",
        "anchors_per_seq",
        "lr",
    ],
)
def test_resume_with_a_different_setting_is_refused_naming_it(finished_run, what):
    spec, root = finished_run
    out = root / "run"
    before = {p: p.stat().st_mtime_ns for p in out.rglob("*")}
    changed, key = _changed(spec, root, what)
    with pytest.raises(ValueError, match=f"{key}: saved"):
        run_training(replace(changed, resume=True))
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*")} == before  # nothing written


def test_resume_with_the_same_settings_passes_the_check(finished_run):
    spec, root = finished_run
    check_resume(spec.out, run_settings(spec), spec.config)


def test_resume_of_a_run_that_does_not_record_a_setting_is_refused(finished_run, tmp_path):
    spec, _ = finished_run
    out = _copy(spec.out, tmp_path / "run")
    saved = json.loads((out / "config.json").read_text())
    del saved["target_fingerprint"]
    (out / "config.json").write_text(json.dumps(saved))
    with pytest.raises(ValueError, match="target_fingerprint: not recorded"):
        check_resume(out, run_settings(spec), spec.config)


def test_resume_with_corrupt_config_json_names_the_file(finished_run, tmp_path):
    spec, _ = finished_run
    out = _copy(spec.out, tmp_path / "run")
    (out / "config.json").write_text('{"train": ')
    with pytest.raises(ValueError, match="config.json is not valid JSON"):
        run_training(replace(spec, out=str(out), resume=True))


# ----- checkpoints: atomic, verified, fallback -----------------------------------------------
def test_final_and_checkpoints_carry_the_completion_marker(finished_run):
    spec, _ = finished_run
    out = __import__("pathlib").Path(spec.out)
    assert (out / "final" / ".complete").is_file()
    steps = sorted((out / "checkpoints").glob("step_*"))
    assert [p.name for p in steps] == ["step_000001", "step_000002"]
    assert all((p / ".complete").is_file() and verify_checkpoint(p) is None for p in steps)
    assert not list(out.rglob(".*partial*"))


@pytest.mark.parametrize("damage", ["trainer", "weights", "missing"])
def test_a_corrupt_latest_checkpoint_falls_back_to_the_previous_one_loudly(
    finished_run, tmp_path, damage
):
    spec, _ = finished_run
    out = _copy(spec.out, tmp_path / "run")
    latest = out / "checkpoints" / "step_000002"
    if damage == "trainer":
        f = latest / "trainer.pt"
        f.write_bytes(f.read_bytes()[:100])
    elif damage == "weights":
        f = latest / "model.safetensors"
        f.write_bytes(f.read_bytes()[:-10])
    else:
        (latest / "model.safetensors").unlink()
    said = []
    assert latest_checkpoint(out, log=said.append) == out / "checkpoints" / "step_000001"
    assert len(said) == 1 and "step_000002" in said[0] and "falling back" in said[0]


def test_a_cut_short_metrics_line_is_dropped_loudly_and_others_name_the_line(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text('{"step": 1}\n{"step": 2}\n{"step": 3, "lo')
    said = []
    truncate_metrics(path, 5, log=said.append)
    assert path.read_text() == '{"step": 1}\n{"step": 2}\n' and "cut short" in said[0]
    path.write_text('{"step": 1}\n{"st\n{"step": 3}\n')
    with pytest.raises(ValueError, match="metrics.jsonl:2"):
        truncate_metrics(path, 5, log=said.append)


def test_pair_check_names_every_difference(tiny):
    from types import SimpleNamespace

    from exitlaw.engine.models.checkpoint import check_pair

    draft = load_drafter(tiny[1]).config
    target = SimpleNamespace(
        num_hidden_layers=1, vocab_size=draft.mask_token_id, hidden_size=draft.hidden_size + 8
    )
    with pytest.raises(ValueError) as info:
        check_pair(draft, target)
    text = str(info.value)
    assert (
        "vocab_size" in text
        and "hidden_size" in text
        and "target_layer_ids" in text
        and "mask_token_id" in text
    )
