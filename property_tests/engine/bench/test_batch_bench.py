"""Batched throughput benchmark (exitlaw.engine.bench.batch) and ``exitlaw bench batch``: shapes and
consistency of the report, never timings."""

from __future__ import annotations

import json

import pytest

from exitlaw.cli import main as cli_main
from exitlaw.engine.bench.batch import _batches, run_batch_decode_bench, run_batch_verifier_bench
from helpers.cli_argv import cli_argv, pair_flags

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
    rows = run_batch_decode_bench(
        target,
        drafter,
        prompts,
        batch_sizes=(1, 3),
        budget=6,
        verifiers=("tev", "predraw"),
        max_new_tokens=5,
        warmup=0,
    )
    assert [(r["batch_size"], r["verifier"]) for r in rows] == [
        (1, "tev"),
        (1, "predraw"),
        (3, "tev"),
        (3, "predraw"),
    ]
    for r in rows:
        assert r["batches"] == (4 if r["batch_size"] == 1 else 2)
        assert r["tokens"] == 5 * r["batch_size"] * r["batches"]
        assert (
            r["decode_tokens"] == 4 * r["batch_size"] * r["batches"]
        )  # each row's first: the prefill's
        assert r["tokens_per_s"] > 0 and r["ar_tokens_per_s"] > 0
        assert r["speedup"] == pytest.approx(r["tokens_per_s"] / r["ar_tokens_per_s"])
        assert r["tau"] >= 1.0 and r["matches_ar"] is True
        s = r["stage_ms_per_round"]
        assert {"draft", "build", "verify_forward", "decide", "commit"} <= set(s)
        assert s["verifier_stage"] == pytest.approx(s["decide"] + s["commit"])


def test_verifier_bench_times_batched_and_looped_calls():
    rows = run_batch_verifier_bench((1, 3), budget=6, vocab=50, kinds=("greedy", "tev"), repeats=2)
    assert [(r["batch_size"], r["kind"]) for r in rows] == [
        (1, "greedy"),
        (1, "tev"),
        (3, "greedy"),
        (3, "tev"),
    ]
    assert all(r["batched_ms"] > 0 and r["looped_ms"] > 0 for r in rows)
    assert all(
        r["batched_min_ms"] <= r["batched_ms"] and r["looped_min_ms"] <= r["looped_ms"]
        for r in rows
    )


def test_batch_bench_command_prints_the_table_writes_json_and_refuses_to_overwrite(
    tiny, tmp_path, capsys
):
    prompts = tmp_path / "p.jsonl"
    prompts.write_text(
        '{"turns": ["What is 12 + 30?"]}\n{"prompt": "Add two numbers."}\n{"prompt": "Hi"}\n'
    )
    out = tmp_path / "batch"
    run = dict(batch_size="1,2", budget=6, max_new_tokens=4, warmup=0, verifier_repeats=1)
    argv = cli_argv(
        "bench", "batch", **pair_flags(tiny, prompts), **run, top_k=3, top_p=0.9, out=out
    )
    assert cli_main(argv) == 0
    printed = capsys.readouterr().out
    assert "AR tok/s" in printed and "tree tok/s" in printed and "verifier ms/batch" in printed
    res = json.loads((out / "results.json").read_text())
    assert res["schema"] == "exitlaw.batch_bench" and res["config"]["num_prompts"] == 3
    assert [r["batch_size"] for r in res["decode"]] == [1, 2]
    assert res["config"]["sampling"] == {
        "top_k": 3,
        "top_p": 0.9,
        "min_p": None,
        "order": ["min_p", "top_k", "top_p"],
    }
    assert all((r["top_k"], r["top_p"], r["min_p"]) == (3, 0.9, None) for r in res["decode"])
    assert all(r["matches_ar"] for r in res["decode"])
    assert cli_main(argv) == 2  # refuses to overwrite
    assert cli_main(argv[:-2] + ["--verifier", "sequoia"]) == 2


def _bench_argv(tiny, prompts, *extra):
    """Two budgets, two temperatures, TEV, four new tokens, no warm-up; ``extra`` last."""
    run = dict(budget="4,6", temperature="0,1", verifier="tev", max_new_tokens=4, warmup=0)
    return [
        *cli_argv("bench", "decoding", **pair_flags(tiny, prompts), **run, no_progress=True),
        *extra,
    ]


def test_bench_batch_size_runs_batched_tree_and_ar_decoding_side_by_side(tiny, tmp_path, capsys):
    prompts = tmp_path / "p.jsonl"
    prompts.write_text(
        '{"turns": ["What is 12 + 30?", "And times two?"]}\n{"prompt": "Add two numbers."}\n'
        '{"prompt": "Hi"}\n'
    )
    out = tmp_path / "batched"
    assert (
        cli_main(
            _bench_argv(tiny, prompts, "--batch-size", "2", "--top-p", "0.8", "--out", str(out))
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "AR tok/s" in printed and "tree tok/s" in printed and "budget" in printed
    res = json.loads((out / "results.json").read_text())
    assert res["schema"] == "exitlaw.batch_bench" and res["config"]["batch_sizes"] == [2]
    assert res["config"]["sampling"]["top_p"] == 0.8 and all(
        r["top_p"] == 0.8 for r in res["decode"]
    )
    rows = res["decode"]
    # one row per (budget, T, verifier), every one at B = 2: 3 prompts -> 2 full batches (cyclic)
    assert [(r["budget"], r["temperature"], r["verifier"]) for r in rows] == [
        (4, 0.0, "tev"),
        (4, 1.0, "tev"),
        (6, 0.0, "tev"),
        (6, 1.0, "tev"),
    ]
    for r in rows:
        assert r["batch_size"] == 2 and r["batches"] == 2
        assert r["tokens_per_s"] > 0 and r["ar_tokens_per_s"] > 0
        assert r["speedup"] == pytest.approx(r["tokens_per_s"] / r["ar_tokens_per_s"])
        # both numbers are in the printed row of this (budget, T)
        line = next(
            x
            for x in printed.splitlines()
            if x.split()[:3] == ["2", str(r["budget"]), f"{r['temperature']:g}"]
        )
        assert f"{r['ar_tokens_per_s']:.1f}" in line and f"{r['tokens_per_s']:.1f}" in line
        if r["temperature"] == 0:
            assert r["matches_ar"] is True
    # B = 1 keeps the per-prompt bench (its own results schema, per-method runs)
    single = tmp_path / "single"
    assert cli_main(_bench_argv(tiny, prompts, "--batch-size", "1", "--out", str(single))) == 0
    res1 = json.loads((single / "results.json").read_text())
    assert (
        "runs" in res1
        and "decode" not in res1
        and {r["method"] for r in res1["runs"]} >= {"ar", "ddtree"}
    )


@pytest.mark.parametrize("bad", ["0", "-3", "two", "1.5"])
def test_bench_and_verifier_bench_reject_a_bad_batch_size_with_a_named_error(
    tiny, tmp_path, capsys, bad
):
    prompts = tmp_path / "p.jsonl"
    prompts.write_text('{"prompt": "Hi"}\n')
    with pytest.raises(SystemExit) as exc:
        cli_main(_bench_argv(tiny, prompts, "--batch-size", bad))
    assert exc.value.code == 2 and "--batch-size" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        cli_main(["bench", "verifiers", "--batch-size", bad, "--vocab", "50", "--budget", "6"])
    assert exc.value.code == 2 and "--batch-size" in capsys.readouterr().err


def test_bench_batch_size_refuses_options_it_does_not_take(tiny, tmp_path, capsys):
    prompts = tmp_path / "p.jsonl"
    prompts.write_text('{"prompt": "Hi"}\n')
    assert (
        cli_main(
            _bench_argv(tiny, prompts, "--batch-size", "2", "--trace-dir", str(tmp_path / "t"))
        )
        == 2
    )
    assert "--trace-dir" in capsys.readouterr().err
    assert cli_main(_bench_argv(tiny, prompts, "--batch-size", "2", "--max-turns", "1")) == 2
    assert "--max-turns" in capsys.readouterr().err


def test_verifier_bench_batch_times_the_stage_per_batch(capsys):
    argv = [
        "bench",
        "verifiers",
        "--batch-size",
        "3",
        "--vocab",
        "50",
        "--budget",
        "6,9",
        "--depth",
        "4",
        "--repeats",
        "2",
        "--verifier",
        "predraw,tev",
    ]
    assert cli_main(argv) == 0
    printed = capsys.readouterr().out
    assert "batched ms" in printed and "B x single ms" in printed
    assert cli_main([*argv, "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert [(r["batch_size"], r["budget"], r["kind"]) for r in res["rows"]] == [
        (3, 6, "predraw"),
        (3, 6, "tev"),
        (3, 9, "predraw"),
        (3, 9, "tev"),
    ]
    assert all(r["batched_ms"] > 0 and r["looped_ms"] > 0 for r in res["rows"])
    assert cli_main([*argv, "--trees", "2"]) == 2  # a batch holds B trees: --trees does not apply
    assert "--trees" in capsys.readouterr().err
    assert cli_main([*argv[:-2], "--verifier", "sequoia"]) == 2
