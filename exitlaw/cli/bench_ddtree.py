"""``exitlaw bench-ddtree``: exitlaw's engine and DDTree's own engine side by side on the same weights
(torch and DDTree's code are imported inside the handler)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from .args import int_list, positive_int


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "bench-ddtree",
        help="exitlaw vs DDTree's own engine on the same weights: tokens/s ratio, stages, exactness",
        description="Loads one target + DFlash drafter pair into exitlaw and into DDTree (imported from a local "
        "clone; nothing is downloaded), checks the weights are bit-identical and that both emit the "
        "greedy AR tokens at T = 0, then times whole generate calls of both engines, interleaved, "
        "single sequence, and prints tokens/s, their ratio with a paired interval, tau and the "
        "per-stage split (T = 1: per-round latency and tau).",
    )
    p.add_argument("--ddtree", required=True, help="path of a local clone of liranringel/ddtree")
    src = p.add_mutually_exclusive_group()
    src.add_argument(
        "--run",
        default=None,
        help="a finished `exitlaw repro mini` output folder: its target/, "
        "drafter_base/final and held-out code prompts",
    )
    src.add_argument(
        "--quick",
        action="store_true",
        help="train the quick mini pair first (into --work) and use it",
    )
    p.add_argument(
        "--target", default=None, help="target checkpoint folder (with --draft, instead of --run)"
    )
    p.add_argument("--draft", default=None, help="DFlash drafter checkpoint folder")
    p.add_argument(
        "--prompts",
        default=None,
        help="JSON file: a list of prompts, each a list of token ids "
        "(default: held-out code prompts of the run's corpus)",
    )
    p.add_argument(
        "--work",
        default=None,
        help="--quick: where to write the quick pair (default: a temp folder)",
    )
    p.add_argument("--num-prompts", type=positive_int, default=12)
    p.add_argument("--prompt-tokens", type=positive_int, default=64)
    p.add_argument("--max-new-tokens", type=positive_int, default=64)
    p.add_argument("--budget", type=int_list, default=[32, 64], help="DDTree budgets at T = 0")
    p.add_argument(
        "--hot-budget", type=positive_int, default=64, help="the budget of the T = 1 comparison"
    )
    p.add_argument("--repeats", type=positive_int, default=5, help="interleaved repetitions (>= 2)")
    p.add_argument("--temperature", default="0,1", help="0, 1 or 0,1")
    p.add_argument("--threads", type=positive_int, default=1, help="torch CPU threads (default 1)")
    p.add_argument(
        "--ddtree-commit",
        default=None,
        help="the clone's commit, when --ddtree is an exported copy "
        "without .git (recorded in the results)",
    )
    p.add_argument(
        "--no-cpp-compact", action="store_true", help="use DDTree's Python cache compaction"
    )
    p.add_argument("--out", default=None, help="results JSON path")
    p.add_argument("--overwrite", action="store_true")
    p.add_argument("--json", action="store_true", help="print the results JSON")
    p.set_defaults(func=_run)


def _git_commit(path: Path) -> str | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(path), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def _git_dirty(path: Path) -> bool | None:
    """Whether tracked files differ from the commit (None: not a git work tree)."""
    try:
        out = subprocess.run(
            ["git", "-C", str(path), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return bool(out.stdout.strip()) if out.returncode == 0 else None


def run_prompts(run: Path, count: int, tokens: int) -> list[list[int]]:
    """Held-out code prompts of a `repro mini` run (its corpus split and tokenizer, its seed), as its eval draws them."""
    from exitlaw.paper_repro.mini import corpus as mc

    cfg_file = run / "mini_config.json"
    if not cfg_file.is_file() or not (run / "corpus" / "tokenizer").is_dir():
        raise ValueError(
            f"{run} is not a `repro mini` output (no mini_config.json or corpus/tokenizer); "
            "pass --prompts FILE.json"
        )
    cfg = json.loads(cfg_file.read_text())
    split = mc.make_split(heldout_fraction=cfg["heldout_fraction"], seed=cfg["seed"])
    tok = mc.load_tokenizer(run / "corpus" / "tokenizer")
    return mc.sample_prompts(
        tok, split.code_texts("heldout"), count=count, prompt_tokens=tokens, seed=cfg["seed"] + 21
    )


def _pair(args: argparse.Namespace) -> tuple[Path, Path, Path | None]:
    if args.quick:
        import tempfile

        from exitlaw.engine.models.checkpoint import load_target
        from exitlaw.paper_repro.mini import pipeline as mp

        # the quick preset's corpus, target and distilled base drafter only (not its objectives or eval)
        work = Path(args.work or tempfile.mkdtemp(prefix="exitlaw-bench-ddtree-"))
        cfg = mp.config_for("quick")
        mp.prepare_out(work, cfg, overwrite=False)
        corpus = mp.stage_corpus(work, cfg)
        tdir = mp.stage_target(work, cfg, corpus, False)
        data = mp.stage_data(
            work, cfg, corpus, load_target(tdir, layer_ids=cfg.target_layer_ids), tdir
        )
        base = mp.stage_base_drafter(
            work, cfg, load_target(tdir, layer_ids=cfg.target_layer_ids), tdir, data, False
        )
        return tdir, base, work
    if args.run:
        run = Path(args.run)
        return run / "target", run / "drafter_base" / "final", run
    if not (args.target and args.draft):
        raise ValueError("give --run DIR, --quick, or both --target and --draft")
    return Path(args.target), Path(args.draft), None


def _run(args: argparse.Namespace) -> int:
    temps = sorted({float(t) for t in args.temperature.split(",") if t.strip()})
    if args.out and Path(args.out).exists() and not args.overwrite:
        raise FileExistsError(f"{args.out} exists; pass --overwrite to replace it")
    if args.repeats < 2:
        raise ValueError(
            f"--repeats must be >= 2 (the paired interval needs two), got {args.repeats}"
        )
    if args.target and args.run:
        raise ValueError("--target/--draft and --run are exclusive")
    import torch

    from exitlaw.engine.bench.ddtree_reference import (
        SHIMS,
        check_same_weights,
        load_reference,
        load_reference_models,
    )
    from exitlaw.engine.bench.side_by_side import (
        SideBySideConfig,
        format_side_by_side,
        machine_info,
        run_side_by_side,
    )
    from exitlaw.engine.models.checkpoint import load_pair

    cfg = SideBySideConfig(
        budgets=tuple(args.budget),
        max_new_tokens=args.max_new_tokens,
        repeats=args.repeats,
        hot_budget=args.hot_budget,
        temperatures=tuple(temps),
    )
    torch.set_num_threads(args.threads)
    ref = load_reference(
        args.ddtree, cpp_compact=not args.no_cpp_compact
    )  # fails early on a bad clone
    target_dir, draft_dir, run = _pair(args)
    if args.prompts:
        prompts = json.loads(Path(args.prompts).read_text())
    else:
        guess = run if run is not None else target_dir.parent
        prompts = run_prompts(guess, args.num_prompts, args.prompt_tokens)
    prompts = prompts[: args.num_prompts]
    target, drafter = load_pair(target_dir, draft_dir, dtype=torch.float32)
    load_reference_models(ref, target_dir, draft_dir, dtype=torch.float32)
    compared = check_same_weights(target, drafter, ref.target, ref.drafter)
    repo = Path(__file__).resolve().parents[2]
    commit, dirty = _git_commit(repo), _git_dirty(repo)  # before the run: the code that is timed
    machine_before = machine_info()
    res = run_side_by_side(
        target, drafter, ref, prompts, cfg, progress=lambda m: print(m, file=sys.stderr, flush=True)
    )
    res.update(
        {
            "machine": machine_info(),
            "machine_before": machine_before,
            "exitlaw_commit": commit,
            "exitlaw_uncommitted_changes": dirty,
            "ddtree_commit": args.ddtree_commit or _git_commit(ref.path),
            "ddtree_path": str(ref.path),
            "shims": list(SHIMS),
            "ddtree_cpp_compact": ref.cpp_compact,
            "weights_identical": compared,
            "target": str(target_dir),
            "draft": str(draft_dir),
        }
    )
    print(format_side_by_side(res))
    if args.json:
        print(json.dumps(res, indent=1))
    if args.out:
        from exitlaw.theory.infra.atomic_io import atomic_write_json

        atomic_write_json(args.out, res, indent=1)
        print(f"wrote {args.out}")
    return 0
