"""The HTTP layer's stub engine (no model), shared by the queue and client tests."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from types import SimpleNamespace

import pytest

from exitlaw.engine.serve.limits import ServeLimits


def _lps(tokens, top):
    """The stub's log-probabilities: token j's is -j; its top list is itself, then token 0 at -99."""
    return [(-float(j), [(t, -float(j)), (0, -99.0)][:top]) for j, t in enumerate(tokens)]


class StubEngine:
    """Decodes nothing: each run blocks until released, and records the order runs started in."""

    def __init__(self, limits):
        self.limits, self.model_name = limits, "stub"
        self.cfg = SimpleNamespace(method="ar", verifier="greedy", budget=1)
        self.tokenizer = SimpleNamespace(
            decode=lambda ids, **kw: "".join(chr(97 + t % 26) for t in ids)
        )
        self.gate, self.started, self.active, self.overlap = threading.Event(), [], 0, False
        self.max_tokens_asked: list[int] = []

    def encode(self, req):
        """A token-id prompt as given; any text prompt is [1, 2]."""
        return list(req.prompt) if isinstance(req.prompt[0], int) else [1, 2]

    def check(self, req, ids):
        pass

    def text(self, req, ids):
        return self.tokenizer.decode(ids)

    def run(self, req, ids, emit=None):
        from exitlaw.engine.serve.engine import Choice

        self.active += 1
        self.overlap |= self.active > 1
        self.started.append(req.seed)
        self.max_tokens_asked.append(req.max_tokens)
        self.gate.wait(30)
        self.active -= 1
        tokens = [t + 2 for t in ids][: req.max_tokens]  # [1, 2] -> [3, 4], "de"
        lps = None if req.logprobs is None else _lps(tokens, req.logprobs)
        for i in range(req.n if emit is not None else 0):  # a stream: each token its own block
            for j, t in enumerate(tokens):
                emit(i, [t], None if lps is None else lps[j : j + 1])
        return [
            Choice(tokens, self.tokenizer.decode(tokens), "length", [1] * (len(tokens) - 1), lps)
            for _ in range(req.n)
        ]

    def prompt_logprobs(self, ids, top):
        return [None] + _lps(ids, top)[1:]

    def close(self):
        pass


@contextlib.contextmanager
def running(engine, batching: str = "serial", max_batch: int = 16):
    """``(url, app)`` of a :class:`ServeApp` over ``engine`` (``batching``: serial, or continuous with a
    :class:`Scheduler` of ``max_batch`` rows), served by uvicorn on a free loopback port."""
    import uvicorn

    from exitlaw.engine.serve.app import ServeApp
    from exitlaw.engine.serve.scheduler import Scheduler
    from exitlaw.engine.serve.server import bind

    engine.closing = False  # an engine reused after an earlier server closed it
    scheduler = Scheduler(engine, max_batch) if batching == "continuous" else None
    app = ServeApp(engine, scheduler=scheduler)
    sock = bind("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(app.starlette(), log_level="warning", lifespan="off"))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])), daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}", app
    finally:
        server.should_exit = True
        thread.join(30)
        app.close()
        sock.close()


@pytest.fixture
def stub_server():
    engine = StubEngine(ServeLimits(max_concurrent=2))
    with running(engine) as (url, app):
        yield url, engine, app
        engine.gate.set()


@pytest.fixture(scope="module", params=["serial", "continuous"])
def tiny_server(tiny, request):
    """``(url, engine)``: the tiny pair served with DDTree + TEV, budget 4 (a real engine, no stub), in
    each batching mode."""
    from exitlaw.engine.serve.engine import ServeConfig, ServeEngine

    target, draft = tiny
    engine = ServeEngine(
        ServeConfig(target=str(target), draft=str(draft), method="ddtree", verifier="tev", budget=4)
    )
    with running(engine, request.param) as (url, _app):
        yield url, engine
