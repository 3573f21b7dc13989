"""`exitlaw serve` and `exitlaw audit` with real servers on 127.0.0.1 (bounded request counts).

Four servers on one small random pair (vocabulary 320, peakier rows than the default tiny pair so that
two-token outcomes fall in few cells): AR (the reference, its key from $EXITLAW_API_KEY), DDTree + TEV,
DDTree with a lossy verifier planted by `--verifier MODULE:CALLABLE`, and AR on a different model.
T > 0 audits use k = 2 tokens, `n` samples per request and a TV of 0.2.
"""

from __future__ import annotations

import json
import signal
import urllib.request

import pytest

from exitlaw.cli import main
from helpers.cli_argv import cli_argv
from helpers.servers import post, start_servers, stop_all

KEY = "test-key-23"


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    from exitlaw.engine.models.tiny import TinySpec, write_tiny_models

    root = tmp_path_factory.mktemp("serve")
    spec = TinySpec(init_std=0.5)
    target, draft = write_tiny_models(root / "pair", spec=spec, seed=0)
    other, _ = write_tiny_models(root / "other", spec=spec, seed=1)
    common = ["--max-tokens-limit", "64", "--max-body-bytes", "4096"]
    tree = ["--target", str(target), "--draft", str(draft), "--budget", "8", *common]
    specs = {
        "ar": ["--target", str(target), "--method", "ar", *common],
        "ddtree": [*tree, "--verifier", "tev"],
        "lossy": [*tree, "--verifier", "helpers.cli_verifiers:numpy_predraw_temperature_twice"],
        "other": ["--target", str(other), "--method", "ar", "--model-name", "target", *common],
    }
    found = start_servers(specs, root, env={"ar": {"EXITLAW_API_KEY": KEY}})
    prompts = root / "prompts.jsonl"
    prompts.write_text(
        '{"prompt": "def add(a, b):"}\n{"messages": [{"role": "user", "content": "hi"}]}\n'
    )
    one = root / "one.jsonl"
    one.write_text('{"prompt": "def add(a, b):"}\n')
    yield {**found, "prompts": prompts, "one": one, "root": root}
    stop_all(found.values())


@pytest.fixture
def _audit(capsys):
    """`exitlaw audit ARGS` in this process (the CLI's own entry point; no interpreter start per audit)."""

    def run(*args, **flags):
        capsys.readouterr()
        rc = main(cli_argv("audit", *args, **flags))
        out, err = capsys.readouterr()
        return rc, out, err

    return run


_T0 = dict(temperature=0, max_new_tokens=12)  # greedy: outputs compared token for token
# T = 1; power against a TV of 0.2 at level 0.01
_T1_POWER = dict(temperature=1, tv=0.2, alpha=0.01)


def _against_ar(servers, candidate, prompts):
    """``--candidate`` the ``candidate`` server, ``--reference`` the AR one (with its key), ``prompts``."""
    return dict(
        candidate=servers[candidate].url,
        reference=servers["ar"].url,
        reference_api_key=KEY,
        prompts=servers[prompts],
    )


def test_ddtree_tev_audited_against_ar_passes_at_t0_under_concurrency(servers, _audit):
    """Both servers batch continuously (the default): requests at concurrency 8 share batches."""
    out = servers["root"] / "t0"
    rc, text, err = _audit(
        **_against_ar(servers, "ddtree", "prompts"), **_T0, concurrency="1,8", out=out
    )
    assert rc == 0, text + err
    report = json.loads((out / "results.json").read_text())
    assert report["verdict"] == "no difference found" and report["divergences"] == []
    assert report["requests"] == 2 * (
        2 + 8
    )  # both servers: c = 1 (2 prompts), c = 8 (4 x 2 at once)


def test_ddtree_tev_audited_against_ar_passes_at_t1_with_the_stated_power(servers, _audit):
    """Under concurrency 8: the samples of 8 requests at once share the continuous batches."""
    rc, text, err = _audit(
        **_against_ar(servers, "ddtree", "prompts"),
        **_T1_POWER,
        n_per_request=16,
        concurrency="8",
        json=True,
    )
    assert rc == 0, text + err
    report = json.loads(text)
    kinds = sorted(t["kind"] for t in report["tests"])
    assert kinds == ["first-token", "first-token", "pooled", "two-sample", "two-sample"]
    assert all(t["power"] >= 0.9 for t in report["tests"] if t["kind"] == "two-sample")
    assert report["samples_per_prompt_and_server"] == report["planned_samples"]
    with urllib.request.urlopen(servers["ddtree"].url + "/stats", timeout=10) as resp:
        stats = json.loads(resp.read())
    assert stats["batching"] == "continuous" and stats["largest_batch"] > 8, stats


def test_a_server_with_a_lossy_verifier_fails_with_the_computed_power(servers, _audit):
    rc, text, err = _audit(
        **_against_ar(servers, "lossy", "one"), **_T1_POWER, first_token_test="off", json=True
    )
    assert rc == 1, text + err
    report = json.loads(text)
    test = next(t for t in report["tests"] if t["kind"] == "two-sample")
    assert report["verdict"] == "lossy" and test["rejects"] and test["power"] >= 0.9


def test_an_underpowered_run_says_insufficient_samples_never_a_verdict(servers, _audit):
    rc, text, err = _audit(
        **_against_ar(servers, "ddtree", "one"), temperature=1, samples=8, alpha=1e-6
    )
    assert rc == 5, text + err
    assert "INSUFFICIENT SAMPLES" in text and "needs" in text


def test_a_reference_with_a_different_model_fails_and_the_t0_divergence_is_named(servers, _audit):
    rc, text, err = _audit(
        **_against_ar(servers, "other", "one"), temperature=0, max_new_tokens=8, json=True
    )
    assert rc == 1, text + err
    d = json.loads(text)["divergences"][0]
    status, ours = post(
        servers["other"].url + "/v1/completions",
        {"prompt": "def add(a, b):", "max_tokens": 8, "temperature": 0},
    )
    status2, ref = post(
        servers["ar"].url + "/v1/completions",
        {"prompt": "def add(a, b):", "max_tokens": 8, "temperature": 0},
        key=KEY,
    )
    a, b = ours["choices"][0]["token_ids"], ref["choices"][0]["token_ids"]
    j = next(k for k in range(len(a)) if a[k] != b[k])
    assert (d["prompt"], d["position"], d["candidate"], d["reference"]) == (0, j, a[j], b[j])
    assert d["margin"] is not None and not d["near_tie"]


def test_an_unreachable_url_is_a_named_error(servers, _audit):
    rc, text, err = _audit(
        "--candidate",
        "http://127.0.0.1:9",
        "--reference",
        servers["ddtree"].url,
        "--prompts",
        servers["one"],
    )
    assert (
        rc == 2 and "http://127.0.0.1:9" in err and "cannot reach" in err and "Traceback" not in err
    )


def test_requests_without_the_key_or_over_a_limit_are_refused_and_the_server_keeps_serving(servers):
    url = servers["ar"].url + "/v1/completions"
    ok = {"prompt": "def add(a, b):", "max_tokens": 4, "temperature": 0}
    status, body = post(url, ok)
    assert status == 401 and body["error"]["type"] == "authentication_error"
    status, body = post(url, ok, key="wrong")
    assert status == 401
    status, body = post(url, None, key=KEY, raw=json.dumps({**ok, "prompt": "x" * 5000}).encode())
    assert status == 413 and "--max-body-bytes" in body["error"]["message"]
    for field, value, flag in (
        ("max_tokens", 10**6, "--max-tokens-limit"),
        ("n", 10**4, "--max-n"),
    ):
        status, body = post(url, {**ok, field: value}, key=KEY)
        assert (
            status == 400 and flag in body["error"]["message"] and body["error"]["param"] == field
        )
    for bad, name in (
        ({**ok, "temperature": -1}, "temperature"),
        ({**ok, "top_p": 1.5}, "top_p"),
        ({**ok, "frobnicate": 1}, "frobnicate"),
        ({**ok, "model": "nope"}, "model"),
    ):
        status, body = post(url, bad, key=KEY)
        assert 400 <= status < 500 and name in body["error"]["message"], body
    status, body = post(url, None, key=KEY, raw=b"{not json")
    assert (
        status == 400
        and "not valid JSON" in body["error"]["message"]
        and "Traceback" not in str(body)
    )
    status, body = post(url, ok, key=KEY)
    assert status == 200 and 1 <= len(body["choices"][0]["token_ids"]) <= 4  # EOS may end it early


def test_a_stream_carries_the_same_tokens_as_the_reply_for_one_seed(servers):
    url = servers["ddtree"].url + "/v1/completions"
    req = {
        "prompt": "def add(a, b):",
        "max_tokens": 6,
        "temperature": 1,
        "seed": 8,
    }  # a seed whose reply runs rounds
    status, whole = post(url, {**req, "logprobs": 1})
    assert status == 200
    import urllib.request

    r = urllib.request.Request(
        url,
        data=json.dumps({**req, "stream": True}).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(r, timeout=60) as resp:
        events = [
            line[6:] for line in resp.read().decode().splitlines() if line.startswith("data: ")
        ]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    streamed = [t for c in chunks for ch in c["choices"] for t in ch["token_ids"]]
    choice = whole["choices"][0]
    assert (
        streamed == choice["token_ids"]
        and "".join(ch["text"] for c in chunks for ch in c["choices"]) == choice["text"]
    )
    assert len(choice["logprobs"]["token_logprobs"]) == len(choice["token_ids"]) >= 1
    assert whole["acceptance"]["rounds"] >= 1, json.dumps(whole)


def test_sigterm_shuts_the_server_down_cleanly(servers):
    s = servers["other"]
    s.proc.send_signal(signal.SIGTERM)
    assert s.proc.wait(60) == 0
    assert "shut down cleanly" in s.text() and "Traceback" not in s.text()
