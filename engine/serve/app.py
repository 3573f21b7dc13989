"""The HTTP face of ``exitlaw serve`` (Starlette): OpenAI-compatible routes over one :class:`ServeEngine`.

Routes: ``GET /health`` (no key), ``GET /v1/models``, ``POST /v1/completions``,
``POST /v1/chat/completions`` (``stream`` as server-sent events). With an API key every ``/v1`` route
needs ``Authorization: Bearer KEY`` (401 otherwise, compared in constant time). Every refusal and every
failure is an OpenAI-style JSON error body with a 4xx/5xx status; tracebacks go to the server's stderr,
never to a client. Decoding runs on one worker thread, in one of two modes:

* **continuous** (a :class:`~exitlaw.engine.serve.scheduler.Scheduler`): every choice of every request
  is a row of a running batch, joining and leaving between rounds; a client that goes away (a closed
  stream, a closed connection while waiting) has its choices dropped before the next round.
  ``GET /stats`` reports rounds, rows and cancellations.
* **serial** (no scheduler): requests are decoded one at a time, in arrival order.

At most ``max_concurrent`` requests are held at once, in flight or queued (429 beyond).
"""

from __future__ import annotations

import asyncio
import hmac
import json
import sys
import time
import traceback
import uuid
from concurrent.futures import ThreadPoolExecutor

from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from exitlaw.engine.serve.detok import IncrementalText
from exitlaw.engine.serve.engine import Choice, ServeEngine
from exitlaw.engine.serve.errors import APIError, bad_request
from exitlaw.engine.serve.limits import (
    body_too_large,
    check_json_depth,
    check_request_size,
    too_many_requests,
)
from exitlaw.engine.serve.requests import DecodeRequest, parse_request
from exitlaw.engine.serve.scheduler import Cancelled, Scheduler

_DONE = object()


def _error(err: APIError) -> JSONResponse:
    return JSONResponse(err.body(), status_code=err.status)


class ClientGone(Exception):
    """The client closed its connection before its request's body had arrived."""


def _guard(handler):
    """Answer an :class:`APIError` with its body, anything else with a 500 body (the traceback to stderr);
    a client gone mid-body gets nothing (there is no one to answer) and leaves no traceback."""

    async def wrapped(self, request: Request):
        try:
            return await handler(self, request)
        except APIError as err:
            return _error(err)
        except ClientGone:
            return Response(status_code=499)
        except Exception as err:  # never a traceback to the client: log it here, answer 500
            traceback.print_exc(file=sys.stderr)
            return _error(APIError(500, f"internal error: {type(err).__name__}: {err}"))

    return wrapped


def _sse(body: dict) -> str:
    """One server-sent event carrying ``body`` as JSON."""
    return "data: " + json.dumps(body) + "\n\n"


def _role_row(index: int) -> dict:
    """A chat stream's first chunk of choice ``index``: the assistant role, no content yet."""
    return {"index": index, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}


def _failure_body(err: Exception) -> dict:
    """The error event that ends a stream whose decode raised: an API error as it is, anything else
    a 500 (its traceback printed to stderr)."""
    if isinstance(err, APIError):
        return err.body()
    traceback.print_exc(file=sys.stderr)
    return APIError(500, f"internal error: {type(err).__name__}: {err}").body()


class ServeApp:
    """State of one server: the engine, its worker thread, the key and the count of requests held."""

    def __init__(
        self, engine: ServeEngine, api_key: str | None = None, scheduler: Scheduler | None = None
    ):
        self.engine, self.limits, self.api_key = engine, engine.limits, api_key
        self.scheduler = scheduler  # None: serial mode (one request at a time)
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="exitlaw-decode")
        # prompts are encoded and checked here, never on the decode worker: a long prompt stalls no stream
        self.tokenizing = ThreadPoolExecutor(max_workers=1, thread_name_prefix="exitlaw-tokenize")
        self.held = 0
        self.created = int(time.time())

    # ------------------------------------------------------------------ plumbing
    def _authorize(self, request: Request) -> None:
        if self.api_key is None:
            return
        header = request.headers.get("authorization", "")
        given = header[7:] if header.lower().startswith("bearer ") else ""
        if not given or not hmac.compare_digest(given.encode(), self.api_key.encode()):
            raise APIError(
                401,
                "missing or wrong API key: send 'Authorization: Bearer KEY'",
                code="invalid_api_key",
            )

    async def _body(self, request: Request) -> object:
        limit = self.limits.max_body_bytes
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise body_too_large(self.limits, int(declared))
        size, chunks = 0, []
        try:
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    raise body_too_large(self.limits, size)
                chunks.append(chunk)
        except ClientDisconnect:
            raise ClientGone() from None
        data = b"".join(chunks)
        check_json_depth(data)  # before parsing: no recursion on a hostile nesting
        try:
            body = json.loads(data)
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as err:
            raise bad_request(f"the request body is not valid JSON: {err}") from None
        _check_unicode(body)
        return body

    def _check_model(self, req: DecodeRequest) -> None:
        if req.model is not None and req.model != self.engine.model_name:
            raise APIError(
                404,
                f"model {req.model!r} is not served here; this server serves "
                f"{self.engine.model_name!r}",
                param="model",
                code="model_not_found",
            )

    # ------------------------------------------------------------------ routes
    async def health(self, request: Request):
        return JSONResponse({"status": "ok"})

    def _card(self) -> dict:
        """The served model as ``/v1/models`` lists it."""
        return {
            "id": self.engine.model_name,
            "object": "model",
            "created": self.created,
            "owned_by": "exitlaw",
            "method": self.engine.cfg.method,
            # an AR server runs no verifier and no tree
            "verifier": self.engine.cfg.verifier if self.engine.cfg.method != "ar" else None,
            "budget": self.engine.cfg.budget if self.engine.cfg.method != "ar" else None,
        }

    @_guard
    async def stats(self, request: Request):
        """``GET /stats``: the decode worker's counts (continuous mode) and the requests held."""
        self._authorize(request)
        mode = "serial" if self.scheduler is None else "continuous"
        body = {"batching": mode, "held": self.held}
        if self.scheduler is not None:
            body.update(self.scheduler.stats.to_json(), max_batch=self.scheduler.max_rows)
        return JSONResponse(body)

    @_guard
    async def models(self, request: Request):
        self._authorize(request)
        return JSONResponse({"object": "list", "data": [self._card()]})

    @_guard
    async def model(self, request: Request):
        """``GET /v1/models/{id}``: the served model's card, 404 naming the id for any other."""
        self._authorize(request)
        wanted = request.path_params["model_id"]
        if wanted != self.engine.model_name:
            raise APIError(
                404,
                f"model {wanted!r} does not exist; this server serves {self.engine.model_name!r}",
                param="model",
                code="model_not_found",
            )
        return JSONResponse(self._card())

    @_guard
    async def completions(self, request: Request):
        return await self._complete(request, chat=False)

    @_guard
    async def chat(self, request: Request):
        return await self._complete(request, chat=True)

    async def _complete(self, request: Request, *, chat: bool):
        self._authorize(request)
        body = await self._body(request)
        req = parse_request(
            body, chat=chat, default_max_tokens=self.limits.chat_default if chat else 16
        )
        self._check_model(req)
        parts = req.split()  # one request per prompt (completions may send several)
        # before queueing; prompt on the tokenizing thread
        check_request_size(self.limits, max_tokens=req.max_tokens, n=req.n, prompts=len(parts))
        if self.held >= self.limits.max_concurrent:
            raise too_many_requests(self.limits)
        self.held += 1
        release, streaming = self._releaser(), False
        try:
            # encode and check on the tokenizing thread (never the decode worker), before any answer:
            # a bad prompt is a 4xx, streamed or not
            ids = await asyncio.get_running_loop().run_in_executor(
                self.tokenizing, self._prepare, parts
            )
            if self.scheduler is not None and not req.stream:
                # one call on the worker queues the choices: they join in that pass
                jobs: list = []
                decoded = await self._on_worker(self._submit, parts, ids, None, jobs)
                try:
                    done = await self._await_decode(decoded, jobs, request)
                except Cancelled:  # the client has gone: nobody reads this answer
                    return JSONResponse({}, status_code=499)
                return JSONResponse(self._response(req, ids, done))
            if req.stream:
                streaming = True
                # the stream releases its place when it ends (or, if never started, after the response)
                return StreamingResponse(
                    self._stream(req, parts, ids, release),
                    media_type="text/event-stream",
                    background=BackgroundTask(release),
                )
            try:
                done = await self._run_decode(parts, ids, None, request)
            except Cancelled:  # the client has gone: nobody reads this answer
                return JSONResponse({}, status_code=499)
            return JSONResponse(self._response(req, ids, done))
        finally:
            if not streaming:
                release()

    def _releaser(self):
        """A once-only release of one held place."""
        done = False

        def release() -> None:
            nonlocal done
            if not done:
                done, self.held = True, self.held - 1

        return release

    def _prepare(self, parts: list[DecodeRequest]) -> list[list[int]]:
        """Runs on the tokenizing thread: every prompt's token ids, each checked against the work
        bounds."""
        ids = [self.engine.encode(part) for part in parts]
        for part, one in zip(parts, ids):
            self.engine.check(part, one)
        return ids

    def _decode(self, parts: list[DecodeRequest], ids: list[list[int]], emit) -> list[list[Choice]]:
        """Runs on the worker thread: each prompt's ``n`` choices; ``emit`` gets the choice's global index
        (prompt index * n + sample index, as OpenAI numbers them)."""
        out = []
        for p, (part, one) in enumerate(zip(parts, ids)):
            shifted = (
                None
                if emit is None
                else (lambda i, block, lps, p=p: emit(p * part.n + i, block, lps))
            )
            out.append(self._echo(part, one, self.engine.run(part, one, shifted)))
        return out

    def _echo(self, part: DecodeRequest, one: list[int], choices: list[Choice]) -> list[Choice]:
        """Worker thread: with ``echo``, the prompt (and its log-probabilities) on every choice."""
        if part.echo:
            text = part.prompt if isinstance(part.prompt, str) else self.engine.text(part, one)
            lps = None if part.logprobs is None else self.engine.prompt_logprobs(one, part.logprobs)
            for c in choices:
                c.echo = (one, text, lps)
        return choices

    async def _on_worker(self, fn, *args):
        """``fn(*args)`` on the decode worker thread (between rounds in continuous mode)."""
        if self.scheduler is not None:
            return await asyncio.wrap_future(self.scheduler.call(fn, *args))
        return await asyncio.get_running_loop().run_in_executor(self.executor, fn, *args)

    async def _run_decode(self, parts, ids, emit, request: Request | None = None, jobs=None):
        """Every prompt's ``n`` choices (a list per prompt). Serial: :meth:`_decode` on the worker.
        Continuous: each choice a scheduler job (``jobs`` collects them, for a stream to cancel);
        while waiting, a closed connection (``request``) cancels them (:class:`Cancelled`)."""
        if self.scheduler is None:
            return await asyncio.get_running_loop().run_in_executor(
                self.executor, self._decode, parts, ids, emit
            )
        jobs = [] if jobs is None else jobs
        return await self._await_decode(self._submit(parts, ids, emit, jobs), jobs, request)

    def _submit(self, parts, ids, emit, jobs: list):
        """Continuous mode: each prompt's choices as scheduler jobs (added to ``jobs``), queued as one
        request whose answer (:meth:`_finish_parts`) the worker builds in the pass its last choice
        ends in; returns the answer's future."""
        per_part, new = [], []
        for p, (part, one) in enumerate(zip(parts, ids)):
            shifted = (
                None
                if emit is None
                else (lambda i, block, lps, p=p, n=part.n: emit(p * n + i, block, lps))
            )
            mine, scored = (
                ([], {}) if part.max_tokens == 0 else self.engine.jobs(part, one, shifted)
            )
            new += mine
            per_part.append((mine, scored))
        jobs += new
        streamed = emit is not None
        return self.scheduler.submit_all(
            new, lambda: self._finish_parts(parts, ids, per_part, streamed)
        )

    async def _await_decode(self, decoded, jobs: list, request: Request | None):
        """The answer of :meth:`_submit` (a concurrent future); a closed connection (``request``)
        while waiting cancels the jobs (:class:`Cancelled`)."""
        waiter = asyncio.wrap_future(decoded)
        try:
            while not waiter.done():
                await asyncio.wait({waiter}, timeout=0.2)
                if request is not None and not waiter.done() and await request.is_disconnected():
                    raise Cancelled()
            return await waiter
        except BaseException:
            self.scheduler.cancel(jobs)  # the worker ends them with Cancelled before its next round
            waiter.add_done_callback(lambda f: f.cancelled() or f.exception())  # retrieved: no log
            raise

    def _finish_parts(self, parts, ids, per_part, streamed: bool) -> list[list[Choice]]:
        """Worker thread: each prompt's choices from its jobs' results (text, stop-string cuts,
        log-probabilities, echo)."""
        out = []
        for part, one, (jobs, scored) in zip(parts, ids, per_part):
            if part.max_tokens == 0:
                choices = self.engine.empty_choices(part)
            else:
                raw = [j.future.result() for j in jobs]
                choices = self.engine.finish_choices(part, one, raw, scored, streamed)
            out.append(self._echo(part, one, choices))
        return out

    # ------------------------------------------------------------------ bodies
    def _head(self, req: DecodeRequest, chunk: bool = False) -> dict:
        kind = (
            ("chat.completion.chunk" if chunk else "chat.completion")
            if req.chat
            else "text_completion"
        )
        return {
            "id": f"{'chatcmpl' if req.chat else 'cmpl'}-{uuid.uuid4().hex}",
            "object": kind,
            "created": int(time.time()),
            "model": self.engine.model_name,
        }

    def _usage(self, ids: list[list[int]], choices: list[Choice]) -> dict:
        """OpenAI's ``usage``: integers only (clients add them up), summed over the prompts; acceptance is
        :meth:`_acceptance`."""
        prompt = sum(len(one) for one in ids)
        done = sum(len(c.tokens) for c in choices)
        return {"prompt_tokens": prompt, "completion_tokens": done, "total_tokens": prompt + done}

    def _acceptance(self, choices: list[Choice]) -> dict:
        """The decode's acceptance figures, a top-level ``acceptance`` field beside ``usage``: rounds,
        tau (mean tokens per round, bonus included) and accepted draft tokens, over every choice."""
        blocks = [b for c in choices for b in c.block_lengths]
        ar = self.engine.cfg.method == "ar"
        return {
            "method": self.engine.cfg.method,
            "verifier": None if ar else self.engine.cfg.verifier,
            "rounds": len(blocks),
            "tau": (sum(blocks) / len(blocks)) if blocks else None,
            "accepted_draft_tokens": sum(b - 1 for b in blocks),
        }

    def _token_text(self, req: DecodeRequest, token: int) -> str:
        return (
            f"token_id:{token}" if req.token_ids_as_text else self.engine.tokenizer.decode([token])
        )

    def _chat_token(self, req: DecodeRequest, token: int, logprob: float) -> dict:
        """One chat logprob entry: the token's text, its log-probability and its text's UTF-8 bytes (as
        vLLM gives them: a token that ends inside a character decodes to U+FFFD, whose bytes are given)."""
        text = self._token_text(req, token)
        return {"token": text, "logprob": logprob, "bytes": list(text.encode("utf-8"))}

    def _top_by_text(self, req: DecodeRequest, top) -> dict:
        """Completions' top log-probabilities keyed by token text (OpenAI's format): tokens that decode
        alike share a key, which keeps the likeliest of them (``return_tokens_as_token_ids`` keys every
        token apart)."""
        out: dict = {}
        for i, v in top:  # best first
            out.setdefault(self._token_text(req, i), v)
        return out

    def _logprobs(self, req: DecodeRequest, c: Choice):
        if c.logprobs is None:
            return None
        if req.chat:
            return {
                "content": [
                    {
                        **self._chat_token(req, t, lp),
                        "top_logprobs": [self._chat_token(req, i, v) for i, v in top],
                    }
                    for t, (lp, top) in zip(c.tokens, c.logprobs)
                ]
            }
        # echo: the prompt's tokens first, the first one without a log-probability (as OpenAI answers)
        ids, lps = (c.echo[0], c.echo[2]) if c.echo is not None else ([], [])
        return {
            "tokens": [self._token_text(req, t) for t in [*ids, *c.tokens]],
            "token_logprobs": [None if x is None else x[0] for x in [*lps, *c.logprobs]],
            "top_logprobs": [
                None if x is None else self._top_by_text(req, x[1]) for x in [*lps, *c.logprobs]
            ],
        }

    def _response(self, req: DecodeRequest, ids: list[list[int]], done: list[list[Choice]]) -> dict:
        out = self._head(req)
        rows = []
        for p, choices in enumerate(done):
            for i, c in enumerate(choices):
                row = {
                    "index": p * req.n + i,
                    "finish_reason": c.finish_reason,
                    "logprobs": self._logprobs(req, c),
                    "token_ids": c.tokens,
                }
                if req.chat:
                    row["message"] = {"role": "assistant", "content": c.text}
                else:
                    row["text"] = c.text if c.echo is None else c.echo[1] + c.text
                rows.append(row)
        flat = [c for choices in done for c in choices]
        out.update(
            choices=rows,
            usage=self._usage(ids, flat),
            acceptance=self._acceptance(flat),
            # one prompt: its ids; several: one list per prompt
            prompt_token_ids=ids[0] if len(ids) == 1 else ids,
        )
        return out

    # ------------------------------------------------------------------ streaming
    async def _stream(self, req: DecodeRequest, parts, ids, release):
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue = asyncio.Queue()
        total = len(parts) * req.n
        # each choice's text deltas: never part of a character, always a prefix of its final text
        texts = [
            IncrementalText(
                lambda ids: self.engine.text(req, ids), req.stop, req.include_stop_str_in_output
            )
            for _ in range(total)
        ]
        head = self._head(req, chunk=True)
        prompt_tokens = sum(len(one) for one in ids)
        produced = [0]  # tokens streamed so far, every choice (continuous_usage_stats)

        def emit(index: int, block: list[int], lps) -> None:  # worker thread
            delta = texts[index].add(block)
            loop.call_soon_threadsafe(queue.put_nowait, (index, delta, list(block), lps))

        jobs: list = []  # continuous mode: the choices' jobs, cancelled if the client goes

        async def job():
            try:
                return await self._run_decode(parts, ids, emit, jobs=jobs)
            finally:
                queue.put_nowait(_DONE)

        def chunk(index, text, finish, token_ids, lps=None):
            produced[0] += len(token_ids)
            usage = None
            if req.continuous_usage:  # vLLM's continuous_usage_stats: the usage so far, every chunk
                usage = {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": produced[0],
                    "total_tokens": prompt_tokens + produced[0],
                }
            return self._chunk(req, head, index, text, finish, token_ids, lps, usage)

        future = None
        try:
            future = asyncio.ensure_future(job())
            if req.chat:
                for i in range(total):
                    yield _sse({**head, "choices": [_role_row(i)]})
            while (item := await queue.get()) is not _DONE:
                index, delta, block, lps = item
                if delta or block:
                    yield chunk(index, delta, None, block, lps)
            try:
                done = await future
            except Exception as err:
                yield _sse(_failure_body(err))
                return
            flat = [c for choices in done for c in choices]
            for i, c in enumerate(flat):
                yield chunk(i, texts[i].finish(c.text), c.finish_reason, [])
            if req.include_usage:
                usage = {"usage": self._usage(ids, flat), "acceptance": self._acceptance(flat)}
                yield _sse({**head, "choices": [], **usage})
            yield "data: [DONE]\n\n"
        finally:
            if self.scheduler is not None:
                self.scheduler.cancel(jobs)  # a client that went away: its choices stop now
            if future is not None and not future.done():
                future.cancel()
            release()

    def _chunk(self, req, head: dict, index, text, finish, token_ids, lps=None, usage=None) -> str:
        """One streamed chunk of choice ``index``: its text delta (chat: ``delta.content``), finish
        reason, token ids and, with ``lps``, the log-probabilities of the tokens it adds; ``usage``
        (vLLM's continuous_usage_stats) is the usage so far."""
        row = {"index": index, "finish_reason": finish, "token_ids": token_ids}
        logprobs = (
            None if lps is None else self._logprobs(req, Choice(token_ids, "", "", logprobs=lps))
        )
        if req.chat:
            row["delta"] = {"content": text} if text or finish is None else {}
            if logprobs is not None:
                row["logprobs"] = logprobs
        else:
            row.update(text=text, logprobs=logprobs)
        body = {**head, "choices": [row]}
        if usage is not None:
            body["usage"] = usage
        return _sse(body)

    # ------------------------------------------------------------------ app
    def starlette(self) -> Starlette:
        async def http_error(request: Request, exc: HTTPException):
            return _error(
                APIError(exc.status_code, f"{request.method} {request.url.path}: {exc.detail}")
            )

        routes = [
            Route("/health", self.health, methods=["GET"]),
            Route("/stats", self.stats, methods=["GET"]),
            Route("/v1/models", self.models, methods=["GET"]),
            Route("/v1/models/{model_id:path}", self.model, methods=["GET"]),
            Route("/v1/completions", self.completions, methods=["POST"]),
            Route("/v1/chat/completions", self.chat, methods=["POST"]),
        ]
        return Starlette(routes=routes, exception_handlers={HTTPException: http_error})

    def close(self) -> None:
        self.engine.close()
        if self.scheduler is not None:
            self.scheduler.close()
        self.tokenizing.shutdown(wait=True, cancel_futures=True)
        self.executor.shutdown(wait=True, cancel_futures=True)


def _check_unicode(body) -> None:
    """Refuse (400, naming the field) a string that is not valid Unicode: JSON's ``\\ud800`` escapes a
    lone surrogate, which no tokenizer can encode."""
    stack = [(body, "the body", None)]
    while stack:
        value, at, field = stack.pop()
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as err:
                raise bad_request(
                    f"{at} is not valid Unicode: {err.reason} at character {err.start} "
                    f"({value[err.start]!r})",
                    field,
                    "invalid_unicode",
                ) from None
        elif isinstance(value, dict):
            for k, v in value.items():
                name = k if field is None else field
                stack.append((k, f"a key of {at}", field))
                stack.append((v, k if field is None else f"{at}.{k}", name))
        elif isinstance(value, list):
            stack.extend((v, f"{at}[{i}]", field) for i, v in enumerate(value))


__all__ = ["ServeApp"]
