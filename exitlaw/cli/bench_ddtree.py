"""``exitlaw bench ddtree``: exitlaw's engine and DDTree's own engine side by side on the same weights
(the run is :func:`exitlaw.engine.bench.ddtree_run.run_ddtree_bench`; torch and DDTree's code load
with the handler's library calls, :mod:`.library`)."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from . import library as lib
from .args import (
    int_list,
    max_new_tokens_arg,
    num_prompts_arg,
    positive_int,
    result_out_args,
    set_torch_threads,
    temperature_list,
)
from .grammar import Command, emit, opt, result_path


def _two_or_more(text: str) -> int:
    """``--repeats``: the paired interval needs two."""
    value = positive_int(text)
    if value < 2:
        raise argparse.ArgumentTypeError(
            f"expected an integer >= 2 (a paired interval), got {text!r}"
        )
    return value


def _pair(args: argparse.Namespace) -> tuple[Path, Path, Path | None]:
    """``(target, drafter, mini run or None)`` named by ``--mini``, ``--quick`` or ``--target/--draft``."""
    if args.quick:
        work = Path(args.work or tempfile.mkdtemp(prefix="exitlaw-bench-ddtree-"))
        return (*lib.quick_pair(work), work)
    if args.mini:
        return (*lib.mini_pair(args.mini), Path(args.mini))
    return Path(args.target), Path(args.draft), None


def _check_pair_source(args: argparse.Namespace) -> None:
    """Before anything loads: one source of the pair, and its paths usable."""
    if args.target and args.mini:
        raise ValueError("--target/--draft and --mini are exclusive")
    if not (args.quick or args.mini or (args.target and args.draft)):
        raise ValueError("give --mini DIR, --quick, or both --target and --draft")
    if args.target:
        lib.check_model_paths(args.target, args.draft)


def _prompts(args: argparse.Namespace, target_dir: Path, run: Path | None) -> list:
    """``--prompts`` (a JSON list of token-id lists), else held-out code prompts of the run."""
    if args.prompts:
        return json.loads(Path(args.prompts).read_text())[: args.num_prompts]
    where = run if run is not None else target_dir.parent
    return lib.mini_prompts(where, args.num_prompts, args.prompt_tokens)[: args.num_prompts]


def _run(args: argparse.Namespace) -> int:
    path = result_path(args)
    _check_pair_source(args)
    cfg = lib.SideBySideConfig(
        budgets=tuple(args.budget),
        max_new_tokens=args.max_new_tokens,
        repeats=args.repeats,
        hot_budget=args.hot_budget,
        temperatures=tuple(sorted(set(args.temperature))),
    )
    set_torch_threads(args.threads)
    try:  # the clone is loaded first: it fails early
        ref = lib.load_ddtree_reference(args.ddtree, cpp_compact=not args.no_cpp_compact)
    except lib.DDTreeReferenceError as err:  # a usage error: the clone named cannot be used
        raise ValueError(f"--ddtree {args.ddtree}: {err}") from None
    target_dir, draft_dir, run = _pair(args)
    res = lib.run_ddtree_bench(
        ref,
        target_dir,
        draft_dir,
        _prompts(args, target_dir, run),
        cfg,
        ddtree_commit=args.ddtree_commit,
        progress=lambda m: print(m, file=sys.stderr, flush=True),
    )
    emit(args, res, lib.format_side_by_side(res), path)
    return 0


def _pair_source(p: argparse.ArgumentParser) -> None:
    src = p.add_mutually_exclusive_group()
    src.add_argument(
        "--mini",
        default=None,
        help="a finished `exitlaw repro mini` output folder: its target/, "
        "drafter_base/final and held-out code prompts",
    )
    src.add_argument(
        "--quick",
        action="store_true",
        help="train the quick mini pair first (into --work) and use it",
    )


BENCH_DDTREE = Command(
    "ddtree",
    _run,
    help="exitlaw vs DDTree's own engine on the same weights: tokens/s ratio, stages, exactness",
    description="Loads one target + DFlash drafter pair into exitlaw and into DDTree (imported from a "
    "local clone; nothing is downloaded), checks the weights are bit-identical and that both emit "
    "the greedy AR tokens at T = 0, then times whole generate calls of both engines, interleaved, "
    "single sequence, and prints tokens/s, their ratio with a paired interval, tau and the "
    "per-stage split (T = 1: per-round latency and tau).",
    pieces=(
        opt("--ddtree", required=True, help="path of a local clone of liranringel/ddtree"),
        _pair_source,
        opt(
            "--target",
            default=None,
            help="target checkpoint folder (with --draft, instead of --mini)",
        ),
        opt("--draft", default=None, help="DFlash drafter checkpoint folder"),
        opt(
            "--prompts",
            default=None,
            help="JSON file: a list of prompts, each a list of token ids "
            "(default: held-out code prompts of the run's corpus)",
        ),
        opt(
            "--work",
            default=None,
            help="--quick: where to write the quick pair (default: a temp folder)",
        ),
        num_prompts_arg(12),
        opt("--prompt-tokens", type=positive_int, default=64),
        max_new_tokens_arg(64),
        opt("--budget", type=int_list, default=[32, 64], help="DDTree budgets at T = 0"),
        opt(
            "--hot-budget", type=positive_int, default=64, help="the budget of the T = 1 comparison"
        ),
        opt("--repeats", type=_two_or_more, default=5, help="interleaved repetitions (>= 2)"),
        opt("--temperature", type=temperature_list, default=[0.0, 1.0], help="0, 1 or 0,1"),
        opt("--threads", type=positive_int, default=1, help="torch CPU threads (default 1)"),
        opt(
            "--ddtree-commit",
            default=None,
            help="the clone's commit, when --ddtree is an exported copy "
            "without .git (recorded in the results)",
        ),
        opt("--no-cpp-compact", action="store_true", help="use DDTree's Python cache compaction"),
        result_out_args,
    ),
)

COMMANDS = ()
BENCH = (BENCH_DDTREE,)
