"""Continuous batching where the alternatives answer differently (issue 52): waiting choices are admitted
oldest first (newest-first gives another order), and a user's verifier (``--verifier MODULE:CALLABLE``)
in a request of ``n > 1`` choices gives each choice its own seed stream, in continuous mode exactly as in
serial mode, with a seed (the same tokens in both modes) and without one (it still works, and the choices
still differ)."""

from __future__ import annotations

import time

import pytest

from helpers.servers import post

from .conftest import running
from .test_serve_engine import path_engine

USER_VERIFIER = ("ddtree", "exitlaw.simulate.verifiers:tev")


@pytest.fixture(scope="module")
def engine(tiny):
    return path_engine(tiny, ("ddtree", "tev"))


def _config(engine, max_tokens, seed=0):
    from exitlaw.engine.serve.requests import parse_request

    body = {"prompt": [1, 2], "max_tokens": max_tokens, "temperature": 0}
    return engine.decode_config(parse_request(body, chat=False, default_max_tokens=16), seed)


def test_waiting_choices_are_admitted_oldest_first(engine):
    """One row at a time: while a long choice holds it, three requests queue; once it is cancelled they
    run in the order they came (first blocks A, B, C), not newest first (C, B, A)."""
    from exitlaw.engine.serve.scheduler import Cancelled, Job, Scheduler

    sched = Scheduler(engine, 1)
    try:
        long = Job([3, 4, 5], _config(engine, 400))
        sched.submit_all([long], lambda: None)
        while sched.stats.rounds < 1:
            time.sleep(0.005)
        order: list[str] = []
        queued = []
        for name in "ABC":
            job = Job([7, 8], _config(engine, 3), emit=lambda block, name=name: order.append(name))
            queued.append(sched.submit_all([job], lambda: None))
            time.sleep(0.01)
        assert len(sched._waiting) == 3  # all three queued behind the long choice
        sched.cancel([long])
        with pytest.raises(Cancelled):
            long.future.result(60)
        for q in queued:
            q.result(60)
        firsts = list(dict.fromkeys(order))  # each name at its first block
        assert firsts == ["A", "B", "C"], order
        # one row at a time: each ran to its end before the next was admitted
        assert order == sorted(order), order
    finally:
        sched.close()


@pytest.fixture(scope="module")
def user_engine(tiny):
    return path_engine(tiny, USER_VERIFIER)


def _choices(url, **body):
    status, out = post(
        url + "/v1/completions",
        {"prompt": [11, 42, 7], "max_tokens": 8, "temperature": 1.0, **body},
    )
    assert status == 200, out
    return [c["token_ids"] for c in out["choices"]]


def test_a_user_verifier_with_n_choices_and_a_seed_answers_alike_in_both_modes(user_engine):
    answers = {}
    for mode in ("serial", "continuous"):
        with running(user_engine, mode) as (url, _app):
            answers[mode] = [_choices(url, n=4, seed=s) for s in (5, 6)]
            assert _choices(url, n=4, seed=5) == answers[mode][0]  # reproducible
    assert answers["continuous"] == answers["serial"]
    for choices in answers["continuous"]:
        # each choice on its own seed stream: four samples, not one sample four times
        assert len(choices) == 4 and len({tuple(c) for c in choices}) > 1, choices


@pytest.mark.parametrize("mode", ["serial", "continuous"])
def test_a_user_verifier_with_n_choices_and_no_seed_still_works(user_engine, mode):
    with running(user_engine, mode) as (url, _app):
        first = _choices(url, n=3)
        second = _choices(url, n=3)
    assert len(first) == len(second) == 3
    assert all(1 <= len(c) <= 8 for c in first + second)
    # fresh seeds per request and per choice: the six samples are not all one
    assert len({tuple(c) for c in first}) > 1 and first != second, (first, second)
