"""Comparing two bench results files: deltas and intervals checked by hand, T = 0 output matching."""

from __future__ import annotations

import json
import math

import pytest

from exitlaw.engine.bench.compare import (
    CompareError,
    compare_files,
    compare_results,
    format_comparison,
    t_quantile,
)

T975 = {
    1: 12.706204736174705,
    2: 4.302652729911275,
    4: 2.7764451051977987,
    30: 2.0422724563012373,
}  # tables


def _outputs(block, decode, tokens=None, rounds=4, toks=None):
    """One single-turn output per prompt with the given block tokens and decode seconds."""
    out = []
    for i, (b, d) in enumerate(zip(block, decode)):
        n = 10 if tokens is None else tokens[i]
        out.append(
            {
                "prompt": i,
                "turn": 0,
                "tokens": (toks[i] if toks else list(range(n))),
                "text": "",
                "rounds": rounds,
                "block_tokens": b,
                "decode_s": d,
            }
        )
    return out


def _results(prompts, method_block, method_decode, toks=None):
    ar = {
        "method": "ar",
        "verifier": None,
        "budget": None,
        "temperature": 0.0,
        "outputs": _outputs([4] * len(prompts), [1.0] * len(prompts)),
    }
    run = {
        "method": "ddtree",
        "verifier": "tev",
        "budget": 64,
        "temperature": 0.0,
        "outputs": _outputs(method_block, method_decode, toks=toks),
    }
    return {
        "schema": "exitlaw.bench",
        "version": 2,
        "prompts": [{"turns": [p]} for p in prompts],
        "runs": [ar, run],
    }


A = _results(["p1", "p2", "p3"], [8, 12, 10], [0.5, 0.5, 0.5])  # per-prompt tau 2, 3, 2.5; SR 2
B = _results(
    ["p1", "p2", "p3"], [10, 12, 14], [0.25, 0.5, 0.5]
)  # per-prompt tau 2.5, 3, 3.5; SR 2.4


def test_t_quantile_matches_tables_and_scipy():
    from scipy import stats

    for df, want in T975.items():
        assert t_quantile(0.975, df) == pytest.approx(want, rel=1e-9)
    for df in (1.5, 3.7, 11.2):
        assert t_quantile(0.975, df) == pytest.approx(stats.t.ppf(0.975, df), rel=1e-9)
    with pytest.raises(ValueError):
        t_quantile(0.4, 3)
    with pytest.raises(ValueError):
        t_quantile(0.975, 0.5)


def test_paired_deltas_and_intervals_by_hand():
    cmp = compare_results(A, B)
    assert cmp["pairing"] == "paired" and cmp["prompts"] == {"a": 3, "b": 3, "matched": 3}
    (row,) = cmp["rows"]
    tau = row["tau"]
    assert (tau["a"], tau["b"], tau["delta"]) == pytest.approx((30 / 12, 36 / 12, 0.5))
    # equal rounds per prompt: the paired t interval of per-prompt tau differences d = (0.5, 0, 1)
    half = T975[2] * 0.5 / math.sqrt(3)  # sd(d) = 0.5
    assert tau["ci95"] == pytest.approx([0.5 - half, 0.5 + half]) and tau["df"] == 2
    sr = row["SR"]
    assert (sr["a"], sr["b"], sr["delta"]) == pytest.approx((0.1 / 0.05, 0.1 / (1.25 / 30), 0.4))
    # influence of prompt i on SR_B: SR_B (1 - n d_i / D) = 2.4 * (0.4, -0.2, -0.2); SR_A has none (equal prompts)
    psi = [0.96, -0.48, -0.48]
    sd = math.sqrt(sum((x - sum(psi) / 3) ** 2 for x in psi) / 2)
    assert sr["ci95"] == pytest.approx(
        [0.4 - T975[2] * sd / math.sqrt(3), 0.4 + T975[2] * sd / math.sqrt(3)]
    )
    assert row["t0_compared"] == 3 and row["t0_mismatches"] == 0
    text = format_comparison(cmp)
    assert "paired by prompt over the 3 prompts" in text and "all 3 equal" in text


def test_unpaired_welch_when_the_prompts_differ():
    other = _results(["q1", "q2", "q3"], [10, 12, 14], [0.25, 0.5, 0.5])
    cmp = compare_results(A, other)
    assert cmp["pairing"] == "unpaired" and "Welch" in cmp["note"]
    tau = cmp["rows"][0]["tau"]
    # sd 0.5 on both sides, n = 3: se = sqrt(0.25/3 + 0.25/3), Welch df = 4
    assert tau["df"] == pytest.approx(4.0)
    half = T975[4] * math.sqrt(0.25 / 3 * 2)
    assert tau["ci95"] == pytest.approx([0.5 - half, 0.5 + half])
    assert cmp["rows"][0]["t0_compared"] == 0


def test_pairing_follows_prompt_content_not_position():
    # B's prompts reordered and one replaced: only p1 and p2 pair (p2 first in B)
    moved = _results(["p2", "p1", "new"], [12, 10, 99], [0.5, 0.25, 0.1])
    cmp = compare_results(A, moved)
    assert (
        cmp["pairing"] == "paired"
        and cmp["prompts"]["matched"] == 2
        and "1 only in the first" in cmp["note"]
    )
    tau = cmp["rows"][0]["tau"]
    assert (tau["a"], tau["b"]) == pytest.approx(((8 + 12) / 8, (10 + 12) / 8))


def test_t0_output_mismatches_are_counted_per_prompt():
    same = [list(range(10))] * 3
    diff = [list(range(10)), [0] * 10, list(range(10))]
    cmp = compare_results(
        _results(["p1", "p2", "p3"], [8, 12, 10], [0.5] * 3, toks=same),
        _results(["p1", "p2", "p3"], [8, 12, 10], [0.5] * 3, toks=diff),
    )
    row = cmp["rows"][0]
    assert row["t0_mismatches"] == 1 and row["tau"]["delta"] == 0
    assert "1 of 3 prompts DIFFER" in format_comparison(cmp)


def test_files_without_outputs_or_of_another_kind_are_named(tmp_path):
    old = {k: v for k, v in A.items() if k != "prompts"}
    with pytest.raises(CompareError, match="stores no outputs"):
        compare_results(old, B)
    with pytest.raises(CompareError, match="not an exitlaw bench results file"):
        compare_results({"schema": "other"}, B)
    pa, pb = tmp_path / "a.json", tmp_path / "b.json"
    pa.write_text(json.dumps(A))
    pb.write_text(json.dumps(B))
    assert compare_files(pa, pb)["rows"][0]["tau"]["delta"] == pytest.approx(0.5)
    with pytest.raises(FileNotFoundError):
        compare_files(pa, tmp_path / "missing.json")


def test_bench_compare_command_prints_and_keeps_the_comparison(tmp_path, capsys):
    from exitlaw.cli import main as cli_main

    pa, pb, out = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "cmp"
    pa.write_text(json.dumps(A))
    pb.write_text(json.dumps(B))
    assert cli_main(["bench", "decoding", "--compare", str(pa), str(pb), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "paired by prompt" in printed and "+0.500" in printed
    assert json.loads((out / "results.json").read_text())["rows"][0]["tau"][
        "delta"
    ] == pytest.approx(0.5)
    assert (
        cli_main(["bench", "decoding", "--compare", str(pa), str(pb), "--out", str(out)]) == 2
    )  # never overwrites silently
    assert cli_main(["bench", "decoding", "--prompts", "gsm8k"]) == 2
    assert "--target and --draft are required" in capsys.readouterr().err
