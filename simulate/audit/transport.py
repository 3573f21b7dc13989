"""What each server supports, found by probing before the run, and how its answers are compared.

Before any test, each server gets one small request per endpoint the prompts use (``/v1/completions``,
``/v1/chat/completions``), asking for everything the audit can use: ``n = 2`` samples, token ids back
(vLLM's ``return_token_ids`` / ``return_tokens_as_token_ids``), log-probabilities and a seed. A 4xx that
names one of those fields (a strictly validating server, e.g. ``transformers serve``: HTTP 422
"Unexpected fields") drops that field and the probe is sent again; a 4xx naming nothing droppable is a
usage error with the server's own message. The answer says whether ``n`` is honoured (else each request
asks one sample: *n split*), whether token ids come back and whether log-probabilities do. A run with
token-id prompts also probes whether the completions endpoint takes them (else the prompt is sent as its
text, decoded with the tokenizer, when that text encodes back to the same ids).

The comparison: *token ids* when both servers return them; otherwise *re-tokenised text*, the text of
each server's answer (both servers, the same way) encoded with a tokenizer (``--tokenizer``, by default a
served model id that is a local folder holding ``tokenizer.json``). The re-tokenised outcome is a function
of the sampled tokens, the same function for both servers, so equal laws still give equal outcome laws
(the tests keep their level); what the text does not carry, the audit cannot see (:data:`TEXT_BLIND`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from exitlaw.simulate.audit.client import Client, ServerRefused
from exitlaw.simulate.audit.plan import AuditUsageError

# fields the audit asks for but can do without (the sampling settings are never dropped: they set the law)
DROPPABLE = (
    "return_token_ids",
    "return_tokens_as_token_ids",
    "logprobs",
    "top_logprobs",
    "n",
    "seed",
)

TOKEN_IDS, TEXT = "token ids", "re-tokenised text"
TEXT_BLIND = (
    "token sequences that decode to the same text (the servers' decoders merge them), special tokens "
    "the servers leave out of the text (an end-of-sequence token), bytes that are not valid UTF-8 "
    "(decoded as U+FFFD), whitespace or markup a server's reply parser rewrites; T = 0 near-ties cannot "
    "be told apart (no log-probabilities aligned with re-tokenised positions) and the first-token test "
    "does not run"
)


@dataclass
class Transport:
    """What one server takes and gives on one endpoint."""

    dropped: list[str] = field(default_factory=list)
    n: bool = True  # honours n (else one sample per request)
    token_ids: bool = True
    logprobs: bool = True
    id_prompts: bool | None = None  # completions: takes token-id prompts (None: not probed)

    def to_json(self) -> dict:
        return dict(self.__dict__)


def _named(message: str, payload: dict) -> list[str]:
    """Droppable fields of ``payload`` that an error ``message`` names (quoted, or as a whole word)."""
    out = []
    for f in DROPPABLE:
        if f not in payload:
            continue
        quoted = re.search(rf"['\"`]{f}['\"`]", message)
        word = len(f) > 1 and re.search(rf"(?<![\w.]){f}(?![\w])", message)
        if quoted or word:
            out.append(f)
    return out


def probe(
    client: Client, model: str, prompt, chat: bool, settings: dict | None = None
) -> Transport:
    """One endpoint of one server (module docstring), with the run's sampling ``settings`` (never dropped);
    raises :class:`AuditUsageError` when it refuses a request for a reason the audit cannot drop."""
    t = Transport()
    payload = {
        "model": model,
        "max_tokens": 2,
        "temperature": 1.0,
        "n": 2,
        "seed": 0,
        "return_token_ids": True,
        "return_tokens_as_token_ids": True,
    }
    payload.update(settings or {})
    if chat:
        payload.update(messages=prompt, logprobs=True, top_logprobs=1)
    else:
        payload.update(prompt=prompt, logprobs=1)
    path = "/v1/chat/completions" if chat else "/v1/completions"
    for _ in range(len(DROPPABLE) + 1):
        try:
            out = client.call("POST", path, payload)
            break
        except ServerRefused as err:
            named = _named(str(err), payload) if err.status in (400, 422) else []
            if not named:
                refused = [f for f in settings or {} if re.search(rf"\b{f}\b", str(err))]
                why = (
                    f"; it refuses {', '.join(refused)}, a sampling setting of this audit "
                    f"(--{refused[0].replace('_', '-')}), which is never dropped"
                    if refused
                    else ""
                )
                raise AuditUsageError(f"{err} (the probe of {path} before the run{why})") from None
            t.dropped += named
            for f in named:
                payload.pop(f)
    else:  # pragma: no cover - every round drops a field
        raise AuditUsageError(
            f"{client.name} server {client.base}: the probe of {path} never succeeded"
        )
    choices = out.get("choices") if isinstance(out, dict) else None
    if not isinstance(choices, list) or not choices:
        raise AuditUsageError(
            f"{client.name} server {client.base}: the probe of {path} answered no choices: {str(out)[:200]}"
        )
    t.n = "n" not in t.dropped and len(choices) == 2
    c = choices[0]
    lp = c.get("logprobs") or {}
    t.token_ids = c.get("token_ids") is not None or any(
        str(tok).startswith("token_id:")
        for tok in ((lp.get("tokens") or []) + [e.get("token") for e in (lp.get("content") or [])])
    )
    t.logprobs = bool(lp.get("top_logprobs") or lp.get("content"))
    return t


def probe_id_prompts(client: Client, model: str, ids: list[int], t: Transport) -> None:
    """Does the completions endpoint take a token-id prompt? (``t.id_prompts``)"""
    payload = {"model": model, "prompt": list(ids), "max_tokens": 1, "temperature": 0.0}
    try:
        client.call("POST", "/v1/completions", payload)
        t.id_prompts = True
    except ServerRefused:
        t.id_prompts = False


class Retokeniser:
    """Text -> token ids with a ``tokenizer.json`` (the ``tokenizers`` library: no torch)."""

    def __init__(self, path: str | Path):
        p = Path(path)
        file = p / "tokenizer.json" if p.is_dir() else p
        if not file.is_file():
            raise AuditUsageError(
                f"--tokenizer {path}: no tokenizer.json there (give a model folder or its tokenizer.json)"
            )
        try:
            from tokenizers import (  # lazy: the optional engine extra; the audit runs on the standard library + simulate
                Tokenizer,
            )
        except ImportError:
            raise AuditUsageError(
                "re-tokenising text needs the tokenizers package (pip install tokenizers)"
            ) from None
        try:
            self.tok = Tokenizer.from_file(str(file))
        except Exception as err:  # the library raises its own exception type
            raise AuditUsageError(f"--tokenizer {path}: cannot read {file}: {err}") from None
        self.path = str(p)

    def encode(self, text: str) -> tuple[int, ...]:
        return tuple(self.tok.encode(text, add_special_tokens=False).ids)

    def decode(self, ids) -> str:
        return self.tok.decode(list(ids), skip_special_tokens=False)


def default_tokenizer(models) -> str | None:
    """The first served model id that is a local folder holding ``tokenizer.json`` (``transformers serve``
    names a local model by its path)."""
    for m in models:
        try:
            if m and (Path(m) / "tokenizer.json").is_file():
                return m
        except (OSError, ValueError):
            continue
    return None


__all__ = [
    "DROPPABLE",
    "TEXT",
    "TEXT_BLIND",
    "TOKEN_IDS",
    "Retokeniser",
    "Transport",
    "default_tokenizer",
    "probe",
    "probe_id_prompts",
]
