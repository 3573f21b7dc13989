"""`exitlaw serve --batching continuous` on the tiny pair: requests of different prompts, lengths, sampling
settings and seeds sent at once each get exactly what the same request gets alone from the serial server
(one request at a time, the engine's single-sequence path); a client that goes away (a closed stream, a
closed connection while waiting) has its choice dropped within one round, counted by ``GET /stats``;
a full server answers 429 naming its limit."""

from __future__ import annotations

import http.client
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from helpers.servers import post

from .conftest import running
from .test_serve_engine import DECIDE_PATHS, path_engine

# (prompt, max_tokens, sampling fields, seed): lengths, settings and seeds all differ
REQUESTS = [
    ([11, 42, 7, 99, 150], 12, {"temperature": 1.0}, 0),
    ([5], 3, {"temperature": 1.0}, 2**63 - 1),
    ([9, 8, 7, 6, 5, 4, 3, 2, 1], 20, {"temperature": 0.0}, 7),
    ([33, 44], 9, {"temperature": 0.7, "top_k": 20, "top_p": 0.9}, 12345),
    ([120, 121, 122], 1, {"temperature": 1.0}, 3),
    ([17, 250, 3, 3, 91], 15, {"temperature": 1.0}, 3),
    ([64, 65], 11, {"temperature": 0.7, "top_k": 20, "top_p": 0.9}, 99),
    ([7, 77, 177], 17, {"temperature": 1.3, "min_p": 0.05}, 5),
]


@pytest.fixture(scope="module")
def engine(tiny):
    from exitlaw.engine.serve.engine import ServeConfig, ServeEngine

    target, draft = tiny
    return ServeEngine(
        ServeConfig(target=str(target), draft=str(draft), method="ddtree", verifier="tev", budget=6)
    )


def _body(prompt, max_tokens, sampling, seed, **more):
    return {"prompt": prompt, "max_tokens": max_tokens, "seed": seed, **sampling, **more}


def _stats(url):
    conn = http.client.HTTPConnection(url.split("//")[1], timeout=10)
    try:
        conn.request("GET", "/stats")
        return json.loads(conn.getresponse().read())
    finally:
        conn.close()


def test_requests_decoded_together_get_what_each_gets_alone(engine):
    with running(engine, "serial") as (url, _):
        alone = [post(url + "/v1/completions", _body(*r)) for r in REQUESTS]
    with running(engine, "continuous", max_batch=6) as (url, _):
        with ThreadPoolExecutor(len(REQUESTS)) as pool:
            together = list(pool.map(lambda r: post(url + "/v1/completions", _body(*r)), REQUESTS))
        stats = _stats(url)
    assert stats["batching"] == "continuous" and stats["finished"] == len(REQUESTS)
    assert stats["largest_batch"] > 1, stats  # they really shared batches
    # every round of every request's row is counted once: rows decoded, summed over the rounds run
    assert stats["row_rounds"] == sum(t["acceptance"]["rounds"] for _, t in together), stats
    assert stats["row_rounds"] > stats["rounds"], stats  # some rounds decoded several rows
    sizes = {int(k): v for k, v in stats["round_sizes"].items()}  # rows in a round -> rounds
    assert sum(sizes.values()) == stats["rounds"], stats
    assert sum(k * v for k, v in sizes.items()) == stats["row_rounds"], stats
    assert max(sizes) <= stats["largest_batch"], stats
    for r, (sa, a), (st, t) in zip(REQUESTS, alone, together):
        assert sa == st == 200, (a, t)
        ca, ct = a["choices"][0], t["choices"][0]
        assert ct["token_ids"] == ca["token_ids"], f"request {r}"
        assert len(ct["token_ids"]) == r[1] or ct["finish_reason"] == "stop"
        assert t["acceptance"]["rounds"] == a["acceptance"]["rounds"]


def test_n_choices_are_rows_of_their_own_and_reproducible(engine):
    body = _body([11, 42, 7], 10, {"temperature": 1.0}, 4, n=3)
    with running(engine, "continuous") as (url, _):
        first = post(url + "/v1/completions", body)[1]
        with ThreadPoolExecutor(3) as pool:  # again, beside two other requests
            others = [pool.submit(post, url + "/v1/completions", _body(*r)) for r in REQUESTS[:2]]
            again = post(url + "/v1/completions", body)[1]
            [f.result() for f in others]
    ids = [c["token_ids"] for c in first["choices"]]
    assert ids == [c["token_ids"] for c in again["choices"]]
    assert len(ids) == 3 and len({tuple(x) for x in ids}) > 1  # three samples, not one thrice


def _wait_until(url, cond, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        s = _stats(url)
        if cond(s):
            return s
        time.sleep(0.05)
    raise AssertionError(f"stats never met the condition: {_stats(url)}")


def test_a_closed_stream_stops_decoding_within_one_round(engine):
    with running(engine, "continuous") as (url, _):
        conn = http.client.HTTPConnection(url.split("//")[1], timeout=30)
        # ignore_eos: the request runs its 1,000 tokens whatever the seed draws
        body = _body([11, 42, 7], 1000, {"temperature": 1.0}, 3, stream=True, ignore_eos=True)
        conn.request(
            "POST", "/v1/completions", json.dumps(body), {"Content-Type": "application/json"}
        )
        resp = conn.getresponse()
        assert resp.status == 200
        chunks = 0
        while chunks < 2:  # two data chunks, then the client goes away
            if resp.readline().startswith(b"data: "):
                chunks += 1
        conn.sock.shutdown(2)
        conn.close()
        s = _wait_until(url, lambda s: s["cancelled"] == 1 and s["running"] == 0)
        rounds = s["rounds"]
        assert s["rounds_after_cancel"] and max(s["rounds_after_cancel"]) <= 1, s
        assert rounds < 200, s  # far fewer than the 1,000 tokens asked
        # the next request is served at once, and no round of the cancelled one ran meanwhile
        status, out = post(url + "/v1/completions", _body([5, 6], 2, {"temperature": 0.0}, 0))
        assert status == 200 and len(out["choices"][0]["token_ids"]) == 2
        assert _stats(url)["rounds"] <= rounds + 2


def test_a_client_that_times_out_while_waiting_is_cancelled(engine):
    with running(engine, "continuous") as (url, _):
        conn = http.client.HTTPConnection(url.split("//")[1], timeout=0.3)
        body = _body([11, 42, 7], 1000, {"temperature": 1.0}, 3, ignore_eos=True)  # 1,000 tokens
        conn.request(
            "POST", "/v1/completions", json.dumps(body), {"Content-Type": "application/json"}
        )
        with pytest.raises(TimeoutError):
            conn.getresponse()
        conn.close()
        s = _wait_until(url, lambda s: s["cancelled"] == 1 and s["running"] == 0)
        assert s["finished"] == 0 and s["rounds"] < 400, s


def test_a_full_server_answers_429_naming_its_limit(tiny):
    from exitlaw.engine.serve.engine import ServeConfig, ServeEngine
    from exitlaw.engine.serve.limits import ServeLimits

    target, draft = tiny
    engine = ServeEngine(
        ServeConfig(target=str(target), draft=str(draft), budget=4), ServeLimits(max_concurrent=1)
    )
    with running(engine, "continuous") as (url, app):
        long = threading.Thread(
            target=post,
            args=(url + "/v1/completions", _body([11, 42, 7], 1000, {}, 3, ignore_eos=True)),
        )
        long.start()
        while app.held < 1:
            time.sleep(0.01)
        status, body = post(url + "/v1/completions", _body([1, 2], 2, {}, 1))
        assert status == 429 and body["error"]["code"] == "max_concurrent"
        assert "--max-concurrent" in body["error"]["message"]
        long.join(120)
        assert app.held == 0


@pytest.mark.parametrize("path", DECIDE_PATHS, ids=["/".join(p) for p in DECIDE_PATHS])
def test_on_every_decide_path_together_equals_alone_and_top_k_one_is_greedy(tiny, path):
    """AR, chain, DDTree with every built-in verifier and a user's MODULE:CALLABLE verifier: seeded
    requests at once answer what each answers alone (serial), and every path receives the request's
    processed row (top-k = 1 at T = 1 serves the greedy tokens)."""
    engine = path_engine(tiny, path)
    asks = [_body(*r[:1], 8, {"temperature": 1.0}, r[3]) for r in REQUESTS[:4]]
    greedy = _body([11, 42, 7], 8, {"temperature": 0.0}, 0)
    top1 = [_body([11, 42, 7], 8, {"temperature": 1.0, "top_k": 1}, s) for s in (0, 7)]
    with running(engine, "serial") as (url, _):
        alone = [post(url + "/v1/completions", a)[1] for a in asks]
        want = post(url + "/v1/completions", greedy)[1]["choices"][0]["token_ids"]
    with running(engine, "continuous") as (url, _):
        with ThreadPoolExecutor(len(asks) + 2) as pool:
            together = list(pool.map(lambda a: post(url + "/v1/completions", a)[1], asks + top1))
    for a, t in zip(alone, together):
        assert t["choices"][0]["token_ids"] == a["choices"][0]["token_ids"]
    assert [t["choices"][0]["token_ids"] for t in together[len(asks) :]] == [want, want]


def test_a_call_whose_caller_has_gone_is_skipped_and_the_worker_goes_on(engine):
    """A worker call cancelled before it runs (its awaiting task cancelled) is not run, and a choice whose
    future was cancelled by its caller does not stop the worker: the next request is served."""
    from exitlaw.engine.serve.scheduler import Job, Scheduler

    sched = Scheduler(engine, 4)
    try:
        ran = []
        gate = sched.call(lambda: __import__("time").sleep(0.3))  # keeps the worker busy
        skipped = sched.call(lambda: ran.append(1))
        assert skipped.cancel()
        gate.result(10)
        cfg = _job_config(engine, 4)
        gone = Job([1, 2], cfg)
        gone.future.cancel()  # its caller went away before the worker ended it
        sched.submit_all([gone], lambda: None)
        fresh = Job([1, 2], cfg)
        sched.submit_all([fresh], lambda: None)
        assert len(fresh.future.result(30)[0]) == 4 and ran == []
    finally:
        sched.close()


def _job_config(engine, max_tokens):
    from exitlaw.engine.serve.requests import parse_request

    body = {"prompt": [1, 2], "max_tokens": max_tokens, "temperature": 0}
    return engine.decode_config(parse_request(body, chat=False, default_max_tokens=16), 0)


def test_a_request_queued_from_a_worker_call_joins_in_that_pass_and_is_answered_in_its_last(engine):
    """With another row decoding (so rounds go on), choices queued by ``submit_all`` inside a worker call
    get their first token before any further round, and the request's ``then`` runs on the worker before
    any round after the one that delivered its last block: no round passes between the prompt's check
    and the batch, nor between the last block and the answer."""
    import threading

    from exitlaw.engine.serve.scheduler import Job, Scheduler

    sched = Scheduler(engine, 4)
    try:
        long = Job([3, 4, 5], _job_config(engine, 40))
        sched.submit_all([long], lambda: None)
        while sched.stats.rounds < 2:  # the long row is decoding
            time.sleep(0.005)
        seen: list[int] = []  # the worker's round count at each block of the short choice
        short = Job(
            [1, 2], _job_config(engine, 4), emit=lambda block: seen.append(sched.stats.rounds)
        )
        answered = {}

        def then():
            answered.update(rounds=sched.stats.rounds, thread=threading.current_thread().name)
            return "answer"

        def queue_it():
            return sched.stats.rounds, sched.submit_all([short], then)

        at_call, decoded = sched.call(queue_it).result(30)
        assert decoded.result(30) == "answer"
        assert seen[0] == at_call  # the first token came in the call's own pass, before a round
        assert answered == {"rounds": seen[-1], "thread": "exitlaw-decode"}
        assert (
            not long.future.done()
        )  # rounds were still going on: a later pass would have counted more
        assert len(short.future.result()[0]) == 4
    finally:
        sched.close()


def test_a_failed_choice_ends_its_requests_answer_with_that_error_and_then_never_runs(engine):
    from exitlaw.engine.serve.scheduler import Cancelled, Job, Scheduler

    sched = Scheduler(engine, 4)
    try:
        ran = []
        # the second choice is long: it is still decoding when the first one's cancel ends the answer
        jobs = [Job([1, 2], _job_config(engine, 30)), Job([7], _job_config(engine, 200))]
        decoded = sched.submit_all(jobs, lambda: ran.append(1))
        sched.cancel(jobs[:1])
        with pytest.raises(Cancelled):
            decoded.result(30)
        sched.cancel(jobs)
        with pytest.raises(Cancelled):
            jobs[1].future.result(30)
        assert ran == []
        assert sched.submit_all([], lambda: "no choices").result(30) == "no choices"
    finally:
        sched.close()
