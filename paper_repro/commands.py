"""``exitlaw repro mini``: the mini-scale (CPU) reproduction of the drafter-objective comparison."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("repro", help="reproduce the paper's experiments (mini: on a CPU, from the stdlib corpus)")
    rsub = p.add_subparsers(dest="repro_command", metavar="EXPERIMENT")
    m = rsub.add_parser("mini", help="train a small target and DFlash drafter on the stdlib, compare objectives",
                        description="Target LM on the Python standard library, a distilled DFlash drafter, then "
                                    "token-only / prefix-weighted / exit-guided training with matched compute; tau "
                                    "and CPU speedup at B = 32/64/128, T = 0/1, predraw and TEV, on held-out code "
                                    "and prose. Artefacts are cached in --out; rerunning resumes.")
    m.add_argument("--out", required=True, help="run directory (resumed if it holds the same configuration)")
    m.add_argument("--quick", action="store_true", help="tiny preset for smoke tests (about a minute on 2 cores)")
    m.add_argument("--seed", type=int, default=0)
    m.add_argument("--overwrite", action="store_true",
                   help="if --out holds a run of another configuration, move it aside and start again")
    m.add_argument("--threads", type=int, default=1,
                   help="torch CPU threads (default 1: small ops on a busy machine are far faster single-threaded)")
    m.add_argument("--no-progress", action="store_true")
    m.set_defaults(func=_mini)
    a = rsub.add_parser("all", help="the kit on predraw/residual/TEV, the mini run, every figure and the ledger",
                        description="One command on a CPU: conformance checks of exitlaw's own verifiers, "
                                    "`repro mini`, every figure (drawn from the mini run) and the claims ledger, "
                                    "each stage cached under --out (a rerun resumes).")
    a.add_argument("--out", default="runs/repro", help="run directory (default runs/repro)")
    a.add_argument("--quick", action="store_true", help="small presets everywhere (smoke test, a few minutes)")
    a.add_argument("--seed", type=int, default=0)
    a.add_argument("--overwrite", action="store_true",
                   help="if --out holds a run of another configuration, start again (old mini runs are moved aside)")
    a.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    a.add_argument("--no-progress", action="store_true")
    a.set_defaults(func=_all)
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])


def _mini(args: argparse.Namespace) -> int:
    import torch

    from .mini import config_for, run_mini

    if args.threads < 1:
        raise ValueError(f"--threads must be >= 1, got {args.threads}")
    torch.set_num_threads(args.threads)
    cfg = config_for("quick" if args.quick else "full", seed=args.seed)
    results = run_mini(args.out, cfg, overwrite=args.overwrite, progress=not args.no_progress)
    from pathlib import Path

    print((Path(args.out) / "results.md").read_text(encoding="utf-8"))
    print(f"results: {Path(args.out) / 'results.json'} ({len(results['cells'])} cells)")
    return 0


def _all(args: argparse.Namespace) -> int:
    import torch

    from .reproduce import reproduce

    if args.threads < 1:
        raise ValueError(f"--threads must be >= 1, got {args.threads}")
    torch.set_num_threads(args.threads)
    summary = reproduce(args.out, quick=args.quick, seed=args.seed, overwrite=args.overwrite,
                        progress=not args.no_progress)
    print(f"done: ledger {summary['ledger'][0]}, figures in {summary['figures']}, "
          f"stage times {', '.join(f'{k} {v:.0f}' for k, v in summary['times'].items())}")
    return 0
