"""The simulation table: Tsubame's row names its verifier, CaDDTree is matched by DDTree at its mean budget,
and EAGLE-2's speedup charges one drafter call per depth level."""

from __future__ import annotations

import json

import numpy as np
import pytest

from exitlaw.simulate.builders.caddtree import LatencyModel
from exitlaw.simulate.builders.table import max_nodes
from exitlaw.simulate.lab.presets import SimConfig, estimated_work, row_label
from exitlaw.simulate.lab.run import MATCHED, output_paths, row_names, run_simulation


def _cfg(**kw) -> SimConfig:
    base = dict(name="t", vocab=32, order=2, zipf=2.0, horizon=4, budget=8, rounds=12)
    builders = dict(eagle_depth=3, eagle_top_k=3, caddtree_max_budget=24, oracle=False)
    latency = dict(draft=2.0, base=10.0, linear=0.5, quadratic=0.0, tile=0, tile_cost=0.0)
    return SimConfig.from_dict({**base, **builders, "latency": latency, **kw})


def test_eagle_latency_charges_one_drafter_call_per_depth_level():
    cfg = _cfg()
    assert cfg.drafter_calls("eagle") == 3 and cfg.drafter_calls("ddtree") == 1
    assert cfg.builder_latency("eagle").draft == pytest.approx(3 * 2.0)
    assert cfg.builder_latency("ddtree") == cfg.latency_model()
    with pytest.raises(ValueError, match="unknown builder"):
        cfg.drafter_calls("eagel")


def test_the_work_estimate_reads_each_builders_declared_node_bound():
    # CaDDTree declares its node bound (its max budget) with its maker; the estimate needs no builder name
    plain = estimated_work(_cfg(builders=("ddtree",)))
    wide = estimated_work(_cfg(builders=("ddtree", "caddtree")))
    assert plain["floats_per_round"] == (4 + 9) * 32  # horizon + (budget + 1) rows of vocab floats
    assert wide["floats_per_round"] == (4 + 25) * 32  # caddtree_max_budget 24 + 1
    assert max_nodes("caddtree", _cfg()) == 24 and max_nodes("ddtree", _cfg()) == 8


def test_run_rows_label_tsubame_match_caddtree_and_charge_eagle(tmp_path):
    cfg = _cfg(builders=("eagle", "caddtree", "tsubame"))
    assert row_names(cfg) == ["eagle", "caddtree", MATCHED, "tsubame"]
    assert [p.name for p in output_paths(cfg, tmp_path)][1:] == [
        f"trace_{b}.jsonl" for b in row_names(cfg)
    ]
    lines = []
    res = run_simulation(cfg, tmp_path, progress=False, log=lines.append)
    text = "\n".join(lines)
    b = res["builders"]
    # Tsubame's tree under the config's verifier, and the label says so
    assert (
        b["tsubame"]["label"] == row_label("tsubame", cfg) == "tsubame+tev"
        and "tsubame+tev" in text
    )
    # DDTree at round(CaDDTree's mean budget), same run: every round uses exactly that budget
    matched = round(b["caddtree"]["aggregates"]["mean_budget"])
    assert b[MATCHED]["matched_budget"] == matched
    assert {r["budget"] for r in b[MATCHED]["rounds"]} == {matched}
    assert f"ddtree@B={matched}" in text
    # EAGLE-2's speedup = sum L * C_verify(0) / sum (3 C_draft + C_verify(n)), not one drafter call
    L = np.array([r["block_length"] for r in b["eagle"]["rounds"]])
    n = np.array([r["budget"] for r in b["eagle"]["rounds"]])
    one = LatencyModel(**cfg.latency)
    want = L.sum() * one.autoregressive_cost / (3 * one.draft + one.verify(n)).sum()
    assert b["eagle"]["aggregates"]["speedup"] == pytest.approx(want)
    assert b["eagle"]["aggregates"]["speedup"] < one.speedup(L, n)
    assert b["eagle"]["drafter_calls_per_round"] == 3
    assert (
        json.loads((tmp_path / "results.json").read_text())["builders"][MATCHED]["label"]
        == f"ddtree@B={matched}"
    )
