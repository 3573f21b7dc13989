"""Request limits of ``exitlaw serve``: every one refused with a 4xx naming the limit, before any work.

* body size (``--max-body-bytes``, 413), checked on the declared length and while reading; the body's
  JSON nesting (at most :data:`MAX_JSON_DEPTH`, 400), checked on its bytes before it is parsed;
* a text prompt longer (in UTF-8 bytes) than ``--max-prompt-tokens`` times the longest token's bytes
  times :data:`PROMPT_BYTES_SLACK` cannot fit the prompt limit: 400 before it is tokenized;
* prompt length (``--max-prompt-tokens``), ``max_tokens`` (``--max-tokens-limit``) and ``n``
  (``--max-n``), 400;
* positions: prompt + ``max_tokens`` + one tree (``budget + 1``) must fit the target's
  ``max_position_embeddings``, 400;
* memory: one verify round of ``n`` rows at that context must fit the device's free memory, the
  bound the engine computes for every decode (:func:`~exitlaw.engine.decode.work_bounds.check_decode_fits`), 400;
* concurrent requests (``--max-concurrent``: in flight plus queued), 429.

A chat request without ``max_tokens`` (or ``max_completion_tokens``) decodes at most
``--chat-max-tokens`` (default :data:`CHAT_MAX_TOKENS` = 256, or ``--max-tokens-limit`` if lower); a
completion without it, 16 (OpenAI's).

So no request can stall the machine: the largest work a request can ask for is bounded by these
numbers, and each refusal says which one it broke and its value.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from exitlaw.engine.decode.work_bounds import check_decode_fits
from exitlaw.engine.serve.errors import APIError, bad_request

CHAT_MAX_TOKENS = (
    256  # max_tokens of a chat request that sets none (unless --max-tokens-limit is lower)
)


@dataclass(frozen=True)
class ServeLimits:
    max_body_bytes: int = 1 << 20
    max_prompt_tokens: int = 4096
    max_tokens: int = 1024
    max_n: int = 64
    max_concurrent: int = 32
    chat_max_tokens: int | None = None  # None: CHAT_MAX_TOKENS, or max_tokens if lower

    def __post_init__(self):
        for name in (
            "max_body_bytes",
            "max_prompt_tokens",
            "max_tokens",
            "max_n",
            "max_concurrent",
            "chat_max_tokens",
        ):
            if getattr(self, name) is not None and int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.chat_max_tokens is not None and self.chat_max_tokens > self.max_tokens:
            raise ValueError(
                f"chat_max_tokens {self.chat_max_tokens} exceeds max_tokens {self.max_tokens} "
                "(--chat-max-tokens must be <= --max-tokens-limit)"
            )

    @property
    def chat_default(self) -> int:
        """``max_tokens`` of a chat request that sets none."""
        if self.chat_max_tokens is not None:
            return self.chat_max_tokens
        return min(CHAT_MAX_TOKENS, self.max_tokens)


# deepest JSON nesting a request body may have (a chat body with content parts needs 5)
MAX_JSON_DEPTH = 64
# a normalizer (NFC, ...) may shrink a text before it is tokenized: the prompt-bytes bound allows 4-fold
PROMPT_BYTES_SLACK = 4


def json_depth(data: bytes) -> int:
    """The deepest nesting of ``[``/``{`` in JSON text ``data``, brackets inside strings not counted; one
    linear numpy pass (no parser, no recursion). A quote is a string delimiter unless an odd run of
    backslashes precedes it."""
    a = np.frombuffer(data, dtype=np.uint8)
    if a.size == 0:
        return 0
    idx = np.arange(a.size)
    backslash = a == 0x5C
    # run of backslashes ending at each position: position - last non-backslash position at or before it
    last_plain = np.maximum.accumulate(np.where(backslash, -1, idx))
    run_before = np.concatenate(([0], (idx - last_plain)[:-1]))
    quote = (a == 0x22) & (run_before % 2 == 0)
    outside = np.cumsum(quote) % 2 == 0  # even quotes up to and including here: not in a string
    step = np.zeros(a.size, dtype=np.int64)
    step[((a == 0x5B) | (a == 0x7B)) & outside] = 1
    step[((a == 0x5D) | (a == 0x7D)) & outside] = -1
    return int(np.cumsum(step).max(initial=0))


def check_json_depth(data: bytes) -> None:
    """Refuse (400) a body nested deeper than :data:`MAX_JSON_DEPTH`, before it is parsed."""
    depth = json_depth(data)
    if depth > MAX_JSON_DEPTH:
        raise bad_request(
            f"the request body's JSON is nested {depth} deep, more than this server's limit of "
            f"{MAX_JSON_DEPTH}",
            None,
            "json_depth",
        )


def check_prompt_bytes(limits: ServeLimits, nbytes: int, longest_token_bytes: int) -> None:
    """Refuse (400, naming ``--max-prompt-tokens``) a text prompt too long to fit the prompt limit
    whatever its tokens: every token covers at most ``longest_token_bytes`` bytes (module docstring)."""
    most = limits.max_prompt_tokens * max(1, longest_token_bytes) * PROMPT_BYTES_SLACK
    if nbytes > most:
        raise bad_request(
            f"prompt of {nbytes} bytes cannot fit this server's limit of {limits.max_prompt_tokens} "
            f"tokens (--max-prompt-tokens; at most {most} bytes); refused before tokenizing",
            "prompt",
            "max_prompt_tokens",
        )


def body_too_large(limits: ServeLimits, size: int) -> APIError:
    return APIError(
        413,
        f"request body of {size}+ bytes exceeds this server's limit of {limits.max_body_bytes} "
        "bytes (--max-body-bytes)",
        code="max_body_bytes",
    )


def too_many_requests(limits: ServeLimits) -> APIError:
    return APIError(
        429,
        f"this server already holds {limits.max_concurrent} requests in flight or queued, its "
        "limit (--max-concurrent); retry later",
        code="max_concurrent",
    )


def check_request_size(limits: ServeLimits, *, max_tokens: int, n: int, prompts: int = 1) -> None:
    """Refuse (400, naming the limit) ``max_tokens`` or ``n`` over the server's limits; with several
    prompts, their choices (``prompts * n``) are bounded by ``--max-n`` too."""
    if max_tokens > limits.max_tokens:
        raise bad_request(
            f"max_tokens {max_tokens} exceeds this server's limit of {limits.max_tokens} "
            "(--max-tokens-limit)",
            "max_tokens",
            "max_tokens_limit",
        )
    if n > limits.max_n:
        raise bad_request(
            f"n {n} exceeds this server's limit of {limits.max_n} (--max-n)", "n", "max_n"
        )
    if prompts * n > limits.max_n:
        raise bad_request(
            f"{prompts} prompts x n {n} = {prompts * n} choices exceeds this server's limit of "
            f"{limits.max_n} (--max-n)",
            "prompt",
            "max_n",
        )


def check_request_work(
    limits: ServeLimits,
    *,
    prompt_tokens: int,
    max_tokens: int,
    n: int,
    model_config,
    tree_nodes: int,
    device,
) -> None:
    """Refuse (400, naming the limit) a request whose size or whose decode memory is over a bound."""
    if prompt_tokens > limits.max_prompt_tokens:
        raise bad_request(
            f"prompt of {prompt_tokens} tokens exceeds this server's limit of "
            f"{limits.max_prompt_tokens} (--max-prompt-tokens)",
            "prompt",
            "max_prompt_tokens",
        )
    check_request_size(limits, max_tokens=max_tokens, n=n)
    cfg = (
        model_config.get_text_config() if hasattr(model_config, "get_text_config") else model_config
    )
    positions = getattr(cfg, "max_position_embeddings", None)
    need = prompt_tokens + max_tokens + tree_nodes
    if positions is not None and need > int(positions):
        raise bad_request(
            f"prompt ({prompt_tokens} tokens) + max_tokens ({max_tokens}) + one tree ({tree_nodes} "
            f"nodes) = {need} positions exceeds the model's max_position_embeddings {positions}",
            "max_tokens",
            "context_length",
        )
    try:
        check_decode_fits(
            model_config,
            budget=tree_nodes - 1,
            context=prompt_tokens + max_tokens,
            rows=n,
            device=device,
            what=f"this request ({n} sequence(s), one verify round of {tree_nodes} nodes)",
            advice="lower max_tokens, n or the prompt",
        )
    except ValueError as err:
        raise bad_request(f"work bound: {err}", "max_tokens", "work_bound") from None


def check_batch_fits(limits: ServeLimits, *, max_batch: int, model_config, tree_nodes: int, device):
    """Continuous batching, at start: one round of ``max_batch`` rows, each at the longest context a
    request may reach (``--max-prompt-tokens`` + ``--max-tokens-limit``), must fit the device's free
    memory (the engine's work bound); else a ``ValueError`` naming the flags to lower."""
    check_decode_fits(
        model_config,
        budget=tree_nodes - 1,
        context=limits.max_prompt_tokens + limits.max_tokens,
        rows=max_batch,
        device=device,
        what=f"a continuous batch of --max-batch {max_batch} rows (one verify round of {tree_nodes} nodes each)",
        advice="lower --max-batch, --max-prompt-tokens or --max-tokens-limit",
    )


__all__ = [
    "CHAT_MAX_TOKENS",
    "MAX_JSON_DEPTH",
    "check_json_depth",
    "check_prompt_bytes",
    "json_depth",
    "check_batch_fits",
    "ServeLimits",
    "body_too_large",
    "too_many_requests",
    "check_request_size",
    "check_request_work",
]
