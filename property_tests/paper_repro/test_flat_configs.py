"""Nested configs, flat files (issue 47): the mini reproduction's configs hold their training schedules
(:class:`~exitlaw.engine.training.config.Schedule`, ``cfg.distill.steps``; a paper-regime arm's
:class:`~exitlaw.paper_repro.mini.exittrain.paper_regime.TreeRecipe`, ``cfg.literal.budget``) and write
and read exactly
the flat keys they always did (``distill_steps``: :mod:`exitlaw.theory.infra.flat_fields`).

``fixtures/flat_configs.json`` was written by the flat configs before the nesting (commit f7aef5c:
``to_json()`` of every mini, paper-regime and authors-regime preset, the test suite's micro config,
each preset's ``spec_dict(target)``, the mechanism config and ``asdict`` of the pilot config).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields, replace
from pathlib import Path

import pytest

from exitlaw.engine.training.config import DrafterSchedule, Schedule
from exitlaw.paper_repro.mini.config import PRESETS, MiniConfig, TargetSpec, config_for, spec_dict
from exitlaw.paper_repro.mini.exittrain.authors_regime import PRESETS as AUTHORS_PRESETS
from exitlaw.paper_repro.mini.exittrain.authors_regime import config_from_json
from exitlaw.paper_repro.mini.exittrain.mechanism import MechanismConfig
from exitlaw.paper_repro.mini.exittrain.paper_regime import (
    ARMS,
    PAPER_REGIME,
    PAPER_REGIME_QUICK,
    arm_config,
)
from exitlaw.paper_repro.mini.exittrain.pilot import PilotConfig
from exitlaw.paper_repro.mini.pipeline import objective_config
from exitlaw.theory.infra.flat_fields import from_flat, group, replace_flat, to_flat
from helpers.mini_configs import micro_config

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "flat_configs.json").read_text())
RESULTS = Path(__file__).parents[2] / "paper_repro" / "results"
REGIMES = {
    "paper-regime": PAPER_REGIME,
    "paper-regime-quick": PAPER_REGIME_QUICK,
    **AUTHORS_PRESETS,
}


def _same(a: dict, b: dict) -> bool:
    """Equal keys and values, and equal JSON text once keys are sorted."""
    return a == b and json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def test_every_preset_writes_the_keys_and_values_it_wrote_before_the_nesting():
    for name, cfg in PRESETS.items():
        assert _same(cfg.to_json(), FIXTURE["mini"][name]), name
        assert _same(spec_dict(cfg.target), FIXTURE["target_specs"][name]), name
    assert _same(micro_config().to_json(), FIXTURE["mini_micro"])
    for name, cfg in REGIMES.items():
        old = {**FIXTURE["paper_regime"], **FIXTURE["authors_regime"]}[name]
        assert _same(cfg.to_json(), old), name
    assert _same(MechanismConfig().to_json(), FIXTURE["mechanism"])
    assert _same(to_flat(PilotConfig()), FIXTURE["pilot"])  # what pilot_config.json holds


def test_every_preset_reads_back_from_its_flat_form_and_from_the_old_one():
    for name, cfg in PRESETS.items():
        assert MiniConfig.from_json(cfg.to_json()) == cfg
        assert MiniConfig.from_json(FIXTURE["mini"][name]) == cfg
        assert TargetSpec.from_json(FIXTURE["target_specs"][name]) == cfg.target
    for name, cfg in REGIMES.items():
        assert config_from_json(cfg.to_json()) == cfg
        assert type(config_from_json(cfg.to_json())) is type(cfg), name


def _shipped_configs():
    """``(path, kind, config)`` of each configuration a shipped result holds."""
    for path in sorted(RESULTS.rglob("*.json")):
        if path.stat().st_size > 5_000_000:
            continue
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            continue
        for cfg in (data, data.get("config")):
            if isinstance(cfg, dict) and "distill_steps" in cfg:
                yield path, "mini", cfg
            elif isinstance(cfg, dict) and "ft_prompts" in cfg and "base" in cfg:
                yield path, "regime", cfg


def test_the_shipped_mechanism_and_pilot_configs_read_back_as_they_are():
    mechanism = json.loads((RESULTS / "mechanism" / "mechanism.json").read_text())["config"]
    assert MechanismConfig.from_json(mechanism).to_json() == mechanism
    for name in ("pilot.json", "pilot_config.json"):
        pilot = json.loads((RESULTS / "pilot_precondition" / name).read_text())
        pilot = pilot.get("config", pilot)
        assert to_flat(from_flat(PilotConfig, pilot)) == pilot, name
        assert from_flat(PilotConfig, pilot) == PilotConfig(), (
            name
        )  # the shipped run used the defaults


def test_the_shipped_target_spec_reads_back_as_it_is():
    info = json.loads(
        (RESULTS / "paper_regime" / "base" / "target" / "mini_target.json").read_text()
    )
    assert spec_dict(TargetSpec.from_json(info["spec"])) == info["spec"]
    assert TargetSpec.from_json(info["spec"]) == PRESETS["deep"].target


def test_every_shipped_config_reads_back_to_the_keys_and_values_it_holds():
    seen = {"mini": 0, "regime": 0}
    for path, kind, saved in _shipped_configs():
        cfg = MiniConfig.from_json(saved) if kind == "mini" else config_from_json(saved)
        again = cfg.to_json()
        # runs saved before a field existed lack its key: the reader gives it its default
        assert {k: again[k] for k in saved} == saved, path
        if kind == "regime":
            assert {k: again["base"][k] for k in saved["base"]} == saved["base"], path
        seen[kind] += 1
    assert seen["mini"] >= 8 and seen["regime"] >= 3, seen


def test_each_flat_key_lands_in_its_schedule_by_the_one_rule():
    cfg = config_for("deep")
    for prefix, where in (("distill_", "distill"), ("ft_", "ft")):
        for f in fields(DrafterSchedule):
            bumped = config_for(
                "deep", **{prefix + f.name: getattr(getattr(cfg, where), f.name) * 2}
            )
            assert getattr(getattr(bumped, where), f.name) == 2 * getattr(
                getattr(cfg, where), f.name
            )
            other = "ft" if where == "distill" else "distill"
            assert getattr(bumped, other) == getattr(cfg, other)
            assert bumped.to_json()[prefix + f.name] == 2 * cfg.to_json()[prefix + f.name]
    mech = MechanismConfig.from_json({"tune_steps": 5, "batch_size": 3, "anchors_per_seq": 2})
    assert mech.tune == DrafterSchedule(steps=5, batch=3, lr=MechanismConfig().tune.lr, anchors=2)
    assert mech.to_json()["batch_size"] == 3 and "tune_batch" not in mech.to_json()
    spec = TargetSpec.from_json({"steps": 7, "batch_size": 3, "lr": 0.5})
    assert spec.schedule == Schedule(steps=7, batch=3, lr=0.5)
    assert spec_dict(spec)["batch_size"] == 3 and "batch" not in spec_dict(spec)
    assert (
        objective_config(cfg, "exit", 0).schedule == cfg.ft
    )  # the trainer runs the config's schedule


@pytest.mark.parametrize("cfg", [PAPER_REGIME, PAPER_REGIME_QUICK], ids=lambda c: c.preset)
def test_each_arm_trains_with_the_flat_keys_of_its_recipe(cfg):
    flat = cfg.to_json()
    for arm in ARMS:
        tc = arm_config(cfg, arm, 0, 3e-5, 0.5)
        pre = "literal_" if arm.literal else ""
        steps = flat["epochs"] * flat["ft_prompts"] // flat["batch_size"]
        assert (tc.budget, tc.schedule.anchors, tc.schedule.steps, tc.schedule.batch) == (
            flat[pre + "budget"],
            flat[pre + "anchors"],
            steps,
            flat["batch_size"],
        )
        assert tc.warmup_steps == max(1, round(flat[pre + "warmup_ratio"] * steps))
        assert tc.schedule.lr == (flat["literal_lr"] if arm.literal else 3e-5)
        assert tc.prefix_window == (flat["literal_window"] if arm.literal else None)
    bumped = config_from_json({**flat, "literal_budget": 5, "anchors": 3})
    assert (bumped.literal.budget, bumped.recipe.anchors) == (5, 3)
    assert (bumped.recipe.budget, bumped.literal.anchors) == (
        cfg.recipe.budget,
        cfg.literal.anchors,
    )


def test_a_key_no_field_owns_is_refused_by_name():
    saved = config_for("quick").to_json()
    with pytest.raises(ValueError, match=r"unknown keys \['distill_warmup'\]"):
        MiniConfig.from_json({**saved, "distill_warmup": 3})
    with pytest.raises(ValueError, match=r"mini configuration.target: unknown keys \['batch'\]"):
        MiniConfig.from_json({**saved, "target": {**saved["target"], "batch": 3}})
    with pytest.raises(ValueError, match=r"unknown fields \['ft_warmup'\]"):
        config_for("quick", ft_warmup=3)
    regime = PAPER_REGIME.to_json()
    with pytest.raises(ValueError, match=r"unknown keys \['ft_stepz'\]"):
        config_from_json({**regime, "base": {**regime["base"], "ft_stepz": 1}})
    with pytest.raises(ValueError, match="a schedule's steps must be >= 1"):
        config_for("quick", ft_steps=0)


@dataclass(frozen=True)
class _Inner:
    a: int = 1
    b: tuple[int, ...] = (2,)


@dataclass(frozen=True)
class _Outer:
    x: int = 0
    one: _Inner = group("one_", default=_Inner())
    two: _Inner = group("", default=_Inner(a=5), keys={"a": "alpha"})


def test_the_rule_on_a_planted_config():
    cfg = _Outer(x=3, one=_Inner(a=4, b=(5, 6)))
    assert list(to_flat(cfg).items()) == [
        ("x", 3),
        ("one_a", 4),
        ("one_b", [5, 6]),
        ("alpha", 5),
        ("b", [2]),
    ]
    assert from_flat(_Outer, to_flat(cfg)) == cfg
    assert from_flat(_Outer, {"one_a": 9}) == _Outer(one=_Inner(a=9))
    assert replace_flat(cfg, alpha=1, one=_Inner()) == replace(cfg, two=_Inner(a=1), one=_Inner())

    @dataclass(frozen=True)
    class Clash:
        b: int = 0
        two: _Inner = group("", default=_Inner())

    with pytest.raises(ValueError, match=r"flat keys \['b'\] name two fields"):
        from_flat(Clash, {})
