"""``exitlaw bench ddtree``: exitlaw's engine and DDTree's own engine side by side on the same weights
(the run is :func:`exitlaw.engine.bench.ddtree_run.run_ddtree_bench`; torch and DDTree's code are
imported inside the handler)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .args import float_list, int_list, positive_int, result_out_args
from .grammar import Command, emit, opt, result_path


def _pair(args: argparse.Namespace) -> tuple[Path, Path, Path | None]:
    """``(target, drafter, mini run or None)`` named by ``--mini``, ``--quick`` or ``--target/--draft``."""
    from exitlaw.paper_repro.mini.pair import mini_pair, quick_pair

    if args.quick:
        import tempfile

        work = Path(args.work or tempfile.mkdtemp(prefix="exitlaw-bench-ddtree-"))
        return (*quick_pair(work), work)
    if args.mini:
        return (*mini_pair(args.mini), Path(args.mini))
    if not (args.target and args.draft):
        raise ValueError("give --mini DIR, --quick, or both --target and --draft")
    return Path(args.target), Path(args.draft), None


def _run(args: argparse.Namespace) -> int:
    temps = tuple(sorted(set(args.temperature)))
    path = result_path(args)
    if args.repeats < 2:
        raise ValueError(
            f"--repeats must be >= 2 (the paired interval needs two), got {args.repeats}"
        )
    if args.target and args.mini:
        raise ValueError("--target/--draft and --mini are exclusive")
    import torch

    from exitlaw.engine.bench.ddtree_reference import load_reference
    from exitlaw.engine.bench.ddtree_run import run_ddtree_bench
    from exitlaw.engine.bench.side_by_side import SideBySideConfig, format_side_by_side
    from exitlaw.paper_repro.mini.pair import mini_prompts

    cfg = SideBySideConfig(
        budgets=tuple(args.budget),
        max_new_tokens=args.max_new_tokens,
        repeats=args.repeats,
        hot_budget=args.hot_budget,
        temperatures=temps,
    )
    torch.set_num_threads(args.threads)
    ref = load_reference(args.ddtree, cpp_compact=not args.no_cpp_compact)  # fails early
    target_dir, draft_dir, run = _pair(args)
    if args.prompts:
        prompts = json.loads(Path(args.prompts).read_text())
    else:
        prompts = mini_prompts(
            run if run is not None else target_dir.parent, args.num_prompts, args.prompt_tokens
        )
    res = run_ddtree_bench(
        ref,
        target_dir,
        draft_dir,
        prompts[: args.num_prompts],
        cfg,
        ddtree_commit=args.ddtree_commit,
        progress=lambda m: print(m, file=sys.stderr, flush=True),
    )
    emit(args, res, format_side_by_side(res), path)
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
        opt("--num-prompts", type=positive_int, default=12),
        opt("--prompt-tokens", type=positive_int, default=64),
        opt("--max-new-tokens", type=positive_int, default=64),
        opt("--budget", type=int_list, default=[32, 64], help="DDTree budgets at T = 0"),
        opt(
            "--hot-budget", type=positive_int, default=64, help="the budget of the T = 1 comparison"
        ),
        opt("--repeats", type=positive_int, default=5, help="interleaved repetitions (>= 2)"),
        opt("--temperature", type=float_list, default=[0.0, 1.0], help="0, 1 or 0,1"),
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
