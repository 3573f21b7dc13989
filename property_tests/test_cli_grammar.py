"""One command-line grammar: `--out PATH` writes, `--json` prints, the benchmark family reads `bench-<what>`;
former spellings still work and say so in one line on stderr (never a Python warning)."""

import json

import pytest

from exitlaw.cli import RENAMED_COMMANDS, build_parser, main


def _commands() -> set[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    return set(sub.choices)


def test_the_benchmark_family_reads_bench_what_and_former_names_are_not_listed():
    names = _commands()
    assert {
        "bench",
        "bench-law",
        "bench-simulate",
        "bench-sim-verifiers",
        "bench-verifiers",
        "bench-batch",
    } <= names
    assert not names & set(RENAMED_COMMANDS), "former names must not be listed as commands"
    assert {n for n in names if n.endswith("-bench")} == set()


@pytest.mark.parametrize("former, current", sorted(RENAMED_COMMANDS.items()))
def test_a_former_command_name_runs_the_current_command_with_a_notice(former, current, capsys):
    with pytest.raises(SystemExit) as done:
        main([former, "--help"])
    assert done.value.code == 0
    out, err = capsys.readouterr()
    assert f"usage: exitlaw {current}" in out
    assert err.strip() == f"exitlaw: note: `{former}` is now `{current}`"


def test_every_json_option_prints_and_never_takes_a_path():
    """`--json` is a switch everywhere (gpu-check keeps accepting the former `--json FILE`, see below)."""
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for name, cmd in sub.choices.items():
        for action in cmd._actions:
            if "--json" in action.option_strings:
                takes_value = action.nargs not in (0, "?")
                assert not takes_value, f"exitlaw {name} --json takes a value"


def test_gpu_check_out_writes_json_prints_and_the_former_json_file_still_writes(tmp_path, capsys):
    base = [
        "gpu-check",
        "--tiny",
        "--device",
        "cpu",
        "--budget",
        "4",
        "--context",
        "24",
        "--reps",
        "1",
    ]
    assert main(base + ["--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["rows"]
    old = tmp_path / "old.json"
    assert main(base + ["--json", str(old)]) == 0
    out, err = capsys.readouterr()
    assert json.loads(old.read_text())["rows"] and "TEV/predraw" in out
    assert "`gpu-check --json FILE` is now `gpu-check --out FILE`" in err


def test_repro_full_workdir_is_now_out(capsys):
    parser = build_parser()
    args = parser.parse_args(["repro", "full", "--dry-run", "--out", "X"])
    assert args.workdir == "X"
    args = parser.parse_args(["repro", "full", "--dry-run", "--workdir", "Y"])
    assert args.workdir == "Y"
    assert "`--workdir` is now `--out`" in capsys.readouterr().err


def test_tiny_models_out_naming_an_existing_file_is_a_named_error(tmp_path, capsys):
    f = tmp_path / "a_file"
    f.write_text("keep me")
    assert main(["tiny-models", "--out", str(f)]) == 2
    err = capsys.readouterr().err
    assert "is an existing file" in err and "Traceback" not in err
    assert f.read_text() == "keep me"


_AUDIT = ["audit", "--candidate", "http://c", "--reference", "http://r", "--prompts", "p.jsonl"]


@pytest.mark.parametrize(
    "argv, message",
    [
        (_AUDIT + ["--alpha", "1"], "strictly between 0 and 1"),
        (_AUDIT + ["--power", "nan"], "expected a finite number"),
        (_AUDIT + ["--top-p", "1.5"], "expected a top-p in (0, 1]"),
        (_AUDIT + ["--min-p", "1"], "expected a min-p in [0, 1)"),
        (_AUDIT + ["--top-k", "0"], "expected an integer >= 1"),
        (["serve", "--target", "t", "--port", "65536"], "expected a port in 0..65535"),
        (["serve", "--target", "t", "--port", "http"], "expected a port in 0..65535"),
        (
            ["bench-serve", "--target", "t", "--draft", "d", "--prompts", "p", "--threads", "0"],
            "expected an integer >= 1",
        ),
    ],
)
def test_serving_commands_refuse_out_of_range_values_with_the_range(argv, message, capsys):
    with pytest.raises(SystemExit) as done:
        build_parser().parse_args(argv)
    assert done.value.code == 2
    assert message in capsys.readouterr().err


def test_audit_sends_filters_but_has_no_sampling_order_and_serve_parses_its_port():
    args = build_parser().parse_args(
        _AUDIT + ["--top-k", "3", "--top-p", "0.9", "--min-p", "0.1", "--alpha", "0.01"]
    )
    assert (args.top_k, args.top_p, args.min_p, args.alpha) == (3, 0.9, 0.1, 0.01)
    assert not hasattr(args, "sampling_order")  # the servers apply their own order
    assert build_parser().parse_args(["serve", "--target", "t", "--port", "0"]).port == 0
