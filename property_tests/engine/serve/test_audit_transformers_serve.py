"""`exitlaw audit` against a second, independently written OpenAI-compatible server: Hugging Face's
`transformers serve` on 127.0.0.1, with no adapter.

`transformers serve` validates strictly (HTTP 422 naming vLLM's `return_token_ids` /
`return_tokens_as_token_ids`), returns text only, ignores `n` and returns no log-probabilities; the audit
probes it, drops the fields it names, asks one sample per request and compares the text of both servers
re-tokenised with the target's tokenizer (chat prompts rendered with thinking off on both servers). The candidate is `transformers serve` (models loaded on demand
from their folders), the reference `exitlaw serve --method ar` on the same tiny Qwen3 target: equal at
T = 0, no difference found at T = 1, and a different target (other random weights) is lossy.

The checkpoints' generation_config.json sets `do_sample: true, top_k: 0`: `transformers serve` samples
with the checkpoint's generation config, where `do_sample` unset means greedy at any temperature and
`top_k` unset means top-k 50 (a different law from `exitlaw serve`'s, which the audit rightly calls lossy).
Skipped, with the reason, where `transformers[serving]` does not import.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from exitlaw.cli import main
from helpers.cli_argv import cli_argv
from helpers.servers import Server, start_servers, stop_all


def _serving_missing() -> str | None:
    try:
        from transformers.utils.import_utils import is_serve_available
    except ImportError as err:  # pragma: no cover - transformers is an engine dependency
        return f"transformers does not import: {err}"
    if not is_serve_available():
        return "transformers[serving] is not installed (fastapi, uvicorn, openai)"
    return None


pytestmark = pytest.mark.skipif(_serving_missing() is not None, reason=str(_serving_missing()))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_transformers_serve(logdir, timeout: float = 180.0) -> Server:
    """`transformers serve` on a free loopback port, no model pinned (each request names its folder)."""
    port = _free_port()
    log = logdir / "transformers-serve.log"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
    with log.open("w") as fh:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "from transformers.cli.transformers import main; main()",
                "serve",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--device",
                "cpu",
                # render chat prompts as exitlaw serve does (Qwen3 templates: thinking off)
                "--chat-template-kwargs",
                '{"enable_thinking": false}',
            ],
            stdout=fh,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    server = Server("transformers-serve", proc, log, f"http://127.0.0.1:{port}")
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(server.url + "/health", timeout=2) as resp:
                if resp.status == 200:
                    return server
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            server.stop()
            raise RuntimeError(f"transformers serve did not start:\n{server.text()[-2000:]}")
        time.sleep(0.3)


def _sampling_config(folder) -> None:
    path = folder / "generation_config.json"
    cfg = json.loads(path.read_text())
    cfg.update(do_sample=True, top_k=0)  # sample from the full softmax (module docstring)
    path.write_text(json.dumps(cfg, indent=2))


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    from exitlaw.engine.models.tiny import TinySpec, write_tiny_models

    root = tmp_path_factory.mktemp("hf-serve")
    spec = TinySpec(init_std=0.5)
    target, _ = write_tiny_models(root / "pair", spec=spec, seed=0)
    other, _ = write_tiny_models(root / "other", spec=spec, seed=1)
    for folder in (target, other):
        _sampling_config(folder)
    hf = _start_transformers_serve(root)
    try:
        ours = start_servers({"ar": ["--target", str(target), "--method", "ar"]}, root)
    except BaseException:
        hf.stop()
        raise
    prompts = root / "prompts.jsonl"
    prompts.write_text(
        '{"prompt": "def add(a, b):"}\n{"messages": [{"role": "user", "content": "hi"}]}\n'
    )
    one = root / "one.jsonl"
    one.write_text('{"prompt": "def add(a, b):"}\n')
    yield dict(hf=hf.url, ar=ours["ar"].url, target=target, other=other, prompts=prompts, one=one)
    stop_all([hf, *ours.values()])


def _audit(capsys, servers, candidate_model, prompts, **flags):
    """`exitlaw audit --json` of transformers serve (``candidate_model``) against exitlaw serve AR."""
    capsys.readouterr()
    argv = cli_argv(
        "audit",
        candidate=servers["hf"],
        candidate_model=candidate_model,
        reference=servers["ar"],
        prompts=servers[prompts],
        json=True,
        **flags,
    )
    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, json.loads(out), err


def _text_transport(report, target) -> None:
    """The report names the transport: transformers serve answered text, ignored n, refused vLLM's
    fields by name; both servers' text re-tokenised with the target's tokenizer (the served model's
    folder, no --tokenizer given)."""
    t = report["transport"]
    assert t["comparison"] == "re-tokenised text" and t["tokenizer"] == str(target)
    assert t["cannot_see"] and "whitespace" in t["cannot_see"]
    for endpoint in t["candidate"]:  # completions, and chat where the prompts hold chat
        hf = t["candidate"][endpoint]
        assert not hf["token_ids"] and not hf["n"] and not hf["logprobs"]
        assert {"return_token_ids", "return_tokens_as_token_ids"} <= set(hf["dropped"])
        ours = t["reference"][endpoint]
        assert ours["token_ids"] and ours["n"] and ours["dropped"] == []


def test_transformers_serve_matches_exitlaw_ar_at_t0(servers, capsys):
    rc, report, err = _audit(
        capsys, servers, str(servers["target"]), "prompts", temperature=0, max_new_tokens=8
    )
    assert rc == 0, (report, err)
    assert report["verdict"] == "no difference found" and report["divergences"] == []
    assert sorted(report["transport"]["candidate"]) == ["chat", "completions"]
    _text_transport(report, servers["target"])


def test_transformers_serve_passes_at_t1_with_the_stated_power(servers, capsys):
    rc, report, err = _audit(
        capsys, servers, str(servers["target"]), "one", temperature=1, tv=0.5, alpha=0.01
    )
    assert rc == 0, (report, err)
    pair = [t for t in report["tests"] if t["kind"] == "two-sample"]
    assert pair and all(t["power"] >= 0.9 and len(t["detail"]["cells"]) >= 2 for t in pair)
    # one sample per request on transformers serve, n per request on exitlaw serve
    n = report["samples_per_prompt_and_server"]
    assert report["requests"] == n + -(-n // 32)
    assert any("first-token test not run" in r for r in report["reasons"])
    _text_transport(report, servers["target"])


def test_a_different_target_behind_transformers_serve_is_lossy(servers, capsys):
    other = str(servers["other"])
    rc, report, err = _audit(capsys, servers, other, "one", temperature=1, tv=0.5, alpha=0.01)
    assert rc == 1 and report["verdict"] == "lossy", (report, err)
    test = next(t for t in report["tests"] if t["kind"] == "two-sample")
    assert test["rejects"] and test["power"] >= 0.9
    rc, report, err = _audit(capsys, servers, other, "one", temperature=0, max_new_tokens=8)
    assert rc == 1 and report["divergences"], (report, err)
