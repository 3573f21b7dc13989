"""Serving and auditing: ``serve`` (the engine as an OpenAI-compatible server), ``audit`` (a calibrated
losslessness audit of any OpenAI-compatible server against a reference) and ``bench-serve``.

``serve`` imports torch inside its handler; ``audit`` never imports torch or JAX (an HTTP client plus
the kit's statistics)."""

from __future__ import annotations

import argparse
import json
import os
import sys

from exitlaw.theory.registry import method_names

from .args import (
    add_sampling_flags,
    add_threads,
    int_list,
    nonneg_float,
    open_unit_float,
    port_number,
    positive_int,
    set_torch_threads,
)

API_KEY_ENV = "EXITLAW_API_KEY"


def register(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser(
        "serve",
        help="serve the engine as an OpenAI-compatible HTTP server (AR, DFlash chain or DDTree)",
        description="Loads the target (and DFlash drafter) once and serves /v1/models, /v1/completions and "
        "/v1/chat/completions (temperature, seed, max_tokens, n, stop, stream, logprobs of the sampled "
        "tokens, token ids, usage with acceptance figures). Binds 127.0.0.1 unless --host says "
        f"otherwise; --api-key (or ${API_KEY_ENV}) makes every /v1 request carry "
        "'Authorization: Bearer KEY'. Requests over a limit get a 4xx naming it. Stops cleanly on "
        "SIGINT/SIGTERM.",
    )
    s.add_argument("--target", required=True, help="target checkpoint directory or Hub id")
    s.add_argument(
        "--draft", default=None, help="DFlash drafter checkpoint (needed by chain and ddtree)"
    )
    s.add_argument("--method", default="ddtree", choices=method_names())
    s.add_argument(
        "--verifier",
        default="tev",
        help="greedy | predraw | residual | tev, or MODULE:CALLABLE with the kit's signature "
        "f(tree, probs, rng) -> (exit_node, bonus_token)",
    )
    s.add_argument(
        "--budget", type=positive_int, default=32, help="DDTree node budget (default 32)"
    )
    s.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)"
    )
    s.add_argument(
        "--port", type=port_number, default=8000, help="port (0: a free one, printed when ready)"
    )
    s.add_argument(
        "--api-key", default=None, help=f"require this key (default: ${API_KEY_ENV} if set)"
    )
    s.add_argument(
        "--model-name", default=None, help="model id served (default: the target folder's name)"
    )
    s.add_argument("--device", default="cpu", help="cpu | cuda")
    s.add_argument("--dtype", default="auto", choices=["auto", "float32", "bfloat16", "float16"])
    s.add_argument(
        "--max-body-bytes",
        type=positive_int,
        default=1 << 20,
        help="request body limit (413 beyond)",
    )
    s.add_argument("--max-prompt-tokens", type=positive_int, default=4096)
    s.add_argument(
        "--max-tokens-limit",
        type=positive_int,
        default=1024,
        help="largest max_tokens a request may ask",
    )
    s.add_argument("--max-n", type=positive_int, default=64, help="largest n a request may ask")
    s.add_argument(
        "--max-concurrent",
        type=positive_int,
        default=32,
        help="requests held at once, in flight or queued (429 beyond)",
    )
    add_threads(s)
    s.set_defaults(func=_serve)

    a = sub.add_parser(
        "audit",
        help="is a server lossless? its outputs against a reference server's, with stated error rates",
        description="Sends the prompts to both OpenAI-compatible servers. T = 0: token ids must be equal; the first "
        "divergence is reported, near-ties (top-2 margin below --tie-margin) apart. T > 0: per prompt, "
        "samples of the first --tokens tokens from each server, a two-sample chi-square test per prompt "
        "and pooled (cells pooled by the combined counts), at a false-failure rate --alpha for the whole "
        "run (Bonferroni), with the sample size chosen for power --power against total variation --tv; "
        "where the reference returns log-probabilities, a one-sample test of the first token against "
        "them. Each --concurrency level repeats the tests with that many requests in flight. "
        "Exit 0: no difference found with the stated power; 1: lossy; 4: a server failed during the run; "
        "5: insufficient samples (power below --power); 2: bad usage or unreachable server.",
    )
    a.add_argument(
        "--candidate",
        required=True,
        help="base URL of the server audited, e.g. http://127.0.0.1:8001",
    )
    a.add_argument(
        "--reference", required=True, help="base URL of the reference (autoregressive) server"
    )
    a.add_argument(
        "--prompts",
        required=True,
        help='JSONL file: one {"prompt": str} | {"prompt_ids": [int]} | {"messages": [...]} per line',
    )
    a.add_argument("--temperature", type=nonneg_float, default=0.0)
    a.add_argument(
        "--model", default=None, help="model id on both servers (default: each server's first)"
    )
    a.add_argument("--candidate-model", default=None)
    a.add_argument("--reference-model", default=None)
    a.add_argument(
        "--api-key", default=None, help=f"key for both servers (default ${API_KEY_ENV}, else none)"
    )
    a.add_argument("--candidate-api-key", default=None)
    a.add_argument("--reference-api-key", default=None)
    a.add_argument(
        "--max-tokens", type=positive_int, default=32, help="T = 0: tokens compared per prompt"
    )
    a.add_argument(
        "--tokens", type=positive_int, default=2, help="T > 0: the first k tokens are one outcome"
    )
    a.add_argument(
        "--alpha", type=open_unit_float, default=1e-3, help="false-failure rate of the whole run"
    )
    a.add_argument("--power", type=open_unit_float, default=0.9)
    a.add_argument(
        "--tv", type=open_unit_float, default=0.2, help="total variation the power is stated for"
    )
    a.add_argument(
        "--max-cells",
        type=positive_int,
        default=6,
        help="cells per two-sample test (outcomes beyond the most frequent are pooled)",
    )
    a.add_argument(
        "--samples",
        type=positive_int,
        default=None,
        help="samples per prompt and server (default: the size --power needs)",
    )
    a.add_argument(
        "--n-per-request", type=positive_int, default=32, help="samples asked per request (n)"
    )
    a.add_argument(
        "--concurrency", type=int_list, default=[1], help="requests in flight, e.g. 1,4,8"
    )
    a.add_argument(
        "--tie-margin",
        type=nonneg_float,
        default=0.05,
        help="T = 0: a divergence where the top-2 log-probability margin is below this is a near-tie",
    )
    a.add_argument("--strict-ties", action="store_true", help="count near-tie divergences as lossy")
    a.add_argument(
        "--first-token-test",
        default="auto",
        choices=["auto", "on", "off"],
        help="one-sample test of the first token against the reference's top log-probabilities: auto = "
        "at T = 1 (raw and processed agree), on = the reference returns processed ones (vLLM: "
        "--logprobs-mode processed_logprobs)",
    )
    add_sampling_flags(
        a, what="every sampling request (T > 0), sent as a request field", with_order=False
    )
    a.add_argument("--timeout", type=nonneg_float, default=120.0, help="seconds per request")
    a.add_argument(
        "--seed", type=int, default=0, help="seeds of the requests (each request its own)"
    )
    a.add_argument("--out", default=None, help="write the report (JSON) here")
    a.add_argument("--overwrite", action="store_true")
    a.add_argument("--json", action="store_true", help="print the report as JSON")
    a.set_defaults(func=_audit)

    b = sub.add_parser(
        "bench-serve",
        help="requests/s and tokens/s of `exitlaw serve` (AR and DDTree) at several concurrencies",
        description="Starts `exitlaw serve` on 127.0.0.1 for AR and for DDTree (one after the other, same "
        "target), sends --requests completions per concurrency level with that many in flight, and "
        "prints requests/s and tokens/s side by side; then times `exitlaw audit` (DDTree vs AR).",
    )
    b.add_argument("--target", required=True)
    b.add_argument("--draft", required=True)
    b.add_argument("--prompts", required=True, help="JSONL prompts (as for audit)")
    b.add_argument("--concurrency", type=int_list, default=[1, 4, 8])
    b.add_argument("--requests", type=positive_int, default=16, help="requests per level")
    b.add_argument("--max-tokens", type=positive_int, default=32)
    b.add_argument("--budget", type=positive_int, default=32)
    b.add_argument("--verifier", default="tev")
    b.add_argument("--temperature", type=nonneg_float, default=0.0)
    b.add_argument("--audit-temperature", type=nonneg_float, default=1.0)
    add_threads(b, help_text="torch threads of each server")
    b.add_argument("--out", default=None, help="write the results (JSON) here")
    b.add_argument("--overwrite", action="store_true")
    b.add_argument("--json", action="store_true")
    b.set_defaults(func=_bench_serve)


def _serve(args) -> int:
    set_torch_threads(args.threads)
    from exitlaw.engine.serve.engine import ServeConfig
    from exitlaw.engine.serve.limits import ServeLimits
    from exitlaw.engine.serve.server import serve

    key = args.api_key if args.api_key is not None else os.environ.get(API_KEY_ENV) or None
    cfg = ServeConfig(
        target=args.target,
        draft=args.draft,
        method=args.method,
        verifier=args.verifier,
        budget=args.budget,
        device=args.device,
        dtype=args.dtype,
        model_name=args.model_name,
    )
    limits = ServeLimits(
        max_body_bytes=args.max_body_bytes,
        max_prompt_tokens=args.max_prompt_tokens,
        max_tokens=args.max_tokens_limit,
        max_n=args.max_n,
        max_concurrent=args.max_concurrent,
    )
    return serve(cfg, host=args.host, port=args.port, api_key=key, limits=limits)


def _write(path: str, payload: dict, overwrite: bool) -> None:
    from pathlib import Path

    p = Path(path)
    if p.is_dir():
        raise ValueError(f"--out {path} is a directory")
    if p.exists() and not overwrite:
        raise FileExistsError(f"{path} exists; pass --overwrite to replace it")
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")


def _audit(args) -> int:
    from exitlaw.simulate.audit import AuditConfig, AuditUsageError, format_audit, run_audit

    key = args.api_key if args.api_key is not None else os.environ.get(API_KEY_ENV) or None
    cfg = AuditConfig(
        candidate=args.candidate,
        reference=args.reference,
        prompts=args.prompts,
        temperature=args.temperature,
        candidate_model=args.candidate_model or args.model,
        reference_model=args.reference_model or args.model,
        candidate_key=args.candidate_api_key or key,
        reference_key=args.reference_api_key or key,
        max_tokens=args.max_tokens,
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
        top_k=args.top_k,
        top_p=args.top_p,
        min_p=args.min_p,
    )
    if args.out and not args.overwrite:
        from pathlib import Path

        if Path(args.out).exists():
            raise FileExistsError(f"{args.out} exists; pass --overwrite to replace it")
    try:
        report = run_audit(cfg)
    except AuditUsageError as err:
        print(f"exitlaw audit: error: {err}", file=sys.stderr)
        return 2
    if args.out:
        _write(args.out, report.to_json(), args.overwrite)
    print(json.dumps(report.to_json(), indent=2) if args.json else format_audit(report))
    return report.exit_code


def _bench_serve(args) -> int:
    from exitlaw.simulate.audit.bench import format_bench, run_serve_bench

    result = run_serve_bench(
        target=args.target,
        draft=args.draft,
        prompts=args.prompts,
        concurrency=args.concurrency,
        requests=args.requests,
        max_tokens=args.max_tokens,
        budget=args.budget,
        verifier=args.verifier,
        temperature=args.temperature,
        audit_temperature=args.audit_temperature,
        threads=args.threads,
    )
    if args.out:
        _write(args.out, result, args.overwrite)
    print(json.dumps(result, indent=2) if args.json else format_bench(result))
    return 0
