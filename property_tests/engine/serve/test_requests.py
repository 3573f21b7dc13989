"""Request parsing of `exitlaw serve`: every bad field is refused by name with a 4xx, nothing loads code."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exitlaw.engine.serve.errors import APIError
from exitlaw.engine.serve.limits import ServeLimits, check_request_size
from exitlaw.engine.serve.requests import parse_request
from exitlaw.engine.serve.user_verifier import load_user_verifier
from exitlaw.theory.sampling_settings import MIN_TEMPERATURE


def test_openai_defaults_and_fields_are_read():
    r = parse_request({"prompt": "hi"}, chat=False, default_max_tokens=16)
    assert (r.n, r.max_tokens, r.temperature, r.seed, r.stream, r.logprobs) == (
        1,
        16,
        1.0,
        None,
        False,
        None,
    )
    r = parse_request(
        {
            "messages": [{"role": "user", "content": "hi"}],
            "max_completion_tokens": 5,
            "n": 3,
            "seed": 4,
            "logprobs": True,
            "top_logprobs": 2,
            "stop": "x",
            "temperature": 0,
        },
        chat=True,
        default_max_tokens=99,
    )
    assert (r.max_tokens, r.n, r.seed, r.logprobs, r.stop, r.temperature, r.chat) == (
        5,
        3,
        4,
        2,
        ("x",),
        0.0,
        True,
    )
    assert parse_request({"prompt": [1, 2, 3]}, chat=False, default_max_tokens=1).prompt == [
        1,
        2,
        3,
    ]


@pytest.mark.parametrize(
    "body, name",
    [
        ({"prompt": ""}, "prompt"),
        ({"prompt": 3}, "prompt"),
        ({"prompt": ["a", ""]}, "prompt"),
        ({"prompt": ["a", 5]}, "prompt"),
        ({"prompt": [[1], []]}, "prompt"),
        ({"prompt": []}, "prompt"),
        ({"prompt": "x", "n": 0}, "n"),
        ({"prompt": "x", "n": True}, "n"),
        ({"prompt": "x", "max_tokens": -1}, "max_tokens"),
        ({"prompt": "x", "temperature": -0.5}, "temperature"),
        ({"prompt": "x", "temperature": "hot"}, "temperature"),
        ({"prompt": "x", "temperature": 9.99e-7}, "temperature"),
        ({"prompt": "x", "seed": -1}, "seed"),
        ({"prompt": "x", "stop": ["a"] * 5}, "stop"),
        ({"prompt": "x", "logprobs": 21}, "logprobs"),
        ({"prompt": "x", "top_p": 1.5}, "top_p"),
        ({"prompt": "x", "top_p": 0}, "top_p"),
        ({"prompt": "x", "top_k": -2}, "top_k"),
        ({"prompt": "x", "top_k": 2.5}, "top_k"),
        ({"prompt": "x", "min_p": 1.0}, "min_p"),
        ({"prompt": "x", "min_p": -0.1}, "min_p"),
        ({"prompt": "x", "presence_penalty": 1}, "presence_penalty"),
        ({"prompt": "x", "verifier": "os:system"}, "verifier"),
        ({"prompt": "x", "stream_options": {"x": 1}}, "stream_options"),
    ],
)
def test_a_bad_field_is_refused_by_name(body, name):
    with pytest.raises(APIError) as err:
        parse_request(body, chat=False, default_max_tokens=16)
    assert err.value.status == 400 and name in err.value.message
    assert err.value.body()["error"]["type"] == "invalid_request_error"


@pytest.mark.parametrize("chat", [False, True])
def test_a_temperature_below_the_floor_is_a_400_naming_it_and_the_floor_and_greedy(chat):
    below = float(np.nextafter(MIN_TEMPERATURE, 0.0))
    body = {"messages": [{"role": "user", "content": "x"}]} if chat else {"prompt": "x"}
    with pytest.raises(APIError) as err:
        parse_request({**body, "temperature": below}, chat=chat, default_max_tokens=4)
    e = err.value
    assert e.status == 400 and e.param == "temperature"
    assert repr(below) in e.message and "1e-06" in e.message and "use 0 for greedy" in e.message
    for t in (0, MIN_TEMPERATURE, float(np.nextafter(MIN_TEMPERATURE, 1.0))):
        r = parse_request({**body, "temperature": t}, chat=chat, default_max_tokens=4)
        assert r.temperature == t


def test_chat_messages_must_be_text_and_limits_name_their_flag():
    with pytest.raises(APIError, match="messages"):
        parse_request(
            {"messages": [{"role": "user", "content": [{"type": "text"}]}]},
            chat=True,
            default_max_tokens=1,
        )
    with pytest.raises(APIError, match="--max-n"):
        check_request_size(ServeLimits(max_n=2), max_tokens=1, n=3)
    with pytest.raises(APIError, match="--max-tokens-limit"):
        check_request_size(ServeLimits(max_tokens=8), max_tokens=9, n=1)
    with pytest.raises(ValueError, match="max_n"):
        ServeLimits(max_n=0)


def test_a_user_verifier_that_cannot_be_loaded_is_a_named_error():
    with pytest.raises(ValueError, match="^--verifier no_such_module_23:f: cannot import"):
        load_user_verifier("no_such_module_23:f")
    with pytest.raises(ValueError, match="^--verifier helpers.cli_verifiers:nope: .*no attribute"):
        load_user_verifier("helpers.cli_verifiers:nope")
    assert callable(load_user_verifier("helpers.cli_verifiers:numpy_predraw_temperature_twice"))


def test_only_loopback_addresses_pass_without_a_warning():
    from exitlaw.engine.serve.server import _loopback

    assert all(_loopback(h) for h in ("127.0.0.1", "127.0.0.2", "::1", "localhost"))
    assert not any(_loopback(h) for h in ("0.0.0.0", "::", "10.1.2.3", "example.org"))


def test_sampling_settings_are_read_and_their_neutral_values_mean_off():
    r = parse_request(
        {"prompt": "x", "top_k": 5, "top_p": 0.9, "min_p": 0.1}, chat=False, default_max_tokens=1
    )
    assert (r.settings.top_k, r.settings.top_p, r.settings.min_p) == (5, 0.9, 0.1)
    for neutral in ({"top_k": 0}, {"top_k": -1}, {"top_p": 1.0}, {"min_p": 0.0}, {}):
        r = parse_request({"prompt": "x", **neutral}, chat=False, default_max_tokens=1)
        assert (r.settings.top_k, r.settings.top_p, r.settings.min_p) == (None, None, None), neutral


BOUNDARY_SEEDS = [-(2**63), -1, 0, 1, 2**62, 2**63 - 1, 2**63, 2**64]


@settings(max_examples=100, deadline=None)
@given(seed=st.sampled_from(BOUNDARY_SEEDS) | st.integers(-(2**70), 2**70))
def test_a_seed_is_accepted_iff_it_lies_in_0_to_2_63_and_is_handed_on(seed):
    """The stated range ``[0, 2**63)``, at both ends: accepted seeds reach the request unchanged."""
    body = {"prompt": "x", "seed": seed}
    if 0 <= seed < 2**63:
        assert parse_request(body, chat=False, default_max_tokens=4).seed == seed
    else:
        with pytest.raises(APIError) as err:
            parse_request(body, chat=False, default_max_tokens=4)
        assert err.value.status == 400 and err.value.param == "seed"
        assert "[0, 2**63)" in err.value.message
