"""Every malformed input class raises TreeError / DistributionError naming the node or row."""

import numpy as np
import pytest

from exitlaw.theory import (
    DistributionError,
    DraftTree,
    TreeError,
    check_temperature,
    exit_law,
    exit_law_from_edges,
    exit_law_from_logits,
)

GOOD_ROWS = np.array([[0.5, 0.5], [0.25, 0.75]])


@pytest.mark.parametrize(
    "parent, token, message",
    [
        ([0, 0], [0, 1], "node 0 must be the root"),
        ([-1, 5], [0, 1], "out of range"),
        ([-1, 1], [0, 1], "cycle"),
        ([-1, 2, 1], [0, 1, 2], "cycle"),
        ([-1, 0, 3, 0], [0, 1, 2, 3], "parents must come before children"),
        ([-1, -1], [0, 1], "second root"),
        ([-1, 0, 0], [0, 1, 1], "same token 1"),
        ([-1, 0], [0, -3], "negative token"),
        ([-1, 0, 0], [0, 1], "length mismatch"),
        ([], [], "at least the root"),
        ([[-1, 0]], [[0, 1]], "1-D"),
        ([-1, 0.5], [0, 1], "integers"),
    ],
)
def test_malformed_tree_raises_tree_error(parent, token, message):
    with pytest.raises(TreeError, match=message):
        DraftTree(parent=parent, token=token)


def test_tree_errors_are_value_errors():
    assert issubclass(TreeError, ValueError) and issubclass(DistributionError, ValueError)


def test_out_of_vocabulary_token_names_node():
    tree = DraftTree(parent=[-1, 0, 1], token=[0, 1, 7])
    with pytest.raises(TreeError, match="node 2 has token 7, outside vocabulary of size 2"):
        exit_law(tree, np.full((3, 2), 0.5))


@pytest.mark.parametrize(
    "rows, message",
    [
        (np.array([[0.5, 0.5], [np.nan, 1.0]]), "row 1 has a non-finite entry"),
        (np.array([[0.5, 0.5], [np.inf, 1.0]]), "row 1 has a non-finite entry"),
        (np.array([[1.5, -0.5], [0.5, 0.5]]), "row 0 has a negative entry"),
        (np.array([[0.5, 0.5], [0.5, 0.4]]), "row 1 sums to 0.9"),
        (np.array([0.5, 0.5]), "shape"),
        (np.full((3, 2), 0.5), "3 rows but the tree has 2 nodes"),
        (np.zeros((2, 0)), "empty vocabulary"),
    ],
)
def test_malformed_rows_raise_distribution_error(rows, message):
    with pytest.raises(DistributionError, match=message):
        exit_law(DraftTree.chain([1]), rows)


@pytest.mark.parametrize(
    "edges, message",
    [
        ([1.0, 1.5], "node 1 has edge probability 1.5"),
        ([1.0, -0.1], "node 1 has edge probability"),
        ([1.0, np.nan], "node 1 has edge probability"),
        ([1.0], "shape"),
    ],
)
def test_malformed_edges_raise_distribution_error(edges, message):
    with pytest.raises(DistributionError, match=message):
        exit_law_from_edges(DraftTree.chain([1]), edges)


def test_children_mass_above_one_names_parent():
    tree = DraftTree(parent=[-1, 0, 0], token=[0, 1, 2])
    with pytest.raises(DistributionError, match="children of node 0 carry target mass 1.2"):
        exit_law_from_edges(tree, [1.0, 0.6, 0.6])


@pytest.mark.parametrize("temperature", [-1.0, float("nan"), float("inf"), "hot"])
def test_bad_temperature_raises(temperature):
    with pytest.raises(DistributionError, match="temperature"):
        exit_law_from_logits(DraftTree.chain([1]), np.zeros((2, 2)), temperature)


def test_zero_temperature_rejected_where_sampling_needs_positive():
    with pytest.raises(DistributionError, match="> 0"):
        check_temperature(0.0, allow_zero=False)
    assert check_temperature(0.0, allow_zero=True) == 0.0


def test_nonfinite_logits_raise():
    with pytest.raises(DistributionError, match="NaN or inf"):
        exit_law_from_logits(DraftTree.chain([1]), np.array([[0.0, np.nan], [0.0, 0.0]]), 1.0)


def test_inputs_are_not_modified_or_renormalised():
    rows = np.array([[0.5, 0.5 + 2e-6], [0.25, 0.75]])  # within tolerance: accepted as given
    copy = rows.copy()
    exit_law(DraftTree.chain([1]), rows)
    np.testing.assert_array_equal(rows, copy)


# ---------------------------------------------------------------------------------------------
# One rule for every input: a table of bad inputs across the API, trace files and every command.
# Each case asserts its category: a named error (a ValueError subclass or FileNotFoundError with
# the culprit in the message), a non-zero exit for commands, and nothing written.
# ---------------------------------------------------------------------------------------------
import json  # noqa: E402
import os  # noqa: E402
from pathlib import Path  # noqa: E402

from exitlaw.cli import main  # noqa: E402
from exitlaw.simulate.lab.presets import SimConfig, WorkBoundError, with_overrides  # noqa: E402
from exitlaw.theory import (  # noqa: E402
    IncompleteTraceError,
    TraceFormatError,
    TraceRound,
    TraceWriter,
    oracle_tree,
    probs_from_logits,
    read_trace,
    write_trace,
)

CHAIN = DraftTree.chain([1])
ROWS = np.array([[0.5, 0.5], [0.25, 0.75]])


def _files(root) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


API_CASES = [
    # trees: dtypes and ranges (no coercion, no int64 wrap-around)
    (
        "tree bool token",
        lambda: DraftTree(parent=[-1, 0], token=[0, True]),
        TreeError,
        r"token\[1\] is True",
    ),
    (
        "tree string token",
        lambda: DraftTree(parent=[-1, 0], token=[0, "3"]),
        TreeError,
        r"token\[1\] is '3'",
    ),
    (
        "tree huge token",
        lambda: DraftTree(parent=[-1, 0], token=[0, 2**64 + 1]),
        TreeError,
        "outside the int64 range",
    ),
    (
        "tree token 2**63",
        lambda: DraftTree(parent=[-1, 0], token=[0, 2**63]),
        TreeError,
        "outside the int64 range",
    ),
    (
        "tree uint64 token",
        lambda: DraftTree(parent=[-1, 0], token=np.array([0, 2**63], dtype=np.uint64)),
        TreeError,
        "outside the int64 range",
    ),
    (
        "tree float token 1e30",
        lambda: DraftTree(parent=[-1, 0], token=[0, 1e30]),
        TreeError,
        "must hold integers",
    ),
    (
        "tree nan parent",
        lambda: DraftTree(parent=[-1, np.nan], token=[0, 1]),
        TreeError,
        "must hold integers",
    ),
    (
        "tree complex parent",
        lambda: DraftTree(parent=np.array([-1, 0], dtype=complex), token=[0, 1]),
        TreeError,
        "dtype complex",
    ),
    (
        "tree bool array",
        lambda: DraftTree(parent=[-1, 0], token=np.array([False, True])),
        TreeError,
        "dtype bool",
    ),
    (
        "tree object array",
        lambda: DraftTree(parent=[-1, 0], token=np.array([0, None], dtype=object)),
        TreeError,
        "dtype object",
    ),
    (
        "tree bytes token",
        lambda: DraftTree(parent=[-1, 0], token=[0, b"1"]),
        TreeError,
        "not bytes",
    ),
    ("tree ragged", lambda: DraftTree(parent=[-1, [0]], token=[0, 1]), TreeError, "integers|1-D"),
    # rows: dtypes, tolerance
    ("rows complex", lambda: exit_law(CHAIN, ROWS.astype(complex)), DistributionError, "complex"),
    (
        "rows bool",
        lambda: exit_law(CHAIN, np.array([[True, False], [False, True]])),
        DistributionError,
        "bool",
    ),
    (
        "rows strings",
        lambda: exit_law(CHAIN, np.array([["0.5", "0.5"], ["0.5", "0.5"]])),
        DistributionError,
        "string",
    ),
    (
        "rows object",
        lambda: exit_law(CHAIN, np.array([[0.5, None], [0.5, 0.5]], dtype=object)),
        DistributionError,
        "got entry 1 = None",
    ),
    (
        "rows object of floats",
        lambda: exit_law(CHAIN, np.array([[0.5, 0.5], [0.5, 0.5]], dtype=object)),
        DistributionError,
        r"got object values \(dtype object\)",
    ),
    (
        "rows atol nan",
        lambda: exit_law(CHAIN, np.array([[0.5, 0.9], [0.5, 0.5]]), atol=float("nan")),
        DistributionError,
        "atol",
    ),
    ("rows atol negative", lambda: exit_law(CHAIN, ROWS, atol=-1.0), DistributionError, "atol"),
    ("rows atol string", lambda: exit_law(CHAIN, ROWS, atol="1e-5"), DistributionError, "atol"),
    (
        "rows atol inf",
        lambda: exit_law(CHAIN, np.array([[0.5, 9.0], [0.5, 0.5]]), atol=float("inf")),
        DistributionError,
        "atol",
    ),
    (
        "block law complex",
        lambda: __import__("exitlaw.theory", fromlist=["block_law"]).block_law(
            CHAIN, ROWS.astype(complex)
        ),
        DistributionError,
        "complex",
    ),
    (
        "residual rows bool",
        lambda: __import__("exitlaw.theory", fromlist=["residual_rows"]).residual_rows(
            CHAIN, ROWS > 0.3
        ),
        DistributionError,
        "bool",
    ),
    (
        "padded rows bad sum",
        lambda: exit_law(CHAIN.padded(4), np.full((4, 2), 0.7)),
        DistributionError,
        "sums to",
    ),
    (
        "padded rows nan",
        lambda: exit_law(CHAIN.padded(3), np.array([[0.5, 0.5], [np.nan, 1], [0, 0]])),
        DistributionError,
        "non-finite",
    ),
    # edges
    (
        "edges strings",
        lambda: exit_law_from_edges(CHAIN, ["1", "0.5"]),
        DistributionError,
        "string",
    ),
    ("edges bool", lambda: exit_law_from_edges(CHAIN, [True, True]), DistributionError, "bool"),
    (
        "edges complex",
        lambda: exit_law_from_edges(CHAIN, np.array([1, 0.5], dtype=complex)),
        DistributionError,
        "complex",
    ),
    (
        "edges atol nan",
        lambda: exit_law_from_edges(CHAIN, [1.0, 1.5], atol=float("nan")),
        DistributionError,
        "atol",
    ),
    (
        "padded edge 5.0",
        lambda: exit_law_from_edges(CHAIN.padded(4), np.array([1, 5.0, 0, 0])),
        DistributionError,
        "node 1 has edge probability 5.0",
    ),
    (
        "padded edge negative",
        lambda: exit_law_from_edges(CHAIN.padded(2), np.array([1, -0.5])),
        DistributionError,
        "node 1 has edge probability",
    ),
    (
        "padded edge nan",
        lambda: exit_law_from_edges(CHAIN.padded(3), np.array([1, np.nan, 0])),
        DistributionError,
        "node 1",
    ),
    (
        "padded child mass",
        lambda: exit_law_from_edges(
            DraftTree(parent=[-1, 0, 0], token=[0, 1, 2]).padded(5), np.array([1, 0.7, 0.7, 0, 0])
        ),
        DistributionError,
        "children of node 0 carry target mass 1.4",
    ),
    (
        "padded edges shape",
        lambda: exit_law_from_edges(CHAIN.padded(4), np.ones(3)),
        DistributionError,
        "shape",
    ),
    # logits and temperatures
    (
        "nan logits at T=0",
        lambda: exit_law_from_logits(CHAIN, np.array([[0, np.nan], [0, 0.0]]), 0.0),
        DistributionError,
        "NaN or inf",
    ),
    (
        "inf logits at T=0",
        lambda: exit_law_from_logits(CHAIN, np.array([[0, np.inf], [0, 0.0]]), 0.0),
        DistributionError,
        "NaN or inf",
    ),
    (
        "probs_from_logits nan T=0",
        lambda: probs_from_logits(np.array([0.0, np.nan]), 0.0),
        DistributionError,
        "NaN or inf",
    ),
    (
        "complex logits",
        lambda: probs_from_logits(np.array([0.0, 1j]), 1.0),
        DistributionError,
        "complex",
    ),
    (
        "temperature True",
        lambda: check_temperature(True, allow_zero=True),
        DistributionError,
        "temperature",
    ),
    (
        "temperature string",
        lambda: check_temperature("1.0", allow_zero=True),
        DistributionError,
        "temperature",
    ),
    (
        "temperature None",
        lambda: check_temperature(None, allow_zero=True),
        DistributionError,
        "temperature",
    ),
    (
        "temperature -inf",
        lambda: exit_law_from_logits(CHAIN, np.zeros((2, 2)), float("-inf")),
        DistributionError,
        "temperature",
    ),
    # oracle
    (
        "oracle budget -1",
        lambda: oracle_tree(lambda p: np.array([0.5, 0.5]), -1),
        ValueError,
        "budget",
    ),
    (
        "oracle budget float",
        lambda: oracle_tree(lambda p: np.array([0.5, 0.5]), 2.5),
        ValueError,
        "budget",
    ),
    (
        "oracle budget bool",
        lambda: oracle_tree(lambda p: np.array([0.5, 0.5]), True),
        ValueError,
        "budget",
    ),
    (
        "oracle budget string",
        lambda: oracle_tree(lambda p: np.array([0.5, 0.5]), "3"),
        ValueError,
        "budget",
    ),
    (
        "oracle nan row",
        lambda: oracle_tree(lambda p: np.array([np.nan, 1.0]), 2),
        DistributionError,
        "non-finite",
    ),
    (
        "oracle bool row",
        lambda: oracle_tree(lambda p: np.array([True, False]), 2),
        DistributionError,
        "bool",
    ),
    # simulation configs: types and bounds
    (
        "simconfig budget string",
        lambda: SimConfig(budget="16"),
        ValueError,
        "'budget' must be an integer",
    ),
    (
        "simconfig rounds float",
        lambda: SimConfig(rounds=2.5),
        ValueError,
        "'rounds' must be an integer",
    ),
    (
        "simconfig oracle int",
        lambda: SimConfig(oracle=1),
        ValueError,
        "'oracle' must be true or false",
    ),
    (
        "simconfig temperature nan",
        lambda: SimConfig.from_dict({"temperature": float("nan")}),
        ValueError,
        "'temperature'",
    ),
    ("simconfig zipf string", lambda: SimConfig.from_dict({"zipf": "1.1"}), ValueError, "'zipf'"),
    ("simconfig builders string", lambda: SimConfig(builders="ddtree"), ValueError, "'builders'"),
    (
        "simconfig branching strings",
        lambda: SimConfig.from_dict({"static_branching": ["4", "2"]}),
        ValueError,
        "'static_branching'",
    ),
    ("simconfig latency list", lambda: SimConfig(latency=[1, 2]), ValueError, "'latency'"),
    (
        "simconfig horizon 100000",
        lambda: SimConfig(horizon=100000),
        WorkBoundError,
        "horizon 100000 exceeds",
    ),
    (
        "simconfig rounds 10^7",
        lambda: SimConfig(rounds=10**7),
        WorkBoundError,
        "rounds 10000000 exceeds",
    ),
    (
        "simconfig vocab x budget",
        lambda: SimConfig.from_dict({"vocab": 10**6, "budget": 1000}),
        WorkBoundError,
        "GiB of rows",
    ),
    (
        "simconfig whole-run work",
        lambda: SimConfig.from_dict({"vocab": 200_000, "budget": 64, "rounds": 1_000_000}),
        WorkBoundError,
        "hours",
    ),
    ("simconfig budget 0", lambda: SimConfig(budget=0), ValueError, "budget must be >= 1"),
    # a nested field is named by its flat key, the one a config file holds
    (
        "simconfig eagle_depth string",
        lambda: SimConfig.from_dict({"eagle_depth": "5"}),
        ValueError,
        "'eagle_depth' must be an integer",
    ),
    (
        "simconfig drafter_noise string",
        lambda: SimConfig.from_dict({"drafter_noise": "1"}),
        ValueError,
        "'drafter_noise' must be a finite number",
    ),
    (
        "simconfig target_seed float",
        lambda: SimConfig.from_dict({"target_seed": 1.5}),
        ValueError,
        "'target_seed' must be an integer",
    ),
    (
        "simconfig dartree_widen 0",
        lambda: SimConfig.from_dict({"dartree_widen": 0}),
        ValueError,
        "'widen' must be >= 1",
    ),
    (
        "simconfig unknown nested key",
        lambda: with_overrides(SimConfig(), eagle_dept=5),
        ValueError,
        "unknown config keys \\['eagle_dept'\\]",
    ),
    (
        "simconfig settings of another type",
        lambda: SimConfig(settings={"eagle": 5}),
        ValueError,
        "settings of builder 'eagle' must be of type EagleSettings",
    ),
]


@pytest.mark.parametrize("case", API_CASES, ids=[c[0] for c in API_CASES])
def test_bad_api_input_is_a_named_error(case):
    _, call, error, message = case
    with pytest.raises(error, match=message):
        call()


def test_oracle_budget_zero_is_the_root_alone():
    tree = oracle_tree(lambda p: np.array([0.5, 0.5]), 0)
    assert tree.num_nodes == 1 and tree.budget == 0


# ----- trace writing: nothing written on bad input, the old trace intact --------------------
WRITE_CASES = [
    ("meta list", [1, 2], TraceFormatError, "meta must be a dict"),
    ("meta set", {"s": {1, 2}}, TraceFormatError, r"meta\.s: set value"),
    ("meta nan", {"x": float("nan")}, TraceFormatError, "NaN or inf"),
    ("meta object", {"o": object()}, TraceFormatError, r"meta\.o: object value"),
    ("meta int key", {1: "a"}, TraceFormatError, "key 1 is not a string"),
]


@pytest.mark.parametrize("case", WRITE_CASES, ids=[c[0] for c in WRITE_CASES])
def test_bad_meta_writes_nothing_and_keeps_the_old_trace(tmp_path, case):
    _, meta, error, message = case
    path = tmp_path / "t.jsonl"
    rnd = TraceRound(CHAIN, np.array([1.0, 0.5]), exit_node=1, bonus=0)
    write_trace(path, [rnd, rnd], {"old": True})
    before = path.read_bytes()
    with pytest.raises(error, match=message):
        write_trace(path, [rnd], meta, overwrite=True)
    assert path.read_bytes() == before and _files(tmp_path) == {"t.jsonl"}


def test_numpy_scalars_in_meta_are_written_as_numbers(tmp_path):
    path = write_trace(
        tmp_path / "t.jsonl",
        [TraceRound(CHAIN, np.array([1.0, 0.5]))],
        {"budget": np.int64(16), "t": np.float32(0.5), "ids": np.arange(2)},
    )
    assert read_trace(path).meta == {"budget": 16, "t": 0.5, "ids": [0, 1]}


def test_an_interrupted_writer_leaves_no_trace_under_its_name(tmp_path):
    path = tmp_path / "t.jsonl"
    rnd = TraceRound(CHAIN, np.array([1.0, 0.5]))
    with pytest.raises(RuntimeError):
        with TraceWriter(path, {}) as w:
            w.write(rnd)
            raise RuntimeError("killed")
    assert _files(tmp_path) == set()


# ----- trace files: read_trace and `exitlaw law` both refuse, naming the file and line -------
from helpers.cli_argv import cli_argv, pair_flags  # noqa: E402
from helpers.trace_cases import HEAD, R0, TRACE_CASES, _end, _round, _write_lines  # noqa: E402


@pytest.mark.parametrize("case", TRACE_CASES, ids=[c[0] for c in TRACE_CASES])
def test_bad_trace_file_names_the_line_in_read_trace(tmp_path, case):
    _, lines, message = case
    path = tmp_path / "bad.jsonl"
    _write_lines(path, lines)
    with pytest.raises(TraceFormatError, match=message) as info:
        read_trace(path)
    assert str(path) in str(info.value)
    assert _files(tmp_path) == {"bad.jsonl"}


@pytest.mark.parametrize("case", TRACE_CASES, ids=[c[0] for c in TRACE_CASES])
def test_bad_trace_file_fails_exitlaw_law_naming_the_line(tmp_path, capsys, case):
    _, lines, message = case
    path = tmp_path / "bad.jsonl"
    _write_lines(path, lines)
    assert main(["law", str(path)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and __import__("re").search(message, err), err
    assert _files(tmp_path) == {"bad.jsonl"}


@pytest.mark.parametrize(
    "raw, message",
    [
        (
            HEAD.encode()
            + b"\n"
            + b'{"parent": [-1, 0], "token": [0, 1], "edge_prob": [1, 0.5], "x": "\xff"}\n',
            ":2: not UTF-8",
        ),
        (b"\xfe\xff" + HEAD.encode() + b"\n", ":1: not UTF-8"),
        (b"", "empty file"),
    ],
)
def test_non_utf8_and_empty_traces_name_the_file_and_line(tmp_path, capsys, raw, message):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(raw)
    with pytest.raises(TraceFormatError, match=message):
        read_trace(path)
    assert main(["law", str(path)]) == 2 and message in capsys.readouterr().err


def test_incomplete_trace_is_read_only_when_asked(tmp_path, capsys):
    path = tmp_path / "t.jsonl"
    _write_lines(path, [HEAD, R0])
    with pytest.raises(IncompleteTraceError):
        read_trace(path)
    assert len(read_trace(path, allow_incomplete=True).rounds) == 1
    assert main(["law", str(path), "--allow-incomplete", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["totals"]["rounds"] == 1


# ----- commands: argument values refused before any work, nothing written -------------------
def _cli(argv, capsys) -> tuple[int, str]:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse refuses a value with exit status 2
        code = exc.code
    return code, capsys.readouterr().err


_M = ["--target", "T", "--draft", "D"]
_BENCH = ["bench", "decoding", *_M]
_TRAIN = ["train", *_M, "--prompts", "p", "--out", "o"]
_SIM = ["simulate", "run", "--preset", "small"]
CLI_CASES = [
    ("bench num-prompts 0", [*_BENCH, "--num-prompts", "0"], "expected an integer >= 1"),
    ("bench num-prompts -1", [*_BENCH, "--num-prompts", "-1"], "expected an integer >= 1"),
    ("bench budget empty", [*_BENCH, "--budget", ""], "positive integers"),
    ("bench budget zero", [*_BENCH, "--budget", "0,32"], "positive integers"),
    ("bench budget word", [*_BENCH, "--budget", "big"], "comma-separated integers"),
    ("bench temperature nan", [*_BENCH, "--temperature", "nan"], "finite numbers"),
    ("bench temperature empty", [*_BENCH, "--temperature", ","], "finite numbers"),
    ("bench verifier empty", [*_BENCH, "--verifier", " , "], "comma-separated names"),
    ("bench max-new-tokens 0", [*_BENCH, "--max-new-tokens", "0"], "expected an integer >= 1"),
    ("bench warmup -1", [*_BENCH, "--warmup", "-1"], "expected an integer >= 0"),
    ("bench threads 0", [*_BENCH, "--threads", "0"], "expected an integer >= 1"),
    (
        "train gen-temperature nan",
        [*_TRAIN, "--gen-temperature", "nan"],
        "expected a finite number",
    ),
    (
        "train gen-temperature -1",
        [*_TRAIN, "--gen-temperature", "-1"],
        "expected a finite number >= 0",
    ),
    (
        "train gen-temperature inf",
        [*_TRAIN, "--gen-temperature", "inf"],
        "expected a finite number",
    ),
    ("train max-new-tokens 0", [*_TRAIN, "--max-new-tokens", "0"], ">= 1"),
    ("train steps 0", [*_TRAIN, "--steps", "0"], ">= 1"),
    ("train lr nan", [*_TRAIN, "--lr", "nan"], "finite"),
    ("train lam inf", [*_TRAIN, "--lam", "inf"], "finite"),
    ("train prompt-limit 0", [*_TRAIN, "--num-prompts", "0"], ">= 1"),
    ("train gen-batch -2", [*_TRAIN, "--gen-batch", "-2"], ">= 1"),
    ("simulate rounds 0", [*_SIM, "--rounds", "0"], "expected an integer >= 1"),
    ("simulate rounds -5", [*_SIM, "--rounds", "-5"], "expected an integer >= 1"),
    ("simulate builders empty", [*_SIM, "--builders", ","], "unknown builders ['', '']"),
    ("simulate unknown preset", ["simulate", "run", "--preset", "nope"], "unknown preset"),
    ("simulate no config", ["simulate", "run"], "give either a CONFIG file or --preset"),
    ("law no trace", ["law"], "give either a TRACE path or --demo"),
    ("law missing file", ["law", "missing.jsonl"], "does not exist"),
    ("bench-law trees 0", ["bench", "law", "--trees", "0"], "expected an integer >= 1"),
    ("bench-law missing trace", ["bench", "law", "--trace", "missing.jsonl"], "does not exist"),
]


@pytest.mark.parametrize("case", CLI_CASES, ids=[c[0] for c in CLI_CASES])
def test_bad_command_value_exits_nonzero_and_writes_nothing(tmp_path, monkeypatch, capsys, case):
    _, argv, message = case
    monkeypatch.chdir(tmp_path)
    code, err = _cli(argv, capsys)
    assert code not in (0, None) and message in err, err
    assert _files(tmp_path) == set()


SIM_CONFIG_CASES = [
    ("budget string", '{"preset": "small", "budget": "16"}', "'budget' must be an integer"),
    ("horizon 100000", '{"preset": "small", "horizon": 100000}', "horizon 100000 exceeds"),
    ("rounds huge", '{"preset": "small", "rounds": 100000000}', "rounds 100000000 exceeds"),
    ("vocab x budget", '{"preset": "small", "vocab": 5000000, "budget": 100}', "GiB of rows"),
    ("unknown key", '{"preset": "small", "budgett": 3}', "unknown config keys"),
    ("list config", "[1, 2]", "config file must be a JSON object"),
    ("not json", '{"budget": ', "not valid JSON"),
    ("preset number", '{"preset": 3}', "preset must be a name"),
    ("builders number", '{"builders": 3}', "'builders'"),
    ("oracle string", '{"oracle": "yes"}', "'oracle' must be true or false"),
    ("temperature string", '{"temperature": "1"}', "'temperature' must be a finite number"),
]


@pytest.mark.parametrize("case", SIM_CONFIG_CASES, ids=[c[0] for c in SIM_CONFIG_CASES])
def test_bad_simulate_config_file_is_refused_before_any_output(tmp_path, capsys, case):
    _, text, message = case
    cfg = tmp_path / "cfg.json"
    cfg.write_text(text, encoding="utf-8")
    code, err = _cli(
        ["simulate", "run", str(cfg), "--out", str(tmp_path / "out"), "--no-progress"], capsys
    )
    assert code == 2 and message in err, err
    assert _files(tmp_path) == {"cfg.json"}


def test_simulate_config_not_utf8_is_named(tmp_path, capsys):
    cfg = tmp_path / "cfg.json"
    cfg.write_bytes(b'{"budget": "\xff"}')
    code, err = _cli(["simulate", "run", str(cfg), "--out", str(tmp_path / "out")], capsys)
    assert code == 2 and "not UTF-8" in err and str(cfg) in err


def test_simulate_out_naming_a_file_is_refused(tmp_path, capsys):
    (tmp_path / "f").write_text("x")
    code, err = _cli(
        [
            "simulate",
            "run",
            "--preset",
            "small",
            "--rounds",
            "1",
            "--out",
            str(tmp_path / "f"),
            "--no-progress",
        ],
        capsys,
    )
    assert code == 2 and "is a file" in err and (tmp_path / "f").read_text() == "x"


def test_ledger_figures_folder_that_does_not_exist_creates_nothing(tmp_path, capsys):
    missing = tmp_path / "nonexistent" / "figs"
    code, err = _cli(
        ["ledger", "--figures", str(missing), "--out", str(tmp_path / "ledger")], capsys
    )
    assert code == 2 and "is not a directory" in err
    assert _files(tmp_path) == set()
    code, err = _cli(["ledger", "--figures", "/nonexistent-exitlaw-figures"], capsys)
    assert code == 2 and not os.path.exists("/nonexistent-exitlaw-figures")


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--device", "cuda"], "no CUDA device"),
        (["--device", "tpu9"], "is not a torch device"),
        (["--out", "FILE"], "is a file, not a directory"),
    ],
)
def test_train_device_and_out_are_checked_before_any_work(
    tmp_path, monkeypatch, capsys, extra, message
):
    import torch

    if "cuda" in extra and torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "FILE").write_text("x")
    argv = ["train", "--target", "T", "--draft", "D", "--prompts", "p.jsonl", "--out", "o", *extra]
    code, err = _cli(argv, capsys)
    assert code == 2 and message in err, err
    assert _files(tmp_path) == {"FILE"} and (tmp_path / "FILE").read_text() == "x"


def test_a_writer_closed_in_a_finally_block_of_an_interrupted_loop_leaves_nothing(tmp_path):
    path = tmp_path / "t.jsonl"
    rnd = TraceRound(CHAIN, np.array([1.0, 0.5]))
    writer = TraceWriter(path, {})
    with pytest.raises(KeyboardInterrupt):
        try:
            writer.write(rnd)
            raise KeyboardInterrupt
        finally:
            writer.close()
    assert _files(tmp_path) == set()
    writer = TraceWriter(path, {})  # a normal close still completes the trace
    try:
        writer.write(rnd)
    finally:
        writer.close()
    assert len(read_trace(path).rounds) == 1


# ----- bench: prompt ids outside the target's vocabulary, CUDA without CUDA: named, before any work ----
def _vocab(target_dir) -> int:
    return int(json.loads((Path(target_dir) / "config.json").read_text())["vocab_size"])


BENCH_INPUT_CASES = [
    (
        "prompt id = vocab size",
        lambda v: [1, v],
        [],
        "prompt_ids holds token id {v}, outside the vocabulary",
    ),
    ("prompt id far above", lambda v: [10**9], [], "token id 1000000000, outside the vocabulary"),
    ("prompt id negative", lambda v: [2, -1], [], "ints >= 0"),
    ("device cuda without cuda", lambda v: [1, 2], ["--device", "cuda"], "no CUDA device"),
]


@pytest.mark.parametrize("command", ["bench decoding", "bench batch"])
@pytest.mark.parametrize("case", BENCH_INPUT_CASES, ids=[c[0] for c in BENCH_INPUT_CASES])
def test_bench_bad_prompt_ids_or_device_is_a_named_error_before_any_decoding(
    tiny, tmp_path, monkeypatch, capsys, case, command
):
    import torch

    import exitlaw.engine.bench.batch as batch_bench
    import exitlaw.engine.bench.decoding as bench

    _, ids, extra, message = case
    if "--device" in extra and torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    v = _vocab(tiny[0])

    def no_decoding(*a, **k):
        raise AssertionError("decoding started before the input was checked")

    monkeypatch.setattr(bench, "generate", no_decoding)
    monkeypatch.setattr(batch_bench, "run_batch_decode_bench", no_decoding)
    prompts = tmp_path / "p.jsonl"
    prompts.write_text(json.dumps({"prompt_ids": ids(v)}) + "\n")
    out = tmp_path / "res.json"
    quiet = {"no_progress": True} if command == "bench decoding" else {"warmup": 0}
    argv = cli_argv(*command.split(), **pair_flags(tiny, prompts), out=out, **quiet)
    code, err = _cli([*argv, *extra], capsys)
    assert code == 2 and message.format(v=v) in err, err
    if "--device" not in extra:
        assert f"{prompts}:1" in err  # the record is named
    assert not out.exists()


# ----- results files: written atomically; a truncated or corrupt one is an error naming it --------
def test_bench_results_written_atomically_keep_the_old_file_when_cut(tmp_path, monkeypatch):
    import exitlaw.theory.infra.atomic_io as atomic_io
    from exitlaw.cli.grammar import write_json

    path = tmp_path / "res.json"
    write_json(str(path), {"old": True})
    before = path.read_bytes()

    def cut(*a):  # the new content is on disk under the temporary name when the run is cut
        raise KeyboardInterrupt

    monkeypatch.setattr(atomic_io, "_fsync_file", cut)
    with pytest.raises(KeyboardInterrupt):
        write_json(str(path), {"new": True})
    assert path.read_bytes() == before and _files(tmp_path) == {"res.json"}


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def test_truncated_bench_results_are_named_by_bench_compare(tmp_path, capsys):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(
        json.dumps({"schema": "exitlaw.bench", "version": 2, "config": {}, "runs": []}, indent=1)
    )
    b.write_bytes(a.read_bytes())
    _truncate(a)
    code, err = _cli(["bench", "decoding", "--compare", str(a), str(b)], capsys)
    assert code == 2 and str(a) in err and "not valid JSON" in err, err


@pytest.mark.parametrize("flag", ["--latency-json"])
def test_truncated_latency_json_is_named_by_figures(tmp_path, capsys, flag):
    src = tmp_path / "gpu_check.json"
    src.write_text(
        json.dumps(
            {"rows": [{"budget": 32, "predraw_stage_ms": 1.0, "tev_stage_ms": 0.5}]}, indent=1
        )
    )
    _truncate(src)
    code, err = _cli(
        ["figures", "--only", "verifier_latency", flag, str(src), "--out", str(tmp_path / "f")],
        capsys,
    )
    assert code == 2 and str(src) in err and "not valid JSON" in err, err
    assert not (tmp_path / "f" / "verifier_latency.json").exists()


@pytest.mark.parametrize("damage", ["truncated", "garbage", "2-D"])
def test_a_damaged_mini_token_array_is_an_error_naming_the_file(tmp_path, damage):
    from exitlaw.paper_repro.mini.corpus import load_token_array
    from exitlaw.theory.infra.atomic_io import atomic_save_npy

    path = atomic_save_npy(tmp_path / "train_tokens.npy", np.arange(1000, dtype=np.int32))
    assert np.array_equal(load_token_array(path), np.arange(1000))
    if damage == "truncated":
        _truncate(path)
    elif damage == "garbage":
        path.write_bytes(b"not an npy file at all")
    else:
        atomic_save_npy(path, np.zeros((3, 4), dtype=np.int32))
    with pytest.raises(ValueError, match=f"{path}.*(truncated or corrupt|not a 1-D token stream)"):
        load_token_array(path)


# ----- trace writers cut off: nothing incomplete under the trace's name; a killed writer's file is
# ----- reported by `exitlaw law` as lacking its end marker ----------------------------------------
def test_bench_interrupted_mid_decode_leaves_no_trace_under_its_name(tiny, tmp_path, monkeypatch):
    import exitlaw.engine.bench.decoding as bench
    from exitlaw.engine.bench.source import BenchSource

    real, calls = bench.run_conversation, []

    def cut_after_one_prompt(
        *a, **k
    ):  # the first speculative prompt writes its rounds, then Ctrl-C
        res = real(*a, **k)
        if k.get("trace") is not None:
            calls.append(1)
            raise KeyboardInterrupt
        return res

    monkeypatch.setattr(bench, "run_conversation", cut_after_one_prompt)
    prompts = tmp_path / "p.jsonl"
    prompts.write_text("".join(json.dumps({"prompt_ids": [1, 2, 3]}) + "\n" for _ in range(2)))
    traces = tmp_path / "traces"
    with pytest.raises(KeyboardInterrupt):
        bench.run_bench(
            BenchSource(
                str(tiny[0]),
                str(tiny[1]),
                dataset=f"jsonl:{prompts}",
                max_new_tokens=6,
                device="cpu",
                warmup=0,
            ),
            budgets=[8],
            temperatures=[0.0],
            verifiers=["tev"],
            trace_dir=str(traces),
            progress=False,
        )
    assert calls and _files(traces) == set()  # no complete-looking trace, no partial left behind


def test_a_trace_cut_mid_line_is_reported_as_lacking_its_end_marker(tmp_path, capsys):
    path = tmp_path / "t.jsonl"
    _write_lines(path, [HEAD, R0, _round(round=1), _end(2)])
    data = path.read_bytes()
    path.write_bytes(
        data[: data.rindex(b'{"round": 1') + 20]
    )  # killed while the second round was written
    with pytest.raises(
        IncompleteTraceError, match=r"t.jsonl:3: incomplete trace: the last line is cut off"
    ):
        read_trace(path)
    assert main(["law", str(path)]) == 2 and "no end marker" in capsys.readouterr().err
    assert len(read_trace(path, allow_incomplete=True).rounds) == 1
    assert main(["law", str(path), "--allow-incomplete", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["totals"]["rounds"] == 1
    path.write_bytes(data[: data.rindex(b'{"round": 1') + 20] + b"\n" + _end(1).encode() + b"\n")
    with pytest.raises(
        TraceFormatError, match=":3: not valid JSON"
    ):  # a whole line that is bad stays an error
        read_trace(path, allow_incomplete=True)


def test_a_killed_writer_leaves_a_partial_file_that_exitlaw_law_calls_incomplete(tmp_path, capsys):
    import signal
    import subprocess
    import sys

    script = (
        "import os, signal, numpy as np, sys\n"
        "from exitlaw.theory import TraceWriter, TraceRound, DraftTree\n"
        "w = TraceWriter(sys.argv[1], {})\n"
        "tree = DraftTree(parent=[-1, 0, 1], token=[0, 1, 2])\n"
        "for i in range(500):\n"
        "    w.write(TraceRound(tree, np.array([1.0, 0.5, 0.25])))\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    path = tmp_path / "t.jsonl"
    proc = subprocess.run(
        [sys.executable, "-c", script, str(path)], capture_output=True, timeout=120
    )
    assert proc.returncode == -int(signal.SIGKILL)
    partial = tmp_path / ".t.jsonl.partial"
    assert not path.exists() and partial.is_file()
    assert main(["law", str(partial)]) == 2
    err = capsys.readouterr().err
    assert "incomplete trace" in err and "no end marker" in err, err
    assert main(["law", str(partial), "--allow-incomplete", "--json"]) == 0
    assert 0 < json.loads(capsys.readouterr().out)["totals"]["rounds"] < 500
