"""The training loop and the run-training function on tiny models: every objective lowers
its loss on a fixed batch, draft-opd and the authors' reading resume bit for bit, runs
saved before a config field existed resume, and run_training does a whole run from a
prompt file (tokenizer, cached continuations, config, metrics, final drafter)."""

from __future__ import annotations

import json

import pytest
import torch

from exitlaw.engine.models.target import TargetModel
from exitlaw.engine.models.tiny import build_tiny_drafter, build_tiny_target
from exitlaw.engine.training.config import DrafterSchedule, TrainConfig, preset_config
from exitlaw.engine.training.data import Sequences
from exitlaw.engine.training.loop import METRIC_KEYS, train
from exitlaw.engine.training.objectives import OBJECTIVES
from exitlaw.theory.sampling_settings import SamplingSettings
from helpers.cli_argv import write_prompts
from helpers.tiny_specs import SMALL_SPEC as SPEC
from helpers.training_runs import resume_run, tiny_run_spec


def _pair(seed: int):
    target = TargetModel(build_tiny_target(SPEC, seed), SPEC.target_layer_ids)
    return target, build_tiny_drafter(SPEC, mask_token_id=SPEC.vocab_size - 1, seed=seed)


def _one_sequence(seed: int) -> Sequences:
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, SPEC.vocab_size - 2, (16,), generator=g).tolist()
    return Sequences([ids[:4]], [ids[4:]])


def _metrics(run):
    return [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_every_objective_lowers_its_loss_on_a_fixed_batch(tmp_path, objective):
    # one sequence and more anchors than positions: every step sees the same anchors (trees follow the drafter)
    cfg = TrainConfig(
        objective=objective,
        lam=1.0,
        budget=6,
        schedule=DrafterSchedule(steps=6, batch=1, lr=3e-3, anchors=64),
        min_lr_ratio=1.0,
        checkpoint_every=6,
    )
    target, drafter = _pair(20)
    train(target, drafter, _one_sequence(20), cfg, tmp_path / objective, progress=False)
    lines = _metrics(tmp_path / objective)
    assert [x["step"] for x in lines] == list(range(1, 7)) and all(
        set(x) == set(METRIC_KEYS) for x in lines
    )
    assert lines[-1]["loss"] < lines[0]["loss"] and lines[-1]["ce"] < lines[0]["ce"]
    assert lines[0]["lambda"] == (0.0 if objective == "token" else 1.0)
    if objective != "token":  # the trained term itself goes down too
        assert lines[-1]["tree"] < lines[0]["tree"]


@pytest.mark.parametrize(
    "cfg",
    [
        TrainConfig(objective="draft-opd", budget=6, **resume_run(steps=4)),
        preset_config("authors-code", objective="exit-depth", budget=6, **resume_run(steps=4)),
    ],
    ids=["draft-opd", "authors-code-exit-depth"],
)
def test_resume_is_bit_for_bit_for_draft_opd_and_the_authors_reading(tmp_path, cfg):
    from exitlaw.engine.training.data import generate_continuations

    target, _ = _pair(21)
    g = torch.Generator().manual_seed(21)
    prompts = [torch.randint(0, SPEC.vocab_size - 2, (5,), generator=g).tolist() for _ in range(4)]
    data = Sequences(
        prompts,
        generate_continuations(
            target, prompts, max_new_tokens=10, settings=SamplingSettings(1.0), seed=0
        ),
    )
    target, straight = _pair(22)
    train(target, straight, data, cfg, tmp_path / "straight", progress=False)
    target, first = _pair(22)
    train(
        target, first, data, cfg, tmp_path / "resumed", progress=False, stop_after=3
    )  # killed after step 3
    target, resumed = _pair(22)
    train(target, resumed, data, cfg, tmp_path / "resumed", progress=False, resume=True)
    for (name, a), b in zip(straight.state_dict().items(), resumed.state_dict().values()):
        assert torch.equal(a, b), name
    strip = lambda run: [{k: v for k, v in x.items() if "per_s" not in k} for x in _metrics(run)]  # noqa: E731
    assert strip(tmp_path / "straight") == strip(tmp_path / "resumed")


def test_a_run_saved_before_the_edge_floor_existed_resumes_with_its_default(tmp_path):
    cfg = TrainConfig(
        objective="exit",
        budget=6,
        schedule=DrafterSchedule(steps=2, batch=1, lr=1e-4, anchors=2),
        checkpoint_every=1,
    )
    target, drafter = _pair(23)
    data = _one_sequence(23)
    train(target, drafter, data, cfg, tmp_path / "run", progress=False, stop_after=1)
    saved = json.loads((tmp_path / "run" / "config.json").read_text())
    del saved["train"]["edge_floor"]  # as written by a trainer without the option
    (tmp_path / "run" / "config.json").write_text(json.dumps(saved))
    train(target, drafter, data, cfg, tmp_path / "run", progress=False, resume=True)
    assert [x["step"] for x in _metrics(tmp_path / "run")] == [1, 2]
    saved["train"]["lam"] = 0.5  # a real difference is still refused
    (tmp_path / "run" / "config.json").write_text(json.dumps(saved))
    with pytest.raises(ValueError, match="lam"):
        train(target, drafter, data, cfg, tmp_path / "run", progress=False, resume=True)


def _tiny_run_files(tmp_path):
    from exitlaw.engine.models.tiny import write_tiny_models

    tdir, ddir = write_tiny_models(tmp_path / "models")
    return tdir, ddir, write_prompts(tmp_path / "p.jsonl", ["def add(a, b):", "for i in range"])


def test_run_training_does_a_whole_run_from_a_prompt_file(tmp_path):
    from exitlaw.engine.training.run import TrainingRunSpec, run_training

    tdir, ddir, prompts = _tiny_run_files(tmp_path)
    schedule = DrafterSchedule(steps=2, batch=1, lr=1e-4, anchors=2)
    cfg = preset_config("paper", budget=6, schedule=schedule, checkpoint_every=2)
    spec = tiny_run_spec(tdir, ddir, prompts, tmp_path, cfg, run_info={"note": "test"})
    result = run_training(spec)
    assert result["final_drafter"] == str(tmp_path / "run" / "final") and result["rank"] == 0
    assert result["last"]["step"] == 2 and result["last"]["objective"] == "exit"
    saved = json.loads((tmp_path / "run" / "config.json").read_text())
    assert saved["train"]["budget"] == 6 and saved["note"] == "test" and saved["sequences"] == 2
    assert (tmp_path / "run" / "final" / "model.safetensors").is_file()
    assert len(list((tmp_path / "cache").glob("continuations-*.jsonl"))) == 1
    with pytest.raises(ValueError, match="prompts"):
        run_training(
            TrainingRunSpec(
                target=str(tdir),
                draft=str(ddir),
                out=str(tmp_path / "other"),
                config=cfg,
                progress=False,
            )
        )


def test_train_step_passes_every_objective_option_to_the_loss(tmp_path):
    import numpy as np

    from exitlaw.engine.training.batch import make_batch
    from exitlaw.engine.training.exittrain import exittrain_loss
    from exitlaw.engine.training.loop import setup_training, step_sequences, train_step

    data = _one_sequence(24)
    base = dict(budget=6, schedule=DrafterSchedule(steps=1, batch=1, lr=1e-4, anchors=4))
    configs = [
        TrainConfig(objective=o, **base) for o in ("exit", "prefix", "exit-depth", "draft-opd")
    ]
    configs += [TrainConfig(objective="exit", weight_norm=n, **base) for n in ("tree", "nodes")]
    configs += [
        TrainConfig(objective="exit", weight_norm="nodes", edge_floor=0.2, **base),
        TrainConfig(objective="exit", lam=0.3, **base),
    ]
    seen = []

    def pair():  # a peaked drafter, so trees branch below the root and the weights differ from each other
        target, drafter = _pair(24)
        with torch.no_grad():
            drafter.norm.weight.mul_(8.0)
        return target, drafter

    for i, cfg in enumerate(configs):
        target, drafter = pair()
        state = setup_training(
            target, drafter, data, cfg, tmp_path / str(i), resume=False, run_info=None
        )
        got = train_step(state, target, data, cfg, 0)
        target, drafter = pair()  # the same step recomputed from the options, outside the loop
        seqs, rng = step_sequences(data, cfg, 0, 0)
        chains = (
            np.random.default_rng([cfg.seed, 0, 0, 1]) if cfg.objective == "draft-opd" else None
        )
        batch = make_batch(
            drafter, target, seqs, cfg.schedule.anchors, cfg.budget, rng, chain_rng=chains
        )
        ref = exittrain_loss(
            batch.logits,
            batch.targets,
            batch.target_valid,
            batch.trees,
            batch.edge,
            objective=cfg.objective,
            lam=cfg.lam,
            normalisation=cfg.weight_norm,
            edge_floor=cfg.edge_floor,
            opd=batch.opd,
        )
        assert got.tree == pytest.approx(ref.tree.item(), rel=1e-5) and got.loss == pytest.approx(
            ref.total.item(), rel=1e-5
        )
        seen.append((round(got.tree, 6), round(got.loss, 6)))
    assert len(set(seen)) == len(configs)  # every option changes the trained quantity
