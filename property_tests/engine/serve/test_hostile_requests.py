"""What no request may do to the server (issue 51): about 80 malformed requests (bad JSON, 50,000-deep
nesting, lone surrogates, wrong types, bad prompts and messages, bodies too large, a client gone
mid-body) are each answered with an OpenAI-shaped 4xx and leave no traceback in a real ``exitlaw serve``
log; the body's nesting is measured before it is parsed; and a huge prompt is tokenized off the decode
worker, so a running stream's chunks keep coming while it is read and refused."""

from __future__ import annotations

import http.client
import json
import socket
import statistics
import threading
import time

import pytest

from exitlaw.engine.serve.limits import MAX_JSON_DEPTH, PROMPT_BYTES_SLACK, json_depth
from helpers.servers import post, start_servers

from .conftest import running

C, CHAT = "/v1/completions", "/v1/chat/completions"
USER = {"role": "user", "content": "hi"}


def _j(obj) -> bytes:
    return json.dumps(obj).encode()


def malformed() -> list[tuple[str, str, bytes]]:
    """(method, path, body) of requests no server should answer outside 4xx."""
    out: list[tuple[str, str, bytes]] = []
    raw = [
        b"",
        b"{",
        b"not json",
        b"\xff\xfe\x00",
        b"[]",
        b"null",
        b"1",
        b'"text"',
        b"{}",
        b"[1, 2]",
    ]
    out += [("POST", p, b) for b in raw for p in (C, CHAT)]
    deep = [
        b"[" * 50_000 + b"]" * 50_000,
        b'{"prompt": ' + b"[" * 1000 + b"]" * 1000 + b"}",
        b'{"a":' * 70 + b"1" + b"}" * 70,
        b'{"prompt": "x", "stop": '
        + b"[" * (MAX_JSON_DEPTH + 1)
        + b"]" * (MAX_JSON_DEPTH + 1)
        + b"}",
    ]
    out += [("POST", C, b) for b in deep] + [("POST", CHAT, deep[0])]
    lone = [
        b'{"prompt": "\\ud800"}',
        b'{"prompt": "ok \\udfff then"}',
        b'{"prompt": ["fine", "\\ud83d"]}',
        b'{"prompt": "x", "stop": ["\\ud800"]}',
        b'{"prompt": "x", "model": "\\udc00"}',
        b'{"\\ud800": 1, "prompt": "x"}',
    ]
    out += [("POST", C, b) for b in lone]
    out += [
        ("POST", CHAT, b'{"messages": [{"role": "user", "content": "\\ud800"}]}'),
        (
            "POST",
            CHAT,
            b'{"messages": [{"role": "user", "content": [{"type": "text", "text": "\\udbff"}]}]}',
        ),
    ]
    bad_fields = {
        "max_tokens": ["x", -5, 1.5, 10**9],
        "temperature": ["hot", -1],
        "n": [0, "two", 10**6],
        "seed": [-1, 2**64, "s"],
        "stop": [5, [1], ["a"] * 5, ""],
        "stream": ["yes"],
        "logprobs": [-1, 100],
        "top_k": ["k", -3],
        "top_p": [2, "p"],
        "min_p": [-0.5],
        "ignore_eos": ["true"],
        "truncate_prompt_tokens": [0, "all"],
        "min_tokens": [4],
        "echo": [1],
        "stop_token_ids": ["x", [1.5]],
        "stream_options": [5, {"bogus": True}],
        "repetition_penalty": [1.3],
        "frobnicate": [1],
    }
    for name, values in bad_fields.items():
        out += [("POST", C, _j({"prompt": "hi", name: v})) for v in values]
    out += [("POST", C, b'{"prompt": "hi", "max_tokens": 1e400}')]
    out += [("POST", C, b'{"prompt": "hi", "top_p": NaN}')]
    prompts = ["", [], [[]], [-1], [10**30], [1.5], [True], {"a": 1}, None]
    out += [("POST", C, _j({"prompt": p})) for p in prompts]
    messages = [
        None,
        [],
        [{}],
        [{"role": 1}],
        [{"role": "user", "content": [{"type": "image_url", "image_url": "x"}]}],
        [{"role": "user", "content": "x", "tool_calls": []}],
        "hello",
    ]
    out += [("POST", CHAT, _j({"messages": m})) for m in messages]
    out += [
        ("POST", CHAT, _j({"messages": [USER], "chat_template_kwargs": {"tokenize": False}})),
        ("POST", CHAT, _j({"messages": [USER], "model": "other"})),
        ("POST", C, _j({"prompt": "word " * 180_000})),  # ~0.9 MB: over the prompt limit
        ("POST", C, b'{"prompt": "' + b"a" * (1 << 20) + b'"}'),  # over --max-body-bytes
        ("GET", C, b""),
        ("POST", "/v1/nothing", _j({"prompt": "hi"})),
        ("DELETE", "/v1/models", b""),
    ]
    return out


def _send(host: str, method: str, path: str, body: bytes) -> tuple[int, dict | None]:
    conn = http.client.HTTPConnection(host, timeout=60)
    try:
        conn.request(method, path, body, {"Content-Type": "application/json"})
        resp = conn.getresponse()
        data = resp.read()
    finally:
        conn.close()
    try:
        return resp.status, json.loads(data)
    except ValueError:
        return resp.status, None


def _gone_mid_body(host: str) -> None:
    """A client that declares a body, sends part of it and closes its connection."""
    name, port = host.split(":")
    with socket.create_connection((name, int(port)), timeout=10) as sock:
        sock.sendall(
            b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 5000\r\n\r\n" + b'{"prompt": "par'
        )
        time.sleep(0.2)


def test_no_malformed_request_is_answered_outside_4xx_and_the_log_holds_no_traceback(
    tiny, tmp_path
):
    target, _draft = tiny
    servers = start_servers({"ar": ["--target", str(target), "--method", "ar"]}, tmp_path)
    server = servers["ar"]
    try:
        host = server.url.split("//")[1]
        asks = malformed()
        answers = [_send(host, *a) for a in asks]
        for _ in range(3):
            _gone_mid_body(host)
        ok = post(server.url + C, {"prompt": "hi", "max_tokens": 2, "temperature": 0})
    finally:
        server.stop()
    statuses = [s for s, _ in answers]
    print(f"{len(asks)} malformed requests: statuses {sorted(set(statuses))}")
    assert len(asks) >= 80
    outside = [(a[1], a[2][:80], s) for a, s in zip(asks, statuses) if not 400 <= s < 500]
    assert not outside, outside
    # every answer is an OpenAI-shaped error body naming what is wrong
    for (method, path, body), (status, out) in zip(asks, answers):
        err = (out or {}).get("error")
        assert isinstance(err, dict) and err.get("message") and err.get("type"), (
            path,
            body[:80],
            out,
        )
    codes = {a[2][:20]: o["error"]["code"] for a, (_, o) in zip(asks, answers)}
    assert codes[b"[" * 20] == "json_depth"
    assert codes[b'{"prompt": "\\ud800"}'] == "invalid_unicode"
    assert ok[0] == 200  # the server still serves
    log = server.text()
    assert "Traceback" not in log and "Exception" not in log, log[-3000:]


def test_json_depth_is_measured_on_the_bytes_strings_left_out():
    assert json_depth(b"") == 0 and json_depth(b"{}") == 1 and json_depth(b"[[[]]]") == 3
    assert json_depth(b'{"a": "[[[[{{"}') == 1  # brackets in a string
    assert json_depth(b'{"a": "\\"[[["}') == 1  # an escaped quote does not end the string
    assert json_depth(b'{"a": "x\\\\", "b": [[1]]}') == 3  # an escaped backslash does not escape
    assert json_depth(b"[" * 50_000) == 50_000


@pytest.fixture(scope="module")
def ar_engine(tiny):
    from exitlaw.engine.serve.engine import ServeConfig, ServeEngine

    target, _draft = tiny
    return ServeEngine(ServeConfig(target=str(target), method="ar"))


def test_a_prompt_that_cannot_fit_is_refused_before_it_is_tokenized(ar_engine):
    class NoTokenizing:
        def __getattr__(self, name):
            raise AssertionError("the prompt was tokenized")

    saved, ar_engine.encoder = ar_engine.encoder, NoTokenizing()
    try:
        with running(ar_engine, "continuous") as (url, _app):
            status, out = post(url + C, {"prompt": "word " * 180_000, "max_tokens": 2})
    finally:
        ar_engine.encoder = saved
    assert status == 400 and out["error"]["code"] == "max_prompt_tokens", out
    assert "before tokenizing" in out["error"]["message"]


def _stream_gaps(url: str, during: threading.Event, done: threading.Event, out: dict) -> None:
    """Read a long stream; the gaps between chunks, split by whether a huge prompt was in flight."""
    conn = http.client.HTTPConnection(url.split("//")[1], timeout=120)
    body = {"prompt": [11, 42, 7], "max_tokens": 600, "temperature": 1.0, "seed": 3, "stream": True}
    conn.request("POST", C, json.dumps(body), {"Content-Type": "application/json"})
    resp = conn.getresponse()
    last, quiet, busy = None, [], []
    while line := resp.readline():
        if not line.startswith(b"data: "):
            continue
        now = time.perf_counter()
        if last is not None:
            (busy if during.is_set() else quiet).append(now - last)
        last = now
        out["chunks"] = out.get("chunks", 0) + 1
        if done.is_set() and busy:
            break
    conn.close()
    out.update(quiet=quiet, busy=busy)


def test_a_huge_prompt_does_not_stall_a_running_stream(ar_engine):
    """While prompts just under the pre-tokenizing bound are read and refused (over the token limit),
    a running stream's largest gap between chunks stays near its ordinary gaps."""
    # 3/4 of the bytes the pre-tokenizing bound lets through: tokenized, then over the token limit
    bound = ar_engine.limits.max_prompt_tokens * ar_engine.longest_token_bytes * PROMPT_BYTES_SLACK
    huge = "0 1 2 3 4 5 6 7 8 9 " * (3 * bound // 4 // 20)
    with running(ar_engine, "continuous") as (url, _app):
        during, done, out = threading.Event(), threading.Event(), {}
        reader = threading.Thread(target=_stream_gaps, args=(url, during, done, out))
        reader.start()
        while out.get("chunks", 0) < 30:
            time.sleep(0.01)
        during.set()
        answers, took = [], []
        for _ in range(2):
            t0 = time.perf_counter()
            answers.append(post(url + C, {"prompt": huge, "max_tokens": 4}))
            took.append(time.perf_counter() - t0)
        during.clear()
        done.set()
        reader.join(120)
    assert all(s == 400 and o["error"]["code"] == "max_prompt_tokens" for s, o in answers), answers
    assert "before tokenizing" not in answers[0][1]["error"]["message"]  # it was tokenized
    quiet, busy = out["quiet"], out["busy"]
    print(
        f"huge prompts: {', '.join(f'{t:.2f}' for t in took)} s each; stream gaps: median {statistics.median(quiet) * 1e3:.1f} ms, "
        f"largest quiet {max(quiet) * 1e3:.1f} ms, largest while tokenizing {max(busy) * 1e3:.1f} ms "
        f"({len(busy)} chunks)"
    )
    assert len(busy) >= 3  # the stream kept going while the prompts were read
    # tokenized on the decode worker, one gap would last about a whole request
    assert max(busy) <= max(0.15, 0.5 * min(took)), (max(busy), took)
