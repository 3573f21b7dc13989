"""The HTTP layer's queue on a stub engine (no model): requests past `--max-concurrent` get 429 naming the
limit, held places are given back, and requests are decoded one at a time in arrival order."""

from __future__ import annotations

import threading
import time

from helpers.servers import post


def test_requests_past_the_limit_get_429_and_places_are_given_back(stub_server):
    url, engine, app = stub_server
    results = {}

    def ask(seed):
        results[seed] = post(
            url + "/v1/completions", {"prompt": "x", "seed": seed, "max_tokens": 2}
        )

    threads = [threading.Thread(target=ask, args=(s,)) for s in (1, 2)]
    for t in threads:
        t.start()
        while app.held < threads.index(t) + 1:  # each request held before the next is sent
            time.sleep(0.01)
    status, body = post(url + "/v1/completions", {"prompt": "x", "seed": 3, "max_tokens": 2})
    assert (
        status == 429
        and "--max-concurrent" in body["error"]["message"]
        and body["error"]["code"] == "max_concurrent"
    )
    engine.gate.set()
    for t in threads:
        t.join(30)
    assert [results[s][0] for s in (1, 2)] == [200, 200] and app.held == 0
    assert engine.started == [1, 2] and not engine.overlap  # one at a time, in arrival order
    status, body = post(url + "/v1/completions", {"prompt": "x", "seed": 4, "max_tokens": 2})
    assert status == 200 and body["choices"][0]["token_ids"] == [3, 4]


def test_a_chat_request_without_max_tokens_gets_the_stated_default(stub_server):
    """256 (``CHAT_MAX_TOKENS``), not the 1,024 of ``--max-tokens-limit``; a completion gets 16."""
    url, engine, _app = stub_server
    engine.gate.set()
    chat = {"messages": [{"role": "user", "content": "hi"}]}
    assert post(url + "/v1/chat/completions", chat)[0] == 200
    assert post(url + "/v1/completions", {"prompt": "x"})[0] == 200
    assert post(url + "/v1/chat/completions", {**chat, "max_tokens": 3})[0] == 200
    assert engine.max_tokens_asked == [256, 16, 3]
