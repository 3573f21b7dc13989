"""The server's limits as one set of numbers: the command line's defaults are ``ServeLimits``'s (one
place), every limit accepts 1 and refuses 0, and each refusal outside a request's fields carries its
HTTP status (413 body, 429 concurrency)."""

from __future__ import annotations

from dataclasses import fields

import pytest

from exitlaw.engine.serve.limits import (
    CHAT_MAX_TOKENS,
    ServeLimits,
    body_too_large,
    too_many_requests,
)

FLAGS = {
    "max_body_bytes": "--max-body-bytes",
    "max_prompt_tokens": "--max-prompt-tokens",
    "max_tokens": "--max-tokens-limit",
    "max_n": "--max-n",
    "max_concurrent": "--max-concurrent",
    "chat_max_tokens": "--chat-max-tokens",
}


def test_the_serve_command_defaults_are_the_limits_defaults():
    from exitlaw.cli import build_parser

    serve = build_parser()._subparsers._group_actions[0].choices["serve"]
    defaults = {a.option_strings[0]: a.default for a in serve._actions if a.option_strings}
    assert set(FLAGS) == {f.name for f in fields(ServeLimits)}
    assert {name: defaults[flag] for name, flag in FLAGS.items()} == {
        f.name: getattr(ServeLimits(), f.name) for f in fields(ServeLimits)
    }


@pytest.mark.parametrize("name", sorted(FLAGS))
def test_every_limit_accepts_one_and_refuses_zero(name):
    assert getattr(ServeLimits(**{name: 1}), name) == 1
    with pytest.raises(ValueError, match=name):
        ServeLimits(**{name: 0})


def test_refusals_carry_their_status_and_name_their_limit():
    lim = ServeLimits(max_body_bytes=10, max_concurrent=3)
    big, busy = body_too_large(lim, 11), too_many_requests(lim)
    assert (big.status, big.code) == (413, "max_body_bytes") and "10 bytes" in str(big)
    assert (busy.status, busy.code) == (429, "max_concurrent") and "3 requests" in str(busy)


def test_the_chat_default_is_stated_and_bounded_by_the_max_tokens_limit():
    assert ServeLimits().chat_default == CHAT_MAX_TOKENS == 256
    assert ServeLimits(max_tokens=8).chat_default == 8  # a lower limit lowers the default
    assert ServeLimits(chat_max_tokens=1000).chat_default == 1000
    assert ServeLimits(max_tokens=8, chat_max_tokens=8).chat_default == 8
    with pytest.raises(ValueError, match="--chat-max-tokens must be <= --max-tokens-limit"):
        ServeLimits(max_tokens=8, chat_max_tokens=9)
