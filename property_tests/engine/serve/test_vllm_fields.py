"""vLLM's and SGLang's request fields that have a meaning here (issue 51), on the real tiny pair in both
batching modes: ``ignore_eos`` (decode past EOS, the same tokens up to it), ``min_tokens`` (0 taken, a
positive value refused by name), ``stream_options.continuous_usage_stats``, ``skip_special_tokens``,
``spaces_between_special_tokens``, ``include_stop_str_in_output``, ``truncate_prompt_tokens``, and neutral
``repetition_penalty``; an unknown field keeps its 400."""

from __future__ import annotations

import http.client
import json

import pytest

from exitlaw.engine.serve.errors import APIError
from exitlaw.engine.serve.requests import parse_request
from helpers.servers import post

from .conftest import running

PROMPT = [11, 42, 7, 99]


def _parse(**body):
    return parse_request({"prompt": "hi", **body}, chat=False, default_max_tokens=8)


def _refused(**body) -> APIError:
    with pytest.raises(APIError) as info:
        _parse(**body)
    assert info.value.status == 400
    return info.value


# ----- parsing ------------------------------------------------------------------------------------


def test_each_field_is_read_with_vllms_default():
    plain = _parse()
    assert (plain.ignore_eos, plain.skip_special_tokens, plain.spaces_between_special_tokens) == (
        False,
        True,
        True,
    )
    assert (plain.include_stop_str_in_output, plain.truncate_prompt_tokens) == (False, None)
    assert plain.continuous_usage is False
    req = _parse(
        ignore_eos=True,
        skip_special_tokens=False,
        spaces_between_special_tokens=False,
        include_stop_str_in_output=True,
        truncate_prompt_tokens=3,
        stream_options={"include_usage": True, "continuous_usage_stats": True},
        min_tokens=0,
        repetition_penalty=1,
    )
    assert req.ignore_eos and not req.skip_special_tokens and not req.spaces_between_special_tokens
    assert req.include_stop_str_in_output and req.truncate_prompt_tokens == 3
    assert req.continuous_usage and req.include_usage
    assert _parse(truncate_prompt_tokens=-1).truncate_prompt_tokens == -1
    assert _parse(repetition_penalty=1.0, min_tokens=None).ignore_eos is False


@pytest.mark.parametrize(
    "field",
    [
        "ignore_eos",
        "skip_special_tokens",
        "spaces_between_special_tokens",
        "include_stop_str_in_output",
    ],
)
def test_a_flag_that_is_not_a_boolean_is_refused_by_name(field):
    err = _refused(**{field: "yes"})
    assert err.param == field and "true or false" in err.message


def test_min_tokens_above_zero_is_refused_saying_why_and_what_to_send():
    for v in (1, 7):
        err = _refused(min_tokens=v)
        assert err.param == "min_tokens" and err.code == "unsupported"
        assert "ignore_eos" in err.message and "law" in err.message
    assert _refused(min_tokens=-1).param == "min_tokens"


def test_truncate_prompt_tokens_takes_minus_one_or_a_positive_count():
    for v in (0, -2):
        assert _refused(truncate_prompt_tokens=v).param == "truncate_prompt_tokens"
    assert _refused(truncate_prompt_tokens=1.5).param == "truncate_prompt_tokens"


def test_a_non_neutral_penalty_and_an_unknown_field_keep_their_400():
    err = _refused(repetition_penalty=1.2)
    assert err.param == "repetition_penalty" and err.code == "unsupported"
    err = _refused(stream_options={"include_usage": True, "something": 1})
    assert err.param == "stream_options"
    err = _refused(frobnicate=1)
    assert err.param == "frobnicate" and "unsupported parameter" in err.message


# ----- on the tiny pair ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def engine(tiny):
    from exitlaw.engine.serve.engine import ServeConfig, ServeEngine

    target, draft = tiny
    return ServeEngine(
        ServeConfig(target=str(target), draft=str(draft), method="ddtree", verifier="tev", budget=4)
    )


@pytest.fixture(scope="module", params=["serial", "continuous"])
def server(engine, request):
    with running(engine, request.param) as (url, _app):
        yield url, engine


def _complete(url, **body):
    status, out = post(url + "/v1/completions", {"prompt": PROMPT, **body})
    assert status == 200, out
    return out


def _stream(url, **body) -> list[dict]:
    conn = http.client.HTTPConnection(url.split("//")[1], timeout=120)
    try:
        conn.request(
            "POST",
            "/v1/completions",
            json.dumps({"prompt": PROMPT, "stream": True, **body}),
            {"Content-Type": "application/json"},
        )
        resp = conn.getresponse()
        assert resp.status == 200
        lines = resp.read().decode().splitlines()
    finally:
        conn.close()
    data = [ln[6:] for ln in lines if ln.startswith("data: ")]
    assert data[-1] == "[DONE]"
    return [json.loads(d) for d in data[:-1]]


def test_ignore_eos_decodes_past_eos_with_the_same_tokens_up_to_it(server):
    url, engine = server
    ref = _complete(url, max_tokens=10, temperature=1.0, seed=5)["choices"][0]["token_ids"]
    assert len(ref) == 10
    saved = engine.eos
    engine.eos = (ref[3],)  # the 4th token is now an EOS: the reply ends there...
    try:
        cut = _complete(url, max_tokens=10, temperature=1.0, seed=5)["choices"][0]
        past = _complete(url, max_tokens=10, temperature=1.0, seed=5, ignore_eos=True)["choices"][0]
    finally:
        engine.eos = saved
    first = ref.index(ref[3])
    assert cut["token_ids"] == ref[: first + 1] and cut["finish_reason"] == "stop"
    # ... and with ignore_eos it goes on to max_tokens: the same tokens as before (the target's law)
    assert past["token_ids"] == ref and past["finish_reason"] == "length"


def test_skip_special_tokens_and_their_spacing(server):
    url, engine = server
    eos = engine.eos[0]
    mark = engine.tokenizer.convert_ids_to_tokens(eos)
    body = {"prompt": [11, 42], "max_tokens": 1, "temperature": 0}
    word = _complete(url, **body)["choices"][0]["token_ids"]
    ids = [*word, eos, *word]  # echoed: the text of a special token between two others
    plain = engine.tokenizer.decode(
        word, skip_special_tokens=True, clean_up_tokenization_spaces=False
    )
    out = _complete(url, prompt=ids, max_tokens=0, echo=True)["choices"][0]["text"]
    assert out == plain + plain  # skipped by default
    kept = _complete(url, prompt=ids, max_tokens=0, echo=True, skip_special_tokens=False)
    assert kept["choices"][0]["text"] == f"{plain} {mark} {plain}"  # spaced: vLLM's default
    tight = _complete(
        url,
        prompt=ids,
        max_tokens=0,
        echo=True,
        skip_special_tokens=False,
        spaces_between_special_tokens=False,
    )
    assert tight["choices"][0]["text"] == f"{plain}{mark}{plain}"


def test_skip_special_tokens_false_shows_an_eos_decoded_past_in_the_reply(server):
    url, engine = server
    ref = _complete(url, max_tokens=8, temperature=1.0, seed=2)["choices"][0]["token_ids"]
    saved = engine.eos
    engine.eos = (ref[2],)
    try:
        body = dict(max_tokens=8, temperature=1.0, seed=2, ignore_eos=True)
        hidden = _complete(url, **body)["choices"][0]
        shown = _complete(
            url, **body, skip_special_tokens=False, spaces_between_special_tokens=False
        )
    finally:
        engine.eos = saved
    assert hidden["token_ids"] == shown["choices"][0]["token_ids"] == ref
    want = engine.tokenizer.decode(
        ref, skip_special_tokens=False, clean_up_tokenization_spaces=False
    )
    assert shown["choices"][0]["text"] == want


def _stop_of(engine, tokens):
    """A stop string first seen in the text of token 5 of ``tokens`` (the tiny pair's greedy text)."""
    prefix = engine.tokenizer.decode(tokens[:4], skip_special_tokens=True)
    whole = engine.tokenizer.decode(tokens[:5], skip_special_tokens=True)
    stop = whole[len(prefix) :].strip()[:1]
    assert stop and stop not in prefix, (prefix, whole)
    return stop


def test_include_stop_str_in_output_keeps_the_stop_string_streamed_or_not(server):
    url, engine = server
    body = {"prompt": "def add(a, b):", "max_tokens": 12, "temperature": 0}
    tokens = _complete(url, **body)["choices"][0]["token_ids"]
    stop = _stop_of(engine, tokens)
    text = engine.tokenizer.decode(tokens, skip_special_tokens=True)
    at = text.index(stop)
    without = _complete(url, **body, stop=stop)["choices"][0]
    assert without["text"] == text[:at] and without["finish_reason"] == "stop"
    kept = _complete(url, **body, stop=stop, include_stop_str_in_output=True)["choices"][0]
    assert kept["text"] == text[: at + len(stop)] and kept["token_ids"] == without["token_ids"]
    streamed = _stream(url, **body, stop=stop, include_stop_str_in_output=True)
    assert "".join(c["choices"][0]["text"] for c in streamed) == kept["text"]


def test_truncate_prompt_tokens_keeps_the_prompts_last_tokens(server):
    url, _engine = server
    long = [5, 6, 7, *PROMPT]
    body = {"max_tokens": 6, "temperature": 1.0, "seed": 9}
    cut = _complete(url, **body, prompt=long, truncate_prompt_tokens=len(PROMPT))
    alone = _complete(url, **body, prompt=PROMPT)
    assert cut["prompt_token_ids"] == PROMPT and cut["usage"]["prompt_tokens"] == len(PROMPT)
    assert cut["choices"][0]["token_ids"] == alone["choices"][0]["token_ids"]
    same = _complete(url, **body, prompt=long, truncate_prompt_tokens=50)
    assert same["prompt_token_ids"] == long
    assert (
        _complete(url, **body, prompt=long, truncate_prompt_tokens=-1)["prompt_token_ids"] == long
    )


def test_continuous_usage_stats_puts_the_usage_so_far_on_every_chunk(server):
    url, _engine = server
    body = {"max_tokens": 9, "temperature": 1.0, "seed": 4}
    opts = {"include_usage": True, "continuous_usage_stats": True}
    chunks = _stream(url, **body, stream_options=opts)
    final = chunks[-1]
    assert final["choices"] == [] and final["usage"]["completion_tokens"] == 9
    rows = [c for c in chunks if c["choices"]]
    assert rows and all("usage" in c for c in rows)
    done = [c["usage"]["completion_tokens"] for c in rows]
    assert done == sorted(done) and done[-1] == 9
    assert all(
        c["usage"]["prompt_tokens"] == len(PROMPT)
        and c["usage"]["total_tokens"] == len(PROMPT) + c["usage"]["completion_tokens"]
        for c in rows
    )
    # each chunk's count is the tokens streamed so far
    seen = 0
    for c in rows:
        seen += len(c["choices"][0]["token_ids"])
        assert c["usage"]["completion_tokens"] == seen
    plain = _stream(url, **body, stream_options={"include_usage": True})
    assert not any("usage" in c for c in plain if c["choices"])
