"""Every figure module draws a non-empty PNG and PDF from small inputs; the registry and CLI work.

Fast figures are computed end to end at tiny sizes; the two whose inputs need a
model run or training (``tree_exit``, ``exittrain_ablation``) are drawn from
small data dicts in their exact schemas, and their pure helpers are tested.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from exitlaw.figures import (
    FIGURES,
    exittrain_ablation,
    figure_module,
    make,
    tree_exit,
    verifier_latency,
)
from exitlaw.figures.style import read_data

PNG_MAGIC, PDF_MAGIC = b"\x89PNG", b"%PDF"


def _assert_images(paths, name):
    png = [p for p in paths if p.suffix == ".png"]
    pdf = [p for p in paths if p.suffix == ".pdf"]
    assert png and pdf, paths
    assert (
        png[0].name == f"{name}.png"
        and png[0].read_bytes()[:4] == PNG_MAGIC
        and png[0].stat().st_size > 5000
    )
    assert (
        pdf[0].name == f"{name}.pdf"
        and pdf[0].read_bytes()[:4] == PDF_MAGIC
        and pdf[0].stat().st_size > 2000
    )


SMALL = {
    "verifier_equivalence": dict(vocab=32, budget=12, horizon=4, samples=2000),
    "budget_sweep": dict(budgets=(4, 8), rounds=6, vocab=32),
    "caddtree_throughput": dict(vocab=32, horizon=4, max_budget=40, contexts=2),
    "sampled_exactness": dict(vocab=2, horizon=2),
}


@pytest.mark.parametrize("name", sorted(SMALL))
def test_fast_figures_compute_and_draw_png_and_pdf(name, tmp_path):
    mod = figure_module(name)
    data = mod.compute(seed=1, **SMALL[name])
    json.dumps(data)  # the data is JSON-ready (the ledger reads it back)
    _assert_images(mod.draw(data, tmp_path), name)


def test_verifier_equivalence_samples_match_the_exact_law():
    data = figure_module("verifier_equivalence").compute(seed=2, **SMALL["verifier_equivalence"])
    assert abs(sum(data["exact_depth_law"]) - 1) < 1e-9
    for name in ("predraw", "residual", "tev"):
        assert sum(data["counts"][name]) == data["samples"]
        assert data["chisquare"][name]["pvalue"] > 1e-4
        assert abs(data["mean_length"][name] - data["expected_length"]) < 0.2


def test_sampled_exactness_shows_marginal_but_not_conditional_exactness():
    data = figure_module("sampled_exactness").compute(
        seed=0, vocab=3, horizon=2
    )  # the default of `exitlaw figures`
    assert data["marginal_tv"]["speculative"] < 1e-9 and data["marginal_tv"]["tev"] < 1e-9
    assert max(t["speculative_tv"] for t in data["trees"]) > 0.05
    assert max(t["tev_tv"] for t in data["trees"]) < 1e-9
    assert all(abs(t["tev_mean_length"] - t["ceiling"]) < 1e-9 for t in data["trees"])
    assert any(t["speculative_mean_length"] > t["ceiling"] + 1e-6 for t in data["trees"])


def test_caddtree_first_decrease_is_the_maximum_under_convex_cost_only():
    data = figure_module("caddtree_throughput").compute(seed=0, contexts=3)
    assert not any(c["misses"] for c in data["models"]["convex"]["curves"])
    assert all(c["first_decrease"] == c["argmax"] for c in data["models"]["convex"]["curves"])
    assert any(c["misses"] for c in data["models"]["tiled"]["curves"])


def _tree_data():
    return {
        "models": "test",
        "budget": 6,
        "temperature": 1.0,
        "round": 0,
        "rounds": 1,
        "parent": [-1, 0, 0, 1, 1, 3, 2],
        "token": [9, 1, 2, 3, 4, 5, 6],
        "edge_prob": [1.0, 0.5, 0.2, 0.3, 0.4, 0.9, 0.1],
        "exit_node": 5,
    }


def test_tree_exit_draws_a_recorded_round(tmp_path):
    _assert_images(tree_exit.draw(_tree_data(), tmp_path), "tree_exit")


def test_tree_layout_centres_parents_over_children():
    x, depth = tree_exit.layout(np.array([-1, 0, 0, 1, 1, 3, 2]))
    assert depth.tolist() == [0, 1, 1, 2, 2, 3, 2]
    leaves = [4, 5, 6]
    assert sorted(x[leaves].tolist()) == [0.0, 1.0, 2.0]
    assert x[1] == 0.5 * (x[3] + x[4]) and x[0] == 0.5 * (x[1] + x[2])


def _mini_results():
    cells = []
    for d, base in (("base", 2.0), ("token", 2.1), ("prefix", 2.2), ("exit", 2.3)):
        for dom in ("code", "prose"):
            for b in (32, 64, 128):
                for t in (0.0, 1.0):
                    for v in ("predraw", "tev"):
                        cells.append(
                            {
                                "drafter": d,
                                "domain": dom,
                                "budget": b,
                                "temperature": t,
                                "verifier": v,
                                "tau": base + b / 1000 + (0.1 if dom == "code" else 0),
                                "tau_se": 0.05,
                                "sr": base / 2,
                            }
                        )
    return {"schema": "exitlaw.mini_results/1", "config": {"preset": "test"}, "cells": cells}


def test_mini_table_averages_domains_per_budget_and_temperature():
    tab = exittrain_ablation.mini_table(_mini_results())
    assert set(tab["table"]) == {"pretrained", "token-only", "prefix-weighted", "exit-guided"}
    assert tab["table"]["exit-guided"]["B=64,T=1"] == pytest.approx(2.3 + 0.064 + 0.05)
    assert tab["budgets"] == [32, 64, 128]
    with pytest.raises(ValueError, match="no cells"):
        exittrain_ablation.mini_table(_mini_results(), verifier="residual")


def test_exittrain_ablation_draws_simulation_and_mini_sources(tmp_path, monkeypatch):
    sim_table = {
        d: {f"B={b},T={t}": 2.0 + i * 0.1 + b / 1000 for b in (32, 64, 128) for t in (0, 1)}
        for i, d in enumerate(("pretrained", "token-only", "prefix-weighted", "exit-guided"))
    }
    mini = exittrain_ablation.mini_table(_mini_results())
    data = {
        "sources": {
            "simulation": {"table": sim_table, "budgets": [32, 64, 128], "label": "sim"},
            "mini": mini,
        }
    }
    # 95 % CIs from the mini run's standard errors; none for a single simulation run
    cis = exittrain_ablation.intervals(mini)
    lo, hi = cis["exit-guided"]["B=64,T=1"]
    value, se = mini["table"]["exit-guided"]["B=64,T=1"], mini["se"]["exit-guided"]["B=64,T=1"]
    assert (lo, hi) == pytest.approx((value - 1.959964 * se, value + 1.959964 * se))
    assert exittrain_ablation.intervals(data["sources"]["simulation"]) is None
    explicit = {**data["sources"]["simulation"], "ci": {"exit-guided": {"B=64,T=0": [2.0, 2.5]}}}
    assert exittrain_ablation.intervals(explicit) == {"exit-guided": {"B=64,T=0": (2.0, 2.5)}}
    figs = []
    real_save = exittrain_ablation.save
    monkeypatch.setattr(
        exittrain_ablation,
        "save",
        lambda fig, *a, **k: (figs.append(fig), real_save(fig, *a, **k))[1],
    )
    _assert_images(exittrain_ablation.draw(data, tmp_path), "exittrain_ablation")
    axes = [ax for ax in figs[0].axes if ax.get_visible()]
    legends = {
        ax.get_title().split("\n")[0]: [t.get_text() for t in ax.get_legend().get_texts()]
        for ax in axes
    }
    assert all("no interval: single run" in v for k, v in legends.items() if k == "sim")
    assert all("black bars: 95 % CI" in v for k, v in legends.items() if k.startswith("mini"))
    n_err = {
        ax.get_title().split("\n")[0]: sum(
            type(c).__name__ == "ErrorbarContainer" for c in ax.containers
        )
        for ax in axes
    }
    assert all(n == 0 for k, n in n_err.items() if k == "sim")
    assert all(n == 3 for k, n in n_err.items() if k.startswith("mini"))  # one per objective


def test_verifier_latency_normalises_both_bench_formats_and_draws(tmp_path):
    gpu = {
        "config": {"device": "cpu", "vocab": 320, "temperature": 1.0},
        "rows": [
            {
                "shape": s,
                "budget": b,
                "internal": 3,
                "predraw_stage_ms": 2.0 * b,
                "tev_stage_ms": 1.5 * b,
            }
            for s in ("deep", "drafter")
            for b in (32, 64, 128)
        ],
    }
    data = verifier_latency.normalise(gpu)
    assert all(r["reduction_pct"] == pytest.approx(25.0) for r in data["rows"])
    assert len({r["shape"] for r in data["rows"]}) == 2
    _assert_images(verifier_latency.draw(data, tmp_path), "verifier_latency")
    bench = {
        "config": {"device": "cpu", "vocab": 1000, "temperature": 1.0},
        "rows": [
            {
                "budget": b,
                "internal": [b // 2, b // 2 + 3],
                "median_ms": {"predraw": 4.0, "residual": 3.0, "tev": 1.0, "floor": 0.8},
            }
            for b in (32, 64)
        ],
    }
    data = verifier_latency.normalise(bench)
    assert [r["internal"] for r in data["rows"]] == ["16-19", "32-35"]
    assert all(r["reduction_pct"] == pytest.approx(75.0) for r in data["rows"])
    _assert_images(verifier_latency.draw(data, tmp_path / "b"), "verifier_latency")
    with pytest.raises(ValueError, match="neither"):
        verifier_latency.normalise({"rows": [{"budget": 32, "predraw_stage_ms": 1.0}]})


def test_verifier_latency_computes_with_the_engine_bench(tmp_path):
    data = verifier_latency.compute(seed=0, quick=True, vocab=64, repeats=2, trees=1)
    assert [r["budget"] for r in data["rows"]] == [32, 64, 128]
    assert all(set(r["ms"]) >= {"predraw", "tev", "floor"} for r in data["rows"])
    assert (
        data["config"]["commit"] and "KV-cache commit" in data["config"]["stage"]
    )  # the paper's interval
    assert all(
        len(r["samples_ms"]["tev"]) == len(r["samples_ms"]["predraw"]) == 2 for r in data["rows"]
    )
    assert all("incl. KV commit" in r["shape"] for r in data["rows"])
    _assert_images(verifier_latency.draw(data, tmp_path), "verifier_latency")


def test_registry_make_writes_images_and_data_and_refuses_to_overwrite(tmp_path):
    paths = make("sampled_exactness", tmp_path, seed=0)
    assert {p.suffix for p in paths} == {".png", ".pdf", ".json"}
    assert read_data(tmp_path / "sampled_exactness.json")["figure"] == "sampled_exactness"
    with pytest.raises(FileExistsError):
        make("sampled_exactness", tmp_path)
    make("sampled_exactness", tmp_path, overwrite=True)
    with pytest.raises(ValueError, match="unknown figure"):
        make("nope", tmp_path)


def test_figures_cli_lists_and_rejects_unknown_names(capsys):
    from exitlaw.cli import main

    assert main(["figures", "--list"]) == 0
    assert capsys.readouterr().out.split() == list(FIGURES)
    assert main(["figures", "--only", "nope", "--out", "unused"]) == 2


def test_figures_cli_writes_the_ledger_next_to_the_figures(tmp_path, capsys):
    from exitlaw.cli import main
    from exitlaw.paper_repro.ledger_inputs import NEEDED

    small = {
        "budget_sweep": {
            "rounds": 5,
            "rows": [
                {
                    "builder": "ddtree",
                    "budget": 64,
                    "tau": 3.0,
                    "ceiling": 3.0,
                    "oracle_ceiling": 3.2,
                    "allocation_gap": 0.2,
                    "allocation_gap_stderr": 0.01,
                    "tau_minus_ceiling_z": 0.1,
                }
            ],
        },
        "verifier_equivalence": {
            "budget": 8,
            "vocab": 8,
            "samples": 10,
            "expected_length": 2.0,
            "counts": {"tev": [5, 0, 5], "predraw": [5, 0, 5]},
            "chisquare": {"tev": {"pvalue": 0.5}},
        },
        "verifier_latency": {
            "config": {"commit": True},
            "rows": [
                {
                    "shape": "deep",
                    "budget": 32,
                    "ms": {"predraw": 2.0, "tev": 1.0},
                    "reduction_pct": 50.0,
                    "samples_ms": {"predraw": [2.0, 2.1, 1.9], "tev": [1.0, 1.1, 0.9]},
                }
            ],
        },
    }
    assert set(small) == set(NEEDED) - {"sampled_exactness"}  # drawn by this very command
    for name, data in small.items():
        (tmp_path / f"{name}.json").write_text(json.dumps(data))
    assert main(["figures", "--only", "sampled_exactness", "--out", str(tmp_path), "--ledger"]) == 0
    out = capsys.readouterr().out
    assert "sampled_exactness" in out and "| claim |" in out
    assert (tmp_path / "ledger.md").is_file() and (tmp_path / "sampled_exactness.png").is_file()


def test_tree_exit_records_a_round_with_the_engine_on_tiny_models(tmp_path):
    data = tree_exit.compute(seed=0, quick=True, budget=8, max_new_tokens=4)
    assert "tiny" in data["models"] and len(data["parent"]) == 9  # B = 8 non-root nodes
    assert 0 <= data["round"] < data["rounds"]
    _assert_images(tree_exit.draw(data, tmp_path), "tree_exit")


def test_exittrain_ablation_computes_from_the_simulation(tmp_path):
    data = exittrain_ablation.compute(seed=0, quick=True, steps=2)
    sim = data["sources"]["simulation"]
    assert set(sim["table"]) == {"pretrained", "token-only", "prefix-weighted", "exit-guided"}
    assert all(v >= 1.0 for row in sim["table"].values() for v in row.values())
    _assert_images(exittrain_ablation.draw(data, tmp_path), "exittrain_ablation")


def test_a_figure_cut_off_after_its_images_leaves_nothing_under_its_names(tmp_path, monkeypatch):
    import exitlaw.figures.registry as registry

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(registry, "write_data", interrupted)  # images drawn, then the run is cut
    with pytest.raises(KeyboardInterrupt):
        make("sampled_exactness", tmp_path, seed=0)
    assert sorted(p.name for p in tmp_path.glob("sampled_exactness.*")) == []
    monkeypatch.undo()
    paths = make("sampled_exactness", tmp_path, seed=0)  # no refusal: nothing complete was there
    assert [p.name for p in paths] == [f"sampled_exactness.{e}" for e in ("png", "pdf", "json")]
    assert not (tmp_path / ".figures-partial").exists()


def test_images_without_their_data_are_an_interrupted_write_and_are_replaced(tmp_path):
    (tmp_path / "sampled_exactness.png").write_bytes(b"half")
    paths = make("sampled_exactness", tmp_path, seed=0)
    assert paths[0].read_bytes() != b"half" and read_data(paths[2])["figure"] == "sampled_exactness"
