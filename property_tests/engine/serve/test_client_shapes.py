"""What real clients send, accepted as written: message content as a list of text parts (LangChain,
the openai SDK, chat UIs), null assistant content, neutral values of fields this server does not
implement (``parallel_tool_calls``, ``logit_bias: {}``, ``best_of: 1``, ``response_format`` text), and
``GET /v1/models/{id}``; every non-neutral value still refused by name. The last tests drive the HTTP
layer with the official ``openai`` client (a test dependency) on a stub engine: numeric-only ``usage``
beside ``acceptance``, lists of prompts, ``echo`` with ``max_tokens: 0``, logprobs in streams, chat
logprob ``bytes`` (``test_client_engine.py`` does what needs a model on the tiny pair)."""

from __future__ import annotations

import openai  # the official client: a test dependency (pyproject's test extra)
import pytest

from exitlaw.engine.serve.errors import APIError
from exitlaw.engine.serve.requests import (
    COMPLETION_NEUTRAL,
    NEUTRAL_FIELDS,
    PART_SEPARATOR,
    parse_request,
)

USER = {"role": "user", "content": "hi"}


def _chat(**body):
    return parse_request({"messages": [USER], **body}, chat=True, default_max_tokens=8)


def _refused(call, param: str) -> APIError:
    with pytest.raises(APIError) as err:
        call()
    assert err.value.status == 400 and err.value.param == param, err.value
    return err.value


def test_text_parts_are_joined_and_null_assistant_content_is_empty():
    parts = [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]
    msgs = [
        {"role": "system", "content": [{"type": "text", "text": "s"}]},
        {"role": "user", "content": parts},
        {"role": "assistant", "content": None},
        {"role": "user", "content": "c", "name": "u1"},
    ]
    r = parse_request({"messages": msgs}, chat=True, default_max_tokens=8)
    assert [m["content"] for m in r.prompt] == ["s", "a" + PART_SEPARATOR + "b", "", "c"]


@pytest.mark.parametrize(
    "content",
    [
        [{"type": "image_url", "image_url": {"url": "data:,"}}],
        [{"type": "text", "text": "a"}, {"type": "input_audio", "input_audio": {}}],
        [{"type": "text"}],  # a text part without its text
        ["a"],
        [],
    ],
)
def test_other_content_parts_are_refused_by_name(content):
    err = _refused(
        lambda: parse_request(
            {"messages": [{"role": "user", "content": content}]}, chat=True, default_max_tokens=8
        ),
        "messages",
    )
    assert "messages[0].content" in str(err)


def test_null_content_is_empty_only_on_an_assistant_turn_and_message_extras_are_named():
    _refused(lambda: _chat(messages=[{"role": "user", "content": None}]), "messages")
    err = _refused(
        lambda: _chat(messages=[{"role": "assistant", "content": None, "tool_calls": [{}]}]),
        "messages",
    )
    assert "tool_calls" in str(err)


ALL_NEUTRAL = {**NEUTRAL_FIELDS, **COMPLETION_NEUTRAL}


@pytest.mark.parametrize(
    "name,value", [(n, v) for n, values in ALL_NEUTRAL.items() for v in values]
)
def test_every_neutral_value_is_accepted_and_changes_nothing(name, value):
    chat = name not in COMPLETION_NEUTRAL
    base = {"messages": [USER]} if chat else {"prompt": "hi"}
    plain = parse_request(base, chat=chat, default_max_tokens=8)
    assert parse_request({**base, name: value}, chat=chat, default_max_tokens=8) == plain


NOT_NEUTRAL = {
    "parallel_tool_calls": 1,
    "logit_bias": {"5": 10},
    "response_format": {"type": "json_object"},
    "tools": [{"type": "function", "function": {"name": "f"}}],
    "tool_choice": "auto",
    "functions": [{"name": "f"}],
    "function_call": "auto",
    "store": True,
    "metadata": {"k": "v"},
    "best_of": 2,
    "suffix": "x",
    "repetition_penalty": 1.1,
    "use_beam_search": True,
    "length_penalty": 0.5,
}


def test_the_neutral_table_and_its_counterexamples_cover_the_same_fields():
    assert set(NOT_NEUTRAL) == set(ALL_NEUTRAL)


@pytest.mark.parametrize("name", sorted(NOT_NEUTRAL))
def test_a_field_at_any_other_value_is_refused_by_name(name):
    chat = name not in COMPLETION_NEUTRAL
    base = {"messages": [USER]} if chat else {"prompt": "hi"}
    err = _refused(
        lambda: parse_request({**base, name: NOT_NEUTRAL[name]}, chat=chat, default_max_tokens=8),
        name,
    )
    assert err.code == "unsupported" and name in str(err)


# ----- the official client, through HTTP, on a stub engine -----------------------------------------


@pytest.fixture
def client(stub_server):
    url, engine, app = stub_server
    engine.gate.set()  # the stub decodes at once
    return openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0, timeout=30)


def test_the_openai_client_lists_and_retrieves_the_model(client):
    assert [m.id for m in client.models.list().data] == ["stub"]
    assert client.models.retrieve("stub").id == "stub"
    with pytest.raises(openai.NotFoundError, match="does not exist"):
        client.models.retrieve("other")


def test_the_openai_client_sends_content_parts_and_neutral_fields(client):
    out = client.chat.completions.create(
        model="stub",
        messages=[
            {"role": "system", "content": [{"type": "text", "text": "be brief"}]},
            {"role": "assistant", "content": None},
            {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        ],
        max_tokens=2,
        logit_bias={},
        parallel_tool_calls=None,
        response_format={"type": "text"},
    )
    assert out.choices[0].message.content == "de"
    done = client.completions.create(model="stub", prompt="x", max_tokens=2, best_of=1)
    assert done.choices[0].text == "de"


def test_the_openai_client_gets_a_named_400_for_a_non_neutral_field(client):
    with pytest.raises(openai.BadRequestError, match="logit_bias"):
        client.chat.completions.create(
            model="stub", messages=[USER], max_tokens=2, logit_bias={"5": 10}
        )


def test_the_openai_client_gets_a_named_400_for_a_temperature_below_the_floor(client):
    with pytest.raises(openai.BadRequestError) as err:
        client.completions.create(model="stub", prompt="x", max_tokens=2, temperature=1e-7)
    assert err.value.status_code == 400 and err.value.body["param"] == "temperature"
    assert "below the floor" in err.value.body["message"]
    done = client.completions.create(model="stub", prompt="x", max_tokens=2, temperature=1e-6)
    assert done.choices[0].text == "de"  # the floor itself is served


def _raw(create, **kw) -> dict:
    """The JSON body the server sent, through the client's raw-response path."""
    return create.__self__.with_raw_response.create(**kw).http_response.json()


def test_usage_holds_only_openai_integers_and_acceptance_has_its_own_field(client):
    body = _raw(client.completions.create, model="stub", prompt="x", max_tokens=2)
    assert body["usage"] == {"prompt_tokens": 2, "completion_tokens": 2, "total_tokens": 4}
    assert body["acceptance"] == {
        "method": "ar",
        "verifier": None,  # an AR server runs no verifier
        "rounds": 1,
        "tau": 1.0,
        "accepted_draft_tokens": 0,
    }
    out = client.chat.completions.create(model="stub", messages=[USER], max_tokens=2)
    assert out.usage.model_extra == {} and out.model_extra["acceptance"]["rounds"] == 1
    chunks = list(
        client.chat.completions.create(
            model="stub",
            messages=[USER],
            max_tokens=2,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    last = chunks[-1]
    assert last.usage.total_tokens == 4 and last.usage.model_extra == {}
    assert last.model_extra["acceptance"]["rounds"] == 1


def test_a_list_of_prompts_gets_one_choice_list_per_prompt_numbered_as_openai_does(client):
    out = client.completions.create(model="stub", prompt=[[1, 2], [5, 6, 7]], n=2, max_tokens=3)
    # index = prompt index * n + sample index; the stub answers ids + 2
    assert [(c.index, c.text) for c in out.choices] == [
        (0, "de"),
        (1, "de"),
        (2, "hij"),
        (3, "hij"),
    ]
    assert (out.usage.prompt_tokens, out.usage.completion_tokens) == (5, 10)
    assert out.usage.total_tokens == 15 and out.model_extra["prompt_token_ids"] == [
        [1, 2],
        [5, 6, 7],
    ]
    texts = client.completions.create(model="stub", prompt=["a", "b", "c"], max_tokens=2)
    assert [c.index for c in texts.choices] == [0, 1, 2] and texts.usage.prompt_tokens == 6
    streamed: dict[int, str] = {}
    for chunk in client.completions.create(
        model="stub", prompt=[[1, 2], [5, 6, 7]], n=2, max_tokens=3, stream=True
    ):
        for c in chunk.choices:
            streamed[c.index] = streamed.get(c.index, "") + c.text
    assert streamed == {0: "de", 1: "de", 2: "hij", 3: "hij"}


def test_a_bad_prompt_in_a_list_and_too_many_choices_are_named_400s(client):
    with pytest.raises(openai.BadRequestError, match=r"prompt\[1\]"):
        client.completions.create(model="stub", prompt=["a", ""], max_tokens=2)
    with pytest.raises(openai.BadRequestError, match="--max-n") as err:
        client.completions.create(model="stub", prompt=["a"] * 33, n=2, max_tokens=2)
    assert err.value.body["param"] == "prompt"


def test_echo_returns_the_prompt_with_its_logprobs_and_max_tokens_zero_only_with_echo(client):
    out = client.completions.create(
        model="stub", prompt=[1, 2, 3], max_tokens=0, echo=True, logprobs=1
    )
    [c] = out.choices
    assert c.text == "bcd" and c.finish_reason == "length"  # the stub's text of ids 1, 2, 3
    assert c.logprobs.tokens == ["b", "c", "d"]
    assert c.logprobs.token_logprobs == [None, -1.0, -2.0]  # the first token has none
    assert c.logprobs.top_logprobs == [None, {"c": -1.0}, {"d": -2.0}]
    assert (out.usage.prompt_tokens, out.usage.completion_tokens) == (3, 0)
    both = client.completions.create(model="stub", prompt="x", max_tokens=2, echo=True, logprobs=0)
    [c] = both.choices
    assert c.text == "x" + "de" and c.logprobs.tokens == ["b", "c", "d", "e"]
    assert c.logprobs.token_logprobs == [None, -1.0, -0.0, -1.0]
    plain = client.completions.create(model="stub", prompt="x", max_tokens=2, echo=True)
    assert plain.choices[0].text == "xde" and plain.choices[0].logprobs is None
    with pytest.raises(openai.BadRequestError, match="0 only with echo") as err:
        client.completions.create(model="stub", prompt="x", max_tokens=0)
    assert err.value.body["param"] == "max_tokens"
    with pytest.raises(openai.BadRequestError) as err:
        client.completions.create(model="stub", prompt="x", echo=True, stream=True)
    assert err.value.body["param"] == "echo"


def test_a_stream_with_logprobs_carries_in_each_chunk_the_logprobs_of_the_tokens_it_adds(client):
    seen = []
    for chunk in client.completions.create(
        model="stub", prompt=[1, 2], n=2, max_tokens=2, stream=True, logprobs=1
    ):
        for c in chunk.choices:
            if c.logprobs is not None:
                ids = c.model_extra["token_ids"]
                assert len(c.logprobs.tokens) == len(ids) == len(c.logprobs.token_logprobs)
                seen.append((c.index, c.logprobs.tokens, c.logprobs.token_logprobs))
    # the stub emits each token as its own block; token j's log-probability is -j
    assert sorted(seen) == [
        (0, ["d"], [-0.0]),
        (0, ["e"], [-1.0]),
        (1, ["d"], [-0.0]),
        (1, ["e"], [-1.0]),
    ]
    chat = []
    for chunk in client.chat.completions.create(
        model="stub", messages=[USER], max_tokens=2, stream=True, logprobs=True, top_logprobs=1
    ):
        for c in chunk.choices:
            if c.logprobs is not None:
                chat += [
                    (t.token, t.logprob, [x.token for x in t.top_logprobs])
                    for t in c.logprobs.content
                ]
    assert chat == [("d", -0.0, ["d"]), ("e", -1.0, ["e"])]


def test_chat_logprobs_carry_the_bytes_of_each_token(client):
    out = client.chat.completions.create(
        model="stub", messages=[USER], max_tokens=2, logprobs=True, top_logprobs=2
    )
    [first, second] = out.choices[0].logprobs.content
    assert (first.token, first.bytes) == ("d", [100]) and second.bytes == [101]
    assert [(t.token, t.bytes) for t in first.top_logprobs] == [("d", [100]), ("a", [97])]


def test_top_logprobs_keyed_by_text_keep_the_likeliest_of_tokens_that_decode_alike(client):
    # the stub answers [24] with token 26, "a", whose top list is itself (-0.0) then token 0, also "a"
    out = client.completions.create(model="stub", prompt=[24], max_tokens=1, logprobs=2)
    assert out.choices[0].logprobs.top_logprobs == [{"a": -0.0}]
    apart = client.completions.create(
        model="stub",
        prompt=[24],
        max_tokens=1,
        logprobs=2,
        extra_body={"return_tokens_as_token_ids": True},
    )
    assert apart.choices[0].logprobs.top_logprobs == [{"token_id:26": -0.0, "token_id:0": -99.0}]
