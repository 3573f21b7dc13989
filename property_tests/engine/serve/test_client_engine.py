"""The official ``openai`` client against the server on the real tiny pair (DDTree + TEV, budget 4): what
needs a model to check (acceptance when a stop string ends a request, prompt log-probabilities with
``echo``, log-probabilities in streams, ``chat_template_kwargs``)."""

from __future__ import annotations

from dataclasses import replace

import openai  # the official client: a test dependency (pyproject's test extra)
import pytest

PROMPT = "def add(a, b):"


@pytest.fixture(scope="module")
def client(tiny_server):
    url, _engine = tiny_server
    return openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0, timeout=120)


def _raw(client, **kw) -> dict:
    return client.completions.with_raw_response.create(model=None, **kw).http_response.json()


def test_a_stop_string_keeps_the_acceptance_of_the_rounds_it_keeps(client, tiny_server):
    _url, engine = tiny_server
    whole = _raw(client, prompt=PROMPT, max_tokens=12, temperature=0)
    tokens = whole["choices"][0]["token_ids"]
    assert len(tokens) == 12 and whole["acceptance"]["rounds"] >= 8, whole
    # a stop string first seen in the text of token 6: the reply keeps 6 or 7 tokens
    prefix = engine.tokenizer.decode(tokens[:5], skip_special_tokens=True)
    stop = engine.tokenizer.decode(tokens[:7], skip_special_tokens=True)[len(prefix) :][:1]
    assert stop and stop not in prefix, (prefix, stop)  # the tiny pair's greedy text allows it
    cut = _raw(client, prompt=PROMPT, max_tokens=12, temperature=0, stop=stop)
    kept, acc = cut["usage"]["completion_tokens"], cut["acceptance"]
    assert cut["choices"][0]["finish_reason"] == "stop" and 5 < kept < 12
    # the rounds that produced the kept tokens (token 0 is the prefill's), no more, no fewer
    assert acc["rounds"] >= 1 and acc["tau"] is not None
    produced = round(acc["tau"] * acc["rounds"])
    assert produced + 1 >= kept and acc["accepted_draft_tokens"] == produced - acc["rounds"]
    assert acc["rounds"] <= whole["acceptance"]["rounds"]


def test_a_list_of_prompts_decodes_each_as_its_own_request_would(client):
    prompts = [PROMPT, "x = 1"]
    both = client.completions.create(
        prompt=prompts, model=None, n=2, max_tokens=4, temperature=1, seed=3
    )
    alone = [
        client.completions.create(prompt=p, model=None, n=2, max_tokens=4, temperature=1, seed=3)
        for p in prompts
    ]
    assert [c.index for c in both.choices] == [0, 1, 2, 3]
    assert [c.model_extra["token_ids"] for c in both.choices] == [
        c.model_extra["token_ids"] for a in alone for c in a.choices
    ]
    assert both.usage.total_tokens == sum(a.usage.total_tokens for a in alone)


def test_chat_template_kwargs_reach_the_template_and_the_server_default_is_overridden(
    client, tiny_server
):
    _url, engine = tiny_server
    msgs = [{"role": "user", "content": "hi"}]

    def ids(**kw):
        out = client.chat.completions.create(
            model=engine.model_name, messages=msgs, max_tokens=1, temperature=0, **kw
        )
        return out.model_extra["prompt_token_ids"]

    def rendered(thinking: bool):
        return engine.tokenizer.apply_chat_template(
            msgs,
            add_generation_prompt=True,
            tokenize=True,
            return_dict=True,
            enable_thinking=thinking,
        )["input_ids"]

    assert rendered(True) != rendered(False)  # the tiny template reads enable_thinking (Qwen3's)
    assert ids() == rendered(False)  # the paper's default: thinking off
    think = {"chat_template_kwargs": {"enable_thinking": True}}
    assert ids(extra_body=think) == rendered(True)
    default = engine.cfg
    engine.cfg = replace(
        default, chat_template_kwargs={"enable_thinking": True}
    )  # --chat-template-kwargs
    try:
        assert ids() == rendered(True)
        assert ids(extra_body={"chat_template_kwargs": {"enable_thinking": False}}) == rendered(
            False
        )
    finally:
        engine.cfg = default
    for bad in ({"tokenize": False}, ["enable_thinking"], {"chat_template": "{{ 1 }}"}):
        with pytest.raises(openai.BadRequestError) as err:
            ids(extra_body={"chat_template_kwargs": bad})
        assert err.value.body["param"] == "chat_template_kwargs", err.value.body


def test_a_bad_server_default_of_chat_template_kwargs_is_refused_by_its_flag(tiny):
    from exitlaw.engine.serve.engine import ServeConfig, ServeEngine

    with pytest.raises(ValueError, match="--chat-template-kwargs"):
        ServeEngine(
            ServeConfig(target=str(tiny[0]), method="ar", chat_template_kwargs={"tokenize": 1})
        )


def test_echo_scores_the_prompt_with_the_targets_log_probabilities(client, tiny_server):
    import torch

    _url, engine = tiny_server
    ids = engine.tokenizer(PROMPT)["input_ids"]
    out = client.completions.create(
        model=None, prompt=ids, max_tokens=0, echo=True, logprobs=2, temperature=0.5
    )
    [c] = out.choices
    assert c.text == engine.tokenizer.decode(ids, skip_special_tokens=True)
    assert c.model_extra["token_ids"] == [] and out.usage.completion_tokens == 0
    with torch.inference_mode():  # the raw rows, whatever the request's temperature
        logits = engine.target.model(input_ids=torch.tensor([ids])).logits[0].double()
    want = torch.log_softmax(logits, -1)[torch.arange(len(ids) - 1), torch.tensor(ids[1:])]
    got = c.logprobs.token_logprobs
    assert got[0] is None and len(got) == len(ids)
    assert torch.allclose(torch.tensor(got[1:], dtype=torch.float64), want, atol=1e-4)
    assert c.logprobs.top_logprobs[0] is None
    assert all(
        len(t) == 2 and max(t.values()) >= g - 1e-9
        for t, g in zip(c.logprobs.top_logprobs[1:], got[1:])
    )
    plain = client.completions.create(model=None, prompt=ids, max_tokens=3, temperature=0)
    echoed = client.completions.create(
        model=None, prompt=ids, max_tokens=3, temperature=0, echo=True
    )
    assert echoed.choices[0].text == c.text + plain.choices[0].text


@pytest.mark.parametrize("n", [1, 2])  # one sample: a block per round; several: a block per sample
def test_streamed_logprobs_are_those_of_the_whole_reply_block_by_block(client, n):
    ask = dict(model=None, prompt=PROMPT, n=n, max_tokens=8, temperature=1, seed=8, logprobs=2)
    whole = client.completions.create(**ask)
    ids: dict[int, list] = {}
    lps: dict[int, list] = {}
    blocks = 0
    for chunk in client.completions.create(**ask, stream=True):
        for c in chunk.choices:
            tokens = c.model_extra["token_ids"]
            if tokens:
                blocks += 1
                assert len(c.logprobs.token_logprobs) == len(tokens)  # this chunk's tokens only
                ids.setdefault(c.index, []).extend(tokens)
                lps.setdefault(c.index, []).extend(c.logprobs.token_logprobs)
            else:
                assert c.logprobs is None
    assert blocks > n or n > 1  # one sample streams several blocks
    for c in whole.choices:
        assert ids[c.index] == c.model_extra["token_ids"]
        assert lps[c.index] == pytest.approx(c.logprobs.token_logprobs, abs=1e-5)


@pytest.mark.parametrize("chat", [False, True])
def test_a_bad_prompt_in_a_stream_is_a_400_before_the_stream_starts(client, tiny_server, chat):
    """Not an HTTP 200 followed by an error event without [DONE]: the prompt is encoded and checked first."""
    _url, engine = tiny_server
    too_long = "a " * (engine.limits.max_prompt_tokens + 10)
    with pytest.raises(openai.BadRequestError) as err:
        if chat:
            client.chat.completions.create(
                model=None, messages=[{"role": "user", "content": too_long}], stream=True
            )
        else:
            client.completions.create(model=None, prompt=[10**9], max_tokens=2, stream=True)
    assert err.value.status_code == 400
    assert err.value.body["param"] == "prompt", err.value.body


def test_log_probabilities_scored_in_small_pieces_are_the_same(client, monkeypatch):
    """Prompt and reply are scored SCORE_ROWS rows at a time (no [length, vocab] copy); pieces of 3 rows
    give what one piece gives."""
    import exitlaw.engine.serve.engine as serve_engine

    ask = dict(
        model=None, prompt=PROMPT, max_tokens=8, temperature=1, seed=4, logprobs=2, echo=True
    )
    whole = client.completions.create(**ask).choices[0].logprobs
    monkeypatch.setattr(serve_engine, "SCORE_ROWS", 3)
    pieces = client.completions.create(**ask).choices[0].logprobs
    assert pieces.tokens == whole.tokens and len(whole.tokens) > 8
    assert pieces.token_logprobs[0] is None is whole.token_logprobs[0]
    assert pieces.token_logprobs[1:] == pytest.approx(whole.token_logprobs[1:], abs=1e-5)


def test_a_stop_string_keeps_only_the_kept_rounds_of_n_samples_decoded_as_one_batch(client):
    """``n > 1`` decodes as one batch, run to its end, then cut: the rounds after the cut are not kept."""
    whole = _raw(client, prompt=PROMPT, max_tokens=12, temperature=0, n=2)
    text = whole["choices"][0]["text"]
    stop = next(ch for k, ch in enumerate(text) if k >= 4 and ch not in text[:k])
    cut = _raw(client, prompt=PROMPT, max_tokens=12, temperature=0, n=2, stop=stop)
    assert [c["finish_reason"] for c in cut["choices"]] == ["stop", "stop"]
    kept, acc = cut["usage"]["completion_tokens"], cut["acceptance"]
    assert 2 <= acc["rounds"] < whole["acceptance"]["rounds"]
    assert (
        round(acc["tau"] * acc["rounds"]) + 2 >= kept
    )  # each sample's rounds cover its kept tokens
