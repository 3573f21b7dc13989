"""The model behind ``exitlaw serve``: loaded once, one decode at a time, requests turned into choices.

:class:`ServeEngine` owns the tokenizer, the target and (for chain / DDTree) the DFlash drafter, and
runs each request with the engine's entry points: :func:`~exitlaw.engine.decode.loop.generate` for one
sample, :func:`~exitlaw.engine.decode.batch_generate.generate_batch` for ``n > 1`` samples of one prompt
(one batch; a user's verifier decodes the ``n`` samples one after the other with spawned seeds). Its
methods are not thread-safe: the HTTP layer calls them from a single worker thread, which is the
request queue.

Per request: no ``seed`` draws a fresh one (independent samples per request), a ``seed`` makes the
request reproducible. Log-probabilities are those of the sampled tokens under the *processed* row
``softmax(logits / T)`` (the row the verifiers sample from; at ``T = 0`` the raw ``softmax(logits)``),
from a causal target cache of prompt + output fed block by block (in a stream, each block's as it is
committed), at most :data:`SCORE_ROWS` rows at a time; ``echo``'s prompt log-probabilities are those of
the raw row.
"""

from __future__ import annotations

import copy
import math
import secrets
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

import numpy as np
import torch
from transformers import AutoTokenizer

from exitlaw.engine.decode.batch_generate import generate_batch
from exitlaw.engine.decode.dispatch import KINDS
from exitlaw.engine.decode.loop import DecodeConfig, generate
from exitlaw.engine.decode.sampling_settings import processed_probs
from exitlaw.engine.models.checkpoint import (
    check_model_paths,
    load_pair,
    load_target,
    resolve_checkpoint,
)
from exitlaw.engine.prompts.encoding import PromptEncodingError, encode_prompt
from exitlaw.engine.serve.detok import decode_text, stop_cut
from exitlaw.engine.serve.errors import APIError, bad_request
from exitlaw.engine.serve.limits import (
    ServeLimits,
    check_batch_fits,
    check_prompt_bytes,
    check_request_work,
)
from exitlaw.engine.serve.requests import DecodeRequest, template_kwargs
from exitlaw.engine.serve.scheduler import Job
from exitlaw.engine.serve.user_verifier import is_user_verifier, load_user_verifier, user_decide
from exitlaw.theory.registry import method_names
from exitlaw.theory.sampling_settings import SamplingSettings

BATCHING = ("continuous", "serial")


@dataclass(frozen=True)
class ServeConfig:
    target: str
    draft: str | None = None
    method: str = "ddtree"
    verifier: str = "tev"
    budget: int = 32
    device: str = "cpu"
    dtype: str = "auto"
    model_name: str | None = None  # the id served in /v1/models (default: the target folder's name)
    # chat template variables of every chat request (a request's chat_template_kwargs override them)
    chat_template_kwargs: dict | None = None
    batching: str = "continuous"  # "continuous" (engine.serve.scheduler) or "serial"
    max_batch: int = 16  # continuous: rows decoded at once


@dataclass
class Choice:
    tokens: list[int]
    text: str
    finish_reason: str  # "stop" (EOS, stop token or stop string) | "length"
    block_lengths: list[int] = field(default_factory=list)
    logprobs: list[tuple[float, list[tuple[int, float]]]] | None = (
        None  # per token: (logprob, top-k)
    )
    # echo: (prompt ids, prompt text, per prompt token (logprob, top-k) or None), set by the HTTP layer
    echo: tuple | None = None


class _Stopped(Exception):
    """Raised from the per-block callback to end a decode early (stop string, shutdown)."""


class ServeEngine:
    def __init__(self, cfg: ServeConfig, limits: ServeLimits = ServeLimits()):
        check_model_paths(cfg.target, cfg.draft)  # one line naming the path, before any load
        if cfg.method not in method_names():
            raise ValueError(
                f"--method must be {', '.join(method_names()[:-1])} or {method_names()[-1]}, "
                f"got {cfg.method!r}"
            )
        if cfg.method != "ar" and not cfg.draft:
            raise ValueError(f"--method {cfg.method} needs --draft (a DFlash drafter)")
        self.user_fn = load_user_verifier(cfg.verifier) if is_user_verifier(cfg.verifier) else None
        if self.user_fn is None and cfg.verifier not in KINDS:
            raise ValueError(
                f"--verifier: expected one of {', '.join(KINDS)} or MODULE:CALLABLE, got {cfg.verifier!r}"
            )
        if cfg.budget < 1:
            raise ValueError(f"--budget must be >= 1, got {cfg.budget}")
        if cfg.batching not in BATCHING:
            raise ValueError(f"--batching must be {' or '.join(BATCHING)}, got {cfg.batching!r}")
        if cfg.max_batch < 1:
            raise ValueError(f"--max-batch must be >= 1, got {cfg.max_batch}")
        try:
            template_kwargs(cfg.chat_template_kwargs, "--chat-template-kwargs")
        except APIError as err:
            raise ValueError(err.message) from None
        dtype = None if cfg.dtype == "auto" else getattr(torch, cfg.dtype)
        self.cfg, self.limits = cfg, limits
        # a Hub id is fetched here (one line if it cannot be); the tokenizer reads the folder
        self.tokenizer = AutoTokenizer.from_pretrained(str(resolve_checkpoint(cfg.target)))
        # prompts are encoded on a thread of their own (the HTTP layer's), with a copy of their own:
        # a fast tokenizer is not to be used by two threads at once
        self.encoder = copy.deepcopy(self.tokenizer)
        self.longest_token_bytes = max(
            (len(p.encode("utf-8", "surrogatepass")) for p in self.tokenizer.get_vocab()), default=1
        )
        if cfg.method == "ar":
            self.target, self.drafter = (
                load_target(cfg.target, device=cfg.device, dtype=dtype),
                None,
            )
        else:
            self.target, self.drafter = load_pair(
                cfg.target, cfg.draft, device=cfg.device, dtype=dtype
            )
        self.model_name = cfg.model_name or Path(str(cfg.target)).resolve().name
        eos = self.target.model.generation_config.eos_token_id
        eos = [] if eos is None else ([eos] if isinstance(eos, int) else list(eos))
        if self.tokenizer.eos_token_id is not None:
            eos.append(int(self.tokenizer.eos_token_id))
        self.eos = tuple(sorted(set(int(e) for e in eos)))
        self.closing = False
        if cfg.batching == "continuous":  # the largest batch at the longest context must fit
            check_batch_fits(
                limits,
                max_batch=cfg.max_batch,
                model_config=self.target.model.config,
                tree_nodes=self.tree_nodes,
                device=self.target.device,
            )

    # ------------------------------------------------------------------ encoding and limits
    @property
    def tree_nodes(self) -> int:
        return 1 if self.cfg.method == "ar" else self.cfg.budget + 1

    def encode(self, req: DecodeRequest) -> list[int]:
        """Token ids of the request's prompt (chat template for chat requests), its last
        ``truncate_prompt_tokens`` only when it asks; 400 on a bad prompt. Without truncation, a text
        too long to fit ``--max-prompt-tokens`` is refused before it is tokenized
        (:func:`~exitlaw.engine.serve.limits.check_prompt_bytes`). Thread-safe against the decode
        worker (its own tokenizer copy)."""
        if req.truncate_prompt_tokens is None:
            check_prompt_bytes(self.limits, _text_bytes(req.prompt), self.longest_token_bytes)
        return self._truncate(req, self._encode(req))

    def _truncate(self, req: DecodeRequest, ids: list[int]) -> list[int]:
        keep = req.truncate_prompt_tokens
        if keep == -1:
            keep = self.limits.max_prompt_tokens
        return ids if keep is None or len(ids) <= keep else ids[-keep:]

    def _encode(self, req: DecodeRequest) -> list[int]:
        if isinstance(req.prompt, list) and req.prompt and isinstance(req.prompt[0], int):
            vocab = self.target.vocab_size
            bad = [t for t in req.prompt if not 0 <= t < vocab]
            if bad:
                raise bad_request(
                    f"prompt token ids {bad[:5]} are outside the vocabulary [0, {vocab})", "prompt"
                )
            return list(req.prompt)
        try:
            extra = {**(self.cfg.chat_template_kwargs or {}), **(req.chat_template_kwargs or {})}
            return encode_prompt(self.encoder, req.prompt, chat=req.chat, template_kwargs=extra)
        except PromptEncodingError as err:
            raise bad_request(
                f"cannot encode the prompt: {err}", "messages" if req.chat else "prompt"
            ) from None

    def text(self, req: DecodeRequest, ids) -> str:
        """A choice's text, as the request asks for it (:func:`~exitlaw.engine.serve.detok.decode_text`)."""
        return decode_text(
            self.tokenizer,
            ids,
            skip_special_tokens=req.skip_special_tokens,
            spaces_between_special_tokens=req.spaces_between_special_tokens,
        )

    def stop_tokens(self, req: DecodeRequest) -> tuple[int, ...]:
        """The tokens that end a choice: EOS (unless ``ignore_eos``) and the request's ``stop_token_ids``."""
        return (() if req.ignore_eos else self.eos) + tuple(req.stop_token_ids)

    def check(self, req: DecodeRequest, ids: list[int]) -> None:
        check_request_work(
            self.limits,
            prompt_tokens=len(ids),
            max_tokens=req.max_tokens,
            n=req.n,
            model_config=self.target.model.config,
            tree_nodes=self.tree_nodes,
            device=self.target.device,
        )
        vocab = self.target.vocab_size
        if any(not 0 <= t < vocab for t in req.stop_token_ids):
            raise bad_request(f"stop_token_ids must lie in [0, {vocab})", "stop_token_ids")

    # ------------------------------------------------------------------ decoding
    def decode_config(self, req: DecodeRequest, seed: int) -> DecodeConfig:
        verifier = "greedy" if self.user_fn is not None else self.cfg.verifier
        return DecodeConfig(
            method=self.cfg.method,
            verifier=verifier,
            budget=self.cfg.budget,
            settings=req.settings,
            max_new_tokens=req.max_tokens,
            stop_tokens=self.stop_tokens(req),
            seed=seed,
        )

    @staticmethod
    def request_seed(req: DecodeRequest) -> int:
        """The request's ``seed``; none draws a fresh one (independent samples per request)."""
        return req.seed if req.seed is not None else secrets.randbits(63)

    def choice_seeds(self, req: DecodeRequest, seed: int | None = None) -> list[int]:
        """The seed of each of the request's ``n`` choices: one choice takes the request's seed,
        several take seeds spawned from it."""
        seed = self.request_seed(req) if seed is None else seed
        if req.n == 1:
            return [seed]
        return [
            int(s.generate_state(1, np.uint64)[0] >> np.uint64(1))
            for s in np.random.SeedSequence(seed).spawn(req.n)
        ]

    def scored_emit(self, req: DecodeRequest, ids: list[int], emit, scored: dict):
        """``emit(index, block)`` for a decode: calls ``emit(index, block, logprobs)`` (the block's
        log-probabilities when the request asks for them, kept in ``scored[index]`` too; else None)."""
        if emit is None:
            return None
        if req.logprobs is None:
            return lambda index, block: emit(index, block, None)
        scorers: dict[int, _Scorer] = {}

        def scoring(index: int, block: list[int]) -> None:
            if index not in scorers:
                scorers[index] = _Scorer(self.target, ids, req.settings, req.logprobs)
            with torch.inference_mode():
                lps = scorers[index].add(block)
            scored.setdefault(index, []).extend(lps)
            emit(index, block, lps)

        return scoring

    def finish_choices(
        self, req: DecodeRequest, ids: list[int], raw, scored: dict, streamed: bool
    ) -> list[Choice]:
        """Choices from each sample's ``(tokens, block_lengths)``: cut at a stop string, finish reason,
        text, and log-probabilities (a stream's as scored block by block, else scored here)."""
        choices = [self._finish(req, tokens, blocks) for tokens, blocks in raw]
        if req.logprobs is not None:
            for i, c in enumerate(choices):
                c.logprobs = (
                    scored.get(i, [])[: len(c.tokens)]
                    if streamed
                    else self.logprobs(ids, c.tokens, req.settings, req.logprobs)
                )
        return choices

    def empty_choices(self, req: DecodeRequest) -> list[Choice]:
        """``max_tokens = 0`` (echo of the prompt alone, scoring): nothing to decode."""
        lps = None if req.logprobs is None else []
        return [Choice([], "", "length", logprobs=lps) for _ in range(req.n)]

    def jobs(self, req: DecodeRequest, ids: list[int], emit=None) -> tuple[list, dict]:
        """The request's choices as scheduler jobs (continuous batching), each on its own seed, and
        the dict a stream's log-probabilities are kept in (for :meth:`finish_choices`)."""
        scored: dict[int, list] = {}
        emit = self.scored_emit(req, ids, emit, scored)
        out = []
        for i, seed in enumerate(self.choice_seeds(req)):
            out.append(
                Job(
                    list(ids),
                    self.decode_config(req, seed),
                    stop=tuple(req.stop),
                    emit=None if emit is None else (lambda block, i=i: emit(i, block)),
                    text=lambda tokens: self.text(req, tokens),
                    decide=user_decide(self.user_fn, seed) if self.user_fn is not None else None,
                )
            )
        return out, scored

    def run(
        self,
        req: DecodeRequest,
        ids: list[int],
        emit: Callable[[int, list[int]], None] | None = None,
    ) -> list[Choice]:
        """Decode ``req.n`` samples of ``ids`` one request at a time (``--batching serial``);
        ``emit(choice_index, block, logprobs)`` gets blocks as they are committed (one sample: each
        round; several: each whole sample once done), with the block's log-probabilities when the
        request asks for them (else ``None``)."""
        if req.max_tokens == 0:
            return self.empty_choices(req)
        seed = self.request_seed(req)
        seeds = self.choice_seeds(req, seed)
        cfg = self.decode_config(req, seed)
        scored: dict[int, list] = {}
        streamed = emit is not None
        emit = self.scored_emit(req, ids, emit, scored)
        with torch.inference_mode():
            if req.n == 1 or self.user_fn is not None:
                raw = [
                    self._one(req, ids, replace(cfg, seed=s), i, emit) for i, s in enumerate(seeds)
                ]
            else:
                out = generate_batch(self.target, self.drafter, [ids] * req.n, cfg)
                raw = [(t, b) for t, b in zip(out.tokens, out.block_lengths)]
                if emit is not None:
                    for i, (t, _) in enumerate(raw):
                        emit(i, list(t))
            return self.finish_choices(req, ids, raw, scored, streamed)

    def _one(self, req, ids, cfg, index, emit):
        tokens: list[int] = []
        blocks: list[int] = []  # every committed block's length: the prefill's token, then rounds

        def on_block(block):
            tokens.extend(block)
            blocks.append(len(block))
            if emit is not None:
                emit(index, list(block))
            if self.closing:
                raise _Stopped
            if req.stop:
                if stop_cut(self.text(req, tokens), req.stop) is not None:
                    raise _Stopped

        decide = user_decide(self.user_fn, cfg.seed) if self.user_fn is not None else None
        try:
            res = generate(self.target, self.drafter, ids, cfg, on_block=on_block, decide=decide)
            return res.tokens, res.block_lengths
        except _Stopped:
            if self.closing:
                raise APIError(503, "the server is shutting down") from None
            return tokens[: req.max_tokens], blocks[1:]  # a stop string: the rounds run so far

    def _finish(self, req: DecodeRequest, tokens: list[int], blocks: list[int]) -> Choice:
        tokens = list(tokens)[: req.max_tokens]
        reason = "stop" if tokens and tokens[-1] in self.stop_tokens(req) else "length"
        cut = (
            _stop_at(lambda t: self.text(req, t), tokens, req.stop, req.include_stop_str_in_output)
            if req.stop
            else None
        )
        if cut is not None:
            tokens, text = cut
            return Choice(tokens, text, "stop", _rounds_of(blocks, len(tokens)))
        return Choice(tokens, self.text(req, tokens), reason, list(blocks))

    def logprobs(self, ids: list[int], tokens: list[int], settings: SamplingSettings, top: int):
        """Per sampled token: its log-probability in the processed row it was drawn from (temperature, then
        top-k / top-p / min-p; ``T = 0``: ``log softmax(z)``, the raw row) and the ``top`` best of that row
        (tokens the filters remove have probability 0 and are not listed)."""
        with torch.inference_mode():
            return _Scorer(self.target, ids, settings, top).add(list(tokens))

    def prompt_logprobs(self, ids: list[int], top: int):
        """Per prompt token: the target's log-probability of it given the tokens before (the raw row
        ``log softmax(z)``, no temperature or filter, as evaluation harnesses score) and the ``top`` best
        of that row; the first token has none (``None``), as OpenAI answers with ``echo``. The prompt is
        fed in pieces of :data:`SCORE_ROWS` rows, so no ``[len(prompt), vocab]`` copy is made."""
        out: list = [None]
        with torch.inference_mode():
            cache = self.target.new_cache()
            for a in range(0, len(ids) - 1, SCORE_ROWS):
                fed = list(ids[a : min(a + SCORE_ROWS, len(ids) - 1)])
                seq = torch.tensor(fed, dtype=torch.long, device=self.target.device)
                rows = self.target.prefill(cache, seq, all_logits=True).logits.to(torch.float64)
                out += _pick(
                    torch.log_softmax(rows, dim=-1), list(ids[a + 1 : a + 1 + len(fed)]), top
                )
        return out

    def close(self) -> None:
        """Ask a running single-sample decode to stop at its next round (shutdown)."""
        self.closing = True


# rows of log-probabilities computed at once (each [rows, vocab] in float64)
SCORE_ROWS = 256


class _Scorer:
    """The log-probabilities of one choice's tokens, block by block as they are committed (a stream), over
    one causal target cache of prompt + tokens so far: each block costs one forward of its own length."""

    def __init__(self, target, ids: list[int], settings: SamplingSettings, top: int):
        self.target, self.settings, self.top = target, settings, top
        self.cache, self.seq, self.fed = target.new_cache(), list(ids), 0

    def _feed(self, tokens: list[int], all_logits: bool):
        seq = torch.tensor(tokens, dtype=torch.long, device=self.target.device)
        self.fed += len(tokens)
        return self.target.prefill(self.cache, seq, all_logits=all_logits)

    def add(self, block: list[int]):
        if not block:
            return []
        if self.fed == 0 and len(self.seq) > 1:  # the prompt but its last token: no rows kept
            self._feed(self.seq[:-1], all_logits=False)
        out = []
        for a in range(0, len(block), SCORE_ROWS):  # at most SCORE_ROWS rows at a time
            piece = block[a : a + SCORE_ROWS]
            self.seq.extend(piece)
            # the row before each token: the last token fed so far, then the piece but its last
            rows = self._feed(self.seq[self.fed : -1], all_logits=True).logits.to(torch.float64)
            lp = (
                torch.log_softmax(rows, dim=-1)
                if self.settings.greedy
                else processed_probs(rows, self.settings).log()
            )
            out += _pick(lp, piece, self.top)
        return out


def _pick(lp: torch.Tensor, tokens: list[int], top: int):
    """Per row of ``lp`` [len(tokens), V]: (log-probability of its token, the ``top`` best of the row,
    tokens at -inf left out)."""
    if not tokens:
        return []
    chosen = lp.gather(1, torch.tensor(tokens, device=lp.device)[:, None]).squeeze(1).tolist()
    if top > 0:
        vals, idx = lp.topk(min(top, lp.shape[1]), dim=-1)
        tops = [
            [(int(i), float(v)) for i, v in zip(ii, vv) if v > -math.inf]
            for ii, vv in zip(idx.tolist(), vals.tolist())
        ]
    else:
        tops = [[] for _ in tokens]
    return [(float(c), t) for c, t in zip(chosen, tops)]


def _text_bytes(prompt) -> int:
    """UTF-8 bytes of a prompt's text (a string, or the messages' contents); 0 for token ids."""
    if isinstance(prompt, str):
        return len(prompt.encode("utf-8", "surrogatepass"))
    if isinstance(prompt, list) and prompt and isinstance(prompt[0], dict):
        return sum(len(str(m.get("content", "")).encode("utf-8", "surrogatepass")) for m in prompt)
    return 0


def _rounds_of(blocks: list[int], kept: int) -> list[int]:
    """The rounds (block lengths) that produced the first ``kept`` tokens, the prefill's token (token 0)
    being in no round: a stop string that cuts the output keeps the rounds its kept tokens came from."""
    out, pos = [], 1
    for b in blocks:
        if pos >= kept:
            break
        out.append(b)
        pos += b
    return out


def _stop_at(text, tokens: list[int], stops, include: bool) -> tuple[list[int], str] | None:
    """The shortest token prefix whose text (``text(ids)``) holds a stop string, and that text cut
    before it (after it with ``include``: vLLM's ``include_stop_str_in_output``); else None."""
    for k in range(1, len(tokens) + 1):
        full = text(tokens[:k])
        cut = stop_cut(full, stops, include)
        if cut is not None:
            return tokens[:k], full[:cut]
    return None


__all__ = ["ServeConfig", "ServeEngine", "Choice"]
