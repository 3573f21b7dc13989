"""A minimal OpenAI-API client for the audit (standard-library HTTP; no torch, no JAX).

Errors say which server and why, in three kinds the audit's exit codes follow:
:class:`Unreachable` (no answer at all: exit 2 before the run, 4 during it), :class:`ServerRefused`
(a 4xx: a usage problem such as a wrong key, model or limit, exit 2) and :class:`ServerFailed` (a 5xx,
a dropped connection or an answer that is not the API's shape, exit 4).

Token ids are read from ``choices[i].token_ids`` (exitlaw serve; vLLM with ``return_token_ids``), else
from logprob tokens written ``token_id:N`` (vLLM's ``return_tokens_as_token_ids``).
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass


class AuditHTTPError(RuntimeError):
    def __init__(self, server: str, message: str):
        super().__init__(f"{server}: {message}")
        self.server = server


class Unreachable(AuditHTTPError):
    """The server did not answer (refused, unknown host, timeout)."""


class ServerRefused(AuditHTTPError):
    """The server answered 4xx."""

    def __init__(self, server: str, message: str, status: int):
        super().__init__(server, message)
        self.status = status


class ServerFailed(AuditHTTPError):
    """The server answered 5xx, dropped the connection or answered something that is not the API's shape."""


_TOKEN_ID = re.compile(r"^token_id:(\d+)$")


@dataclass(frozen=True)
class Sample:
    """One choice: its token ids and, per position, the top log-probabilities ``{token_id: logprob}``."""

    tokens: tuple[int, ...]
    top: tuple[dict[int, float], ...] = ()
    text: str | None = None


class Client:
    def __init__(
        self, name: str, base_url: str, api_key: str | None = None, timeout: float = 120.0
    ):
        self.name, self.base = name, base_url.rstrip("/")
        if not re.match(r"^https?://", self.base):
            raise ValueError(f"--{name}: expected an http(s):// URL, got {base_url!r}")
        if self.base.endswith("/v1"):
            self.base = self.base[:-3]
        self.key, self.timeout = api_key, timeout
        # set after the probe (transport.py): per endpoint (chat or not) what the server takes; the
        # re-tokeniser when the run compares text; how a token-id prompt is sent where ids are refused
        self.transports: dict = {}
        self.retokenise = None
        self.id_prompt_text = None
        self.requests = 0  # sampling requests sent (the probe's not counted)
        self._lock = threading.Lock()

    def call(self, method: str, path: str, payload: dict | None = None) -> dict:
        """One request; the answer's JSON (errors as the module docstring says)."""
        return self._call(method, path, payload)

    def _call(self, method: str, path: str, payload: dict | None = None) -> dict:
        url = self.base + path
        headers = {"Content-Type": "application/json"}
        if self.key:
            headers["Authorization"] = f"Bearer {self.key}"
        data = None if payload is None else json.dumps(payload).encode()
        req = urllib.request.Request(url, data=data, headers=headers, method=method)
        where = f"{self.name} server {self.base}"
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                body = resp.read()
        except urllib.error.HTTPError as err:
            with err:
                detail = err.read().decode("utf-8", "replace")[:2000]
            detail = _error_message(detail)[:400]
            cls = ServerRefused if 400 <= err.code < 500 else ServerFailed
            if cls is ServerRefused:
                raise ServerRefused(
                    where, f"{method} {path} answered HTTP {err.code}: {detail}", err.code
                ) from None
            raise ServerFailed(
                where, f"{method} {path} answered HTTP {err.code}: {detail}"
            ) from None
        except urllib.error.URLError as err:
            raise Unreachable(where, f"cannot reach {url}: {err.reason}") from None
        except (TimeoutError, socket.timeout):
            raise Unreachable(where, f"{url} did not answer within {self.timeout:g} s") from None
        except (ConnectionError, OSError) as err:
            raise ServerFailed(where, f"{url}: connection failed: {err}") from None
        try:
            return json.loads(body)
        except ValueError:
            raise ServerFailed(
                where, f"{method} {path} did not answer JSON: {body[:200]!r}"
            ) from None

    def models(self) -> list[str]:
        out = self._call("GET", "/v1/models")
        try:
            return [m["id"] for m in out["data"]]
        except (KeyError, TypeError):
            raise ServerFailed(
                f"{self.name} server {self.base}", f"/v1/models answered {str(out)[:200]}"
            ) from None

    def sample(
        self,
        prompt,
        *,
        model: str,
        n: int,
        max_tokens: int,
        temperature: float,
        seed: int | None,
        top_logprobs: int | None,
        settings: dict | None = None,
    ) -> list[Sample]:
        """``n`` choices for one prompt (text, token ids, or chat messages); ``settings``: the active
        filters of the plan's sampling settings (``AuditConfig.settings``), sent as request fields.
        Where the probe found ``n`` ignored, ``n`` one-sample requests (seeds derived from ``seed``)."""
        chat = isinstance(prompt, list) and prompt and isinstance(prompt[0], dict)
        t = self.transports.get(bool(chat))
        if t is not None and not t.n and n > 1:
            out = []
            for k in range(n):
                out += self.sample(
                    prompt,
                    model=model,
                    n=1,
                    max_tokens=max_tokens,
                    temperature=temperature,
                    seed=split_seed(seed, k),
                    top_logprobs=top_logprobs,
                    settings=settings,
                )
            return out
        payload = {
            "model": model,
            "n": n,
            "max_tokens": max_tokens,
            "temperature": temperature,
            "return_token_ids": True,
            "return_tokens_as_token_ids": True,
        }
        if seed is not None:
            payload["seed"] = seed
        payload.update(settings or {})
        if chat:
            payload["messages"] = prompt
            if top_logprobs is not None:
                payload.update(logprobs=True, top_logprobs=top_logprobs)
        else:
            if not isinstance(prompt, str) and t is not None and t.id_prompts is False:
                prompt = self.id_prompt_text(prompt)
            payload["prompt"] = prompt
            if top_logprobs is not None:
                payload["logprobs"] = top_logprobs
        if t is not None:
            for f in t.dropped:
                payload.pop(f, None)
            if not t.n:
                payload.pop("n", None)
        with self._lock:
            self.requests += 1
        out = self._call("POST", "/v1/chat/completions" if chat else "/v1/completions", payload)
        where = f"{self.name} server {self.base}"
        try:
            choices = sorted(out["choices"], key=lambda c: c.get("index", 0))
        except (KeyError, TypeError, AttributeError):
            raise ServerFailed(where, f"answer without choices: {str(out)[:200]}") from None
        if len(choices) != n:
            raise ServerFailed(where, f"asked n={n}, got {len(choices)} choices")
        if self.retokenise is not None:
            return [_retokenised(c, chat, where, self.retokenise) for c in choices]
        return [_sample(c, chat, where) for c in choices]


def _error_message(body: str) -> str:
    """The message of an error body: OpenAI's ``error.message``, FastAPI's ``detail``, else the text."""
    try:
        data = json.loads(body)
    except ValueError:
        return body
    if isinstance(data, dict):
        err = data.get("error")
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
        if data.get("detail"):
            return str(data["detail"])
    return body


def split_seed(seed: int | None, k: int) -> int | None:
    """The seed of the ``k``-th one-sample request that stands for one ``n``-sample request."""
    if seed is None:
        return None
    digest = hashlib.sha256(repr((seed, k)).encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


def _text(choice: dict, chat: bool, where: str) -> str:
    text = (choice.get("message") or {}).get("content") if chat else choice.get("text")
    if text is None and chat:
        text = ""  # a chat answer with no content (e.g. only a stop token)
    if not isinstance(text, str):
        raise ServerFailed(where, f"a choice without text: {str(choice)[:200]}")
    return text


def _retokenised(choice: dict, chat: bool, where: str, encode) -> Sample:
    """The choice's text, encoded with the audit's tokenizer (the same for both servers)."""
    text = _text(choice, chat, where)
    return Sample(tuple(encode(text)), (), text)


def _logprob_entries(choice: dict, chat: bool) -> tuple[list, list]:
    """(token strings, top dicts ``{token string: logprob}``) of a choice's logprobs, either API shape."""
    lp = choice.get("logprobs")
    if not lp:
        return [], []
    if chat:
        content = lp.get("content") or []
        return (
            [e.get("token") for e in content],
            [{t["token"]: t["logprob"] for t in (e.get("top_logprobs") or [])} for e in content],
        )
    return list(lp.get("tokens") or []), [dict(d or {}) for d in (lp.get("top_logprobs") or [])]


def _as_id(token: str, where: str) -> int:
    m = _TOKEN_ID.match(str(token))
    if m is None:
        raise ServerRefused(
            where,
            f"logprob token {token!r} is not written token_id:N; this audit compares token "
            "ids: serve them (vLLM: --return-tokens-as-token-ids)",
            400,
        )
    return int(m.group(1))


def _sample(choice: dict, chat: bool, where: str) -> Sample:
    strings, tops = _logprob_entries(choice, chat)
    ids = choice.get("token_ids")
    if ids is None:
        if not strings and (choice.get("text") or (choice.get("message") or {}).get("content")):
            raise ServerRefused(
                where,
                "the server returns neither token_ids nor logprob tokens; this audit compares "
                "token ids (vLLM: return_token_ids or --return-tokens-as-token-ids)",
                400,
            )
        ids = [_as_id(t, where) for t in strings]
    try:
        tokens = tuple(int(t) for t in ids)
    except (TypeError, ValueError):
        raise ServerFailed(
            where, f"token_ids is not a list of integers: {str(ids)[:100]}"
        ) from None
    try:  # top log-probabilities keyed by token_id:N; a server that keys them by text gives no margins
        top = (
            tuple({_as_id(k, where): float(v) for k, v in d.items()} for d in tops) if tops else ()
        )
    except ServerRefused:
        top = ()
    return Sample(tokens, top)


__all__ = [
    "Client",
    "Sample",
    "split_seed",
    "AuditHTTPError",
    "Unreachable",
    "ServerRefused",
    "ServerFailed",
]
