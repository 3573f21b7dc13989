"""Sampling settings travel whole: every entry point that takes a :class:`SamplingSettings` hands the
same settings down to the layer that applies them.

Hypothesis draws non-default settings (a temperature > 0 and at least one active filter among top-k,
top-p, min-p, in any order). Each entry point -- a decode config through single and batched generation
and the batched bench, a serve request through the engine, the training continuations and scoring law,
an audit plan through its requests, the kit through the verifier it calls, and every command's sampling
flags through its handler -- is run with them, and the settings that reach the lowest layer are
recorded: the engine's one processing step (:mod:`exitlaw.engine.decode.sampling_settings`, whose every
function reads its settings through ``check_settings``), the audit's request fields, the kit's verifier
call, the library function a command calls. They must equal the settings given: a place that forgot to
pass the settings on (and rebuilt them from the temperature) is seen.
"""

from __future__ import annotations

from contextlib import contextmanager

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from exitlaw.theory.sampling_settings import FILTERS, HF_ORDER, VLLM_ORDER, SamplingSettings

TINY_SEED = 3
PROMPTS = [[11, 42, 7, 99], [5, 6]]

filtered = st.builds(
    SamplingSettings,
    temperature=st.sampled_from([0.6, 1.0, 1.4]),
    top_k=st.none() | st.integers(1, 6),
    top_p=st.none() | st.sampled_from([0.5, 0.8, 0.95]),
    min_p=st.none() | st.sampled_from([0.05, 0.2]),
    order=st.permutations(FILTERS).map(tuple),
).filter(lambda s: s.filtered)
few = settings(max_examples=4)


@contextmanager
def reaching():
    """The settings every call of the engine's processing step receives (greedy calls left out)."""
    from exitlaw.engine.decode import sampling_settings as processing

    seen: list[SamplingSettings] = []
    real = processing.check_settings

    def spy(value):
        out = real(value)
        if not out.greedy:
            seen.append(out)
        return out

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(processing, "check_settings", spy)
        yield seen


def _only(seen, given_settings):
    assert seen, "the settings never reached the processing step"
    assert set(seen) == {given_settings}


# ----------------------------------------------------------------- records
@given(s=filtered)
def test_a_record_of_the_settings_reads_back_whole(s):
    """``as_dict`` and ``filters`` (bench results, training records) read back as the same settings."""
    import json

    assert SamplingSettings.from_record(json.loads(json.dumps(s.as_dict()))) == s
    assert SamplingSettings.from_record(s.filters(), temperature=s.temperature) == s
    assert s.at(0.25) == SamplingSettings(0.25, s.top_k, s.top_p, s.min_p, s.order)
    with pytest.raises(ValueError, match="typical_p"):
        SamplingSettings.from_record({**s.as_dict(), "typical_p": 0.9})


# ----------------------------------------------------------------- decode configs
@pytest.mark.parametrize("method", ["ar", "chain", "ddtree"])
@few
@given(s=filtered, verifier=st.sampled_from(["predraw", "residual", "tev"]))
def test_a_decode_config_takes_its_settings_to_every_processed_row(pair, s, method, verifier):
    from exitlaw.engine.decode.batch_generate import generate_ar_batch, generate_batch
    from exitlaw.engine.decode.loop import DecodeConfig, generate

    target, drafter = pair
    cfg = DecodeConfig(method=method, verifier=verifier, budget=5, settings=s, max_new_tokens=3)
    with reaching() as seen:
        generate(target, drafter if method != "ar" else None, PROMPTS[0], cfg)
    _only(seen, s)
    with reaching() as seen:
        if method == "ar":
            generate_ar_batch(target, PROMPTS, cfg)
        else:
            generate_batch(target, drafter, PROMPTS, cfg)
    _only(seen, s)


@few
@given(s=filtered)
def test_the_batched_bench_decodes_and_records_its_filters(pair, s):
    from exitlaw.engine.bench.batch import run_batch_decode_bench

    target, drafter = pair
    with reaching() as seen:
        rows = run_batch_decode_bench(
            target,
            drafter,
            PROMPTS,
            batch_sizes=(2,),
            budget=4,
            verifiers=("tev",),
            temperature=s.temperature,
            max_new_tokens=3,
            warmup=0,
            filters=s,
        )
    _only(seen, s)
    assert all({f: r[f] for f in FILTERS} == {f: getattr(s, f) for f in FILTERS} for r in rows)


# ----------------------------------------------------------------- serve requests
@few
@given(s=filtered.map(lambda s: SamplingSettings(s.temperature, s.top_k, s.top_p, s.min_p)))
def test_a_serve_request_takes_its_settings_to_the_engine(served, s):
    from exitlaw.engine.serve.requests import parse_request

    body = {"prompt": "def f(x):", "temperature": s.temperature, "max_tokens": 3, "seed": 1}
    body.update({f: getattr(s, f) for f in FILTERS if getattr(s, f) is not None})
    req = parse_request(body, chat=False, default_max_tokens=3)
    assert req.settings == s and served.decode_config(req, 0).settings == s
    with reaching() as seen:
        served.run(req, served.encode(req))
    _only(seen, s)


# ----------------------------------------------------------------- training
@few
@given(s=filtered)
def test_training_generates_its_continuations_under_the_settings(pair, s, tmp_path_factory):
    from exitlaw.engine.training.data import cached_sequences, generate_continuations

    target, _ = pair
    with reaching() as seen:
        generate_continuations(target, PROMPTS, max_new_tokens=3, settings=s, seed=0)
    _only(seen, s)
    with reaching() as seen:
        cached_sequences(
            target,
            "fp",
            PROMPTS,
            tmp_path_factory.mktemp("cache"),
            max_new_tokens=3,
            settings=s,
            seed=0,
        )
    _only(seen, s)


@settings(max_examples=2)
@given(s=filtered)
def test_a_training_step_scores_its_trees_under_the_scoring_settings(tiny, s, tmp_path_factory):
    from exitlaw.engine.models.checkpoint import load_pair
    from exitlaw.engine.training.config import DrafterSchedule, TrainConfig
    from exitlaw.engine.training.data import Sequences
    from exitlaw.engine.training.loop import setup_training, train_step

    target, drafter = load_pair(str(tiny[0]), str(tiny[1]), device="cpu")
    data = Sequences([[11, 42, 7, 99]], [[5, 6, 7, 8, 9, 10, 12, 13, 14, 15, 16, 17]])
    one_step = DrafterSchedule(steps=1, batch=1, lr=1e-4, anchors=2)
    cfg = TrainConfig(budget=5, schedule=one_step, scoring=s)
    out = tmp_path_factory.mktemp("train")
    state = setup_training(target, drafter, data, cfg, out, resume=False, run_info=None)
    with reaching() as seen:
        train_step(state, target, data, cfg, 0)
    _only(seen, s)


@few
@given(s=filtered, gen_t=st.sampled_from([0.5, 0.9]))
def test_the_train_command_hands_both_settings_to_the_run(s, gen_t, monkeypatch_session, scratch):
    from exitlaw.engine.training import run as training_run

    calls = []
    monkeypatch_session.setattr(
        training_run,
        "run_training",
        lambda spec, data=None: calls.append(spec) or {"final_drafter": "F", "last": {}, "rank": 0},
    )
    argv = ["train", "--target", "t", "--draft", "d", "--prompts", "p.jsonl", "--out", scratch]
    argv += ["--scoring-temperature", str(s.temperature), "--gen-temperature", str(gen_t)]
    assert _main(argv + _flags(s)) == 0
    assert calls[-1].config.scoring == _as_cli(s)
    assert calls[-1].generation == _as_cli(s).at(gen_t)


# ----------------------------------------------------------------- audit plans
@few
@given(s=filtered)
def test_an_audit_plan_sends_its_filters_with_every_sampling_request(s, audit_prompts):
    from exitlaw.simulate.audit import AuditConfig, run_audit
    from exitlaw.simulate.audit.client import Client, Sample

    sent = []

    def sample(self, prompt, **kw):
        sent.append(kw["settings"])
        return [Sample((1, 2), ({1: -0.5, 3: -1.0},))] * kw["n"]

    probes = []
    full = {"choices": [{"index": k, "token_ids": [1]} for k in range(2)]}  # the probe's answer

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Client, "models", lambda self: ["m"])
        mp.setattr(Client, "sample", sample)
        mp.setattr(
            Client, "call", lambda self, m, path, payload=None: probes.append(payload) or full
        )
        run_audit(
            AuditConfig("http://127.0.0.1:1", "http://127.0.0.1:2", audit_prompts, s, samples=4)
        )
    want = {f: getattr(s, f) for f in FILTERS if getattr(s, f) is not None}
    assert sent and all(got == want for got in sent)
    # the probe before the run asks with the same filters (a server refusing one is found there)
    asks = [
        p for p in probes if "n" in p
    ]  # the capability probes (the token-id prompt probe: T = 0)
    assert asks and all({f: p.get(f) for f in FILTERS if f in p} == want for p in asks)


@few
@given(s=filtered.map(lambda s: SamplingSettings(s.temperature, s.top_k, s.top_p, s.min_p)))
def test_the_audit_command_hands_its_settings_to_the_plan(s, monkeypatch_session):
    from exitlaw.simulate import audit

    plans = []
    monkeypatch_session.setattr(audit, "run_audit", lambda cfg: plans.append(cfg) or 1 / 0)
    argv = ["audit", "--candidate", "http://c", "--reference", "http://r", "--prompts", "p"]
    with pytest.raises(ZeroDivisionError):
        _main(argv + ["--temperature", str(s.temperature)] + _flags(s, order=False))
    assert plans[-1].sampling == _as_cli(s)


# ----------------------------------------------------------------- the kit
@settings(max_examples=3)
@given(s=filtered)
def test_the_kit_calls_the_verifier_with_the_settings(s):
    from exitlaw.simulate.kit.conformance import run_kit
    from exitlaw.simulate.verifiers.with_settings import residual_settings

    seen = []

    def verifier(tree, logits, settings_, rng):
        seen.append(settings_)
        return residual_settings(tree, logits, settings_, rng)

    run_kit(verifier, settings=s, samples=8, timeout=None)
    assert seen and set(seen) == {s}


@few
@given(s=filtered)
def test_the_check_command_hands_its_settings_to_the_kit(s, monkeypatch_session):
    from exitlaw.simulate.kit import conformance

    asked = []
    monkeypatch_session.setattr(
        conformance, "check_verifier", lambda spec, **kw: asked.append(kw["settings"]) or 1 / 0
    )
    argv = ["check", "exitlaw.simulate.verifiers:tev", "--temperature", str(s.temperature)]
    with pytest.raises(ZeroDivisionError):
        _main(argv + _flags(s))
    assert asked[-1] == _as_cli(s)


# ----------------------------------------------------------------- bench commands
@few
@given(s=filtered, batch=st.sampled_from([1, 2]))
def test_the_bench_commands_hand_their_filters_to_the_bench(s, batch, monkeypatch_session):
    from exitlaw.engine.bench import batch as batch_bench
    from exitlaw.engine.bench import decoding

    got = []
    stop = lambda source, **kw: got.append(source.filters) or 1 / 0  # noqa: E731
    for module, name in (
        (decoding, "run_bench"),
        (batch_bench, "run_batched_bench"),
        (batch_bench, "run_batch_bench"),
    ):
        monkeypatch_session.setattr(module, name, stop)
    pair_args = ["--target", "t", "--draft", "d"]
    for argv in (
        ["bench", "decoding", *pair_args, "--batch-size", str(batch)],
        ["bench", "batch", *pair_args],
    ):
        with pytest.raises(ZeroDivisionError):
            _main(argv + _flags(s))
        assert got[-1].filters() == _as_cli(s).filters()  # the bench's temperatures replace T


# ----------------------------------------------------------------- helpers and fixtures
def _flags(s: SamplingSettings, order: bool = True) -> list[str]:
    out = []
    for f in FILTERS:
        if getattr(s, f) is not None:
            out += [f"--{f.replace('_', '-')}", str(getattr(s, f))]
    if order:
        out += ["--sampling-order", "hf" if s.order == HF_ORDER else "vllm"]
    return out


def _as_cli(s: SamplingSettings) -> SamplingSettings:
    """``s`` as the flags spell it (the commands offer vLLM's order and HF's)."""
    order = s.order if s.order in (HF_ORDER, VLLM_ORDER) else VLLM_ORDER
    return SamplingSettings(s.temperature, s.top_k, s.top_p, s.min_p, order)


def _main(argv: list[str]) -> int:
    from exitlaw.cli import build_parser

    args = build_parser().parse_args(argv)
    return int(args.func(args) or 0)


@pytest.fixture(scope="module")
def monkeypatch_session():
    with pytest.MonkeyPatch.context() as mp:
        yield mp


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    return str(tmp_path_factory.mktemp("scratch") / "run")


@pytest.fixture(scope="module")
def audit_prompts(tmp_path_factory):
    p = tmp_path_factory.mktemp("audit") / "p.jsonl"
    p.write_text('{"prompt": "a"}\n{"prompt_ids": [1, 2]}\n')
    return str(p)


@pytest.fixture(scope="module")
def served(tiny):
    from exitlaw.engine.serve.engine import ServeConfig, ServeEngine

    torch.manual_seed(0)
    return ServeEngine(
        ServeConfig(
            target=str(tiny[0]), draft=str(tiny[1]), method="ddtree", verifier="tev", budget=4
        )
    )
