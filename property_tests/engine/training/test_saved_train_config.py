"""A run's ``config.json`` record of its ``TrainConfig`` (``train``) is the flat object it always was,
although the schedule is one nested :class:`DrafterSchedule`.

``fixtures/saved_train_configs.json`` was written from ``asdict(cfg)`` before the schedule was nested
(``steps``, ``batch_size``, ``anchors_per_seq``, ``lr`` were then four flat fields); each case is built
here the nested way and must write, key for key and in the same order, what it wrote then.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from exitlaw.engine.training.config import (
    PRESETS,
    DrafterSchedule,
    Schedule,
    TrainConfig,
    preset_config,
)
from exitlaw.theory.sampling_settings import HF_ORDER, SamplingSettings

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "saved_train_configs.json").read_text())
RESULTS = Path(__file__).resolve().parents[3] / "paper_repro" / "results"

CASES = {
    **{f"preset:{p}": preset_config(p) for p in PRESETS},
    "default": TrainConfig(),
    "small-run": TrainConfig(
        objective="prefix",
        budget=8,
        schedule=DrafterSchedule(steps=6, batch=2, lr=3e-4, anchors=3),
        seed=5,
        warmup_steps=2,
    ),
    "authors-tuned": preset_config(
        "authors-code",
        schedule=DrafterSchedule(steps=250, batch=16, lr=5e-5, anchors=32),
        prefix_window=64,
        amp="off",
    ),
    "scoring-filtered": TrainConfig(
        scoring=SamplingSettings(0.7, top_k=4, min_p=0.1, order=HF_ORDER),
        schedule=DrafterSchedule(steps=3, batch=4, lr=2e-3, anchors=8),
    ),
    "token-only": TrainConfig(
        objective="token",
        score_trees=False,
        schedule=DrafterSchedule(steps=40, batch=8, lr=1e-3, anchors=1),
    ),
}


def test_every_fixture_case_is_built_here():
    assert set(CASES) == set(FIXTURE) and {f"preset:{p}" for p in PRESETS} <= set(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_saved_form_is_todays_flat_record_byte_for_byte(name):
    cfg = CASES[name]
    saved = json.loads(json.dumps(cfg.to_saved()))
    assert saved == FIXTURE[name] and list(saved) == list(FIXTURE[name])
    assert json.dumps(cfg.to_saved(), indent=1) == json.dumps(FIXTURE[name], indent=1)
    assert "schedule" not in saved


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_saved_record_reads_back_to_the_same_config(name):
    assert TrainConfig.from_saved(FIXTURE[name]) == CASES[name]
    assert TrainConfig.from_saved(CASES[name].to_saved()) == CASES[name]


def test_the_schedule_keys_map_to_the_schedule_fields():
    cfg = TrainConfig.from_saved({"steps": 7, "batch_size": 3, "anchors_per_seq": 2, "lr": 0.25})
    assert cfg.schedule == DrafterSchedule(steps=7, batch=3, lr=0.25, anchors=2)
    # a record without some of the keys keeps the defaults of the others
    assert TrainConfig.from_saved({"steps": 9}).schedule == DrafterSchedule(
        steps=9, batch=4, lr=1e-4, anchors=8
    )
    with pytest.raises(ValueError, match=r"unknown keys \['anchors'\]"):
        TrainConfig.from_saved({"anchors": 2})


@pytest.mark.parametrize(
    "record, field",
    [
        ({"steps": 0}, "steps"),
        ({"batch_size": 0}, "batch"),
        ({"anchors_per_seq": 0}, "anchors"),
        ({"lr": 0.0}, "lr"),
        ({"lr": -1e-3}, "lr"),
    ],
)
def test_a_bad_schedule_is_refused_naming_its_field(record, field):
    with pytest.raises(ValueError, match=f"a schedule's {field} must be"):
        TrainConfig.from_saved(record)
    value = next(iter(record.values()))
    kw = dict(steps=2, batch=1, lr=1e-3, anchors=2)
    with pytest.raises(ValueError, match=f"a schedule's {field} must be"):
        DrafterSchedule(**{**kw, field: value})


def test_the_schedule_must_be_a_drafter_schedule():
    with pytest.raises(TypeError, match="DrafterSchedule"):
        TrainConfig(schedule=Schedule(steps=2, batch=1, lr=1e-3))


def test_the_shipped_mechanism_config_trains_with_its_flat_schedule():
    """The shipped mechanism test's settings (``tune_steps``, ``batch_size``, ``tune_lr``,
    ``anchors_per_seq``) still read, and the trainer runs that schedule, saved under the same values."""
    from exitlaw.paper_repro.mini.exittrain.mechanism import MechanismConfig, _grad_config

    flat = json.loads((RESULTS / "mechanism" / "mechanism.json").read_text())["config"]
    saved = _grad_config(MechanismConfig.from_json(flat)).to_saved()
    assert (saved["steps"], saved["batch_size"], saved["anchors_per_seq"], saved["lr"]) == (
        flat["tune_steps"],
        flat["batch_size"],
        flat["anchors_per_seq"],
        flat["tune_lr"],
    )
