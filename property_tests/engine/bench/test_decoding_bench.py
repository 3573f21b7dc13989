"""The bench harness: prompts through the one reader and encoder, every method decoded, outputs stored."""

from __future__ import annotations

import json

import pytest

from exitlaw.cli import main as cli_main
from exitlaw.engine.decode.loop import DecodeConfig, generate
from exitlaw.engine.models.checkpoint import load_pair
from exitlaw.engine.prompts.encoding import encode_prompt
from exitlaw.engine.prompts.records import PromptRecordError, load_prompt_set
from exitlaw.theory.sampling_settings import SamplingSettings
from helpers.cli_argv import cli_argv, pair_flags

TINY_SEED = 1  # the shared ``tiny`` fixture (conftest.py) uses this seed


def test_named_set_without_datasets_or_network_fails_clearly():
    try:
        load_prompt_set("gsm8k", limit=1)
    except PromptRecordError as err:
        assert "jsonl:FILE" in str(err)
    with pytest.raises(PromptRecordError, match="unknown prompt source 'imagenet'"):
        load_prompt_set("imagenet")


def test_bench_command_writes_stats_and_every_output(tiny, tmp_path, capsys):
    from transformers import AutoTokenizer

    prompts = tmp_path / "p.jsonl"
    prompts.write_text(
        '{"turns": ["What is 12 + 30?", "And times two?"]}\n{"prompt": "Add two numbers."}\n'
    )
    out = tmp_path / "bench"
    run = dict(budget=6, temperature="0,1", verifier="predraw,tev", max_new_tokens=5, out=out)
    rest = dict(trace_dir=tmp_path / "traces", no_progress=True, warmup=0)
    sampling = dict(min_p=0.05, sampling_order="hf")
    argv = cli_argv("bench", "decoding", **pair_flags(tiny, prompts), **run, **rest, **sampling)
    assert cli_main(argv) == 0
    res = json.loads((out / "results.json").read_text())
    assert res["config"]["sampling"] == {
        "top_k": None,
        "top_p": None,
        "min_p": 0.05,
        "order": ["top_k", "top_p", "min_p"],
    }
    assert all((r["top_k"], r["top_p"], r["min_p"]) == (None, None, 0.05) for r in res["runs"])
    assert (
        res["config"]["num_prompts"] == 2
        and res["config"]["budgets"] == [6]
        and res["config"]["turns"] == 3
    )
    assert res["prompts"] == [
        {"turns": ["What is 12 + 30?", "And times two?"]},
        {"turns": ["Add two numbers."]},
    ]
    runs = res["runs"]
    assert {(r["method"], r["temperature"]) for r in runs} >= {
        ("ar", 0.0),
        ("ar", 1.0),
        ("ddtree", 0.0),
        ("chain", 1.0),
    }
    tok = AutoTokenizer.from_pretrained(str(tiny[0]))
    ar_out = {r["temperature"]: r["outputs"] for r in runs if r["method"] == "ar"}
    for r in runs:
        assert r["tau"] >= 1.0 and r["SR"] > 0 and r["tpot_ms"] > 0
        if r["method"] != "ar":
            assert {
                "draft",
                "build",
                "verify_forward",
                "decide",
                "commit",
                "verifier_stage",
            } <= set(r["stage_ms"])
        outs = r["outputs"]
        assert [(o["prompt"], o["turn"]) for o in outs] == [(0, 0), (0, 1), (1, 0)]
        for o in outs:
            assert (
                1 <= len(o["tokens"]) <= 5
                and tok.decode(o["tokens"], skip_special_tokens=False) == o["text"]
            )
        # the stored outputs are the ones the run's statistics count
        assert (
            sum(len(o["tokens"]) for o in outs) == r["tokens"]
            and sum(o["rounds"] for o in outs) == r["rounds"]
        )
        assert sum(o["block_tokens"] for o in outs) / r["rounds"] == pytest.approx(r["tau"])
        if r["temperature"] == 0 and r["method"] != "ar":
            assert r["matches_ar"] is True
            assert [o["tokens"] for o in outs] == [o["tokens"] for o in ar_out[0.0]]
    printed = capsys.readouterr().out
    assert "tau" in printed and "SR" in printed
    from exitlaw.engine.bench.compare import compare_results

    self_cmp = compare_results(
        res, res
    )  # a real results file against itself: paired, no change, T = 0 equal
    assert self_cmp["pairing"] == "paired" and len(self_cmp["rows"]) == 2 * 2 * 2
    for row in self_cmp["rows"]:
        assert (
            row["tau"]["delta"] == 0
            and row["SR"]["delta"] == 0
            and row["tau"]["ci95"] == [0.0, 0.0]
        )
        assert row.get("t0_mismatches", 0) == 0
    assert (
        len(list((tmp_path / "traces").glob("*.jsonl"))) == 2 * 2 * 2
    )  # T x verifiers x (chain + 1 budget)
    assert (
        cli_main(cli_argv("bench", "decoding", **pair_flags(tiny, prompts), out=out)) == 2
    )  # refuses to overwrite


def test_gpu_check_smoke_runs_on_cpu_with_tiny_sizes():
    from exitlaw.engine.bench.gpu_check import format_check, run_check

    res = run_check(tiny=True, device="cpu", budgets=(4, 9), context=24, reps=1)
    assert [r["budget"] for r in res["rows"]] == [4, 9, 4, 9]
    for r in res["rows"]:
        assert r["verify_forward_ms"] > 0 and r["predraw_stage_ms"] > 0 and r["tev_stage_ms"] > 0
    assert "TEV/predraw" in format_check(res)


def test_gpu_check_command_writes_json_and_refuses_to_overwrite(tmp_path, capsys):
    out = tmp_path / "check"
    argv = [
        "gpu-check",
        "--tiny",
        "--device",
        "cpu",
        "--budget",
        "4",
        "--context",
        "24",
        "--repeats",
        "1",
        "--out",
        str(out),
    ]
    assert cli_main(argv) == 0
    assert (
        json.loads((out / "results.json").read_text())["rows"]
        and "TEV/predraw" in capsys.readouterr().out
    )
    assert cli_main(argv) == 2  # refuses to overwrite silently
    assert "exists" in capsys.readouterr().err
    assert cli_main(argv + ["--overwrite"]) == 0


def test_multi_turn_conversations_are_decoded_turn_by_turn_with_their_own_history(tiny, tmp_path):
    from transformers import AutoTokenizer

    from exitlaw.engine.bench.decoding import outputs_of, run_conversation

    path = tmp_path / "mt.jsonl"
    path.write_text(
        '{"turns": ["What is 12 + 30?", "And times two?"]}\n{"prompt": "Add two numbers."}\n'
    )
    convs = load_prompt_set(f"jsonl:{path}")
    assert [p.turns for p in convs] == [
        ("What is 12 + 30?", "And times two?"),
        ("Add two numbers.",),
    ]
    target, drafter = load_pair(tiny[0], tiny[1])
    tok = AutoTokenizer.from_pretrained(str(tiny[0]))
    cfg = DecodeConfig(
        method="ddtree", verifier="tev", budget=6, settings=SamplingSettings(0.0), max_new_tokens=5
    )
    res = run_conversation(target, drafter, tok, convs[0], cfg, device="cpu")
    assert len(res) == 2
    # the second turn's prompt holds the first answer: replaying it by hand gives the same tokens
    history = [
        {"role": "user", "content": convs[0].turns[0]},
        {"role": "assistant", "content": tok.decode(res[0].tokens, skip_special_tokens=True)},
        {"role": "user", "content": convs[0].turns[1]},
    ]
    again = generate(target, drafter, encode_prompt(tok, history, chat=True), cfg)
    assert again.tokens == res[1].tokens
    ar = run_conversation(
        target,
        None,
        tok,
        convs[0],
        DecodeConfig(method="ar", settings=SamplingSettings(0.0), max_new_tokens=5),
        device="cpu",
    )
    assert [r.tokens for r in ar] == [
        r.tokens for r in res
    ]  # T = 0: the same conversation as greedy AR
    outs = outputs_of([res], tok)
    assert [(o["turn"], o["tokens"]) for o in outs] == [(0, res[0].tokens), (1, res[1].tokens)]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"turns": ["ok", 3]}\n')
    with pytest.raises(ValueError, match="bad.jsonl:1"):
        load_prompt_set(f"jsonl:{bad}")


def test_token_id_prompts_are_decoded_as_given(tiny, tmp_path):
    from transformers import AutoTokenizer

    from exitlaw.engine.bench.decoding import run_conversation
    from exitlaw.engine.prompts.records import Prompt

    target, drafter = load_pair(tiny[0], tiny[1])
    tok = AutoTokenizer.from_pretrained(str(tiny[0]))
    cfg = DecodeConfig(
        method="ddtree",
        verifier="predraw",
        budget=6,
        settings=SamplingSettings(0.0),
        max_new_tokens=4,
    )
    ids = [11, 42, 7, 99]
    res = run_conversation(target, drafter, tok, Prompt(ids=tuple(ids)), cfg, device="cpu")
    assert len(res) == 1 and res[0].tokens == generate(target, drafter, ids, cfg).tokens


def test_round_memory_is_the_four_buffers_of_one_verify_round():
    """Hand-computed: 2 layers, 4 heads (2 KV heads) of dim 8, V = 100, budget 3 (N = 4), context 6 (C = 10)."""
    from types import SimpleNamespace

    from exitlaw.engine.decode.work_bounds import check_decode_fits, round_memory

    shape = dict(num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, hidden_size=32)
    cfg = SimpleNamespace(**shape, head_dim=8, vocab_size=100)
    est = round_memory(cfg, budget=3, context=6, rows=2, element_bytes=2)
    assert (est.kv_cache, est.attention_scores, est.tree_mask, est.logits) == (
        2 * 2 * 2 * 8 * 10 * 2 * 2,
        2 * 4 * 4 * 10 * 2,
        2 * 4 * 10 * 2,
        2 * 4 * 100 * 4,
    )
    assert (
        check_decode_fits(cfg, budget=3, context=6, rows=2, element_bytes=2, available=est.total)
        == est
    )
    with pytest.raises(
        ValueError,
        match=r"budget 3 with a context of up to 6 tokens for 2 sequences needs at least",
    ):
        check_decode_fits(
            cfg, budget=3, context=6, rows=2, element_bytes=2, available=est.total - 1
        )
    # a heterogeneous config (Gemma-4: per-layer head_dim) sums each layer's own KV width
    per_layer = [SimpleNamespace(head_dim=8), SimpleNamespace(head_dim=16)]
    mixed = SimpleNamespace(**shape, vocab_size=100, per_layer_config=per_layer)
    assert round_memory(mixed, budget=3, context=6).kv_cache == (2 * 2 * 8 + 2 * 2 * 16) * 10 * 4


@pytest.mark.parametrize(
    "flags",
    [
        ["--budget", "100000000"],
        ["--max-new-tokens", "1000000000000"],
        ["--batch-size", "1000000000"],
    ],
)
def test_bench_refuses_a_round_that_cannot_fit_before_decoding(tiny, tmp_path, capsys, flags):
    """A budget, length or batch whose one round exceeds free memory is refused with the estimate, nothing written
    (without the bound, a budget of 10**8 builds trees until the machine stalls)."""
    prompts = tmp_path / "p.jsonl"
    prompts.write_text('{"prompt": "Add two numbers."}\n')
    out = tmp_path / "bench"
    base = {"--budget": "4", "--max-new-tokens": "4", "--batch-size": "1"}
    base[flags[0]] = flags[1]
    cpu = dict(device="cpu", out=out, no_progress=True, warmup=0)
    argv = cli_argv("bench", "decoding", **pair_flags(tiny, prompts), **cpu)
    for k, v in base.items():
        argv += [k, v]
    assert cli_main(argv) == 2
    err = capsys.readouterr().err
    assert "needs at least" in err and "GiB free" in err and "KV cache" in err
    assert not out.exists()


def test_free_memory_on_cuda_is_what_the_driver_reports(monkeypatch):
    """The GPU path of the bound, run here with the driver call stood in: free bytes, not total."""
    import torch

    from exitlaw.engine.decode.work_bounds import available_bytes

    calls = []
    monkeypatch.setattr(
        torch.cuda, "mem_get_info", lambda device=None: calls.append(device) or (3 << 30, 80 << 30)
    )
    assert available_bytes("cuda:0") == 3 << 30 and calls == [torch.device("cuda:0")]
    assert available_bytes("cpu") > 0  # MemAvailable from /proc/meminfo
    assert available_bytes("meta") is None  # unknown devices are not bounded


def test_batch_bench_refuses_a_batched_round_that_cannot_fit(tiny, tmp_path, capsys):
    """``exitlaw bench batch`` goes through its own loader: the same refusal, counted over the largest batch."""
    prompts = tmp_path / "p.jsonl"
    prompts.write_text('{"prompt": "Add two numbers."}\n')
    out = tmp_path / "batch"
    run = dict(batch_size="1,1000000000", budget=4, max_new_tokens=4, device="cpu")
    argv = cli_argv("bench", "batch", **pair_flags(tiny, prompts), **run, out=out, warmup=0)
    assert cli_main(argv) == 2
    err = capsys.readouterr().err
    assert "for 1000000000 sequences needs at least" in err and "GiB free" in err
    assert not out.exists()
