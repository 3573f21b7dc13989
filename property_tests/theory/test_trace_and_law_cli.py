"""Tree traces round-trip; ``exitlaw law`` reads them; malformed traces fail with the line."""

import json
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from exitlaw.cli import main
from exitlaw.simulate.strategies import trees_with_rows
from exitlaw.theory import (
    TraceFormatError,
    TraceRound,
    exit_law,
    gather_edge_probs,
    read_trace,
    write_trace,
)
from exitlaw.theory.demo import demo_trace
from exitlaw.theory.trace.summary import summarize_trace


@given(st.lists(trees_with_rows(max_nodes=8), min_size=1, max_size=4), st.data())
def test_trace_roundtrip_preserves_law(tmp_path_factory, cases, data):
    path = tmp_path_factory.mktemp("t") / "trace.jsonl"
    rounds = []
    for tree, rows, _ in cases:
        exit_node = data.draw(st.integers(0, tree.num_nodes - 1))
        rounds.append(
            TraceRound(
                tree,
                gather_edge_probs(tree, rows),
                draft_logprob=-np.arange(tree.num_nodes, dtype=float),
                exit_node=exit_node,
                bonus=1,
            )
        )
    write_trace(path, rounds, {"note": "test"})
    back = read_trace(path)
    assert back.meta == {"note": "test"}
    summary = summarize_trace(back)
    for (tree, rows, _), orig, got, rec in zip(cases, rounds, back.rounds, summary["rounds"]):
        assert got.tree == tree
        np.testing.assert_array_equal(got.edge_prob, orig.edge_prob)
        np.testing.assert_array_equal(got.draft_logprob, orig.draft_logprob)
        assert got.exit_node == orig.exit_node and got.bonus == 1
        assert abs(rec["coverage"] - float(exit_law(tree, rows).coverage)) < 1e-12
        assert rec["block_length"] == int(tree.depth[orig.exit_node]) + 1


def test_summary_expected_histogram_sums_to_rounds():
    s = summarize_trace(demo_trace(rounds=30))
    assert abs(sum(s["exit_depth_histogram"]["expected"]) - 30) < 1e-9
    assert sum(s["exit_depth_histogram"]["observed"]) == 30


def test_writer_refuses_to_overwrite(tmp_path):
    path = tmp_path / "t.jsonl"
    write_trace(path, demo_trace(rounds=2).rounds)
    with pytest.raises(FileExistsError):
        write_trace(path, [])
    write_trace(path, demo_trace(rounds=1).rounds, overwrite=True)
    assert len(read_trace(path).rounds) == 1


@pytest.mark.parametrize(
    "lines, message",
    [
        (['{"schema": "other", "version": 1}'], "schema"),
        (['{"schema": "exitlaw.tree-trace", "version": 99}'], "unsupported trace version"),
        (['{"schema": "exitlaw.tree-trace", "version": 1}', "{not json"], ":2: not valid JSON"),
        (
            [
                '{"schema": "exitlaw.tree-trace", "version": 1}',
                '{"parent": [-1, 0], "token": [0, 1]}',
            ],
            ":2: missing required field 'edge_prob'",
        ),
        (
            [
                '{"schema": "exitlaw.tree-trace", "version": 1}',
                '{"parent": [-1, 0, 0], "token": [0, 1, 1], "edge_prob": [1, 0.1, 0.1]}',
            ],
            "same token",
        ),
        (
            [
                '{"schema": "exitlaw.tree-trace", "version": 1}',
                '{"parent": [-1, 0], "token": [0, 1], "edge_prob": [1, 0.1], "exit_node": 5}',
            ],
            "exit_node 5",
        ),
    ],
)
def test_malformed_trace_names_the_line(tmp_path, lines, message):
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(TraceFormatError, match=message):
        read_trace(path)


def test_missing_trace_file_is_a_clear_error(tmp_path, capsys):
    assert main(["law", str(tmp_path / "nope.jsonl")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_law_cli_json_on_a_written_trace(tmp_path, capsys):
    path = tmp_path / "t.jsonl"
    write_trace(path, demo_trace(rounds=5).rounds, {"source": "test"})
    assert main(["law", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["totals"]["rounds"] == 5
    assert set(out["rounds"][0]) >= {"coverage", "ceiling", "block_length"}


def test_law_demo_runs_as_a_console_script():
    proc = subprocess.run(
        [sys.executable, "-m", "exitlaw", "law", "--demo"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "ceiling 1 + C_p" in proc.stdout and "tau observed" in proc.stdout


def test_help_lists_subcommands():
    proc = subprocess.run(
        [sys.executable, "-m", "exitlaw", "--help"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0
    commands = {x.split()[0] for x in proc.stdout.splitlines() if x.startswith("    ")}
    assert {"law", "bench"} <= commands and "benchmarks: law" in proc.stdout


@given(
    st.lists(
        st.tuples(st.integers(1, 40), st.booleans(), st.integers(0, 2**16)), min_size=1, max_size=12
    ),
    st.sampled_from([8, 40, 1 << 16]),
)
def test_streamed_summary_equals_the_exact_law_round_by_round(
    tmp_path_factory, shapes, chunk_nodes
):
    from exitlaw.theory import DraftTree, exit_depth_law, exit_law_from_edges
    from exitlaw.theory.trace.summary import summarize_trace_file

    rounds = []
    for nodes, deep, seed in shapes:  # mixed sizes, deep chains, several chunks per bucket
        rng = np.random.default_rng(seed)
        if deep:
            tree = DraftTree.chain(list(range(1, nodes)))
        else:
            tree = DraftTree(
                parent=[-1] + [int(rng.integers(0, u)) for u in range(1, nodes)],
                token=list(range(nodes)),
            )
        raw = rng.uniform(0.05, 1.0, nodes)
        mass = np.zeros(nodes)
        np.add.at(mass, tree.parent[1:], raw[1:])
        edge = raw / np.maximum(1.0, mass[np.maximum(tree.parent, 0)])
        edge[0] = 1.0
        rounds.append(TraceRound(tree, edge, exit_node=int(rng.integers(0, nodes))))
    path = write_trace(tmp_path_factory.mktemp("s") / "t.jsonl", rounds)
    got = summarize_trace_file(path, chunk_nodes=chunk_nodes)
    depth = max(r.tree.max_depth for r in rounds)
    expected_hist = np.zeros(depth + 1)
    for r, rec in zip(rounds, got["rounds"]):
        law = exit_law_from_edges(r.tree, r.edge_prob)
        assert rec["coverage"] == pytest.approx(float(law.coverage), rel=1e-10, abs=1e-12)
        assert rec["block_length"] == r.block_length and rec["budget"] == r.tree.budget
        expected_hist += np.asarray(exit_depth_law(r.tree, law, depth))
    np.testing.assert_allclose(
        got["exit_depth_histogram"]["expected"], expected_hist, rtol=1e-10, atol=1e-12
    )
    assert got["totals"]["rounds"] == len(rounds)


def test_parallel_reading_equals_one_reader_and_names_the_line_of_an_error(tmp_path):
    from exitlaw.theory.trace.bench import make_bench_trace
    from exitlaw.theory.trace.format import split_spans
    from exitlaw.theory.trace.summary import summarize_trace_file

    path = make_bench_trace(tmp_path / "t.jsonl", rounds=400, max_budget=20, big_round=300)
    spans = split_spans(path, 3)
    assert (
        len(spans) == 3
        and spans[0].first
        and spans[-1].last
        and spans[-1].end == path.stat().st_size
    )
    lines = path.read_bytes().split(b"\n")
    for sp in spans:  # every span starts at a line boundary with the right line number
        assert path.read_bytes()[sp.start :].startswith(lines[sp.first_lineno - 1])
    one = summarize_trace_file(path)
    three = summarize_trace_file(path, workers=3, parallel_min_bytes=0)
    assert (
        three["rounds"] == one["rounds"]
        and three["totals"] == one["totals"]
        and three["meta"] == one["meta"]
    )
    h1, h3 = one["exit_depth_histogram"], three["exit_depth_histogram"]  # sums in another order
    assert h3["observed"] == h1["observed"]
    np.testing.assert_allclose(h3["expected"], h1["expected"], rtol=1e-12)
    text = path.read_text().splitlines()
    bad = json.loads(text[350])
    bad["edge_prob"][1] = 7.0
    text[350] = json.dumps(bad)
    path.write_text("\n".join(text) + "\n")
    with pytest.raises(TraceFormatError, match=f"{path}:351: node 1 has edge probability 7.0"):
        summarize_trace_file(path, workers=3, parallel_min_bytes=0)
    text[350], text[-1] = text[-1], text[350]  # the end marker in the middle
    path.write_text("\n".join(text) + "\n")
    with pytest.raises(
        TraceFormatError, match=":351: end marker .* does not close this trace of 349 rounds"
    ):
        summarize_trace_file(path, workers=3, parallel_min_bytes=0)


@pytest.mark.parametrize("workers", [1, 2])
def test_law_bench_trace_reports_rounds_per_second_and_cpu_seconds(tmp_path, capsys, workers):
    from exitlaw.cli import main
    from exitlaw.theory.trace.bench import make_bench_trace

    path = make_bench_trace(tmp_path / "b.jsonl", rounds=60, max_budget=8, vocab=100)
    assert main(["bench", "law", "--trace", str(path), "--workers", str(workers), "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["rounds"] == 60 and res["workers"] == workers
    assert res["seconds"] > 0 and res["rounds_per_s"] == pytest.approx(60 / res["seconds"])
    assert res["cpu_seconds"] > 0 and res["rounds_per_cpu_s"] == pytest.approx(
        60 / res["cpu_seconds"]
    )
    assert main(["bench", "law", "--trace", str(path), "--workers", str(workers)]) == 0
    text = capsys.readouterr().out
    assert (
        "60 rounds in" in text
        and "rounds/s" in text
        and "CPU-seconds" in text
        and "rounds per CPU-second" in text
    )
