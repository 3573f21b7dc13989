"""The one prompt encoder of ``exitlaw bench decoding`` and ``exitlaw train``: text or a conversation -> token ids.

Two modes, chosen by the caller:

* ``chat=True``: ``tokenizer.apply_chat_template(messages, add_generation_prompt=True)``;
  when the template reads ``enable_thinking`` (Qwen3) it is passed, ``False`` by default
  (the paper decodes with thinking disabled); templates that do not know it get nothing.
* ``chat=False``: the tokenizer's plain encoding of one user message, with the special
  tokens the tokenizer itself adds to a sequence (a BOS for Llama-3, none for Qwen3).

A token-id prompt passes through unchanged (checked). The result is always a flat
``list[int]``; anything else the tokenizer returns raises :class:`PromptEncodingError`
instead of being coerced. (With transformers 5, ``apply_chat_template(tokenize=True)``
returns a ``BatchEncoding``; ``list()`` of it is ``['input_ids', 'attention_mask']``,
a silent failure this module exists to rule out.)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Sequence

from exitlaw.engine.prompts.records import Prompt

Message = Mapping[str, str]


class PromptEncodingError(ValueError):
    """A prompt that cannot be encoded, or a tokenizer that returned something other than token ids."""


def chat_template_source(tokenizer) -> str:
    """The tokenizer's chat template text ('' when it has none; named templates are joined)."""
    tmpl = getattr(tokenizer, "chat_template", None)
    if isinstance(tmpl, dict):
        return "\n".join(str(v) for v in tmpl.values())
    return tmpl or ""


def has_chat_template(tokenizer) -> bool:
    return bool(chat_template_source(tokenizer))


def _token_ids(out: Any, what: str) -> list[int]:
    """``out`` as a flat non-empty list of ints, or a :class:`PromptEncodingError` naming what came back."""
    if isinstance(out, Mapping):
        if "input_ids" not in out:
            raise PromptEncodingError(
                f"{what} returned a mapping without input_ids (keys {sorted(out)})"
            )
        out = out["input_ids"]
    if not isinstance(out, (list, tuple)):
        raise PromptEncodingError(
            f"{what} returned {type(out).__name__}, expected a list of token ids"
        )
    bad = [t for t in out if not isinstance(t, int) or isinstance(t, bool) or t < 0]
    if bad:
        raise PromptEncodingError(
            f"{what} returned {len(bad)} entries that are not token ids, e.g. {bad[0]!r} "
            f"({type(bad[0]).__name__})"
        )
    if not out:
        raise PromptEncodingError(f"{what} returned no tokens")
    return [int(t) for t in out]


def _messages(prompt: str | Sequence[Message]) -> list[dict[str, str]]:
    if isinstance(prompt, str):
        return [{"role": "user", "content": prompt}]
    msgs = list(prompt)
    if not msgs:
        raise PromptEncodingError("an empty conversation has nothing to encode")
    for i, m in enumerate(msgs):
        if (
            not isinstance(m, Mapping)
            or not isinstance(m.get("role"), str)
            or not isinstance(m.get("content"), str)
        ):
            raise PromptEncodingError(
                f"message {i} must be {{'role': str, 'content': str}}, got {m!r}"
            )
    return [{"role": m["role"], "content": m["content"]} for m in msgs]


def encode_prompt(
    tokenizer,
    prompt: str | Sequence[Message] | Sequence[int] | Prompt,
    *,
    chat: bool = False,
    enable_thinking: bool = False,
    template_kwargs: Mapping[str, Any] | None = None,
) -> list[int]:
    """Token ids of one prompt (module docstring).

    ``prompt``: one user message (str), a conversation (``[{"role", "content"}, ...]``; its
    last message is a user turn to be answered), token ids, or a :class:`.Prompt` (its ids,
    else its first user turn). ``template_kwargs``: more variables of the chat template (they
    override ``enable_thinking``), as a server's ``chat_template_kwargs`` pass them.
    """
    if isinstance(prompt, Prompt):
        prompt = list(prompt.ids) if prompt.ids is not None else prompt.turns[0]
    if not isinstance(prompt, str) and len(prompt) and not isinstance(prompt[0], Mapping):
        return _token_ids(list(prompt), "the token-id prompt")
    messages = _messages(prompt)
    if chat:
        source = chat_template_source(tokenizer)
        if not source:
            raise PromptEncodingError(
                "chat encoding asked for, but the tokenizer has no chat template"
            )
        extra = {"enable_thinking": enable_thinking} if "enable_thinking" in source else {}
        extra.update(template_kwargs or {})
        out = tokenizer.apply_chat_template(
            messages, tokenize=True, add_generation_prompt=True, return_dict=True, **extra
        )
        return _token_ids(out, "tokenizer.apply_chat_template")
    if len(messages) != 1 or messages[0]["role"] != "user":
        raise PromptEncodingError(
            "plain (non-chat) encoding takes one user message; a conversation needs chat=True"
        )
    return _token_ids(tokenizer(messages[0]["content"], add_special_tokens=True), "tokenizer(text)")


def encode_prompts(
    tokenizer,
    prompts: Sequence[str | Sequence[int] | Prompt],
    *,
    chat: bool = False,
    enable_thinking: bool = False,
) -> list[list[int]]:
    """:func:`encode_prompt` of every prompt (a :class:`.Prompt` contributes its first turn or its ids)."""
    return [
        encode_prompt(tokenizer, p, chat=chat, enable_thinking=enable_thinking) for p in prompts
    ]


__all__ = [
    "PromptEncodingError",
    "encode_prompt",
    "encode_prompts",
    "has_chat_template",
    "chat_template_source",
]
