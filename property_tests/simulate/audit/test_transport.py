"""The audit's probe and transports on a scripted strict server (no HTTP): fields refused by name are
dropped and said so, an ignored ``n`` becomes one sample per request, text-only answers are compared
re-tokenised with the named tokenizer (both servers the same way), token-id prompts go as text where they
are refused, and every way of failing names its cause."""

from __future__ import annotations

import json

import pytest

from exitlaw.simulate.audit import AuditConfig, AuditUsageError, format_audit, run_audit
from exitlaw.simulate.audit.client import Client, ServerRefused
from exitlaw.theory import SamplingSettings

WORDS = ["a", "b", "c", "d"]


@pytest.fixture
def tokenizer(tmp_path):
    """A word-level tokenizer.json: ids 0..3 are the words a..d, separated by spaces."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="a"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.decoder = decoders.WordPiece()  # joins words with spaces
    folder = tmp_path / "tok"
    folder.mkdir()
    tok.save(str(folder / "tokenizer.json"))
    return folder


def _server(strict: bool, ids_back: bool, honours_n: bool, seen: list, id_prompts=True):
    """A scripted server: ``strict`` refuses vLLM's fields with a 422 naming them (FastAPI's shape);
    answers the first tokens 'a b' (ids 0, 1) or 'b a' by the seed's parity."""

    def call(self, method, path, payload=None):
        seen.append((self.name, payload))
        extra = {"return_token_ids", "return_tokens_as_token_ids"} & set(payload)
        if strict and extra:
            raise ServerRefused(
                f"{self.name} server x",
                f"POST {path} answered HTTP 422: Unexpected fields in the request: {extra}",
                422,
            )
        if not isinstance(payload.get("prompt", ""), str) and not id_prompts:
            raise ServerRefused(
                f"{self.name} server x", "answered HTTP 400: prompt must be a string", 400
            )
        n = payload.get("n", 1) if honours_n else 1
        out = []
        for k in range(n):
            toks = [0, 1] if (payload.get("seed", 0) + k) % 2 == 0 else [1, 0]
            toks = toks[: payload["max_tokens"]]
            c = {"index": k, "text": " ".join(WORDS[t] for t in toks), "finish_reason": "length"}
            if ids_back:
                c["token_ids"] = toks
            out.append(c)
        return {"choices": out}

    return call


def _run(monkeypatch, tmp_path, candidate, reference, **cfg):
    seen = []
    monkeypatch.setattr(Client, "models", lambda self: ["m"])
    scripts = {
        "candidate": _server(*candidate[:3], seen, *candidate[3:]),
        "reference": _server(*reference[:3], seen, *reference[3:]),
    }
    monkeypatch.setattr(
        Client,
        "_call",
        lambda self, m, path, payload=None: scripts[self.name](self, m, path, payload),
    )
    prompts = tmp_path / "p.jsonl"
    prompts.write_text(cfg.pop("prompts", '{"prompt": "a"}\n'))
    return run_audit(
        AuditConfig("http://127.0.0.1:1", "http://127.0.0.1:2", str(prompts), **cfg)
    ), seen


def test_a_strict_text_only_server_without_n_is_audited_by_re_tokenised_text(
    monkeypatch, tmp_path, tokenizer
):
    report, seen = _run(
        monkeypatch,
        tmp_path,
        (True, False, False),  # candidate: strict, text only, ignores n
        (False, True, True),  # reference: vLLM-like
        sampling=SamplingSettings(1.0),
        tokenizer=str(tokenizer),
        tv=0.5,
    )
    n = report.samples
    t = report.transport
    assert t["comparison"] == "re-tokenised text" and t["tokenizer"] == str(tokenizer)
    cand = t["candidate"]["completions"]
    assert sorted(cand["dropped"]) == ["return_token_ids", "return_tokens_as_token_ids"]
    assert not cand["n"] and not cand["token_ids"]
    # after the probe: no refused field is sent again, and every candidate request asks one sample
    sampling = [p for who, p in seen if who == "candidate" and "logprobs" not in p]
    assert len(sampling) == n and all(
        "return_token_ids" not in p and "n" not in p for p in sampling
    )
    assert report.requests == n + -(-n // 32)  # the reference: n samples at n <= 32 per request
    assert report.verdict == "no difference found", format_audit(report)
    text = format_audit(report)
    assert "n ignored: one sample per request" in text and "fields dropped" in text
    assert "re-tokenised text" in text and "not seen by this comparison" in text
    assert json.dumps(report.to_json())  # the transport goes into --json


def test_text_only_without_a_tokenizer_is_a_usage_error_naming_the_flag(monkeypatch, tmp_path):
    with pytest.raises(AuditUsageError, match="candidate server returns text only.*--tokenizer"):
        _run(monkeypatch, tmp_path, (True, False, False), (False, True, True))
    with pytest.raises(AuditUsageError, match="--tokenizer /nowhere: no tokenizer.json"):
        _run(monkeypatch, tmp_path, (True, False, False), (False, True, True), tokenizer="/nowhere")


def test_a_refusal_naming_no_droppable_field_is_the_servers_own_message(monkeypatch, tmp_path):
    def call(self, method, path, payload=None):
        raise ServerRefused(f"{self.name} server x", "answered HTTP 401: bad key", 401)

    monkeypatch.setattr(Client, "models", lambda self: ["m"])
    monkeypatch.setattr(Client, "_call", call)
    prompts = tmp_path / "p.jsonl"
    prompts.write_text('{"prompt": "a"}\n')
    with pytest.raises(AuditUsageError, match="bad key.*probe"):
        run_audit(AuditConfig("http://127.0.0.1:1", "http://127.0.0.1:2", str(prompts)))


def test_servers_that_return_ids_are_compared_by_ids_and_token_id_prompts_go_as_text_where_refused(
    monkeypatch, tmp_path, tokenizer
):
    report, seen = _run(
        monkeypatch,
        tmp_path,
        (False, True, True, False),  # candidate refuses token-id prompts
        (False, True, True),
        tokenizer=str(tokenizer),
        prompts='{"prompt_ids": [2, 3]}\n',
        max_tokens=2,
    )
    assert report.transport["comparison"] == "token ids" and report.verdict == "no difference found"
    assert report.transport["candidate"]["completions"]["id_prompts"] is False
    sent = {
        who: [p["prompt"] for w, p in seen if w == who and p.get("logprobs") == 2]
        for who in ("candidate", "reference")
    }
    assert sent["candidate"] and all(p == "c d" for p in sent["candidate"])
    assert sent["reference"] and all(p == [2, 3] for p in sent["reference"])


def test_a_server_refusing_a_sampling_setting_is_a_usage_error_naming_the_flag(
    monkeypatch, tmp_path
):
    """A strict server that refuses top_k: the setting sets the law, so it is never dropped."""

    def call(self, method, path, payload=None):
        extra = set(payload) - {"model", "prompt", "max_tokens", "temperature", "seed", "n"}
        if extra:
            raise ServerRefused(
                f"{self.name} server x",
                f"answered HTTP 422: Unexpected fields in the request: {extra}",
                422,
            )
        return {"choices": [{"index": 0, "text": "a"}]}

    monkeypatch.setattr(Client, "models", lambda self: ["m"])
    monkeypatch.setattr(Client, "_call", call)
    prompts = tmp_path / "p.jsonl"
    prompts.write_text('{"prompt": "a"}\n')
    cfg = AuditConfig(
        "http://127.0.0.1:1", "http://127.0.0.1:2", str(prompts), SamplingSettings(1.0, top_k=5)
    )
    with pytest.raises(AuditUsageError, match="refuses top_k.*--top-k.*never dropped"):
        run_audit(cfg)
