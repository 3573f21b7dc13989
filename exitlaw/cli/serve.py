"""Serving and auditing: ``serve`` (the engine as an OpenAI-compatible server), ``audit`` (a calibrated
losslessness audit of an OpenAI-compatible server that returns token ids, against a reference) and
``bench serve``.

``serve`` loads torch with its handler's library calls (:mod:`.library`); ``audit`` never imports torch
or JAX (an HTTP client plus the kit's statistics)."""

from __future__ import annotations

import argparse
import json
import os
import sys

from exitlaw.theory.registry import method_names
from exitlaw.theory.sampling_settings import NEAR_TIE_MARGIN

from . import library as lib
from .args import (
    add_sampling_args,
    add_threads,
    device_args,
    int_list,
    json_arg,
    max_new_tokens_arg,
    model_pair_args,
    nonneg_float,
    open_unit_float,
    out_args,
    port_number,
    positive_int,
    result_out_args,
    sampling_settings_from,
    seed_arg,
    set_torch_threads,
    temperature_list,
    temperature_value,
)
from .grammar import Command, emit, opt, pick, result_path

API_KEY_ENV = "EXITLAW_API_KEY"


def _serve(args) -> int:
    set_torch_threads(args.threads)
    names = ("target", "draft", "method", "verifier", "budget", "device", "dtype", "model_name")
    cfg = lib.ServeConfig(**pick(args, *names, "chat_template_kwargs", "batching", "max_batch"))
    limits = lib.ServeLimits(
        **{field: getattr(args, flag[2:].replace("-", "_")) for flag, field, *_ in LIMITS}
    )
    return lib.serve(cfg, host=args.host, port=args.port, api_key=_api_key(args), limits=limits)


def _api_key(args: argparse.Namespace) -> str | None:
    """``--api-key``, else ``$EXITLAW_API_KEY``, else none."""
    return args.api_key if args.api_key is not None else os.environ.get(API_KEY_ENV) or None


# the server's limits: flag, ServeLimits field, default (ServeLimits', pinned by a test), help
LIMITS = (
    ("--max-body-bytes", "max_body_bytes", 1 << 20, "request body limit (413 beyond)"),
    ("--max-prompt-tokens", "max_prompt_tokens", 4096, "longest prompt, in tokens"),
    ("--max-tokens-limit", "max_tokens", 1024, "largest max_tokens a request may ask"),
    ("--max-n", "max_n", 64, "largest n a request may ask"),
    (
        "--max-concurrent",
        "max_concurrent",
        32,
        "requests held at once, in flight or queued (429 beyond)",
    ),
    (
        "--chat-max-tokens",
        "chat_max_tokens",
        None,
        "max_tokens of a chat request that sets none (default 256, or --max-tokens-limit if lower)",
    ),
)


def _limit_args(parser: argparse.ArgumentParser) -> None:
    for flag, _, default, text in LIMITS:
        parser.add_argument(
            flag,
            type=positive_int,
            default=default,
            help=text if default is None else f"{text} (default {default})",
        )


def _audit(args) -> int:
    key = _api_key(args)
    try:
        cfg = lib.AuditConfig(
            candidate=args.candidate,
            reference=args.reference,
            prompts=args.prompts,
            sampling=sampling_settings_from(args, args.temperature),
            candidate_model=args.candidate_model or args.model,
            reference_model=args.reference_model or args.model,
            candidate_key=args.candidate_api_key or key,
            reference_key=args.reference_api_key or key,
            max_tokens=args.max_new_tokens,
            tokens=args.tokens,
            alpha=args.alpha,
            power=args.power,
            tv=args.tv,
            max_cells=args.max_cells,
            samples=args.samples,
            n_per_request=args.n_per_request,
            concurrency=tuple(args.concurrency),
            tie_margin=args.tie_margin,
            strict_ties=args.strict_ties,
            first_token_test=args.first_token_test,
            timeout=args.timeout,
            seed=args.seed,
            tokenizer=args.tokenizer,
        )
        path = result_path(args)
        report = lib.run_audit(cfg)
    # a bad setting is a DistributionError, a ValueError
    except (lib.AuditUsageError, ValueError) as err:
        if args.json:  # --json: the error is JSON too, on stdout
            print(json.dumps({"error": str(err), "exit_code": 2}))
        else:
            print(f"exitlaw audit: error: {err}", file=sys.stderr)
        return 2
    emit(args, report.to_json(), lib.format_audit(report), path)
    return report.exit_code


def _bench_serve(args) -> int:
    lib.check_model_paths(args.target, args.draft)  # before a server is started
    path = result_path(args)
    names = ("target", "draft", "prompts", "concurrency", "requests", "budget", "verifier")
    more = (
        "temperature",
        "audit_temperatures",
        "audit_concurrency",
        "max_batch",
        "threads",
        "repeats",
        "device",
        "dtype",
    )
    result = lib.run_serve_bench(**pick(args, *names, *more, max_tokens="max_new_tokens"))
    emit(args, result, lib.format_serve_bench(result), path)
    return 0


SERVE = Command(
    "serve",
    _serve,
    help="the engine as an OpenAI-compatible HTTP server",
    description="Serves AR, DFlash chain or DDTree decoding. Loads the target (and DFlash drafter) once and serves /v1/models, /v1/completions and "
    "/v1/chat/completions (temperature, seed, max_tokens, n, stop, stream, logprobs of the sampled "
    "tokens, token ids, usage, acceptance figures). Binds 127.0.0.1 unless --host says "
    f"otherwise; --api-key (or ${API_KEY_ENV}) makes every /v1 request carry "
    "'Authorization: Bearer KEY'. Requests over a limit get a 4xx naming it. Requests are "
    "batched continuously (--batching); GET /stats counts rounds, rows and cancellations. Stops "
    "cleanly on SIGINT/SIGTERM.",
    pieces=(
        opt("--target", required=True, help="target checkpoint directory or Hub id"),
        opt("--draft", default=None, help="DFlash drafter checkpoint (needed by chain and ddtree)"),
        opt("--method", default="ddtree", choices=method_names()),
        opt(
            "--verifier",
            default="tev",
            help="greedy | predraw | residual | tev, or MODULE:CALLABLE with the kit's signature "
            "f(tree, probs, rng) -> (exit_node, bonus_token)",
        ),
        opt("--budget", type=positive_int, default=32, help="DDTree node budget (default 32)"),
        opt(
            "--host",
            default="127.0.0.1",
            help="address to bind (default 127.0.0.1: this machine only)",
        ),
        opt(
            "--port",
            type=port_number,
            default=8000,
            help="port (0: a free one, printed when ready)",
        ),
        opt("--api-key", default=None, help=f"require this key (default: ${API_KEY_ENV} if set)"),
        opt(
            "--model-name", default=None, help="model id served (default: the target folder's name)"
        ),
        opt(
            "--chat-template-kwargs",
            type=json.loads,
            default=None,
            metavar="JSON",
            help="chat template variables of every chat request, e.g. '{\"enable_thinking\": true}' "
            "(a request's chat_template_kwargs override them)",
        ),
        opt(
            "--batching",
            default="continuous",
            choices=("continuous", "serial"),
            help="continuous (default): every request's choices share running batches, joining and "
            "leaving between rounds; serial: one request at a time, in arrival order",
        ),
        opt(
            "--max-batch",
            type=positive_int,
            default=16,
            help="continuous batching: rows (choices) decoded at once; more wait in the queue "
            "(default 16)",
        ),
        device_args(default="cpu"),
        _limit_args,
        add_threads,
    ),
)


def _audit_sampling_args(a: argparse.ArgumentParser) -> None:
    add_sampling_args(
        a, what="every sampling request (T > 0), sent as a request field", with_order=False
    )


AUDIT = Command(
    "audit",
    _audit,
    help="is a server lossless? tested against a reference server",
    description="Is a server lossless? Its outputs against a reference server's, with stated error rates. Sends the prompts to both OpenAI-compatible servers. T = 0: token ids must be equal; the "
    "first divergence is reported, near-ties (top-2 margin below --tie-margin) apart. T > 0: per "
    "prompt, samples of the first --tokens tokens from each server, a two-sample chi-square test per "
    "prompt and pooled (cells pooled by the combined counts), at a false-failure rate --alpha for the "
    "whole run (Bonferroni), with the sample size chosen for power --power against total variation "
    "--tv; where the reference returns log-probabilities, a one-sample test of the first token "
    "against them. Each --concurrency level repeats the tests with that many requests in flight. "
    "Exit 0: no difference found with the stated power; 1: lossy; 4: a server failed during the run; "
    "5: insufficient samples (power below --power); 2: bad usage or unreachable server.",
    pieces=(
        opt(
            "--candidate",
            required=True,
            help="base URL of the server audited, e.g. http://127.0.0.1:8001",
        ),
        opt("--reference", required=True, help="base URL of the reference (autoregressive) server"),
        opt(
            "--prompts",
            required=True,
            help='JSONL file: one {"prompt": str} | {"prompt_ids": [int]} | {"messages": [...]} per line',
        ),
        opt("--temperature", type=temperature_value, default=0.0),
        opt(
            "--model", default=None, help="model id on both servers (default: each server's first)"
        ),
        opt("--candidate-model", default=None),
        opt("--reference-model", default=None),
        opt(
            "--api-key",
            default=None,
            help=f"key for both servers (default ${API_KEY_ENV}, else none)",
        ),
        opt("--candidate-api-key", default=None),
        opt("--reference-api-key", default=None),
        max_new_tokens_arg(32, "T = 0: tokens compared per prompt"),
        opt(
            "--tokens",
            type=positive_int,
            default=2,
            help="T > 0: the first k tokens are one outcome",
        ),
        opt(
            "--alpha",
            type=open_unit_float,
            default=1e-3,
            help="false-failure rate of the whole run",
        ),
        opt("--power", type=open_unit_float, default=0.9),
        opt(
            "--tv",
            type=open_unit_float,
            default=0.2,
            help="total variation the power is stated for",
        ),
        opt(
            "--max-cells",
            type=positive_int,
            default=6,
            help="cells per two-sample test (outcomes beyond the most frequent are pooled)",
        ),
        opt(
            "--samples",
            type=positive_int,
            default=None,
            help="samples per prompt and server (default: the size --power needs)",
        ),
        opt("--n-per-request", type=positive_int, default=32, help="samples asked per request (n)"),
        opt("--concurrency", type=int_list, default=[1], help="requests in flight, e.g. 1,4,8"),
        opt(
            "--tie-margin",
            type=nonneg_float,
            default=NEAR_TIE_MARGIN,
            help="T = 0: a divergence where the top-2 log-probability margin is below this is a near-tie "
            f"(default {NEAR_TIE_MARGIN:g})",
        ),
        opt("--strict-ties", action="store_true", help="count near-tie divergences as lossy"),
        opt(
            "--first-token-test",
            default="auto",
            choices=["auto", "on", "off"],
            help="one-sample test of the first token against the reference's top log-probabilities: "
            "auto = at T = 1 (raw and processed agree), on = the reference returns processed ones "
            "(vLLM: --logprobs-mode processed_logprobs)",
        ),
        _audit_sampling_args,
        opt(
            "--tokenizer",
            default=None,
            help="where a server returns text only: encode both servers' text with this tokenizer (a "
            "model folder holding tokenizer.json, or the file) and compare token sequences (default: a "
            "served model id that is such a folder)",
        ),
        opt("--timeout", type=nonneg_float, default=120.0, help="seconds per request"),
        seed_arg(0, help="seeds of the requests (each request its own)"),
        out_args("the report as results.json"),
        json_arg,
    ),
)

BENCH_SERVE = Command(
    "serve",
    _bench_serve,
    help="tokens/s and latency of `exitlaw serve` (AR and DDTree, continuous and serial) per concurrency",
    description="Starts `exitlaw serve` on 127.0.0.1 for AR and DDTree, each with --batching continuous and "
    "serial (same target), sends --requests completions per concurrency level with that many in flight, "
    "and prints aggregate tokens/s, its ratio to the lowest level, requests/s and per-request latency "
    "(p50, p95) side by side; then runs `exitlaw audit` of DDTree against AR (both continuous) at each "
    "--audit-temperatures with --audit-concurrency requests in flight.",
    pieces=(
        model_pair_args(),
        opt("--prompts", required=True, help="JSONL prompts (as for audit)"),
        opt("--concurrency", type=int_list, default=[1, 4, 8, 16]),
        opt("--requests", type=positive_int, default=16, help="requests per level"),
        max_new_tokens_arg(32, "tokens per request"),
        opt("--budget", type=positive_int, default=32),
        opt("--verifier", default="tev"),
        opt("--temperature", type=temperature_value, default=0.0),
        opt(
            "--audit-temperatures",
            type=temperature_list,
            default=[0.0, 1.0],
            help="audit DDTree against AR (both continuous) at each (default 0,1)",
        ),
        opt(
            "--audit-concurrency",
            type=positive_int,
            default=8,
            help="requests in flight in the audits",
        ),
        opt(
            "--max-batch",
            type=positive_int,
            default=16,
            help="each continuous server's --max-batch",
        ),
        opt(
            "--repeats",
            type=positive_int,
            default=3,
            help="measure every cell this many times, interleaved; report the median (default 3)",
        ),
        lambda parser: add_threads(parser, help_text="torch threads of each server"),
        device_args(default="cpu", help="each server's --device: cpu | cuda (default: cpu)"),
        result_out_args,
    ),
)

COMMANDS = (SERVE, AUDIT)
BENCH = (BENCH_SERVE,)
