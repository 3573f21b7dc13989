"""One command-line grammar, checked over every command and subcommand that ``build_parser()`` builds:
each has help text and a handler; ``--out`` always names a folder and comes with ``--overwrite``;
every benchmark (``exitlaw bench <what>``) has ``--out`` and ``--json``; ``--json`` is a switch that
prints; one spelling per concept; ``exitlaw --help`` fits one screen; former names are gone."""

import argparse
import importlib
import json

import pytest

from exitlaw.cli import COMMAND_FAMILIES, build_parser, main
from exitlaw.cli.grammar import Command, Group


def _subparsers(parser: argparse.ArgumentParser):
    return next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)


def _walk(parser: argparse.ArgumentParser, path: str = ""):
    """``(path, parser, help, is_group)`` for every command and group below ``parser``."""
    sub = _subparsers(parser)
    if sub is None:
        return
    helps = {a.dest: a.help for a in sub._choices_actions}
    for name, child in sub.choices.items():
        full = f"{path}{name}"
        is_group = _subparsers(child) is not None
        yield full, child, helps.get(name), is_group
        yield from _walk(child, f"{full} ")


def _commands(groups: bool = False) -> dict[str, argparse.ArgumentParser]:
    return {p: c for p, c, _, g in _walk(build_parser()) if g == groups}


def _options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {s: a for a in parser._actions for s in a.option_strings}


COMMANDS = _commands()
GROUPS = _commands(groups=True)
BENCHES = sorted(p for p in COMMANDS if p.startswith("bench "))
WITH_OUT = sorted(p for p, c in COMMANDS.items() if "--out" in _options(c))

# What each command used to be called (0.1 moved every name once; nothing maps the old ones).
FORMER = {
    "bench": "bench decoding",
    "bench-law": "bench law",
    "bench-simulate": "bench simulate",
    "bench-sim-verifiers": "bench sim-verifiers",
    "bench-verifiers": "bench verifiers",
    "bench-batch": "bench batch",
    "bench-ddtree": "bench ddtree",
    "bench-serve": "bench serve",
    "simulate": "simulate run",
    "simulate-exittrain": "simulate exittrain",
    "field-lab": "simulate field-lab",
    "law-bench": "bench law",
    "simulate-bench": "bench simulate",
    "verifier-sim-bench": "bench sim-verifiers",
    "verifier-bench": "bench verifiers",
    "batch-bench": "bench batch",
}

# One spelling per concept: the canonical option, and spellings no command may use for it.
CONCEPTS = {
    "seed": ("--seed", {"--random-seed", "--rng-seed", "--rng"}),
    "sampling order": ("--sampling-order", {"--order", "--filter-order", "--sampler-order"}),
    "node budget": ("--budget", {"--budgets", "--node-budget", "--nodes"}),
    "verifier": ("--verifier", {"--verifiers", "--kind", "--kinds"}),
    "batch size": ("--batch-size", {"--batch", "--bs", "--batch-sizes"}),
    "repetitions": ("--repeats", {"--reps", "--repetitions", "--n-repeats"}),
    "number of prompts": ("--num-prompts", {"--prompt-limit", "--n-prompts", "--max-prompts"}),
    "new tokens": ("--max-new-tokens", {"--max-tokens", "--new-tokens", "--num-tokens"}),
    "output folder": (
        "--out",
        {"--output", "--out-dir", "--output-dir", "--workdir", "--json-out"},
    ),
    "overwrite": ("--overwrite", {"--force", "--replace", "--clobber"}),
    "vocabulary": ("--vocab", {"--vocab-size", "--vocabulary"}),
    "threads": ("--threads", {"--num-threads", "--torch-threads", "--cpu-threads"}),
    "temperature": ("--temperature", {"--temp", "--temperatures"}),
    "top-k": ("--top-k", {"--topk", "--top_k"}),
    "top-p": ("--top-p", {"--topp", "--top_p", "--nucleus"}),
    "min-p": ("--min-p", {"--minp", "--min_p"}),
    "device": ("--device", {"--devices"}),
    "dtype": ("--dtype", {"--precision", "--dtypes"}),
    "progress bar": ("--no-progress", {"--quiet", "--progress", "--no-tqdm"}),
    "mini run": ("--mini", {"--run", "--mini-dir", "--mini-run"}),
    "prompt file or set": (
        "--prompts",
        {"--dataset", "--datasets", "--prompt-file", "--prompt-set", "--prompts-file"},
    ),
}
# Spellings awaiting a rename (none today): each entry must still be there -- delete it when it lands.
PENDING: set[tuple[str, str]] = set()


# ----- every command ---------------------------------------------------------------------------------
def test_the_walk_sees_every_family_and_the_groups():
    assert {"bench", "simulate", "repro"} <= set(GROUPS)
    assert set(BENCHES) == {
        "bench law",
        "bench simulate",
        "bench sim-verifiers",
        "bench verifiers",
        "bench decoding",
        "bench batch",
        "bench ddtree",
        "bench serve",
    }
    assert {"law", "check", "prove", "train", "serve", "audit", "tiny-models", "gpu-check"} <= set(
        COMMANDS
    )
    assert {"simulate run", "simulate exittrain", "simulate field-lab"} <= set(COMMANDS)
    assert {"repro mini", "repro all", "repro full", "figures", "ledger"} <= set(COMMANDS)


@pytest.mark.parametrize("path", sorted(COMMANDS) + sorted(GROUPS))
def test_every_command_and_group_has_help_text(path):
    helps = {p: h for p, _, h, _ in _walk(build_parser())}
    assert helps[path] and helps[path].strip(), f"exitlaw {path} has no help text"
    parser = {**COMMANDS, **GROUPS}[path]
    assert parser.description, f"exitlaw {path} has no description"
    for action in parser._actions:
        if action.option_strings and action.help is None:
            # a flag whose name says it all may go without help, but never an --out, --json or --overwrite
            assert not {"--out", "--json", "--overwrite"} & set(action.option_strings), (
                path,
                action.option_strings,
            )


@pytest.mark.parametrize("path", sorted(COMMANDS))
def test_every_command_has_a_handler_in_the_cli(path):
    func = COMMANDS[path].get_default("func")
    assert callable(func), f"exitlaw {path} has no handler"
    assert func.__module__.startswith("exitlaw.cli."), (path, func.__module__)
    assert COMMANDS[path].get_default("command") == path  # errors are prefixed with the full path


@pytest.mark.parametrize("path", sorted(GROUPS))
def test_a_group_alone_prints_its_help_and_exits_2(path, capsys):
    assert main(path.split()) == 2
    out = capsys.readouterr().out
    assert out.startswith(f"usage: exitlaw {path}")
    sub = _subparsers(GROUPS[path])
    assert all(name in out for name in sub.choices)


def test_registration_is_declarative():
    """Family modules list Command / Group values; none registers by hand."""
    for name in COMMAND_FAMILIES:
        mod = importlib.import_module(name)
        assert not hasattr(mod, "register"), name
        for entry in (*mod.COMMANDS, *mod.BENCH):
            assert isinstance(entry, (Command, Group)), (name, entry)
        assert all(isinstance(c, Command) for c in mod.BENCH), name


# ----- --out, --overwrite, --json --------------------------------------------------------------------
@pytest.mark.parametrize("path", WITH_OUT)
def test_out_always_names_a_folder_and_comes_with_overwrite(path):
    opts = _options(COMMANDS[path])
    out = opts["--out"]
    assert out.metavar == "DIR", f"exitlaw {path} --out is not a folder (metavar {out.metavar!r})"
    assert out.help.startswith("folder: "), f"exitlaw {path} --out help: {out.help!r}"
    assert out.nargs is None and out.type is None, path
    assert "--overwrite" in opts, f"exitlaw {path} has --out without --overwrite"
    assert opts["--overwrite"].nargs == 0, path


@pytest.mark.parametrize("path", BENCHES)
def test_every_benchmark_has_out_and_json(path):
    opts = _options(COMMANDS[path])
    assert "--out" in opts and "--json" in opts, f"exitlaw {path} lacks --out or --json"
    assert "results.json" in opts["--out"].help


@pytest.mark.parametrize("path", sorted(COMMANDS))
def test_every_json_option_is_a_switch_that_prints(path):
    action = _options(COMMANDS[path]).get("--json")
    if action is not None:
        assert action.nargs == 0 and action.const is True, f"exitlaw {path} --json takes a value"


def test_the_overwrite_guard_refuses_before_any_work_and_overwrite_replaces(tmp_path, capsys):
    from exitlaw.theory.trace.bench import make_bench_trace

    trace = make_bench_trace(tmp_path / "b.jsonl", rounds=6, max_budget=4, vocab=20)
    out = tmp_path / "res"
    argv = ["bench", "law", "--trace", str(trace), "--out", str(out)]
    assert main(argv) == 0
    first = json.loads((out / "results.json").read_text())
    assert first["rounds"] == 6 and "wrote" in capsys.readouterr().err
    (out / "results.json").write_text("keep me")
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("exitlaw bench law: error:") and "--overwrite" in err
    assert (out / "results.json").read_text() == "keep me"
    assert main([*argv, "--overwrite", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)  # --json prints the JSON alone on stdout
    assert printed["rounds"] == 6
    assert json.loads((out / "results.json").read_text())["rounds"] == 6


def test_out_naming_an_existing_file_is_refused(tmp_path, capsys):
    f = tmp_path / "a_file"
    f.write_text("keep me")
    assert main(["bench", "law", "--trace", str(f), "--out", str(f)]) == 2
    assert "is a file, not a directory" in capsys.readouterr().err
    assert f.read_text() == "keep me"


def test_tiny_models_out_naming_an_existing_file_is_a_named_error(tmp_path, capsys):
    f = tmp_path / "a_file"
    f.write_text("keep me")
    assert main(["tiny-models", "--out", str(f)]) == 2
    err = capsys.readouterr().err
    assert "is a file, not a directory" in err and "Traceback" not in err
    assert f.read_text() == "keep me"


def test_gpu_check_out_writes_results_json_and_json_prints(tmp_path, capsys):
    base = ["gpu-check", "--tiny", "--device", "cpu", "--budget", "4", "--context", "24"]
    base += ["--repeats", "1"]
    assert main(base + ["--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rows"]
    assert main(base + ["--out", str(tmp_path / "g")]) == 0
    out, err = capsys.readouterr()
    assert json.loads((tmp_path / "g" / "results.json").read_text())["rows"]
    assert "TEV/predraw" in out and "wrote" in err


def test_overwrite_of_a_whole_run_folder_moves_the_former_run_aside(tmp_path, capsys):
    from exitlaw.cli.grammar import move_aside

    run = tmp_path / "run"
    assert move_aside(run) is None  # nothing there: nothing moved
    run.mkdir()
    assert move_aside(run) is None and run.is_dir()  # empty: kept
    (run / "config.json").write_text("old")
    aside = move_aside(run)
    assert aside.parent == tmp_path and aside.name.startswith("run.old-")
    assert (aside / "config.json").read_text() == "old" and not run.exists()
    assert str(aside) in capsys.readouterr().err


def test_train_overwrite_does_not_go_with_resume_and_moves_nothing(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text("old")
    argv = ["train", "--target", "T", "--draft", "D", "--prompts", "p", "--out", str(run)]
    assert main([*argv, "--overwrite", "--resume"]) == 2
    assert "does not go with --resume" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


def test_repro_full_out_is_the_dry_run_folder():
    args = build_parser().parse_args(["repro", "full", "--dry-run", "--out", "X", "--overwrite"])
    assert (args.out, args.overwrite, args.command) == ("X", True, "repro full")


# ----- one spelling per concept ----------------------------------------------------------------------
def _spellings() -> dict[str, set[str]]:
    seen: dict[str, set[str]] = {}
    for path, parser in COMMANDS.items():
        for option in _options(parser):
            seen.setdefault(option, set()).add(path)
    return seen


@pytest.mark.parametrize("concept", sorted(CONCEPTS))
def test_one_spelling_per_concept(concept):
    canonical, variants = CONCEPTS[concept]
    seen = _spellings()
    assert canonical in seen, f"{concept}: {canonical} is used by no command (stale table?)"
    wrong = {(path, v) for v in variants for path in seen.get(v, ()) if (path, v) not in PENDING}
    assert not wrong, f"{concept} is spelled {canonical}, not: {sorted(wrong)}"


def test_no_two_concepts_share_a_spelling_and_no_spelling_is_two_concepts():
    """The table itself: a canonical flag is no other concept's variant, and no variant is listed
    under two concepts (the same concept must not have two flag names)."""
    canonical = {c for c, _ in CONCEPTS.values()}
    variants = [v for _, vs in CONCEPTS.values() for v in vs]
    assert len(canonical) == len(CONCEPTS) and not canonical & set(variants)
    assert len(variants) == len(set(variants))


def test_pending_spellings_are_still_pending():
    seen = _spellings()
    for path, option in PENDING:
        assert path in seen.get(option, ()), f"{path} {option} is renamed: delete it from PENDING"


# ----- one screen; the names moved once --------------------------------------------------------------
def test_exitlaw_help_fits_one_screen(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "80")
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert len(out.splitlines()) <= 40, out
    assert max(len(x) for x in out.splitlines()) <= 80
    flat = " ".join(out.split())
    assert "--out DIR" in flat and "--json" in flat and "--overwrite" in flat  # the grammar, stated


@pytest.mark.parametrize("former, current", sorted(FORMER.items()))
def test_a_former_command_name_is_refused_and_the_current_one_exists(former, current, capsys):
    if former in ("bench", "simulate"):  # now groups: alone they print their commands
        assert main([former]) == 2
        assert current.split()[1] in capsys.readouterr().out
    else:
        with pytest.raises(SystemExit) as done:
            main([former, "--help"])
        assert done.value.code == 2 and "invalid choice" in capsys.readouterr().err
    assert current in COMMANDS


@pytest.mark.parametrize(
    "argv",
    [
        ["gpu-check", "--json", "FILE"],
        ["gpu-check", "--reps", "3"],
        ["repro", "full", "--dry-run", "--workdir", "Y"],
        ["bench", "verifiers", "--verifiers", "tev"],
        ["train", "--target", "t", "--draft", "d", "--prompts", "p", "--out", "o"]
        + ["--prompt-limit", "2"],
        ["bench", "ddtree", "--ddtree", "D", "--run", "R"],
        ["bench", "decoding", "--target", "t", "--draft", "d", "--dataset", "gsm8k"],
        ["bench", "batch", "--target", "t", "--draft", "d", "--dataset", "gsm8k"],
        ["audit", "--candidate", "c", "--reference", "r", "--prompts", "p", "--max-tokens", "4"],
    ],
    ids=lambda a: " ".join(a[:2]),
)
def test_former_flags_are_refused(argv, capsys):
    with pytest.raises(SystemExit) as done:
        build_parser().parse_args(argv)
    assert done.value.code == 2
    assert "unrecognized arguments" in capsys.readouterr().err


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
            ["bench", "serve", "--target", "t", "--draft", "d", "--prompts", "p", "--threads", "0"],
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
