"""``exitlaw bench verifiers``: runs, reports every stage and the floor, and its trees get accepted."""

from __future__ import annotations

import json

from exitlaw.cli import main
from helpers.cli_argv import cli_argv


def test_verifier_bench_reports_floor_ratios_on_deep_accepted_trees(capsys):
    argv = cli_argv(
        "bench", "verifiers", budget="16,32", vocab=2000, trees=2, repeats=2, threads=1, json=True
    )
    assert main(argv) == 0
    rep = json.loads(capsys.readouterr().out)
    assert (
        rep["config"]["vocab"] == 2000
        and rep["config"]["budgets"] == [16, 32]
        and rep["config"]["commit"]
    )
    for row in rep["rows"]:
        assert (
            set(row["median_ms"])
            == set(row["samples_ms"])
            == {"floor", "predraw", "predraw_multinomial", "residual", "tev", "tev_authors"}
        )
        assert (
            row["tev_over_floor"] > 0 and "tev_over_predraw" in row and "tev_over_residual" in row
        )
        # the authors' interval is its own ratio, never one of the like-for-like stage ratios
        assert "tev_authors_over_predraw" in row and "tev_over_tev_authors" not in row
        assert row["ops"]["tev"]["launching_ops"] <= 25 and row["ops"]["tev"]["one_sequence"]
        assert all(n == row["budget"] + 1 for n in row["nodes"])
        assert min(row["internal"]) >= row["budget"] // 4  # many internal nodes
        assert max(row["max_depth"]) >= 6  # deep trees
        assert row["mean_block_length"]["tev"] > 2.0  # draft resembles target: paths accepted


def test_verifier_bench_text_and_bad_arguments(capsys):
    argv = cli_argv("bench", "verifiers", budget=8, vocab=300, trees=1, repeats=1, verifier="tev")
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "TEV/floor" in out and "median ms" in out
    assert (
        main(["bench", "verifiers", "--budget", "8", "--vocab", "300", "--verifier", "greedy"]) == 2
    )
    assert "unknown verifier" in capsys.readouterr().err


def test_stage_commits_the_accepted_path_into_a_real_cache():
    import torch

    from exitlaw.engine.bench.verifiers import KVShape, StandInCache

    kv = KVShape(layers=2, kv_heads=2, head_dim=4, context=5)
    cache = StandInCache(kv, nodes=6, device=torch.device("cpu"), dtype=torch.float32)
    cache.refill()
    before = [layer.keys.clone() for layer in cache.cache.layers]
    assert cache.cache.get_seq_length() == 5 + 6  # context + the tree entries a forward appends
    cache.commit([0, 2, 5])
    assert cache.cache.get_seq_length() == 5 + 3
    for layer, old in zip(cache.cache.layers, before):
        assert torch.equal(layer.keys[..., :5, :], old[..., :5, :])  # context untouched
        assert torch.equal(
            layer.keys[..., 5:, :], old[..., [5, 7, 10], :]
        )  # path nodes 0, 2, 5 moved up
    cache.refill()
    assert cache.cache.get_seq_length() == 11  # refilled for the next timed call


def test_bench_times_decision_plus_commit_with_paired_samples():
    from exitlaw.engine.bench.verifiers import KVShape, run_verifier_bench

    kv = KVShape(layers=2, kv_heads=2, head_dim=8, context=16)
    res = run_verifier_bench((8,), 200, trees=2, repeats=3, kv=kv)
    cfg = res["config"]
    assert (
        cfg["commit"]
        and cfg["stage"] == "decision + bonus + KV-cache commit"
        and cfg["kv_shape"]["layers"] == 2
    )
    row = res["rows"][0]
    assert {len(v) for v in row["samples_ms"].values()} == {
        2 * 3
    }  # aligned: tree x repeat, every stage
    assert row["tev_over_predraw"] == row["median_ms"]["tev"] / row["median_ms"]["predraw"]
    assert "KV-cache commit" in res["text"] and "TEV/predraw" in res["text"]
    off = run_verifier_bench((8,), 200, trees=1, repeats=1, commit=False)
    assert not off["config"]["commit"] and off["config"]["kv_shape"] is None
