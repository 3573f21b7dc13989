"""``exitlaw law`` and ``exitlaw bench law``: exact laws of recorded trees, and their benchmark."""

from __future__ import annotations

import argparse
import json

from . import library as lib
from .args import enable_x64, positive_int, result_out_args
from .grammar import Command, emit, opt, result_path


def _law(args: argparse.Namespace) -> int:
    if args.demo == (args.trace is not None):
        raise ValueError("give either a TRACE path or --demo")
    keep = None if args.json else 20
    if args.demo:
        enable_x64()
        trace = lib.demo_trace()
        summary = lib.summarize_trace(trace, keep_rounds=keep)
    else:  # streamed, numpy only: memory bounded by the largest round
        summary = lib.summarize_trace_file(
            args.trace,
            keep_rounds=keep,
            allow_incomplete=args.allow_incomplete,
            workers=args.workers,
        )
    if args.json:
        print(json.dumps(summary, indent=1))
        return 0
    if args.demo:
        print(lib.format_demo_tree(trace.rounds[0]))
    print(lib.format_summary(summary))
    return 0


def _bench(args: argparse.Namespace) -> int:
    path = result_path(args)
    if args.trace is not None:
        result = lib.run_trace_bench(args.trace, workers=args.workers)
    else:
        enable_x64()
        result = lib.run_law_bench(
            trees=args.trees, budget=args.budget, vocab=args.vocab, row_batch=args.row_batch
        )
    emit(args, result, result["text"], path)
    return 0


LAW = Command(
    "law",
    _law,
    help="exit law, coverage and ceiling of recorded tree traces",
    description="Per-round C_p, ceiling 1 + C_p, observed block lengths and the "
    "exit-depth histogram of a tree trace (JSON lines).",
    pieces=(
        opt("trace", nargs="?", help="path of a tree trace (.jsonl)"),
        opt(
            "--demo", action="store_true", help="use an embedded synthetic trace instead of a file"
        ),
        opt("--json", action="store_true", help="print the full summary as JSON"),
        opt(
            "--workers",
            type=positive_int,
            default=1,
            help="processes reading a large trace (files of 16 MiB or more; default 1)",
        ),
        opt(
            "--allow-incomplete",
            action="store_true",
            help="read a trace that lacks its end marker (an interrupted writer); said in the output",
        ),
    ),
)

BENCH_LAW = Command(
    "law",
    _bench,
    help="exit laws per second, jit+vmap vs a per-node loop (--trace: `exitlaw law` on a file)",
    description="Exit laws per second, jit+vmap against a per-node loop; with --trace, rounds/s "
    "and peak memory of `exitlaw law` on that file.",
    pieces=(
        opt("--trace", default=None, help="time the streaming summary of this trace file instead"),
        opt(
            "--workers",
            type=positive_int,
            default=1,
            help="with --trace: reading processes (default 1)",
        ),
        opt("--trees", type=positive_int, default=4096),
        opt("--budget", type=positive_int, default=64),
        opt("--vocab", type=positive_int, default=32000),
        opt(
            "--row-batch",
            type=positive_int,
            default=64,
            help="trees per chunk for the full-row case",
        ),
        result_out_args,
    ),
)

COMMANDS = (LAW,)
BENCH = (BENCH_LAW,)
