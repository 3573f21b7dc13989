"""User errors on the command line are one line, ``exitlaw COMMAND: error: ...`` with exit status 2,
naming the flag and the path or value, and come before any model, tokenizer or server is loaded
(issue 38, "Errors")."""

from __future__ import annotations

import json

import pytest

from exitlaw.cli import main

DFLASH = {"model_type": "qwen3", "block_size": 16, "dflash_config": {"mask_token_id": 0}}
TARGET = {"model_type": "qwen3", "architectures": ["Qwen3ForCausalLM"]}


@pytest.fixture
def no_loading(monkeypatch, tmp_path):
    """Any model, tokenizer or server load fails the test; runs in ``tmp_path`` with model folders
    ``target/`` and ``draft/`` (config.json only), ``nocfg/`` (empty) and a file ``file.txt``."""
    import transformers

    from exitlaw.engine.bench import batch, decoding
    from exitlaw.engine.models import checkpoint
    from exitlaw.engine.serve import engine
    from exitlaw.engine.training import run
    from exitlaw.simulate.audit import bench

    def loaded(*args, **kwargs):
        raise AssertionError("a model, tokenizer or server was loaded")

    for module, name in (
        (checkpoint, "load_pair"),
        (checkpoint, "load_target"),
        (checkpoint, "load_drafter"),
        (decoding, "load_pair"),
        (batch, "load_pair"),
        (run, "load_pair"),
        (engine, "load_pair"),
        (engine, "load_target"),
        (bench, "run_serve_bench"),
        (transformers.AutoTokenizer, "from_pretrained"),
    ):
        monkeypatch.setattr(module, name, loaded)
    monkeypatch.chdir(tmp_path)
    for name, config in (("target", TARGET), ("draft", DFLASH)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(json.dumps(config))
    (tmp_path / "nocfg").mkdir()
    (tmp_path / "file.txt").write_text("x")
    return tmp_path


def _one_line_error(argv, capsys) -> str:
    """Run the CLI; the exit status must be 2 and stderr one ``exitlaw ...: error:`` line."""
    try:
        code = main(argv)
    except SystemExit as done:  # argparse refuses a value
        code = done.code
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, (code, err)
    assert lines[0].startswith(f"exitlaw {argv[0]}"), lines[0]
    assert ": error: " in lines[0]
    return lines[0]


# every command that takes --target/--draft, with the other arguments it requires
PAIR_COMMANDS = {
    "serve": (["serve"], ["--method", "ddtree"]),
    "bench decoding": (["bench", "decoding"], []),
    "bench decoding batched": (["bench", "decoding"], ["--batch-size", "2"]),
    "bench batch": (["bench", "batch"], []),
    "bench serve": (["bench", "serve"], ["--prompts", "p.jsonl"]),
    "bench ddtree": (["bench", "ddtree"], ["--ddtree", "clone"]),
    "train": (["train"], ["--prompts", "p.jsonl", "--out", "run"]),
}


@pytest.mark.parametrize("command", sorted(PAIR_COMMANDS))
@pytest.mark.parametrize(
    "target, draft, flag, path, message",
    [
        ("MISSING", "draft", "--target", "MISSING", "no such folder"),
        ("target", "MISSING", "--draft", "MISSING", "no such folder"),
        ("nocfg", "draft", "--target", "nocfg", "not a model folder (it has no config.json)"),
        ("target", "file.txt", "--draft", "file.txt", "a file, not a model folder"),
        ("draft", "draft", "--target", "draft", "a DFlash drafter checkpoint, not a target"),
        ("target", "target", "--draft", "target", "not a DFlash drafter"),
        ("target/sub", "draft", "--target", "target/sub", "no such folder"),  # not a Hub id
    ],
    ids=[
        "missing-target",
        "missing-draft",
        "no-config",
        "a-file",
        "drafter-as-target",
        "target-as-drafter",
        "local-owner",
    ],
)
def test_a_bad_model_path_is_one_line_naming_it_before_anything_loads(
    command, target, draft, flag, path, message, no_loading, capsys
):
    words, extra = PAIR_COMMANDS[command]
    line = _one_line_error([*words, "--target", target, "--draft", draft, *extra], capsys)
    assert f"{flag} {path}: {message}" in line


def test_serve_with_a_missing_target_is_one_line_whatever_the_method(no_loading, capsys):
    for method in ("ar", "ddtree"):  # ddtree without --draft: the target is named first
        line = _one_line_error(["serve", "--target", "MISSING", "--method", method], capsys)
        assert "--target MISSING: no such folder" in line


def test_a_model_folder_with_broken_config_json_is_named(no_loading, capsys):
    (no_loading / "target" / "config.json").write_text("{not json")
    line = _one_line_error(["serve", "--target", "target", "--method", "ar"], capsys)
    assert "--target target: config.json is not valid JSON" in line


@pytest.mark.parametrize(
    "argv, value",
    [
        (["bench", "decoding", "--temperature", "-1"], "'-1'"),
        (["bench", "decoding", "--temperature", "0,-0.5"], "'0,-0.5'"),
        (["bench", "decoding", "--max-turns", "0"], "'0'"),
        (["bench", "batch", "--temperature", "-1"], "'-1'"),
        (["bench", "batch", "--budget", "0"], "'0'"),
        (["bench", "batch", "--verifier-repeats", "0"], "'0'"),
        (["bench", "ddtree", "--ddtree", "clone", "--repeats", "1"], "'1'"),
        (["bench", "ddtree", "--ddtree", "clone", "--temperature", "-1"], "'-1'"),
    ],
    ids=lambda a: " ".join(a) if isinstance(a, list) else a,
)
def test_a_bad_value_is_refused_before_the_model_loads(argv, value, no_loading, capsys):
    line = _one_line_error([*argv, "--target", "target", "--draft", "draft"], capsys)
    assert f"argument {argv[-2]}" in line and value in line


@pytest.mark.parametrize(
    "argv, value",
    [
        (["bench", "verifiers", "--vocab", "1"], "'1'"),
        (["bench", "verifiers", "--temperature", "-1"], "'-1'"),
        (["bench", "verifiers", "--repeats", "0"], "'0'"),
        (["gpu-check", "--temperature", "-1"], "'-1'"),
        (["check", "mod:fn", "--temperature", "-1"], "'-1'"),
    ],
    ids=lambda a: " ".join(a) if isinstance(a, list) else a,
)
def test_a_bad_value_of_a_modelless_command_is_one_line(argv, value, capsys):
    line = _one_line_error(argv, capsys)
    assert f"argument {argv[-2]}" in line and value in line


def _temperature_flags() -> list[tuple[str, object]]:
    """Every ``(command, action)`` of the parser whose destination names a temperature."""
    import argparse

    from exitlaw.cli import build_parser

    out = []

    def walk(parser, words):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, [*words, name])
            elif "temperature" in action.dest:
                out.append((" ".join(words), action))

    walk(build_parser(), [])
    return out


def test_every_temperature_flag_refuses_the_floor_and_accepts_it():
    """A temperature flag added with a plain number type (no floor) fails here."""
    import argparse

    flags = _temperature_flags()
    assert len(flags) >= 10, [(c, a.option_strings) for c, a in flags]
    for command, action in flags:
        where = f"{command} {action.option_strings[0]}"
        with pytest.raises(
            argparse.ArgumentTypeError, match="below the floor MIN_TEMPERATURE"
        ) as err:
            action.type("9.99e-7")
        assert "9.99e-07" in str(err.value), where
        got = action.type("1e-6")
        assert got in (1e-6, [1e-6]), (where, got)


@pytest.mark.parametrize(
    "argv",
    [
        ["bench", "verifiers", "--temperature", "1e-7"],
        ["gpu-check", "--temperature", "1e-7"],
        ["check", "mod:fn", "--temperature", "1e-7"],
        ["bench", "decoding", "--temperature", "0,1e-7"],
        ["audit", "--temperature", "1e-7"],
        ["train", "--scoring-temperature", "1e-7"],
    ],
    ids=lambda a: " ".join(a),
)
def test_a_temperature_below_the_floor_is_one_line_naming_flag_value_and_floor(argv, capsys):
    # a trailing unknown flag: were the floor gone, argparse would refuse it instead of running the command
    line = _one_line_error([*argv, "--no-such-flag"], capsys)
    assert f"argument {argv[-2]}" in line and "1e-07" in line
    assert "below the floor MIN_TEMPERATURE = 1e-06" in line
    assert ("use 0 for greedy" in line) == (argv[0] != "train")  # the scoring T must be > 0


@pytest.mark.parametrize("flag", ["--budget", "--vocab", "--horizon", "--drafter-noise"])
def test_an_unknown_flag_whose_setting_lives_in_the_config_names_the_file_and_field(flag, capsys):
    line = _one_line_error(["simulate", "run", flag, "8"], capsys)
    field = flag[2:].replace("-", "_")
    assert f"unrecognized arguments: {flag}" in line
    assert "field of the simulation config" in line and f'"{field}"' in line
    assert "SimConfig" in line and "exitlaw simulate run CONFIG" in line


def test_an_unknown_flag_without_a_config_field_gets_no_pointer(capsys):
    line = _one_line_error(["simulate", "run", "--bogus"], capsys)
    assert "unrecognized arguments: --bogus" in line and "config" not in line


def test_every_flag_the_table_points_at_a_config_for_is_a_field_and_not_a_flag():
    """The table cannot drift: each flag names a SimConfig field the command has no flag for."""
    from exitlaw.cli import build_parser
    from exitlaw.cli.grammar import IN_A_CONFIG
    from exitlaw.simulate.lab.presets import SimConfig

    flags, _ = IN_A_CONFIG["simulate run"]
    names = set(SimConfig().to_dict())  # the config file's flat keys
    parser = build_parser()
    run = parser._subparsers._group_actions[0].choices["simulate"]
    run = run._subparsers._group_actions[0].choices["run"]
    own = {s for a in run._actions for s in a.option_strings}
    assert flags and all(f[2:].replace("-", "_") in names and f not in own for f in flags)


def test_bench_ddtree_with_an_unusable_clone_is_one_line_naming_it(no_loading, capsys):
    line = _one_line_error(["bench", "ddtree", "--ddtree", "NOCLONE", "--quick"], capsys)
    assert "--ddtree NOCLONE:" in line and "not a clone" in line
