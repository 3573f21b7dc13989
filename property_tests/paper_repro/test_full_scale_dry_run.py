"""The full-scale reproduction dry-run on a CPU: every shipped config's train, bench and gpu-check
commands executed through exitlaw's own command line on tiny stand-ins of each target's family."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest

from exitlaw.cli import main as cli_main
from exitlaw.engine.prompts.records import Prompt
from exitlaw.paper_repro.full_scale import config_paths, load_config
from exitlaw.paper_repro.full_scale_dry_run import (
    KNOWN_LIMITATIONS,
    TARGET_FAMILIES,
    DryRunError,
    dry_run,
    format_dry_run,
)


def _config(name: str):
    return next(p for p in config_paths() if p.name == name)


def test_every_shipped_config_runs_end_to_end(tmp_path):
    report = dry_run(tmp_path / "dry", run_command=cli_main)
    names = {p.name for p in config_paths()}
    assert {r["config"] for r in report.records} == names
    ran = [r for r in report.records if "executed" in r]
    assert all(r["status"].startswith("ok: ") for r in ran)
    for path in config_paths():
        cfg, kinds = (
            load_config(path),
            {r["command"].split()[1] for r in ran if r["config"] == path.name},
        )
        kinds |= {
            r["command"].split()[1]
            for r in report.records
            if r["config"] == path.name and r["status"].startswith("same command")
        }
        assert kinds == ({"gpu-check"} if cfg["table"] == "3" else {"train", "bench"}), path.name
    # each target ran on a stand-in of its own family (or, for a known limitation, its named fallback)
    used = {(r["config"], r["family"]) for r in ran}
    for path in config_paths():
        family = TARGET_FAMILIES[load_config(path)["target"]]
        want = KNOWN_LIMITATIONS[family].fallback if family in KNOWN_LIMITATIONS else family
        assert {f for c, f in used if c == path.name} == {want}, path.name
    assert {r["family"] for r in ran} == {"qwen3", "llama", "qwen3_moe", "gemma4"}
    assert report.limitations == [] and "KNOWN LIMITATION" not in format_dry_run(report)
    # every benchmark set and the training mixture was read from its local stand-in, multi-turn included
    benches = [r["executed"] for r in ran if r["command"].split()[1] == "bench"]
    for name in ("gsm8k=", "humaneval=", "math500=", "mt-bench="):
        assert any(name in b for b in benches)
    mt = next(b for b in benches if "mt-bench=" in b and "llama" in b)
    res = json.loads((Path(mt.split("--out ")[1].split()[0]) / "results.json").read_text())
    assert {o["turn"] for r in res["runs"] for o in r["outputs"]} == {0, 1}


def test_the_gemma4_config_runs_on_its_sliding_window_stand_in(tmp_path):
    """Gemma-4's own family (sliding-window and full-attention layers), no fallback: train and bench run,
    bench reproduces AR at T = 0, and the prompts are longer than the stand-in's window, so it slides."""
    from transformers import AutoConfig, AutoTokenizer

    report = dry_run(tmp_path / "dry", [_config("table1_gemma4_12b_it.json")], run_command=cli_main)
    ran = [r for r in report.records if "executed" in r]
    assert {r["family"] for r in ran} == {"gemma4"} and report.limitations == []
    assert {r["command"].split()[1] for r in ran} == {"train", "bench"}
    assert all(r["status"].startswith("ok: ") for r in ran)
    cfg = AutoConfig.from_pretrained(tmp_path / "dry" / "models" / "gemma4" / "target")
    assert "sliding_attention" in cfg.layer_types and "full_attention" in cfg.layer_types
    bench = [r["executed"] for r in ran if r["command"].split()[1] == "bench"]
    res = json.loads((Path(bench[0].split("--out ")[1].split()[0]) / "results.json").read_text())
    tok = AutoTokenizer.from_pretrained(tmp_path / "dry" / "models" / "gemma4" / "target")
    texts = [
        tok.apply_chat_template(
            [{"role": "user", "content": p["turns"][0]}], tokenize=False, add_generation_prompt=True
        )
        for p in res["prompts"]
    ]
    lengths = [len(tok(t, add_special_tokens=False)["input_ids"]) for t in texts]
    assert max(lengths) > cfg.sliding_window, (lengths, cfg.sliding_window)


def test_the_known_limitation_machinery_falls_back_and_notices_a_fixed_limitation(
    tmp_path, monkeypatch
):
    """With no entry left in KNOWN_LIMITATIONS, a planted one: a command failing the known way is rerun on
    the fallback and reported; a limitation that no longer occurs is an error."""
    fsdr = importlib.import_module("exitlaw.paper_repro.full_scale_dry_run")

    monkeypatch.setattr(
        fsdr,
        "KNOWN_LIMITATIONS",
        {
            "qwen3": fsdr.Limitation(
                match=("planted",), fallback="llama", note="a planted limitation"
            )
        },
    )
    calls = []

    def fails_once(argv):
        calls.append(argv)
        if len(calls) == 1:
            raise RuntimeError("planted failure")
        return cli_main(argv)

    report = dry_run(tmp_path / "a", [_config("table3_qwen3_4b.json")], run_command=fails_once)
    assert [(lim["config"], lim["family"], lim["fallback"]) for lim in report.limitations] == [
        ("table3_qwen3_4b.json", "qwen3", "llama")
    ]
    assert "KNOWN LIMITATION: table3_qwen3_4b.json" in format_dry_run(report)
    assert {r["family"] for r in report.records if "executed" in r} == {"llama"}
    with pytest.raises(DryRunError, match="did not occur; remove it from KNOWN_LIMITATIONS"):
        dry_run(tmp_path / "b", [_config("table3_qwen3_4b.json")], run_command=cli_main)


def _old_train_encoder(tokenizer, prompts, *, chat=False, **_):
    """The encoder as it was: ``list()`` of what ``apply_chat_template(tokenize=True)`` returns."""
    out = []
    for p in prompts:
        if isinstance(p, list):
            out.append([int(t) for t in p])
        elif chat:
            out.append(
                list(
                    tokenizer.apply_chat_template(
                        [{"role": "user", "content": p}],
                        tokenize=True,
                        add_generation_prompt=True,
                        enable_thinking=False,
                    )
                )
            )
        else:
            out.append(tokenizer.encode(p, add_special_tokens=False))
    return out


def _chat_ignored(tokenizer, prompts, *, chat=False, **_):
    """A quieter regression: the chat flag silently dropped (plain text encoding)."""
    return [
        list(p) if isinstance(p, list) else tokenizer.encode(p, add_special_tokens=False)
        for p in prompts
    ]


def _old_bench_encoder(tokenizer, prompt, *, chat=False, **_):
    """The same ``list()`` on bench's side (a text, a :class:`Prompt` or a conversation)."""
    prompt = prompt.turns[0] if isinstance(prompt, Prompt) else prompt
    messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt
    return list(tokenizer.apply_chat_template(messages, tokenize=True, add_generation_prompt=True))


@pytest.mark.parametrize(
    "where, bad, message",
    [
        ("exitlaw.engine.prompts.encoding.encode_prompts", _old_train_encoder, "exitlaw train"),
        (
            "exitlaw.engine.prompts.encoding.encode_prompts",
            _chat_ignored,
            "not the chat-template rendering",
        ),
        ("exitlaw.engine.prompts.encoding.encode_prompt", _old_bench_encoder, "exitlaw bench"),
    ],
)
def test_the_dry_run_fails_when_the_chat_template_bug_returns(
    tmp_path, monkeypatch, where, bad, message
):
    module, _, name = where.rpartition(".")
    original = getattr(importlib.import_module(module), name)
    import exitlaw.engine.training.run  # noqa: F401  (a module that binds the encoder at import)

    patched = [
        m
        for m in list(sys.modules.values())
        if getattr(m, "__name__", "").startswith("exitlaw.")
        and m.__name__ not in (module, "exitlaw.engine")
        and getattr(m, name, None) is original
    ]
    for m in (
        patched
    ):  # every module that imported the encoder, wherever the train or bench path calls it from
        monkeypatch.setattr(m, name, bad)
    assert patched
    with pytest.raises(DryRunError, match=message):
        dry_run(tmp_path / "dry", [_config("table1_llama3_1_8b.json")], run_command=cli_main)


def test_two_configs_writing_one_training_run_differently_are_refused(tmp_path):
    cfg = load_config(_config("table4_qwen3_4b.json"))
    other = json.loads(json.dumps(cfg))
    other["train"]["lam"] = 0.5
    paths = []
    for i, c in enumerate((cfg, other)):
        c["eval"]["datasets"] = c["eval"]["datasets"][:1]
        paths.append(tmp_path / f"c{i}.json")
        paths[-1].write_text(json.dumps(c))
    with pytest.raises(DryRunError, match="both write the training run"):
        dry_run(tmp_path / "dry", paths, run_command=cli_main)


def test_a_command_is_moved_onto_the_stand_ins_and_keeps_the_configs_settings(tmp_path):
    from exitlaw.paper_repro.dry_run_stand_ins import Shrink, StandIns, flag_values
    from exitlaw.paper_repro.full_scale import bench_commands, train_commands

    cfg = load_config(_config("table5_qwen3_4b.json"))
    stand = StandIns(tmp_path, Shrink())
    bench = bench_commands(cfg, "RUNS")[0]
    new = flag_values(stand.rewrite(bench, cfg, "qwen3"))
    old = flag_values(bench)
    for flag in ("--budget", "--temperature", "--verifier", "--seed", "--warmup", "--out"):
        assert new[flag] == old[flag]
    assert (
        new["--target"] == str(tmp_path / "models" / "qwen3" / "target")
        and new["--device"] == "cpu"
    )
    assert (
        new["--draft"] == str(tmp_path / "models" / "qwen3" / "draft")
        and new["--dtype"] == "float32"
    )
    assert new["--prompts"] == f"{old['--prompts']}={tmp_path / 'data' / old['--prompts']}.jsonl"
    assert (new["--num-prompts"], new["--max-new-tokens"]) == ("1", "3")
    train = train_commands(cfg, "RUNS")[0]
    new, old = flag_values(stand.rewrite(train, cfg, "qwen3")), flag_values(train)
    for flag in ("--objective", "--lam", "--budget", "--lr", "--gen-temperature", "--out"):
        assert new[flag] == old[flag]
    assert new["--prompts"] == f"jsonl:{tmp_path / 'data' / 'open-perfectblend.jsonl'}"
    assert (new["--steps"], new["--batch-size"], new["--anchors"], new["--num-prompts"]) == (
        "2",
        "2",
        "2",
        "4",
    )
    trained = bench_commands(cfg, "RUNS")[-1]
    assert (
        flag_values(stand.rewrite(trained, cfg, "qwen3"))["--draft"]
        == "RUNS/qwen3_4b/train_exit/final"
    )


def test_unknown_targets_and_busy_directories_are_named(tmp_path):
    cfg = load_config(_config("table4_qwen3_4b.json"))
    cfg["target"] = "acme/Unknown-7B"
    path = tmp_path / "c.json"
    path.write_text(json.dumps(cfg))
    with pytest.raises(DryRunError, match="no stand-in family for target 'acme/Unknown-7B'"):
        dry_run(tmp_path / "dry", [path], run_command=cli_main)
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "x").write_text("")
    with pytest.raises(FileExistsError, match="not empty"):
        dry_run(busy, [path], run_command=cli_main)


def test_repro_full_dry_run_command(tmp_path, capsys):
    rc = cli_main(
        [
            "repro",
            "full",
            str(_config("table3_qwen3_4b.json")),
            "--dry-run",
            "--out",
            str(tmp_path / "dry"),
        ]
    )
    printed = capsys.readouterr().out
    assert rc == 0 and "2 commands executed" in printed and "latency rows" in printed
