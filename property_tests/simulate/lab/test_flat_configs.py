"""Nested configs, flat files (issue 47): ``SimConfig`` and ``FieldLabConfig`` hold the synthetic
world (``lab/world.py``) and each builder's settings dataclass, and write and read exactly the flat
keys they always did (``lab/flat.py``).

``fixtures/flat_configs.json`` was written by the flat ``SimConfig`` / ``FieldLabConfig`` before the
nesting (commit 0295138: ``{name: cfg.to_dict()}`` of every preset, the default config, and the
field lab's ``asdict`` default): the presets' JSON must stay byte for byte what ``--list-presets``
printed then.
"""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exitlaw.cli import main
from exitlaw.simulate.builders.table import SIM_SETTINGS
from exitlaw.simulate.builders.trees import EagleSettings
from exitlaw.simulate.lab.field_lab import FIXED, KEYS, FieldLabConfig
from exitlaw.simulate.lab.flat import settings_prefix, to_flat
from exitlaw.simulate.lab.presets import PRESETS, SimConfig, with_overrides
from exitlaw.simulate.lab.world import SyntheticDrafter, SyntheticTarget

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "flat_configs.json").read_text())
SHIPPED = Path(__file__).parents[3] / "paper_repro" / "results" / "field_lab.json"


def test_every_preset_writes_the_bytes_it_wrote_before_the_nesting(capsys):
    assert json.dumps(SimConfig().to_dict(), indent=1) == json.dumps(FIXTURE["default"], indent=1)
    for name, cfg in PRESETS.items():
        assert json.dumps(cfg.to_dict(), indent=1) == json.dumps(FIXTURE["presets"][name], indent=1)
    assert main(["simulate", "run", "--list-presets"]) == 0
    assert capsys.readouterr().out == json.dumps(FIXTURE["presets"], indent=1) + "\n"


def test_every_preset_reads_back_from_its_flat_form_and_from_the_old_file():
    for name, cfg in PRESETS.items():
        assert SimConfig.from_dict(cfg.to_dict()) == cfg
        assert SimConfig.from_dict(FIXTURE["presets"][name]) == cfg


def test_each_flat_key_lands_in_its_nested_place_by_the_one_rule():
    cfg = SimConfig()
    for builder, kind in SIM_SETTINGS.items():
        for f in fields(kind):
            key = settings_prefix(builder) + f.name
            bumped = with_overrides(
                cfg, **{key: _bump(getattr(cfg.builder_settings(builder), f.name))}
            )
            assert getattr(bumped.builder_settings(builder), f.name) != getattr(
                cfg.builder_settings(builder), f.name
            ), key
            assert bumped.to_dict()[key] != cfg.to_dict()[key]
    for key, where in (("drafter_noise", "drafter"), ("vocab", "target"), ("zipf", "target")):
        bumped = with_overrides(cfg, **{key: _bump(cfg.to_dict()[key])})
        assert getattr(bumped, where) != getattr(cfg, where), key
    assert with_overrides(cfg, target_seed=7).target.seed == 7 and cfg.seed == 0
    assert with_overrides(cfg, seed=7).target.seed == 0
    assert with_overrides(cfg, drafter_seed=7).drafter.seed == 7


def _bump(value):
    if isinstance(value, (list, tuple)):
        return [v + 1 for v in value]
    return value + 1


FLAT = st.fixed_dictionaries(
    {},
    optional={
        "vocab": st.integers(2, 40),
        "order": st.integers(1, 3),
        "zipf": st.floats(0.5, 3.0),
        "temperature": st.sampled_from([0.5, 1.0, 2.0]),
        "jitter": st.floats(0.0, 1.0),
        "target_seed": st.integers(0, 9),
        "drafter_mode": st.sampled_from(["greedy_path", "marginal"]),
        "drafter_noise": st.floats(0.0, 2.0),
        "drafter_eps": st.floats(0.0, 0.5),
        "horizon": st.integers(1, 6),
        "eagle_depth": st.integers(1, 6),
        "eagle_top_k": st.integers(1, 6),
        "static_branching": st.lists(st.integers(1, 3), min_size=1, max_size=4),
        "caddtree_max_budget": st.integers(1, 60),
        "dartree_widen": st.integers(1, 4),
        "rounds": st.integers(1, 50),
    },
)


@settings(max_examples=60, deadline=None)
@given(flat=FLAT)
def test_a_flat_file_round_trips_through_the_nested_config(flat):
    cfg = SimConfig.from_dict(flat)
    assert {k: v for k, v in cfg.to_dict().items() if k in flat} == flat
    assert SimConfig.from_dict(cfg.to_dict()) == cfg
    assert cfg.target.model().vocab == cfg.to_dict()["vocab"]


def test_a_maker_reads_its_own_settings_object():
    cfg = SimConfig.from_dict(dict(vocab=24, horizon=6, budget=12, eagle_depth=2, eagle_top_k=3))
    assert cfg.builder_settings("eagle") == EagleSettings(depth=2, top_k=3)
    target = cfg.target.model()
    pos, ar = cfg.drafter.models(target)
    shallow = cfg.make_builder("eagle", target, pos, ar)((1, 2), np.random.default_rng(0))
    deeper = with_overrides(cfg, eagle_depth=5)
    deep = deeper.make_builder("eagle", target, pos, ar)((1, 2), np.random.default_rng(0))
    assert int(shallow.tree.depth.max()) <= 2 < int(deep.tree.depth.max())
    assert cfg.drafter_calls("eagle") == 2 and deeper.drafter_calls("eagle") == 5
    with pytest.raises(ValueError, match="has no settings"):
        cfg.builder_settings("ddtree")


def test_the_world_dataclasses_check_their_own_fields():
    with pytest.raises(ValueError, match="SyntheticTarget field 'seed' must be an integer"):
        SyntheticTarget(seed="0")
    with pytest.raises(ValueError, match="jitter must be >= 0"):
        SyntheticTarget(jitter=-1.0)
    with pytest.raises(ValueError, match="drafter_mode must be one of"):
        SyntheticDrafter(mode="greedy")
    with pytest.raises(ValueError, match=r"drafter_eps must lie in \[0, 1\)"):
        SyntheticDrafter(eps=1.0)
    with pytest.raises(ValueError, match="SyntheticDrafter field 'noise' must be a finite number"):
        SyntheticDrafter(noise=float("inf"))
    with pytest.raises(ValueError, match="'target' must be a SyntheticTarget"):
        SimConfig(target={"vocab": 3})
    with pytest.raises(ValueError, match="unknown config keys \\['settings'\\]"):
        SimConfig.from_dict({"settings": {}})


def test_the_shipped_field_lab_configs_read_back_and_write_the_same_keys():
    runs = json.loads(SHIPPED.read_text())["runs"]
    assert runs
    for run in runs:
        cfg = FieldLabConfig.from_dict(run["config"])
        assert json.dumps(cfg.to_dict()) == json.dumps(run["config"])
        assert cfg.drafter.noise == run["config"]["drafter_noise"]
    default = FieldLabConfig()
    assert json.dumps(default.to_dict()) == json.dumps(FIXTURE["field_lab_default"])
    assert tuple(default.to_dict()) == KEYS
    assert set(to_flat(default)) == set(KEYS) | set(FIXED)
    assert FieldLabConfig.from_dict(default.to_dict()) == default


def test_the_field_lab_refuses_what_its_records_could_not_say():
    with pytest.raises(ValueError, match="unknown field-lab config keys \\['jitter'\\]"):
        FieldLabConfig.from_dict({"jitter": 0.5})
    with pytest.raises(ValueError, match="keeps \\['drafter_mode', 'jitter'\\] at their defaults"):
        FieldLabConfig(drafter=SyntheticDrafter(mode="marginal"))
    with pytest.raises(ValueError, match="'contexts' must be an integer"):
        FieldLabConfig.from_dict({"contexts": "4"})
