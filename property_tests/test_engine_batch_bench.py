"""Batched throughput benchmark (exitlaw.engine.batch_bench) and ``exitlaw batch-bench``: shapes and
consistency of the report, never timings."""

from __future__ import annotations

import json

import pytest

from exitlaw.cli import main as cli_main
from exitlaw.engine.batch_bench import _batches, run_batch_decode_bench, run_batch_verifier_bench

TINY_SEED = 3  # the shared ``tiny``/``pair`` fixtures (conftest.py) use this seed


def test_batches_are_full_and_cyclic():
    assert _batches([[1], [2], [3]], 2) == [[[1], [2]], [[3], [1]]]
    assert _batches([[1]], 3) == [[[1], [1], [1]]]
    with pytest.raises(ValueError, match="batch sizes"):
        _batches([[1]], 0)
    with pytest.raises(ValueError, match="at least one prompt"):
        _batches([], 2)


def test_decode_bench_reports_both_methods_side_by_side_and_matches_AR_at_T0(pair):
    target, drafter = pair
    prompts = [[11, 42, 7, 99], [5], [9, 8, 7, 6, 5, 4], [33, 44]]
    rows = run_batch_decode_bench(target, drafter, prompts, batch_sizes=(1, 3), budget=6, verifiers=("tev", "predraw"),
                                  max_new_tokens=5, warmup=0)
    assert [(r["batch_size"], r["verifier"]) for r in rows] == [(1, "tev"), (1, "predraw"), (3, "tev"), (3, "predraw")]
    for r in rows:
        assert r["batches"] == (4 if r["batch_size"] == 1 else 2)
        assert r["tokens"] == 5 * r["batch_size"] * r["batches"]
        assert r["tokens_per_s"] > 0 and r["ar_tokens_per_s"] > 0
        assert r["speedup"] == pytest.approx(r["tokens_per_s"] / r["ar_tokens_per_s"])
        assert r["tau"] >= 1.0 and r["matches_ar"] is True
        s = r["stage_ms_per_round"]
        assert {"draft", "build", "verify_forward", "decide", "commit"} <= set(s)
        assert s["verifier_stage"] == pytest.approx(s["decide"] + s["commit"])


def test_verifier_bench_times_batched_and_looped_calls():
    rows = run_batch_verifier_bench((1, 3), budget=6, vocab=50, kinds=("greedy", "tev"), repeats=2)
    assert [(r["batch_size"], r["kind"]) for r in rows] == [(1, "greedy"), (1, "tev"), (3, "greedy"), (3, "tev")]
    assert all(r["batched_ms"] > 0 and r["looped_ms"] > 0 for r in rows)
    assert all(r["batched_min_ms"] <= r["batched_ms"] and r["looped_min_ms"] <= r["looped_ms"] for r in rows)


def test_batch_bench_command_prints_the_table_writes_json_and_refuses_to_overwrite(tiny, tmp_path, capsys):
    prompts = tmp_path / "p.jsonl"
    prompts.write_text('{"turns": ["What is 12 + 30?"]}\n{"prompt": "Add two numbers."}\n{"prompt": "Hi"}\n')
    out = tmp_path / "batch.json"
    argv = ["batch-bench", "--target", str(tiny[0]), "--draft", str(tiny[1]), "--dataset", f"jsonl:{prompts}",
            "--batch-size", "1,2", "--budget", "6", "--max-new-tokens", "4", "--warmup", "0",
            "--verifier-repeats", "1", "--out", str(out)]
    assert cli_main(argv) == 0
    printed = capsys.readouterr().out
    assert "AR tok/s" in printed and "tree tok/s" in printed and "verifier ms/batch" in printed
    res = json.loads(out.read_text())
    assert res["schema"] == "exitlaw.batch_bench" and res["config"]["num_prompts"] == 3
    assert [r["batch_size"] for r in res["decode"]] == [1, 2]
    assert all(r["matches_ar"] for r in res["decode"])
    assert cli_main(argv) == 2  # refuses to overwrite
    assert cli_main(argv[:-2] + ["--verifier", "sequoia"]) == 2
