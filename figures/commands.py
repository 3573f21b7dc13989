"""``exitlaw figures``: regenerate every figure (PNG + PDF + data JSON) from embedded defaults."""

from __future__ import annotations

import argparse
import time


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("figures", help="regenerate the figures (PNG + PDF + data JSON) on a CPU",
                       description="Each figure is computed from embedded defaults (simulation, the engine on tiny "
                                   "models, or a mini-scale run when --mini is given) and drawn with matplotlib.")
    p.add_argument("--out", default="runs/figures", help="output directory (default: runs/figures)")
    p.add_argument("--only", default=None, help="comma-separated figure names (default: all)")
    p.add_argument("--overwrite", action="store_true", help="replace existing figure files")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quick", action="store_true", help="smaller samples and runs (smoke test, under a minute)")
    p.add_argument("--mini", default=None, help="an `exitlaw repro mini --out DIR` run directory to draw from")
    p.add_argument("--latency-json", default=None,
                   help="verifier-stage latencies: the JSON of `exitlaw verifier-bench --json` or of "
                        "`python -m exitlaw.engine.gpu_check --json FILE` (default: run verifier-bench on this CPU)")
    p.add_argument("--ledger", action="store_true",
                   help="afterwards write the claims ledger (ledger.md, ledger.json) into --out from these figures")
    p.add_argument("--list", action="store_true", help="list the figure names and exit")
    p.set_defaults(func=_figures)


def _figures(args: argparse.Namespace) -> int:
    from .registry import FIGURES, make

    if args.list:
        print("\n".join(FIGURES))
        return 0
    names = list(FIGURES) if args.only is None else [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = [n for n in names if n not in FIGURES]
    if unknown:
        raise ValueError(f"unknown figure(s) {unknown}; figures: {', '.join(FIGURES)}")
    for name in names:
        t0 = time.perf_counter()
        paths = make(name, args.out, seed=args.seed, quick=args.quick, overwrite=args.overwrite,
                     mini_dir=args.mini, latency_json=args.latency_json)
        print(f"{name:<22} {time.perf_counter() - t0:6.1f} s  " + "  ".join(str(p) for p in paths), flush=True)
    if args.ledger:
        from exitlaw.paper_repro.ledger_command import make_ledger

        make_ledger(args.out, args.out, mini_dir=args.mini, latency_json=args.latency_json, quick=args.quick,
                    seed=args.seed, overwrite=args.overwrite)
    return 0
