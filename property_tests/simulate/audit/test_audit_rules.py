"""The audit's verdict rules on scripted server answers (no server): near-ties apart at T = 0, a failure
mid-run is exit 4, a refused request is a usage error, and T > 0 never says lossless when underpowered."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exitlaw.simulate.audit import AuditConfig, AuditUsageError, run_audit
from exitlaw.simulate.audit.client import Client, Sample, ServerFailed, ServerRefused
from exitlaw.theory import DistributionError, SamplingSettings


@pytest.fixture
def prompts(tmp_path):
    p = tmp_path / "p.jsonl"
    p.write_text('{"prompt": "a"}\n{"prompt_ids": [1, 2]}\n')
    return str(p)


# the probe's answer: a server that takes every field (two choices, token ids, log-probabilities)
_FULL = {
    "choices": [
        {"index": k, "token_ids": [1], "logprobs": {"tokens": ["token_id:1"], "top_logprobs": [{}]}}
        for k in range(2)
    ]
}


def _script(monkeypatch, answer):
    monkeypatch.setattr(Client, "models", lambda self: ["m"])
    monkeypatch.setattr(Client, "call", lambda self, method, path, payload=None: _FULL)
    monkeypatch.setattr(Client, "sample", lambda self, prompt, **kw: answer(self.name, prompt, kw))


REF = Sample(
    (5, 6, 7, 8), ({5: -0.1, 1: -3.0}, {6: -0.2, 2: -2.0}, {7: -0.70, 9: -0.71}, {8: -0.1, 3: -4.0})
)


@pytest.mark.parametrize(
    "diverge_at, strict, verdict, ties",
    [
        (2, False, "no difference found", 1),  # margin 0.01 < 0.05: a near-tie, reported apart
        (2, True, "lossy", 0),  # --strict-ties counts it
        (1, False, "lossy", 0),  # margin 1.8: a real divergence
    ],
)
def test_t0_divergences_at_near_ties_are_reported_apart(
    monkeypatch, prompts, diverge_at, strict, verdict, ties
):
    cand = list(REF.tokens)
    cand[diverge_at] = 9
    _script(
        monkeypatch,
        lambda who, p, kw: [
            REF if who == "reference" or p == "a" else Sample(tuple(cand), REF.top)
        ],
    )
    r = run_audit(
        AuditConfig("http://127.0.0.1:1", "http://127.0.0.1:2", prompts, strict_ties=strict)
    )
    assert r.verdict == verdict and len(r.near_ties) == ties
    found = (r.near_ties or r.divergences)[0]
    assert (found.prompt, found.position, found.candidate, found.reference) == (
        1,
        diverge_at,
        9,
        REF.tokens[diverge_at],
    )


def test_a_server_failing_mid_run_is_exit_4_and_a_refused_request_is_a_usage_error(
    monkeypatch, prompts
):
    def fail(who, p, kw):
        raise ServerFailed("candidate server x", "answered HTTP 500: boom")

    _script(monkeypatch, fail)
    r = run_audit(AuditConfig("http://127.0.0.1:1", "http://127.0.0.1:2", prompts))
    assert r.exit_code == 4 and "boom" in r.failure

    def refuse(who, p, kw):
        raise ServerRefused(
            "candidate server x", "answered HTTP 400: n 32 exceeds this server's limit", 400
        )

    _script(monkeypatch, refuse)
    with pytest.raises(AuditUsageError, match="n-per-request"):
        run_audit(
            AuditConfig(
                "http://127.0.0.1:1", "http://127.0.0.1:2", prompts, sampling=SamplingSettings(1.0)
            )
        )


def test_t1_with_identical_answers_but_too_few_samples_is_insufficient_not_lossless(
    monkeypatch, prompts
):
    _script(monkeypatch, lambda who, p, kw: [Sample((1, 2), ({1: -0.5, 3: -1.0},))] * kw["n"])
    r = run_audit(
        AuditConfig(
            "http://127.0.0.1:1",
            "http://127.0.0.1:2",
            prompts,
            sampling=SamplingSettings(0.7),
            samples=10,
        )
    )
    assert r.exit_code == 5 and r.verdict == "insufficient samples"
    # enough samples, the same two outcomes in the same proportions from both servers: a pass
    two = [Sample((1, 2), ({1: -0.5, 3: -1.0},)), Sample((1, 3), ({1: -0.5, 3: -1.0},))]
    _script(monkeypatch, lambda who, p, kw: [two[j % 2] for j in range(kw["n"])])
    r = run_audit(
        AuditConfig(
            "http://127.0.0.1:1", "http://127.0.0.1:2", prompts, sampling=SamplingSettings(0.7)
        )
    )
    assert r.exit_code == 0 and r.samples == r.planned_samples
    assert all(len(t.detail["cells"]) == 2 for t in r.tests if t.kind == "two-sample")


def test_sampling_settings_go_with_every_sampling_request_and_turn_the_unfiltered_first_token_test_off(
    monkeypatch, prompts
):
    seen = []

    def answer(who, p, kw):
        seen.append(kw)
        return [Sample((1, 2), ({1: -0.5, 3: -1.0},))] * kw["n"]

    _script(monkeypatch, answer)
    cfg = AuditConfig(
        "http://127.0.0.1:1",
        "http://127.0.0.1:2",
        prompts,
        sampling=SamplingSettings(1.0, top_k=5, min_p=0.1),
        samples=10,
    )
    assert not cfg.first_token and cfg.public()["top_k"] == 5
    run_audit(cfg)
    assert seen and all(kw["settings"] == {"top_k": 5, "min_p": 0.1} for kw in seen)
    assert AuditConfig(
        "http://127.0.0.1:1", "http://127.0.0.1:2", prompts, sampling=SamplingSettings(1.0)
    ).first_token
    for bad in (dict(top_k=0), dict(top_p=1.5), dict(min_p=1.0)):
        with pytest.raises(DistributionError, match=next(iter(bad))):
            AuditConfig(
                "http://127.0.0.1:1", "http://127.0.0.1:2", prompts, SamplingSettings(1.0, **bad)
            )
    with pytest.raises(AuditUsageError):
        AuditConfig(
            "http://127.0.0.1:1",
            "http://127.0.0.1:2",
            prompts,
            sampling=SamplingSettings(1.0, top_p=0.9),
            first_token_test="on",
        )


def test_a_server_whose_samples_all_fall_outside_the_cells_gets_no_pass(monkeypatch, prompts):
    """Every sample a new outcome (as at T = 1 over many tokens): no outcome is common enough to be a
    cell, each prompt's test has one cell and no statistic; it is reported as having no power and the
    run is 'insufficient samples', never a pass, whatever the servers do."""
    from exitlaw.simulate.audit import format_audit

    counter = iter(range(10**9))
    _script(
        monkeypatch, lambda who, p, kw: [Sample((next(counter),), ({},)) for _ in range(kw["n"])]
    )
    r = run_audit(
        AuditConfig(
            "http://127.0.0.1:1",
            "http://127.0.0.1:2",
            prompts,
            sampling=SamplingSettings(1.0, top_k=50),  # settings: the first-token test is off
            tv=0.2,
        )
    )
    pair = [t for t in r.tests if t.kind == "two-sample"]
    assert pair and all(t.dof == 0 and t.power == 0.0 for t in pair)
    assert r.verdict == "insufficient samples" and r.exit_code == 5
    assert any("no power" in reason for reason in r.reasons)
    text = format_audit(r)
    assert "NO-POW" in text and not any(
        line.lstrip().startswith("pass") and "two-sample" in line for line in text.splitlines()
    )


@settings(max_examples=40, deadline=None)
@given(
    n_prompts=st.integers(1, 4),
    levels=st.lists(st.integers(1, 8), min_size=1, max_size=3, unique=True),
    first_token=st.sampled_from(["on", "off"]),
    alpha=st.sampled_from([0.001, 0.01, 0.05]),
    tops=st.booleans(),
)
def test_the_stated_run_wide_rate_bounds_the_tests_run_for_any_plan(
    tmp_path_factory, n_prompts, levels, first_token, alpha, tops
):
    """For any plan (prompts, concurrency levels, first-token tests on or off, a reference that does or
    does not return log-probabilities): alpha per test x tests run <= the run-wide rate the header
    states, and the header's arithmetic is planned tests x alpha per test = that rate."""
    from exitlaw.simulate.audit import format_audit

    path = tmp_path_factory.mktemp("plan") / "p.jsonl"
    path.write_text("".join(f'{{"prompt": "p{i}"}}\n' for i in range(n_prompts)))
    top = ({1: -0.5, 2: -1.0},) if tops else ({},)
    two = [Sample((1, 2), top), Sample((2, 1), top)]
    with pytest.MonkeyPatch.context() as mp:
        _script(mp, lambda who, p, kw: [two[j % 2] for j in range(kw["n"])])
        cfg = AuditConfig(
            "http://127.0.0.1:1",
            "http://127.0.0.1:2",
            str(path),
            sampling=SamplingSettings(1.0),
            samples=20,
            alpha=alpha,
            concurrency=tuple(levels),
            first_token_test=first_token,
        )
        r = run_audit(cfg)
    assert r.planned_tests * r.alpha_each == pytest.approx(alpha)
    assert len(r.tests) * r.alpha_each <= alpha * (1 + 1e-12)
    assert len(r.tests) <= r.planned_tests
    assert f"{alpha:g} for the run = {r.planned_tests} planned tests x" in format_audit(r)


@pytest.mark.parametrize(
    "status, message, advice, not_advice",
    [
        (401, "answered HTTP 401: missing key", "--api-key", "n-per-request"),
        (404, "answered HTTP 404: no such model", "--model", "n-per-request"),
        (422, "answered HTTP 422: extra field return_token_ids", "return_token_ids", "--api-key"),
        (
            400,
            "answered HTTP 400: max_tokens 99 exceeds the limit",
            "--max-new-tokens",
            "--api-key",
        ),
        (
            400,
            "the server returns neither token_ids nor logprob tokens",
            "token_ids",
            "n-per-request",
        ),
    ],
)
def test_a_refused_request_names_its_real_cause(
    monkeypatch, prompts, status, message, advice, not_advice
):
    def refuse(who, p, kw):
        raise ServerRefused("candidate server x", message, status)

    _script(monkeypatch, refuse)
    with pytest.raises(AuditUsageError) as err:
        run_audit(
            AuditConfig(
                "http://127.0.0.1:1", "http://127.0.0.1:2", prompts, sampling=SamplingSettings(1.0)
            )
        )
    assert advice in str(err.value) and not_advice not in str(err.value)


def test_with_json_a_usage_error_found_by_the_audit_is_json(tmp_path, capsys):
    """(Errors argparse finds in a flag's own value stay argparse's text, before any handler runs.)"""
    import json

    from exitlaw.cli import main

    argv = ["audit", "--candidate", "http://127.0.0.1:1", "--reference", "http://127.0.0.1:2"]
    missing = str(tmp_path / "none.jsonl")
    code = main([*argv, "--prompts", missing, "--temperature", "1", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 2 and out["exit_code"] == 2 and "none.jsonl" in out["error"]


def _identical_run(monkeypatch, prompts, outcomes, top, **kw):
    """Both servers answer the same cycle of token tuples at T = 1 (the first-token test on)."""
    cycle = [Sample(o, top) for o in outcomes]
    _script(monkeypatch, lambda who, p, k: [cycle[j % len(cycle)] for j in range(k["n"])])
    cfg = AuditConfig(
        "http://127.0.0.1:1", "http://127.0.0.1:2", prompts, sampling=SamplingSettings(1.0), **kw
    )
    assert cfg.first_token
    return run_audit(cfg)


def test_only_two_sample_power_decides_sufficiency_and_a_one_cell_first_token_test_has_none(
    monkeypatch, prompts
):
    """First-token tests of 3 and 2 cells carry ``chisquare_power`` at alpha per test and the stated
    TV; of one cell (the reference lists a token of mass 1 - 1e-6 and every sample takes it), power 0.
    Either way the two-sample tests (3 or 2 cells, never called powerless) alone decide 'insufficient samples':
    the run with a powerless first-token test still passes."""
    from exitlaw.simulate.stats import chisquare_power

    three = _identical_run(
        monkeypatch,
        prompts,
        [(1, 7)] * 5 + [(2, 7)] * 3 + [(3, 7)] * 2,
        ({1: math.log(0.5), 2: math.log(0.3)},),
    )
    two = _identical_run(monkeypatch, prompts, [(1, 7), (2, 7)], ({1: math.log(0.5)},))
    one = _identical_run(monkeypatch, prompts, [(1, 7), (1, 8)], ({1: math.log(1 - 1e-6)},))
    for r, cells in ((three, 3), (two, 2), (one, 1)):
        first = [t for t in r.tests if t.kind == "first-token"]
        assert first and all(t.dof == cells - 1 and not t.rejects for t in first)
        want = chisquare_power(r.samples, cells, r.alpha_each, 0.2) if cells >= 2 else 0.0
        assert (want > 0) == (cells >= 2)
        assert all(t.power == want for t in first), (cells, [t.power for t in first])
        assert r.verdict == "no difference found" and r.exit_code == 0
        assert not any("no power" in reason for reason in r.reasons)
    for r, dof in ((three, 2), (two, 1), (one, 1)):  # the two-sample tests: 3, 2 and 2 cells
        assert all(t.dof == dof for t in r.tests if t.kind == "two-sample")


def test_the_pooled_test_rejects_when_its_p_value_is_below_alpha_per_test(monkeypatch, prompts):
    """Servers that never share an outcome: every two-sample test and the pooled test reject."""
    a, b = Sample((1, 2), ({1: -0.5},)), Sample((1, 3), ({1: -0.5},))
    _script(monkeypatch, lambda who, p, kw: [a if who == "candidate" else b] * kw["n"])
    r = run_audit(
        AuditConfig(
            "http://127.0.0.1:1",
            "http://127.0.0.1:2",
            prompts,
            sampling=SamplingSettings(1.0),
            first_token_test="off",
        )
    )
    pooled = [t for t in r.tests if t.kind == "pooled"]
    assert pooled and all(t.pvalue < t.alpha and t.rejects for t in pooled)
    assert r.verdict == "lossy"
