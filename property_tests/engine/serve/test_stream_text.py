"""A stream never sends part of a character (issue 51): over byte-level BPE tokenizers, where CJK and emoji
split over tokens, the concatenated streamed text equals the non-streamed text exactly, whatever the
blocks the tokens arrive in; checked on :class:`~exitlaw.engine.serve.detok.IncrementalText` itself
(hypothesis), through the HTTP server with a stub engine on such a tokenizer, and on the tiny pair (a
random model's byte tokens) in both batching modes."""

from __future__ import annotations

import functools
import http.client
import json
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exitlaw.engine.serve.detok import REPLACEMENT, IncrementalText, decode_text
from exitlaw.engine.serve.limits import ServeLimits
from helpers.servers import post

from .conftest import StubEngine, running

MULTIBYTE = "中文字符测试你好世界日本語한국어😀🚀👍🏽🇫🇷éßø∑≈"
CORPUS = (
    "hello world 你好世界 emoji 😀 and 🚀 ok. " * 6 + "中文 测试 日本語 한국어 éß ∑≈ " * 6
) * 3


@functools.lru_cache(maxsize=None)
def byte_bpe(vocab_size: int):
    """A byte-level BPE trained here (no hub): merges join some multi-byte characters whole and leave
    others split between tokens; ``<|end|>`` a special token."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=["<|end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator([CORPUS], trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|end|>")


TOKENIZERS = (270, 420)  # bytes and a few merges; more merges (some characters whole)

text_st = st.text(alphabet=st.sampled_from(list(MULTIBYTE + "ab ,.\n")), min_size=1, max_size=40)


def _blocks(ids, cuts):
    """``ids`` split at the positions ``cuts`` (blocks as rounds commit them)."""
    at = sorted({c % (len(ids) + 1) for c in cuts} | {0, len(ids)})
    return [ids[a:b] for a, b in zip(at, at[1:]) if b > a]


@settings(max_examples=60, deadline=None)
@given(
    text=text_st,
    vocab=st.sampled_from(TOKENIZERS),
    cuts=st.lists(st.integers(0, 200), max_size=12),
    stop=st.sampled_from([(), ("界",), ("😀", "zz")]),
    include=st.booleans(),
)
def test_streamed_deltas_concatenate_to_the_text_and_never_split_a_character(
    text, vocab, cuts, stop, include
):
    tok = byte_bpe(vocab)
    ids = tok.encode(text)
    full = decode_text(tok, ids)
    assert full == text  # a byte-level BPE round-trips
    inc = IncrementalText(lambda t: decode_text(tok, t), stop, include)
    deltas = [inc.add(b) for b in _blocks(ids, cuts)]
    # the final text is what the reply without stream gives: cut at a stop string when there is one
    final = full
    hits = [(full.index(s), s) for s in stop if s in full]
    if hits:
        at, s = min(hits)
        final = full[: at + (len(s) if include else 0)]
    deltas.append(inc.finish(final))
    assert "".join(deltas) == final
    assert not any(REPLACEMENT in d for d in deltas)  # never part of a character


def test_a_tokenizer_here_does_split_characters_over_tokens():
    """The property above is not vacuous: some single token decodes to U+FFFD (part of a character)."""
    tok = byte_bpe(TOKENIZERS[0])
    ids = tok.encode(MULTIBYTE)
    assert any(REPLACEMENT in tok.decode([t]) for t in ids)


class ByteStub(StubEngine):
    """The stub engine on a byte-level BPE: a text prompt is encoded, and the reply is the prompt's own
    tokens (each its own streamed block)."""

    def __init__(self, limits, tok):
        super().__init__(limits)
        self.gate.set()
        self.bpe = tok
        self.tokenizer = SimpleNamespace(decode=lambda ids, **kw: tok.decode(ids, **kw))

    def encode(self, req):
        return self.bpe.encode(req.prompt) if isinstance(req.prompt, str) else list(req.prompt)

    def text(self, req, ids):
        return decode_text(self.bpe, ids)

    def run(self, req, ids, emit=None):
        from exitlaw.engine.serve.engine import Choice

        tokens = list(ids)[: req.max_tokens]
        for i in range(req.n if emit is not None else 0):
            for t in tokens:
                emit(i, [t], None)
        return [Choice(tokens, self.text(req, tokens), "length", []) for _ in range(req.n)]


PROMPTS = [
    "你好世界",
    "emoji 😀🚀👍🏽 end",
    "日本語のテキスト",
    "한국어 문장",
    "mixed 中文 and 🇫🇷 flags",
    "éß∑≈ø",
] * 4  # 24 prompts


def _stream_text(url, body, route="/v1/completions") -> tuple[str, list]:
    conn = http.client.HTTPConnection(url.split("//")[1], timeout=120)
    try:
        conn.request(
            "POST",
            route,
            json.dumps({**body, "stream": True}),
            {"Content-Type": "application/json"},
        )
        resp = conn.getresponse()
        assert resp.status == 200
        lines = resp.read().decode().splitlines()
    finally:
        conn.close()
    chunks = [
        json.loads(ln[6:]) for ln in lines if ln.startswith("data: ") and ln != "data: [DONE]"
    ]
    parts = [c["choices"][0].get("text", "") for c in chunks if c["choices"]]
    ids = [t for c in chunks if c["choices"] for t in c["choices"][0]["token_ids"]]
    assert not any(REPLACEMENT in p for p in parts)
    return "".join(parts), ids


@pytest.mark.parametrize("vocab", TOKENIZERS)
def test_the_server_streams_what_it_answers_on_every_multibyte_prompt(vocab):
    with running(ByteStub(ServeLimits(), byte_bpe(vocab))) as (url, _app):
        for p in PROMPTS:
            body = {"prompt": p, "max_tokens": 64, "temperature": 0}
            status, whole = post(url + "/v1/completions", body)
            assert status == 200 and whole["choices"][0]["text"] == p
            streamed, ids = _stream_text(url, body)
            assert ids == whole["choices"][0]["token_ids"]
            assert streamed == whole["choices"][0]["text"], (p, streamed)


def test_the_tiny_pair_streams_its_byte_tokens_as_it_answers_them(tiny_server):
    """A random target samples byte tokens that split characters (and invalid sequences, U+FFFD in the
    reply itself): the stream's text equals the reply's on every seed."""
    url, _engine = tiny_server
    split = 0
    for seed in range(12):
        body = {"prompt": [11, 42, 7], "max_tokens": 24, "temperature": 1.0, "seed": seed}
        status, whole = post(url + "/v1/completions", body)
        assert status == 200
        text = whole["choices"][0]["text"]
        conn = http.client.HTTPConnection(url.split("//")[1], timeout=120)
        conn.request(
            "POST",
            "/v1/completions",
            json.dumps({**body, "stream": True}),
            {"Content-Type": "application/json"},
        )
        lines = conn.getresponse().read().decode().splitlines()
        conn.close()
        chunks = [
            json.loads(ln[6:]) for ln in lines if ln.startswith("data: ") and ln != "data: [DONE]"
        ]
        assert "".join(c["choices"][0]["text"] for c in chunks) == text, seed
        ids = [t for c in chunks for t in c["choices"][0]["token_ids"]]
        assert ids == whole["choices"][0]["token_ids"]
        split += REPLACEMENT in text or any(ord(ch) > 127 for ch in text)
    assert split > 0  # some replies hold bytes above ASCII: the case a stream can split
