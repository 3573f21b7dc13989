"""The audit's rules at their edges, on both sides (issue 52): the status codes the probe and the client
tell apart (400 and 422 naming a field: drop it and probe again; any other 4xx: a usage error with the
server's message, nothing dropped; 5xx: a server failure, never a refusal); which tokenizer re-tokenises
(``--tokenizer`` before a served model id that is a tokenizer folder, the candidate's id before the
reference's) where the choices give different verdicts; the pooled test's power and detectable TV as
numbers (from the bound's formula, not from the code under test), a one-cell test adding nothing to
them; the power guard one sample below, at and above the planned size; the near-tie margin at, below
and above ``tie_margin``; and the seeds and top-log-probability requests the run sends."""

from __future__ import annotations

import http.server
import json
import math
import threading

import pytest
from scipy import optimize
from scipy import stats as sps

from exitlaw.simulate.audit import AuditConfig, AuditUsageError, format_audit, run_audit
from exitlaw.simulate.audit.client import Client, Sample, ServerFailed, ServerRefused
from exitlaw.simulate.audit.transport import probe
from exitlaw.simulate.audit.two_sample import two_sample_size
from exitlaw.theory import SamplingSettings

URLS = ("http://127.0.0.1:1", "http://127.0.0.1:2")
_FULL = {
    "choices": [
        {"index": k, "token_ids": [1], "logprobs": {"tokens": ["token_id:1"], "top_logprobs": [{}]}}
        for k in range(2)
    ]
}


# ------------------------------------------------------------------ the client's status codes (real HTTP)
class _Status(http.server.BaseHTTPRequestHandler):
    status = 200
    body = b"{}"

    def do_GET(self):  # noqa: N802 - http.server's name
        self.send_response(self.server.status)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(self.server.body)

    do_POST = do_GET

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def http_server():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Status)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


@pytest.mark.parametrize("status", [400, 401, 403, 404, 413, 422, 429, 499])
def test_every_4xx_is_a_refusal_carrying_its_status_and_the_servers_message(http_server, status):
    http_server.status = status
    http_server.body = json.dumps({"error": {"message": f"no: code {status}"}}).encode()
    client = Client("candidate", f"http://127.0.0.1:{http_server.server_address[1]}", timeout=10)
    with pytest.raises(ServerRefused) as err:
        client.call("POST", "/v1/completions", {"model": "m"})
    assert err.value.status == status
    assert f"HTTP {status}: no: code {status}" in str(err.value)


@pytest.mark.parametrize("status", [399, 500, 502, 503, 599])
def test_a_status_outside_4xx_is_a_failure_never_a_refusal(http_server, status):
    http_server.status = status
    http_server.body = json.dumps({"detail": "logprobs broke"}).encode()
    client = Client("candidate", f"http://127.0.0.1:{http_server.server_address[1]}", timeout=10)
    with pytest.raises(ServerFailed) as err:
        client.call("POST", "/v1/completions", {"model": "m"})
    assert not isinstance(err.value, ServerRefused)
    assert f"HTTP {status}: logprobs broke" in str(err.value)


def test_a_200_that_is_not_json_is_a_failure(http_server):
    http_server.status, http_server.body = 200, b"<html>hi</html>"
    client = Client("candidate", f"http://127.0.0.1:{http_server.server_address[1]}", timeout=10)
    with pytest.raises(ServerFailed, match="did not answer JSON"):
        client.call("GET", "/v1/models")


# ------------------------------------------------------------------ the probe's handling of each status
def _probe_client(refuse):
    """A client whose server refuses through ``refuse(payload)`` (an exception or None), else answers
    two choices with token ids and log-probabilities; returns (client, payloads sent)."""
    client = Client("candidate", URLS[0])
    sent = []

    def call(method, path, payload=None):
        sent.append(dict(payload))
        err = refuse(payload)
        if err is not None:
            raise err
        return _FULL

    client.call = call
    return client, sent


@pytest.mark.parametrize("status", [400, 422])
@pytest.mark.parametrize("quote", ["'{}'", '"{}"', "`{}`", "{}"])
def test_a_400_or_422_naming_a_field_drops_that_field_only_and_probes_again(status, quote):
    field = "top_logprobs"
    client, sent = _probe_client(
        lambda p: (
            ServerRefused("x", f"HTTP {status}: {quote.format(field)} is not allowed", status)
            if field in p
            else None
        )
    )
    t = probe(client, "m", [{"role": "user", "content": "hi"}], True)
    assert t.dropped == [field]  # not "logprobs", a prefix-free part of the name
    assert len(sent) == 2 and field in sent[0] and field not in sent[1]
    assert sent[1]["logprobs"] is True and sent[1]["n"] == 2 and t.n and t.token_ids


@pytest.mark.parametrize("status", [401, 403, 404, 405, 409, 413, 429, 499])
def test_any_other_4xx_naming_a_field_is_a_usage_error_with_nothing_dropped(status):
    client, sent = _probe_client(
        lambda p: ServerRefused("x", f"HTTP {status}: 'logprobs' refused for this key", status)
    )
    with pytest.raises(AuditUsageError, match=rf"HTTP {status}: 'logprobs' refused.*the probe of"):
        probe(client, "m", "hi", False)
    assert len(sent) == 1  # never retried without the field


@pytest.mark.parametrize("status", [500, 503])
def test_a_5xx_naming_a_field_is_a_failure_not_a_refusal_and_drops_nothing(
    monkeypatch, tmp_path, status
):
    err = ServerFailed("candidate server x", f"HTTP {status}: 'logprobs' crashed the worker")
    client, sent = _probe_client(lambda p: err)
    with pytest.raises(ServerFailed):
        probe(client, "m", "hi", False)
    assert len(sent) == 1
    # the whole audit: a usage error before the run that says it was the probe, with the server's text
    monkeypatch.setattr(Client, "models", lambda self: ["m"])
    monkeypatch.setattr(
        Client, "call", lambda self, m, path, payload=None: (_ for _ in ()).throw(err)
    )
    prompts = tmp_path / "p.jsonl"
    prompts.write_text('{"prompt": "a"}\n')
    with pytest.raises(AuditUsageError, match=rf"HTTP {status}: 'logprobs' crashed.*the probe"):
        run_audit(AuditConfig(*URLS, str(prompts)))


def test_a_bare_n_in_a_message_is_not_the_field_n_but_a_quoted_one_is():
    def refuse(word):
        return lambda p: (
            ServerRefused("x", f"HTTP 422: {word} must be smaller", 422) if "n" in p else None
        )

    client, sent = _probe_client(refuse("'n'"))
    assert probe(client, "m", "hi", False).dropped == ["n"]
    client, sent = _probe_client(refuse("an n"))
    with pytest.raises(AuditUsageError, match="an n must be smaller"):
        probe(client, "m", "hi", False)


# ------------------------------------------------------------------ which tokenizer re-tokenises
def _word_tokenizer(folder, vocab):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel(vocab, unk_token="a"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.decoder = decoders.WordPiece()
    folder.mkdir()
    tok.save(str(folder / "tokenizer.json"))
    return str(folder)


@pytest.fixture
def tokenizers(tmp_path):
    """``fine``: the words a..d are four ids; ``coarse``: every word is id 0 (b and c look the same)."""
    fine = _word_tokenizer(tmp_path / "fine", {w: i for i, w in enumerate("abcd")})
    coarse = _word_tokenizer(tmp_path / "coarse", {"a": 0})
    return fine, coarse


def _text_run(monkeypatch, tmp_path, served, **cfg):
    """Two text-only servers at T = 0: the candidate answers 'b', the reference 'c' (a real
    difference that only a tokenizer telling b from c can see); ``served``: each one's model id."""
    monkeypatch.setattr(Client, "models", lambda self: [served[self.name]])

    def call(self, method, path, payload=None):
        word = "b" if self.name == "candidate" else "c"
        n = payload.get("n", 1)
        return {"choices": [{"index": k, "text": word} for k in range(n)]}

    monkeypatch.setattr(Client, "_call", call)
    prompts = tmp_path / "p.jsonl"
    prompts.write_text('{"prompt": "a"}\n')
    return run_audit(AuditConfig(*URLS, str(prompts), max_tokens=2, **cfg))


def test_tokenizer_flag_comes_before_a_served_model_folder(monkeypatch, tmp_path, tokenizers):
    fine, coarse = tokenizers
    r = _text_run(monkeypatch, tmp_path, {"candidate": coarse, "reference": coarse}, tokenizer=fine)
    assert r.transport["comparison"] == "re-tokenised text"
    assert r.transport["tokenizer"] == fine and r.verdict == "lossy", format_audit(r)
    assert f"tokenizer {fine}" in format_audit(r)
    # the flag names the coarse one and the served folder is the fine one: the flag still wins
    r = _text_run(monkeypatch, tmp_path, {"candidate": fine, "reference": fine}, tokenizer=coarse)
    assert r.transport["tokenizer"] == coarse and r.verdict == "no difference found"


def test_without_the_flag_the_candidates_served_folder_comes_before_the_references(
    monkeypatch, tmp_path, tokenizers
):
    fine, coarse = tokenizers
    r = _text_run(monkeypatch, tmp_path, {"candidate": coarse, "reference": coarse})
    assert r.transport["tokenizer"] == coarse and r.verdict == "no difference found"
    r = _text_run(monkeypatch, tmp_path, {"candidate": fine, "reference": coarse})
    assert r.transport["tokenizer"] == fine and r.verdict == "lossy"
    r = _text_run(monkeypatch, tmp_path, {"candidate": coarse, "reference": fine})
    assert r.transport["tokenizer"] == coarse and r.verdict == "no difference found"
    # a served id that is not a folder is passed over
    r = _text_run(monkeypatch, tmp_path, {"candidate": "org/model", "reference": fine})
    assert r.transport["tokenizer"] == fine and r.verdict == "lossy"


# ------------------------------------------------------------------ pooled power and detectable TV
def _script(monkeypatch, answer):
    monkeypatch.setattr(Client, "models", lambda self: ["m"])
    monkeypatch.setattr(Client, "call", lambda self, method, path, payload=None: _FULL)
    sent = []

    def sample(self, prompt, **kw):
        sent.append((self.name, prompt, kw))
        return answer(self.name, prompt, kw)

    monkeypatch.setattr(Client, "sample", sample)
    return sent


@pytest.fixture
def two_prompts(tmp_path):
    p = tmp_path / "p.jsonl"
    p.write_text('{"prompt": "a"}\n{"prompt": "b"}\n')
    return str(p)


def _bound(sizes, cells, alpha, delta):
    """The pooled bound of two_sample.py's docstring, written out: lambda = sum 4 d^2 a b / (a + b),
    df = (cells - 1) per test."""
    lam = sum(4 * delta**2 * a * b / (a + b) for a, b in sizes)
    df = (cells - 1) * len(sizes)
    return float(sps.ncx2.sf(sps.chi2.isf(alpha, df), df, lam)) if sizes else 0.0


def _sampled(monkeypatch, prompts, answer, **kw):
    sent = _script(monkeypatch, answer)
    cfg = dict(sampling=SamplingSettings(1.0), first_token_test="off", samples=40, tv=0.2)
    r = run_audit(AuditConfig(*URLS, prompts, **{**cfg, **kw}))
    return r, sent


def test_pooled_power_and_detectable_tv_are_the_bounds_numbers(monkeypatch, two_prompts):
    two = [Sample((1,)), Sample((2,))]
    r, _ = _sampled(
        monkeypatch,
        two_prompts,
        lambda who, p, kw: [two[j % 2] for j in range(kw["n"])],
        samples=150,
    )
    alpha = 1e-3 / 3  # two prompts and the pooled test at one level
    assert r.alpha_each == pytest.approx(alpha, rel=1e-12)
    pooled = [t for t in r.tests if t.kind == "pooled"]
    assert len(pooled) == 1 and pooled[0].dof == 2
    want = _bound([(150, 150), (150, 150)], 6, alpha, 0.2)
    assert 0.5 < want < 0.6 and pooled[0].power == pytest.approx(want, rel=1e-9)
    for t in r.tests:
        if t.kind == "two-sample":
            assert t.power == pytest.approx(_bound([(150, 150)], 6, alpha, 0.2), rel=1e-9)
    tv = optimize.brentq(
        lambda d: _bound([(150, 150)] * 2, 6, alpha, d) - 0.9, 1e-3, 1.0, xtol=1e-12
    )
    assert r.pooled_detectable_tv[1] == pytest.approx(tv, abs=1e-9)
    assert 0.2 < tv < 1
    text = format_audit(r)
    assert f"power {want:.3f}" in text
    assert f"pooled test at c=1 finds a TV of {tv:.3g} on every prompt with power 0.9" in text
    assert json.loads(json.dumps(r.to_json()))["pooled_detectable_tv"]["1"] == pytest.approx(tv)


def test_a_one_cell_test_adds_nothing_to_the_pooled_power(monkeypatch, two_prompts):
    """Prompt a: every sample new (one cell, no statistic); prompt b: two outcomes. The pooled power is
    prompt b's own bound, not the bound of two informative tests."""
    counter = iter(range(10**9))
    two = [Sample((1,)), Sample((2,))]

    def answer(who, p, kw):
        if p == "a":
            return [Sample((100 + next(counter),)) for _ in range(kw["n"])]
        return [two[j % 2] for j in range(kw["n"])]

    r, _ = _sampled(monkeypatch, two_prompts, answer)
    alpha = r.alpha_each
    pooled = next(t for t in r.tests if t.kind == "pooled")
    one = _bound([(40, 40)], 6, alpha, 0.2)
    assert pooled.power == pytest.approx(one, rel=1e-9)
    assert pooled.power < _bound([(40, 40)] * 2, 6, alpha, 0.2)
    tv = optimize.brentq(lambda d: _bound([(40, 40)], 6, alpha, d) - 0.9, 1e-3, 1.0, xtol=1e-12)
    assert r.pooled_detectable_tv[1] == pytest.approx(tv, abs=1e-9)
    assert [t.power for t in r.tests if t.kind == "two-sample"] == [0.0, pytest.approx(one)]
    assert r.verdict == "insufficient samples"


def test_a_run_whose_tests_all_fell_into_one_cell_reports_no_pooled_power(monkeypatch, two_prompts):
    counter = iter(range(10**9))
    r, _ = _sampled(
        monkeypatch,
        two_prompts,
        lambda who, p, kw: [Sample((next(counter),)) for _ in range(kw["n"])],
        samples=500,  # enough for power 0.999 had the tests had two cells
    )
    assert _bound([(500, 500)] * 2, 6, r.alpha_each, 0.2) > 0.999
    pooled = next(t for t in r.tests if t.kind == "pooled")
    assert pooled.power == 0.0 and pooled.dof == 0 and not pooled.rejects
    assert r.pooled_detectable_tv[1] is None  # no TV is detectable: JSON null, not Infinity
    js = json.dumps(r.to_json(), allow_nan=False)  # strict JSON
    assert json.loads(js)["pooled_detectable_tv"] == {"1": None}
    text = format_audit(r)
    assert "pooled test at c=1 detects no TV (no test with two cells)" in text
    assert "NO-POW pooled" in text and "power 0.999" not in text
    assert r.verdict == "insufficient samples" and r.exit_code == 5


def test_a_pooled_test_too_small_for_any_tv_says_so(monkeypatch, two_prompts):
    """Ten samples per server, five of each outcome: two cells per test (the smallest that forms
    them), and at alpha 1e-6 even a TV of 1 is found with power below 0.9."""
    two = [Sample((1,)), Sample((2,))]
    r, _ = _sampled(
        monkeypatch,
        two_prompts,
        lambda who, p, kw: [two[j % 2] for j in range(kw["n"])],
        samples=10,
        alpha=1e-6,
    )
    assert all(t.dof == 1 for t in r.tests if t.kind == "two-sample")
    assert 0 < _bound([(10, 10)] * 2, 6, r.alpha_each, 1.0) < 0.9
    assert r.pooled_detectable_tv[1] is None
    assert "pooled test at c=1 detects no TV up to 1 with power 0.9" in format_audit(r)


@pytest.mark.parametrize(
    "offset, verdict",
    [(-1, "insufficient samples"), (0, "no difference found"), (1, "no difference found")],
)
def test_the_power_guard_one_sample_below_at_and_above_the_planned_size(
    monkeypatch, two_prompts, offset, verdict
):
    alpha = 1e-3 / 3
    planned = two_sample_size(cells=6, alpha=alpha, power=0.9, delta=0.3)
    below = _bound([(planned - 1, planned - 1)], 6, alpha, 0.3)
    assert below < 0.9 <= _bound([(planned, planned)], 6, alpha, 0.3)
    two = [Sample((1,)), Sample((2,))]
    r, _ = _sampled(
        monkeypatch,
        two_prompts,
        lambda who, p, kw: [two[j % 2] for j in range(kw["n"])],
        samples=planned + offset,
        tv=0.3,
    )
    assert r.planned_samples == planned and r.samples == planned + offset
    assert r.verdict == verdict, format_audit(r)
    if offset < 0:
        assert f"power {below:.3f} < 0.9 at TV 0.3" in "; ".join(r.reasons)


# ------------------------------------------------------------------ what the run sends
def test_sampling_requests_carry_distinct_63_bit_seeds_and_split_n_per_request(
    monkeypatch, two_prompts
):
    two = [Sample((1,), ({1: -0.1, 2: -3.0},)), Sample((2,), ({1: -0.1, 2: -3.0},))]
    r, sent = _sampled(
        monkeypatch,
        two_prompts,
        lambda who, p, kw: [two[j % 2] for j in range(kw["n"])],
        samples=70,
        n_per_request=32,
        concurrency=(1, 2),
    )
    seeds = [kw["seed"] for _, _, kw in sent]
    assert len(sent) == 2 * 2 * 2 * 3  # levels x servers x prompts x ceil(70 / 32)
    assert len(set(seeds)) == len(seeds) and all(0 <= s < 2**63 for s in seeds)
    assert max(seeds) >= 2**61  # drawn from the whole 63-bit range, not a smaller one
    assert sorted(kw["n"] for _, _, kw in sent) == [6] * 8 + [32] * 16  # 70 = 32 + 32 + 6


@pytest.mark.parametrize(
    "runner_up, near_tie",
    [(-0.0499, True), (-0.05, False), (-0.0501, False)],  # margins below, at and above 0.05
)
def test_the_near_tie_margin_below_at_and_above_tie_margin(
    monkeypatch, tmp_path, runner_up, near_tie
):
    kws = []

    def answer(who, p, kw):
        kws.append(kw)
        tok = 5 if who == "candidate" else 6
        return [Sample((tok,), ({6: 0.0, 5: runner_up},))]

    _script(monkeypatch, answer)
    p = tmp_path / "p.jsonl"
    p.write_text('{"prompt": "a"}\n')
    r = run_audit(AuditConfig(*URLS, str(p), tie_margin=0.05))
    assert all(kw["top_logprobs"] == 2 and kw["seed"] is None and kw["n"] == 1 for kw in kws)
    assert (len(r.near_ties), len(r.divergences)) == ((1, 0) if near_tie else (0, 1))
    assert r.verdict == ("no difference found" if near_tie else "lossy")
    assert (r.near_ties or r.divergences)[0].margin == pytest.approx(-runner_up, abs=1e-15)
    assert math.isfinite((r.near_ties or r.divergences)[0].margin)


def test_first_token_requests_ask_one_token_with_the_most_top_logprobs(monkeypatch, two_prompts):
    top = ({1: math.log(0.5), 2: math.log(0.5)},)
    two = [Sample((1, 7), top), Sample((2, 7), top)]
    r, sent = _sampled(
        monkeypatch,
        two_prompts,
        lambda who, p, kw: [two[j % 2] for j in range(kw["n"])],
        first_token_test="on",
    )
    first = [kw for who, _, kw in sent if kw.get("top_logprobs") is not None]
    assert len(first) == 2 and all(who == "reference" for who, _, kw in sent if kw in first)
    assert all(kw["max_tokens"] == 1 and kw["n"] == 1 and kw["top_logprobs"] == 20 for kw in first)
    rest = [kw for _, _, kw in sent if kw.get("top_logprobs") is None]
    assert rest and all(kw["max_tokens"] == 2 for kw in rest)  # cfg.tokens
    assert len([t for t in r.tests if t.kind == "first-token"]) == 2


def test_the_pooled_p_value_is_the_chi_square_tail_at_its_dof_even_at_dof_1(
    monkeypatch, two_prompts
):
    """One prompt informative (two cells, dof 1) and the servers apart on it: the pooled p-value is
    chi2.sf(statistic, 1) and rejects; with no informative test it is exactly 1."""
    counter = iter(range(10**9))

    def answer(who, p, kw):
        if p == "a":
            return [Sample((100 + next(counter),)) for _ in range(kw["n"])]
        lean = (1,) if who == "candidate" else (2,)
        return [Sample(lean if j % 4 else (3 - lean[0],)) for j in range(kw["n"])]

    r, _ = _sampled(monkeypatch, two_prompts, answer, samples=200)
    pooled = next(t for t in r.tests if t.kind == "pooled")
    assert pooled.dof == 1
    assert pooled.pvalue == pytest.approx(float(sps.chi2.sf(pooled.statistic, 1)), rel=1e-12)
    assert pooled.rejects and r.verdict == "lossy"
    one = iter(range(10**9))
    r, _ = _sampled(
        monkeypatch, two_prompts, lambda w, p, kw: [Sample((next(one),)) for _ in range(kw["n"])]
    )
    pooled = next(t for t in r.tests if t.kind == "pooled")
    assert pooled.dof == 0 and pooled.pvalue == 1.0 and not pooled.rejects


def test_a_text_comparison_turns_the_first_token_test_off_and_says_why(
    monkeypatch, tmp_path, tokenizers
):
    fine, _ = tokenizers
    monkeypatch.setattr(Client, "models", lambda self: ["m"])

    def call(self, method, path, payload=None):  # text only, n honoured, seed-driven words
        n = payload.get("n", 1)
        seed = payload.get("seed") or 0
        return {"choices": [{"index": k, "text": "ab"[(seed + k) % 2]} for k in range(n)]}

    monkeypatch.setattr(Client, "_call", call)
    prompts = tmp_path / "p.jsonl"
    prompts.write_text('{"prompt": "a"}\n')
    cfg = AuditConfig(
        *URLS, str(prompts), sampling=SamplingSettings(1.0), tokenizer=fine, samples=30
    )
    assert cfg.first_token  # auto at T = 1 without filters
    r = run_audit(cfg)
    assert r.transport["comparison"] == "re-tokenised text"
    assert "first-token test not run: the run compares re-tokenised text" in r.reasons
    assert not [t for t in r.tests if t.kind == "first-token"]
    assert (
        r.planned_tests == 2
    )  # one prompt and the pooled test: the plan counts no first-token test


# ------------------------------------------------------------------ the probe's retries and answers
def test_a_server_refusing_every_droppable_field_one_at_a_time_is_probed_to_the_end():
    """Each answer names one more field (as a validator that stops at the first error does): the probe
    drops all six, one per request, and the seventh request succeeds."""
    from exitlaw.simulate.audit.transport import DROPPABLE

    def refuse(p):
        for f in DROPPABLE:
            if f in p:
                return ServerRefused("x", f"HTTP 422: '{f}' is not permitted", 422)
        return None

    client, sent = _probe_client(refuse)
    payloads = []

    def call(method, path, payload=None):
        payloads.append(dict(payload))
        err = refuse(payload)
        if err is not None:
            raise err
        return {"choices": [{"index": 0, "text": "x"}]}

    client.call = call
    t = probe(client, "m", [{"role": "user", "content": "hi"}], True)
    assert sorted(t.dropped) == sorted(DROPPABLE) and len(payloads) == len(DROPPABLE) + 1
    assert not t.n and not t.token_ids and not t.logprobs


@pytest.mark.parametrize("answer", [{"choices": []}, {"choices": None}, {"data": []}, []])
def test_a_probe_answered_without_choices_is_a_usage_error(answer):
    client, _ = _probe_client(lambda p: None)
    client.call = lambda method, path, payload=None: answer
    with pytest.raises(AuditUsageError, match="answered no choices"):
        probe(client, "m", "hi", False)


# ------------------------------------------------------------------ the two-sample test's cells and power
def test_a_two_sample_test_never_has_more_than_max_cells_cells():
    from collections import Counter

    from exitlaw.simulate.audit.two_sample import two_sample_chisquare

    a = Counter({(k,): 40 for k in range(10)})  # ten outcomes, each common enough to stand alone
    for max_cells in (2, 3, 6, 10, 11):
        res = two_sample_chisquare(a, a, max_cells=max_cells)
        assert len(res.cells) == min(max_cells, 10) and res.dof == min(max_cells, 10) - 1
        assert sum(res.counts_a) == sum(res.counts_b) == 400
        if max_cells < 10:  # max_cells - 1 outcomes alone, the rest pooled in the last cell
            assert res.cells[-1] == "other" and res.counts_a[-1] == 40 * (11 - max_cells)


def test_a_rest_too_small_to_stand_alone_joins_the_smallest_own_cell():
    from collections import Counter

    from exitlaw.simulate.audit.two_sample import two_sample_chisquare

    a = Counter({("A",): 30, ("B",): 12, ("C",): 1, ("D",): 1})
    b = Counter({("A",): 28, ("B",): 14, ("C",): 2})
    res = two_sample_chisquare(a, b)
    # A (58) and B (26) stand alone; C and D (4 together, expected 2 < 5) join B, the smaller
    assert res.cells == [("A",), "other"]
    assert res.counts_a == [30, 14] and res.counts_b == [28, 16]
    assert sum(res.counts_a) == 44 and sum(res.counts_b) == 44


@pytest.mark.parametrize("na, nb", [(0, 50), (50, 0), (0, 0)])
def test_a_two_sample_power_with_an_empty_side_is_zero_and_one_sample_each_is_not(na, nb):
    from exitlaw.simulate.audit.two_sample import two_sample_power

    assert two_sample_power(na, nb, cells=6, alpha=0.01, delta=0.3) == 0.0
    got = two_sample_power(1, 1, cells=6, alpha=0.01, delta=0.3)
    assert got == pytest.approx(_bound([(1, 1)], 6, 0.01, 0.3), rel=1e-12) and 0 < got < 0.5


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_each_server_is_asked_for_its_own_model(monkeypatch, two_prompts, temperature):
    sent = _script(monkeypatch, lambda who, p, kw: [Sample((1,), ({1: -0.1, 2: -3.0},))] * kw["n"])
    r = run_audit(
        AuditConfig(
            *URLS,
            two_prompts,
            sampling=SamplingSettings(temperature),
            candidate_model="cand-model",
            reference_model="ref-model",
            samples=10,
        )
    )
    models = {(who, kw["model"]) for who, _, kw in sent}
    assert models == {("candidate", "cand-model"), ("reference", "ref-model")}, models
    assert r.config["candidate_model"] == "cand-model"


@pytest.mark.parametrize("shorter", ["candidate", "reference"])
def test_a_sequence_that_ends_where_the_other_goes_on_is_never_a_near_tie(
    monkeypatch, tmp_path, shorter
):
    """At the divergence position one sequence has ended: whatever the top-2 margin there (0.01 here),
    it is a divergence, never a near-tie."""
    tops = ({5: 0.0, 9: -3.0}, {6: 0.0, 7: -0.01})

    def answer(who, p, kw):
        return [Sample((5,), tops[:1]) if who == shorter else Sample((5, 6), tops)]

    _script(monkeypatch, answer)
    p = tmp_path / "p.jsonl"
    p.write_text('{"prompt": "a"}\n')
    r = run_audit(AuditConfig(*URLS, str(p)))
    assert not r.near_ties and len(r.divergences) == 1 and r.verdict == "lossy"
    d = r.divergences[0]
    assert d.position == 1 and d.margin == pytest.approx(0.01)
    assert (d.candidate, d.reference) == ((None, 6) if shorter == "candidate" else (6, None))


# ------------------------------------------------------------------ what the report prints
def test_each_verdict_has_its_exit_code():
    from exitlaw.simulate.audit.report import EXIT, AuditReport

    assert EXIT == {
        "no difference found": 0,
        "lossy": 1,
        "server failed": 4,
        "insufficient samples": 5,
    }
    for verdict, code in EXIT.items():
        r = AuditReport({}, 1.0, 1, verdict=verdict)
        assert r.exit_code == code and r.to_json()["exit_code"] == code


def test_the_text_names_a_re_tokenised_t0_comparison_and_an_unknown_margin(
    monkeypatch, tmp_path, tokenizers
):
    fine, _ = tokenizers
    r = _text_run(monkeypatch, tmp_path, {"candidate": "m", "reference": "m"}, tokenizer=fine)
    text = format_audit(r)
    assert "T = 0: re-tokenised text of up to 2 tokens compared per prompt" in text
    assert "position 0, candidate 1 vs reference 2, top-2 margin unknown" in text


def test_the_text_says_token_id_prompts_went_as_text(monkeypatch, tmp_path, tokenizers):
    fine, _ = tokenizers
    monkeypatch.setattr(Client, "models", lambda self: ["m"])

    def call(self, method, path, payload=None):
        if self.name == "candidate" and not isinstance(payload.get("prompt", ""), str):
            raise ServerRefused("candidate server x", "HTTP 400: prompt must be a string", 400)
        return {"choices": [{"index": k, "token_ids": [0]} for k in range(payload.get("n", 1))]}

    monkeypatch.setattr(Client, "_call", call)
    p = tmp_path / "p.jsonl"
    p.write_text('{"prompt_ids": [2, 3]}\n')
    r = run_audit(AuditConfig(*URLS, str(p), tokenizer=fine, max_tokens=1))
    text = format_audit(r)
    cand = next(line for line in text.splitlines() if line.startswith("  candidate completions"))
    ref = next(line for line in text.splitlines() if line.startswith("  reference completions"))
    assert "token-id prompts sent as text" in cand and "token-id prompts" not in ref
    assert "T = 0: token ids of up to 1 tokens compared per prompt" in text


def test_a_test_with_some_power_prints_pass_and_one_without_prints_no_pow(monkeypatch, two_prompts):
    """Prompt a: one cell (power 0, NO-POW); prompt b: two cells with power between 0 and 1 (pass); the
    pooled line at c=1 reads the pooled test (dof 1), not the first test of the level (dof 0)."""
    counter = iter(range(10**9))
    two = [Sample((1,)), Sample((2,))]

    def answer(who, p, kw):
        if p == "a":
            return [Sample((100 + next(counter),)) for _ in range(kw["n"])]
        return [two[j % 2] for j in range(kw["n"])]

    r, _ = _sampled(monkeypatch, two_prompts, answer, samples=10, alpha=1e-6)
    powers = {(t.kind, t.prompt): t.power for t in r.tests}
    assert powers[("two-sample", 0)] == 0.0 and 0 < powers[("two-sample", 1)] < 1
    lines = format_audit(r).splitlines()
    assert any(x.startswith("  NO-POW two-sample  c=1   prompt 0") for x in lines)
    assert any(x.startswith("  pass   two-sample  c=1   prompt 1") for x in lines)
    assert any(x.startswith("  pass   pooled      c=1   all prompts") for x in lines)
    assert "  pooled test at c=1 detects no TV up to 1 with power 0.9" in lines


# ------------------------------------------------------------------ the client's requests and answers
@pytest.mark.parametrize("top", [None, 2])
def test_a_chat_request_asks_log_probabilities_iff_top_logprobs_is_given(top):
    client = Client("candidate", URLS[0])
    sent = []

    def call(method, path, payload=None):
        sent.append((path, payload))
        return {"choices": [{"index": 0, "token_ids": [3], "message": {"content": "x"}}]}

    client._call = call
    out = client.sample(
        [{"role": "user", "content": "hi"}],
        model="m",
        n=1,
        max_tokens=1,
        temperature=0.0,
        seed=None,
        top_logprobs=top,
    )
    path, payload = sent[0]
    assert path == "/v1/chat/completions" and out[0].tokens == (3,)
    if top is None:
        assert "logprobs" not in payload and "top_logprobs" not in payload
    else:
        assert payload["logprobs"] is True and payload["top_logprobs"] == top


def test_ids_come_from_token_id_logprob_strings_also_when_the_choice_has_text():
    from exitlaw.simulate.audit.client import _sample

    choice = {
        "text": "ab",
        "logprobs": {
            "tokens": ["token_id:4", "token_id:9"],
            "top_logprobs": [{"token_id:4": -0.1}],
        },
    }
    s = _sample(choice, False, "x")
    assert s.tokens == (4, 9) and s.top == ({4: -0.1},)


def test_text_logprob_tokens_are_a_refusal_with_status_400_and_advice_to_serve_ids():
    from exitlaw.simulate.audit.client import _sample

    for choice, chat in (
        ({"text": "ab", "logprobs": {"tokens": ["a", "b"]}}, False),  # tokens as text
        ({"text": "ab"}, False),  # neither ids nor logprob tokens
        ({"message": {"content": "ab"}}, True),  # the same, from the chat endpoint
    ):
        with pytest.raises(ServerRefused) as err:
            _sample(choice, chat, "x")
        assert err.value.status == 400 and "token" in str(err.value)
