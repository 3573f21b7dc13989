"""``exitlaw verifier-bench``: runs, reports every stage and the floor, and its trees get accepted."""

from __future__ import annotations

import json

from exitlaw.cli import main


def test_verifier_bench_reports_floor_ratios_on_deep_accepted_trees(capsys):
    assert main(["verifier-bench", "--budget", "16,32", "--vocab", "2000", "--trees", "2", "--repeats", "2",
                 "--threads", "1", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["config"]["vocab"] == 2000 and rep["config"]["budgets"] == [16, 32]
    for row in rep["rows"]:
        assert set(row["median_ms"]) == {"floor", "predraw", "residual", "tev"}
        assert row["tev_over_floor"] > 0 and "tev_over_predraw" in row and "tev_over_residual" in row
        assert all(n == row["budget"] + 1 for n in row["nodes"])
        assert min(row["internal"]) >= row["budget"] // 4       # many internal nodes
        assert max(row["max_depth"]) >= 6                        # deep trees
        assert row["mean_block_length"]["tev"] > 2.0             # draft resembles target: paths accepted


def test_verifier_bench_text_and_bad_arguments(capsys):
    assert main(["verifier-bench", "--budget", "8", "--vocab", "300", "--trees", "1", "--repeats", "1",
                 "--verifiers", "tev"]) == 0
    out = capsys.readouterr().out
    assert "TEV/floor" in out and "median ms" in out
    assert main(["verifier-bench", "--budget", "8", "--vocab", "300", "--verifiers", "greedy"]) == 2
    assert "unknown verifier" in capsys.readouterr().err
