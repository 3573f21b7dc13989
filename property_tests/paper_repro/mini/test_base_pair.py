"""The main job's mini stage starts from a shipped base pair: copied whole, refused when it was made
with other settings (docs/index.md, "Getting started")."""

import json
import shutil
from dataclasses import replace

import pytest

from exitlaw.paper_repro.mini.pipeline import (
    BASE_PAIR_FIELDS,
    BASE_PAIR_PARTS,
    base_pair_dir,
    config_for,
    stage_base_pair,
)


def test_smoke_preset_agrees_with_the_shipped_base_pair_and_copies_it(tmp_path):
    cfg = config_for("smoke")
    src = base_pair_dir(cfg)
    record = stage_base_pair(tmp_path, cfg)
    made = json.loads((src / "mini_config.json").read_text())
    assert all(made[k] == cfg.to_json()[k] for k in BASE_PAIR_FIELDS)
    assert record["source"] == cfg.base_pair and record["config"] == made
    for part in BASE_PAIR_PARTS:
        for f in (src / part).iterdir():
            assert (tmp_path / part / f.name).read_bytes() == f.read_bytes()
    assert json.loads((tmp_path / "base_pair.json").read_text()) == record
    again = stage_base_pair(tmp_path, cfg)  # a rerun keeps the copy
    assert again == record


@pytest.mark.parametrize("field", ["vocab_size", "block_size", "distill_steps"])
def test_a_base_pair_made_with_other_settings_is_refused_by_name(tmp_path, field):
    cfg = config_for("smoke")
    pair = tmp_path / "pair"
    shutil.copytree(base_pair_dir(cfg), pair)
    made = json.loads((pair / "mini_config.json").read_text())
    made[field] = made[field] + 1
    (pair / "mini_config.json").write_text(json.dumps(made))
    with pytest.raises(ValueError, match=rf"other settings \({field}\)"):
        stage_base_pair(tmp_path / "run", replace(cfg, base_pair=str(pair)))
    assert not (tmp_path / "run" / "target").exists()


def test_a_folder_without_a_base_pair_is_refused(tmp_path):
    cfg = replace(config_for("smoke"), base_pair=str(tmp_path / "empty"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="no mini_config.json"):
        stage_base_pair(tmp_path / "run", cfg)
