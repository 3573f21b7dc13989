"""Parse an OpenAI ``/v1/completions`` or ``/v1/chat/completions`` body into a :class:`DecodeRequest`.

Only data is read: a request names no file, module or path, so nothing in it can load code or touch
files. Unknown fields are refused by name (a silently ignored setting would change the law the user
thinks they sample from). Defaults follow the OpenAI API: ``temperature`` 1, ``n`` 1, ``max_tokens`` 16
for completions (the server's ``--max-tokens-limit`` for chat).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from exitlaw.engine.serve.errors import bad_request
from exitlaw.theory.errors import DistributionError
from exitlaw.theory.sampling_settings import (
    FILTER_RECORDS,
    FILTERS,
    SamplingSettings,
    check_temperature_floor,
    filter_record,
)

COMMON = {
    "model",
    "max_tokens",
    "temperature",
    "n",
    "seed",
    "stop",
    "stream",
    "stream_options",
    "logprobs",
    "user",
    "presence_penalty",
    "frequency_penalty",
    "return_token_ids",
    "return_tokens_as_token_ids",
    "stop_token_ids",
    # vLLM's and SGLang's extra fields with a meaning here (docs/guide/serve.md, "Fields")
    *(
        "ignore_eos",
        "min_tokens",
        "skip_special_tokens",
        "spaces_between_special_tokens",
        "include_stop_str_in_output",
        "truncate_prompt_tokens",
    ),
    # sampling settings (docs/design.md §1.7): processed before every draw, read in ``_sampling_settings``
    *FILTERS,
}
# Fields common clients send at a value that changes nothing here (LangChain, the openai SDK, chat UIs):
# accepted at exactly these values, refused by name at any other (a silently ignored tool list or
# bias would change what the user thinks the server does).
NEUTRAL_FIELDS = {
    "parallel_tool_calls": (None, True, False),  # without tools it has no effect
    "logit_bias": (None, {}),
    "response_format": (None, {"type": "text"}),
    "tools": (None, []),
    "tool_choice": (None, "none"),
    "functions": (None, []),
    "function_call": (None, "none"),
    "store": (None, False),
    "metadata": (None, {}),
    # vLLM / SGLang: off at these values (a penalty or beam search would change the sampled law)
    "repetition_penalty": (None, 1, 1.0),
    "use_beam_search": (None, False),
    "length_penalty": (None, 1, 1.0),
}
COMPLETION_NEUTRAL = {"best_of": (None, 1), "suffix": (None, "")}
COMPLETION_FIELDS = COMMON | {"prompt", "echo"} | set(NEUTRAL_FIELDS) | set(COMPLETION_NEUTRAL)
CHAT_FIELDS = (
    COMMON
    | {"messages", "top_logprobs", "max_completion_tokens", "chat_template_kwargs"}
    | set(NEUTRAL_FIELDS)
)
# arguments of apply_chat_template itself, or a template of the client's: not template variables
RESERVED_TEMPLATE_KWARGS = frozenset(
    {
        "conversation",
        "messages",
        "tools",
        "documents",
        "chat_template",
        "add_generation_prompt",
        "continue_final_message",
        "tokenize",
        "padding",
        "truncation",
        "max_length",
        "return_tensors",
        "return_dict",
        "return_assistant_tokens_mask",
        "tokenizer_kwargs",
    }
)
# text parts of a message's content list are joined as vLLM joins them
PART_SEPARATOR = "\n"
MAX_TOP_LOGPROBS = 20


@dataclass(frozen=True)
class DecodeRequest:
    """What one request asks the engine to decode (prompt still text or messages; the engine encodes it)."""

    chat: bool
    prompt: object  # str | list[int] (completions) or list of messages (chat)
    model: str | None
    n: int = 1
    max_tokens: int = 16
    settings: SamplingSettings = SamplingSettings(1.0)  # temperature and filters (vLLM's order)
    seed: int | None = None
    stop: tuple[str, ...] = ()
    stop_token_ids: tuple[int, ...] = ()
    stream: bool = False
    include_usage: bool = False
    logprobs: int | None = None  # None: none; k >= 0: the sampled token's and the top-k
    token_ids_as_text: bool = (
        False  # logprob tokens written "token_id:N" (vLLM's return_tokens_as_token_ids)
    )
    # completions: the prompt before the completion (with its log-probabilities)
    echo: bool = False
    # extra variables of the chat template (enable_thinking)
    chat_template_kwargs: dict | None = None
    # completions with several prompts: all of them (prompt: the first)
    prompts: tuple | None = None
    # vLLM's fields: decode past EOS; the text's special tokens; a stop string kept in the text; the
    # prompt's last k tokens only; usage on every streamed chunk
    ignore_eos: bool = False
    skip_special_tokens: bool = True
    spaces_between_special_tokens: bool = True
    include_stop_str_in_output: bool = False
    truncate_prompt_tokens: int | None = None
    continuous_usage: bool = False

    def split(self) -> list[DecodeRequest]:
        """One request per prompt (itself when it has one), each decoded with this one's settings."""
        if self.prompts is None:
            return [self]
        return [replace(self, prompt=p, prompts=None) for p in self.prompts]

    @property
    def temperature(self) -> float:
        return self.settings.temperature


def _int(body: dict, name: str, default: int | None, lo: int | None = None) -> int | None:
    v = body.get(name, default)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        raise bad_request(f"{name} must be an integer, got {v!r}", name)
    if lo is not None and v < lo:
        raise bad_request(f"{name} must be >= {lo}, got {v}", name)
    return int(v)


def _bool(body: dict, name: str, default: bool = False) -> bool:
    v = body.get(name, default)
    if v is None:
        return default
    if not isinstance(v, bool):
        raise bad_request(f"{name} must be true or false, got {v!r}", name)
    return v


def _number(body: dict, name: str, default: float) -> float:
    v = body.get(name, default)
    if v is None:
        return default
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise bad_request(f"{name} must be a finite number, got {v!r}", name)
    return float(v)


# the OpenAI/vLLM neutral value(s) of each filter, by name from its record: a filter sent at one is off
NEUTRAL = {f.name: f.neutral for f in FILTER_RECORDS}


def _sampling_settings(body: dict, temperature: float) -> SamplingSettings:
    """The request's :class:`~exitlaw.theory.SamplingSettings`: the engine processes the target's rows
    with the temperature and the filters before every draw, in vLLM's order
    (:mod:`exitlaw.theory.sampling_settings`). The OpenAI/vLLM neutral values (:data:`NEUTRAL`:
    ``top_k`` 0 or -1, ``top_p`` 1, ``min_p`` 0) mean off. Any other value out of range is refused
    by name."""
    for name in ("presence_penalty", "frequency_penalty"):
        if body.get(name) not in (None, 0, 0.0):
            raise bad_request(
                f"{name} is not supported (it changes the sampled law)", name, "unsupported"
            )
    given = {}
    for name in FILTERS:
        kind = filter_record(name).type
        value = _int(body, name, None) if kind is int else _number(body, name, None)
        if value is None or value in NEUTRAL[name]:
            continue
        try:
            SamplingSettings(1.0, **{name: value})
        except DistributionError as err:
            raise bad_request(str(err), name) from None
        given[name] = value
    return SamplingSettings(temperature, **given)


def _stop(body: dict) -> tuple[str, ...]:
    v = body.get("stop")
    if v is None:
        return ()
    stops = [v] if isinstance(v, str) else v
    if (
        not isinstance(stops, list)
        or not all(isinstance(s, str) and s for s in stops)
        or len(stops) > 4
    ):
        raise bad_request(
            "stop must be a non-empty string or a list of at most 4 non-empty strings", "stop"
        )
    return tuple(stops)


def _one_prompt(p, where: str):
    if isinstance(p, str):
        if not p:
            raise bad_request(f"{where} is empty", "prompt")
        return p
    if isinstance(p, list) and p and all(isinstance(t, int) and not isinstance(t, bool) for t in p):
        return [int(t) for t in p]
    raise bad_request(
        f"{where} must be a non-empty string or a non-empty list of token ids", "prompt"
    )


def _prompts(body: dict) -> list:
    """Every prompt of a completions request: a string, a list of token ids, or a non-empty list of
    either (several prompts, as OpenAI takes them)."""
    p = body.get("prompt")
    if isinstance(p, list) and p and all(isinstance(x, (str, list)) for x in p):
        return [_one_prompt(x, f"prompt[{i}]") for i, x in enumerate(p)]
    return [_one_prompt(p, "prompt")]


def template_kwargs(value, name: str = "chat_template_kwargs") -> dict | None:
    """``chat_template_kwargs``: an object of template variables (``{"enable_thinking": true}``) passed
    to the tokenizer's ``apply_chat_template``; ``null`` is none. A key that is an argument of
    ``apply_chat_template`` itself (``tokenize``, ``chat_template``, ...) is refused by name."""
    if value is None:
        return None
    if not isinstance(value, dict) or not all(isinstance(k, str) and k for k in value):
        raise bad_request(f"{name} must be an object of template variables, got {value!r}", name)
    reserved = sorted(set(value) & RESERVED_TEMPLATE_KWARGS)
    if reserved:
        raise bad_request(
            f"{name}: {', '.join(reserved)} is an argument of apply_chat_template, not a template "
            "variable",
            name,
            "unsupported",
        )
    return dict(value)


def _neutral(body: dict, fields: dict) -> None:
    """Refuse, by name, a client field sent at a value that would change the request (NEUTRAL_FIELDS)."""
    for name, neutral in fields.items():
        if name in body and not any(
            body[name] == v and type(body[name]) is type(v) for v in neutral
        ):
            allowed = " or ".join("null" if v is None else repr(v) for v in neutral)
            raise bad_request(
                f"{name} = {body[name]!r} is not supported (accepted: {allowed})",
                name,
                "unsupported",
            )


def _content(m: dict, i: int) -> str:
    """A message's text: a string; a list of text parts (``{"type": "text", "text": ...}``) joined with
    :data:`PART_SEPARATOR`; ``null`` on an assistant turn (empty). Any other part is refused by name."""
    content = m.get("content")
    if isinstance(content, str):
        return content
    if content is None and m.get("role") == "assistant":
        return ""
    if isinstance(content, list) and content:
        texts = []
        for j, part in enumerate(content):
            kind = part.get("type") if isinstance(part, dict) else None
            if kind != "text" or not isinstance(part.get("text"), str):
                raise bad_request(
                    f"messages[{i}].content[{j}]: only text parts are supported, got "
                    f"{kind if kind is not None else type(part).__name__!r}",
                    "messages",
                    "unsupported",
                )
            texts.append(part["text"])
        return PART_SEPARATOR.join(texts)
    raise bad_request(
        f"messages[{i}].content must be a string, a non-empty list of text parts, or null on an "
        "assistant turn",
        "messages",
    )


def _messages(body: dict) -> list[dict]:
    msgs = body.get("messages")
    if not isinstance(msgs, list) or not msgs:
        raise bad_request("messages must be a non-empty list", "messages")
    out = []
    for i, m in enumerate(msgs):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise bad_request(f"messages[{i}] must be an object with a string role", "messages")
        extra = sorted(set(m) - {"role", "content", "name"})
        if extra:
            raise bad_request(
                f"messages[{i}]: unsupported field(s) {', '.join(extra)}", "messages", "unsupported"
            )
        out.append({"role": m["role"], "content": _content(m, i)})
    return out


def _min_tokens(body: dict) -> None:
    """``min_tokens``: 0 (or null) is taken. vLLM's positive value masks EOS and ``stop_token_ids``
    for the first tokens, a law other than the target's, which this server's verifiers do not
    implement: refused by name (``ignore_eos`` with ``max_tokens`` fixes a reply's length under the
    target's own law)."""
    v = _int(body, "min_tokens", None, 0)
    if v:
        raise bad_request(
            f"min_tokens = {v} is not supported: it masks EOS and stop_token_ids for the first "
            f"{v} tokens, which changes the sampled law (accepted: 0 or null); for fixed-length "
            "replies send ignore_eos: true with max_tokens",
            "min_tokens",
            "unsupported",
        )


def _truncate(body: dict) -> int | None:
    """``truncate_prompt_tokens``: keep the prompt's last k >= 1 tokens (vLLM's left truncation);
    -1 keeps the server's ``--max-prompt-tokens`` (vLLM: the model's length); null, no truncation."""
    v = _int(body, "truncate_prompt_tokens", None, -1)
    if v == 0:
        raise bad_request(
            "truncate_prompt_tokens must be >= 1, or -1 for the server's --max-prompt-tokens",
            "truncate_prompt_tokens",
        )
    return v


def _max_tokens(body: dict, chat: bool, echo: bool) -> int | None:
    """``max_tokens`` (0 only with echo: the prompt alone), or chat's ``max_completion_tokens``
    which overrides it; null: the server's default."""
    max_tokens = _int(body, "max_tokens", None, 0)
    if max_tokens == 0 and not echo:
        raise bad_request(
            "max_tokens must be >= 1 (0 only with echo: the prompt alone)", "max_tokens"
        )
    if chat:
        max_tokens = _int(body, "max_completion_tokens", max_tokens, 1)
    return max_tokens


def _temperature(body: dict) -> float:
    """``temperature``: 0 (greedy) or at least the floor MIN_TEMPERATURE the verifiers are tested to."""
    temperature = _number(body, "temperature", 1.0)
    if temperature < 0:
        raise bad_request(f"temperature must be >= 0, got {temperature}", "temperature")
    try:
        check_temperature_floor(temperature)
    except DistributionError as err:
        raise bad_request(str(err), "temperature") from None
    return temperature


def _logprobs(body: dict, chat: bool) -> int | None:
    """How many top log-probabilities each token carries (None: no log-probabilities). Chat asks
    with ``logprobs: true`` and ``top_logprobs``; completions with ``logprobs: k``."""
    if chat:
        want = _bool(body, "logprobs")
        top = _int(body, "top_logprobs", None, 0)
        if top is not None and not want:
            raise bad_request("top_logprobs needs logprobs: true", "top_logprobs")
        logprobs = (top or 0) if want else None
    else:
        logprobs = _int(body, "logprobs", None, 0)
    if logprobs is not None and logprobs > MAX_TOP_LOGPROBS:
        raise bad_request(
            f"logprobs: at most {MAX_TOP_LOGPROBS} top log-probabilities, got {logprobs}",
            "logprobs",
        )
    return logprobs


def parse_request(body: object, *, chat: bool, default_max_tokens: int) -> DecodeRequest:
    """The :class:`DecodeRequest` of one JSON body; a 400 :class:`~.errors.APIError` names any bad field."""
    if not isinstance(body, dict):
        raise bad_request("the request body must be a JSON object")
    unknown = sorted(set(body) - (CHAT_FIELDS if chat else COMPLETION_FIELDS))
    if unknown:
        raise bad_request(
            f"unsupported parameter(s): {', '.join(unknown)}", unknown[0], "unsupported"
        )
    _neutral(body, NEUTRAL_FIELDS if chat else {**NEUTRAL_FIELDS, **COMPLETION_NEUTRAL})
    echo = False if chat else _bool(body, "echo")
    model = body.get("model")
    if model is not None and not isinstance(model, str):
        raise bad_request("model must be a string", "model")
    max_tokens = _max_tokens(body, chat, echo)
    settings = _sampling_settings(body, _temperature(body))
    seed = _int(body, "seed", None)
    if seed is not None and not 0 <= seed < 2**63:
        raise bad_request(f"seed must be in [0, 2**63), got {seed}", "seed")
    opts = body.get("stream_options") or {}
    if not isinstance(opts, dict) or set(opts) - {"include_usage", "continuous_usage_stats"}:
        raise bad_request(
            "stream_options takes only include_usage and continuous_usage_stats", "stream_options"
        )
    _min_tokens(body)
    logprobs = _logprobs(body, chat)
    if echo and _bool(body, "stream"):
        raise bad_request(
            "echo with stream is not supported; ask without stream", "echo", "unsupported"
        )
    stop_ids = body.get("stop_token_ids") or []
    if not isinstance(stop_ids, list) or not all(
        isinstance(t, int) and not isinstance(t, bool) for t in stop_ids
    ):
        raise bad_request("stop_token_ids must be a list of token ids", "stop_token_ids")
    prompts = [_messages(body)] if chat else _prompts(body)
    return DecodeRequest(
        chat=chat,
        prompt=prompts[0],
        prompts=tuple(prompts) if len(prompts) > 1 else None,
        model=model,
        n=_int(body, "n", 1, 1),
        max_tokens=max_tokens if max_tokens is not None else default_max_tokens,
        settings=settings,
        seed=seed,
        stop=_stop(body),
        stop_token_ids=tuple(stop_ids),
        stream=_bool(body, "stream"),
        include_usage=_bool(opts, "include_usage"),
        logprobs=logprobs,
        token_ids_as_text=_bool(body, "return_tokens_as_token_ids"),
        chat_template_kwargs=template_kwargs(body.get("chat_template_kwargs")),
        echo=echo,
        ignore_eos=_bool(body, "ignore_eos"),
        skip_special_tokens=_bool(body, "skip_special_tokens", True),
        spaces_between_special_tokens=_bool(body, "spaces_between_special_tokens", True),
        include_stop_str_in_output=_bool(body, "include_stop_str_in_output"),
        truncate_prompt_tokens=_truncate(body),
        continuous_usage=_bool(opts, "continuous_usage_stats"),
    )


__all__ = ["DecodeRequest", "parse_request", "template_kwargs", "MAX_TOP_LOGPROBS"]
