"""External continuation server: request format, tokenization, stop tokens, caching and clear errors."""

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from exitlaw.engine.training.continuation_server import ServerError, server_continuations
from exitlaw.engine.training.data import cached_sequences
from exitlaw.theory.sampling_settings import SamplingSettings
from helpers.cli_argv import train_argv, write_prompts


class CharTokenizer:
    """One token per character (ids = code points), enough to check the plumbing."""

    def __call__(self, text, add_special_tokens=False):
        assert add_special_tokens is False
        return {"input_ids": [ord(c) for c in text]}


def _serve(handler_fn):
    requests = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            requests.append((self.path, body))
            status, reply = handler_fn(body)
            data = reply.encode() if isinstance(reply, str) else json.dumps(reply).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, requests, f"http://127.0.0.1:{server.server_address[1]}"


def _echo(body):
    # continuation = the prompt's ids as characters, reversed, then '!' and more text
    text = "".join(chr(t) for t in reversed(body["prompt"])) + "!tail"
    return 200, {"choices": [{"text": text}]}


def test_server_continuations_send_token_prompts_and_cut_at_the_stop_token():
    server, requests, url = _serve(_echo)
    try:
        out = server_continuations(
            url,
            [[97, 98], [120]],
            CharTokenizer(),
            model="m",
            max_new_tokens=8,
            settings=SamplingSettings(0.7),
            seed=5,
            stop_tokens=[ord("!")],
        )
    finally:
        server.shutdown()
        server.server_close()
    assert out == [[98, 97, ord("!")], [120, ord("!")]]
    assert [p for p, _ in requests] == ["/v1/completions"] * 2
    assert requests[0][1] == {
        "model": "m",
        "prompt": [97, 98],
        "max_tokens": 8,
        "temperature": 0.7,
        "seed": 5,
        "n": 1,
    }
    assert requests[1][1]["seed"] == 6


def test_server_continuations_are_cached_under_their_source(tmp_path):
    server, requests, url = _serve(_echo)
    try:
        gen = lambda prompts: server_continuations(
            url,
            prompts,
            CharTokenizer(),
            model="m",  # noqa: E731
            max_new_tokens=4,
            settings=SamplingSettings(1.0),
            seed=0,
        )
        kw = dict(
            max_new_tokens=4,
            settings=SamplingSettings(1.0),
            seed=0,
            generate=gen,
            source=f"server:{url}:m",
        )
        first = cached_sequences(None, "fp", [[97, 98]], tmp_path, **kw)
        again = cached_sequences(None, "fp", [[97, 98]], tmp_path, **kw)
    finally:
        server.shutdown()
        server.server_close()
    assert len(requests) == 1  # the second call was served from the cache
    assert first.continuations == again.continuations == [[98, 97, ord("!"), ord("t")]]


def test_http_errors_and_bad_replies_are_named():
    server, _, url = _serve(lambda body: (500, {"error": "boom"}))
    try:
        with pytest.raises(ServerError, match="HTTP 500"):
            server_continuations(
                url,
                [[1]],
                CharTokenizer(),
                model="m",
                max_new_tokens=2,
                settings=SamplingSettings(1.0),
                seed=0,
            )
    finally:
        server.shutdown()
        server.server_close()
    server, _, url = _serve(lambda body: (200, {"nothing": []}))
    try:
        with pytest.raises(ServerError, match="choices"):
            server_continuations(
                url,
                [[1]],
                CharTokenizer(),
                model="m",
                max_new_tokens=2,
                settings=SamplingSettings(1.0),
                seed=0,
            )
    finally:
        server.shutdown()
        server.server_close()


def test_unreachable_server_is_a_clear_error():
    with pytest.raises(
        ServerError,
        match="cannot reach the continuation server at http://127.0.0.1:9/v1/completions",
    ):
        server_continuations(
            "http://127.0.0.1:9",
            [[1]],
            CharTokenizer(),
            model="m",
            max_new_tokens=2,
            settings=SamplingSettings(1.0),
            seed=0,
            timeout=5,
        )


def test_generate_and_source_go_together(tmp_path):
    with pytest.raises(ValueError, match="both generate and source"):
        cached_sequences(
            None,
            "fp",
            [[1]],
            tmp_path,
            max_new_tokens=2,
            settings=SamplingSettings(1.0),
            seed=0,
            generate=lambda p: [[1]],
        )


def test_exitlaw_train_takes_continuations_from_the_server(tmp_path):
    from exitlaw.cli import main
    from exitlaw.engine.models.tiny import write_tiny_models

    tdir, ddir = write_tiny_models(tmp_path / "models")
    prompts = write_prompts(tmp_path / "p.jsonl")
    server, requests, url = _serve(
        lambda body: (200, {"choices": [{"text": " return a + b\n    pass\n"}]})
    )
    try:
        run = dict(steps=1, budget=8, batch_size=1, anchors=2, max_new_tokens=12, no_progress=True)
        server_flags = dict(continuations_server=url, server_model="tiny-target")
        argv = train_argv(tdir, ddir, prompts, out=tmp_path / "run", **run, **server_flags)
        rc = main([*argv, "--cache-dir", str(tmp_path / "cache")])
    finally:
        server.shutdown()
        server.server_close()
    assert rc == 0
    assert len(requests) == 2 and all(body["model"] == "tiny-target" for _, body in requests)
    cache = next((tmp_path / "cache").glob("continuations-*.jsonl")).read_text().splitlines()
    assert len(cache) == 3 and all(json.loads(line)["completion_ids"] for line in cache[1:])
