"""The model side of `exitlaw serve` on the tiny pair: the generate loop's hooks, seeds, `n`, stop strings
and log-probabilities of the sampled tokens."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exitlaw.engine.decode.dispatch import verify
from exitlaw.engine.decode.loop import DecodeConfig, generate
from exitlaw.engine.serve.engine import ServeConfig, ServeEngine
from exitlaw.engine.serve.requests import parse_request
from exitlaw.theory.sampling_settings import SamplingSettings
from helpers.decode_configs import sampled_tree


@pytest.fixture(scope="module")
def engine(tiny):
    target, draft = tiny
    return ServeEngine(
        ServeConfig(target=str(target), draft=str(draft), method="ddtree", verifier="tev", budget=4)
    )


def _run(engine, **body):
    req = parse_request({"prompt": "def add(a, b):", **body}, chat=False, default_max_tokens=8)
    return engine.run(req, engine.encode(req))


def test_on_block_sees_every_committed_block_and_decide_replaces_the_verifier(pair):
    target, drafter = pair
    cfg = sampled_tree(budget=4, max_new_tokens=10, seed=3)
    blocks, calls = [], []

    def decide(c, dtree, logits, gens):
        calls.append(dtree.num_nodes)
        return verify("tev", dtree, logits, SamplingSettings(c.temperature), gens.verifier)

    res = generate(target, drafter, [5, 6, 7], cfg, on_block=blocks.append, decide=decide)
    again = generate(target, drafter, [5, 6, 7], cfg)
    assert res.tokens == again.tokens  # the hook's verifier is the same one: same tokens
    assert [t for b in blocks for t in b][: len(res.tokens)] == res.tokens
    assert (
        len(blocks) == 1 + len(res.block_lengths) and len(blocks[0]) == 1
    )  # the prefill's token, then rounds
    assert len(calls) == len(res.block_lengths)
    ar_blocks = []
    ar = generate(
        target,
        None,
        [5, 6, 7],
        DecodeConfig(method="ar", max_new_tokens=5),
        on_block=ar_blocks.append,
    )
    assert ar_blocks == [[t] for t in ar.tokens]


def test_a_seed_makes_a_request_reproducible_and_n_gives_n_samples(engine):
    a = _run(engine, temperature=1, seed=11, n=3, max_tokens=5)
    b = _run(engine, temperature=1, seed=11, n=3, max_tokens=5)
    assert [c.tokens for c in a] == [c.tokens for c in b] and len(a) == 3
    assert all(1 <= len(c.tokens) <= 5 for c in a)


def test_logprobs_are_those_of_the_processed_row_and_stop_strings_cut_the_text(engine):
    [c] = _run(engine, temperature=0.5, seed=2, max_tokens=6, logprobs=3)
    assert len(c.logprobs) == len(c.tokens)
    for tok, (lp, top) in zip(c.tokens, c.logprobs):
        assert lp <= 0 and len(top) == 3 and top[0][1] >= lp - 1e-9
        assert math.fsum(math.exp(v) for _, v in top) <= 1 + 1e-9
    [g] = _run(engine, temperature=0, max_tokens=8)
    assert len(g.text) >= 3, (
        g.text
    )  # the tiny pair's greedy text for this prompt is long enough to cut
    stop = g.text[1:3]
    [s] = _run(engine, temperature=0, max_tokens=8, stop=stop)
    assert s.finish_reason == "stop" and s.text == g.text[: g.text.index(stop)]
    assert g.tokens[: len(s.tokens)] == s.tokens and len(s.tokens) < len(g.tokens)


def test_top_k_one_at_t_one_serves_the_greedy_tokens_and_logprobs_follow_the_processed_row(engine):
    [g] = _run(engine, temperature=0, max_tokens=8)
    for seed in (1, 2, 3):
        [c] = _run(engine, temperature=1, top_k=1, seed=seed, max_tokens=8, logprobs=2)
        assert c.tokens == g.tokens  # top-k = 1 keeps only the argmax: greedy, any seed
        assert all(
            lp == 0.0 and [v for _, v in top] == [0.0] for lp, top in c.logprobs
        )  # filtered tokens: not listed
    samples = {tuple(c.tokens) for c in _run(engine, temperature=1, seed=5, n=6, max_tokens=8)}
    assert len(samples) > 1 or samples != {
        tuple(g.tokens)
    }  # without the filter T = 1 does not serve greedy
    [m] = _run(engine, temperature=1, min_p=0.5, seed=4, max_tokens=6, logprobs=5)
    for lp, top in m.logprobs:  # min-p 0.5 keeps only tokens >= half the max
        assert (
            all(v >= top[0][1] + math.log(0.5) - 1e-12 for _, v in top)
            and lp >= top[0][1] + math.log(0.5) - 1e-12
        )


# every decide path the server offers: AR, chain and DDTree with each built-in verifier, and a user's
# MODULE:CALLABLE verifier (the kit's sampling form)
DECIDE_PATHS = [
    ("ar", "greedy"),
    ("chain", "predraw"),
    ("ddtree", "predraw"),
    ("ddtree", "residual"),
    ("ddtree", "tev"),
    ("ddtree", "exitlaw.simulate.verifiers:tev"),
]


def path_engine(tiny, path) -> ServeEngine:
    """A server engine of the tiny pair on one decide path ``(method, verifier)``, budget 4."""
    target, draft = tiny
    method, verifier = path
    return ServeEngine(
        ServeConfig(
            target=str(target),
            draft=None if method == "ar" else str(draft),
            method=method,
            verifier=verifier,
            budget=4,
        )
    )


@pytest.fixture(scope="module", params=DECIDE_PATHS, ids=["/".join(p) for p in DECIDE_PATHS])
def any_engine(request, tiny):
    return path_engine(tiny, request.param)


@settings(max_examples=5, deadline=None)
@given(seed=st.one_of(st.sampled_from([0, 1, 2**63 - 1]), st.integers(0, 2**63 - 1)))
def test_every_valid_seed_makes_a_request_reproducible_on_every_decide_path(any_engine, seed):
    """Edges included: seed 0 (falsy, valid) and the largest accepted seed, 2**63 - 1."""
    a = _run(any_engine, temperature=1, seed=seed, max_tokens=4)
    b = _run(any_engine, temperature=1, seed=seed, max_tokens=4)
    assert [c.tokens for c in a] == [c.tokens for c in b]


def test_top_k_one_serves_the_greedy_tokens_on_every_decide_path(any_engine):
    """Every decide path receives the processed row of the request's settings: under top-k = 1 only the
    argmax survives, so every path serves the greedy tokens at T = 1, whatever the seed."""
    [g] = _run(any_engine, temperature=0, max_tokens=6)
    for seed in (0, 7):
        [c] = _run(any_engine, temperature=1, top_k=1, seed=seed, max_tokens=6)
        assert c.tokens == g.tokens
