"""``exitlaw verifier-bench``: verifier-stage latency of predraw, residual and TEV, and the floor.

Registered in ``exitlaw/cli.py``; torch is imported inside the handler.
"""

from __future__ import annotations

import argparse
import json


def _ints(text: str) -> list[int]:
    try:
        out = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not out or min(out) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return out


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "verifier-bench", help="verifier-stage latency: predraw vs residual vs TEV vs the floor, same trees",
        description="Builds DDTree trees from draft rows that resemble the target (deep, many internal nodes) "
                    "and times one verifier call per round (decision + bonus + commit indices; the target "
                    "forward is excluded) for predraw, residual and TEV on the same trees, next to the floor: "
                    "a logsumexp over the K internal rows plus one float64 categorical draw from one row. "
                    "Medians over trees and repeats; stages alternate call by call.")
    p.add_argument("--budget", type=_ints, default=[32, 64, 128], help="comma-separated budgets B (default 32,64,128)")
    p.add_argument("--vocab", type=int, default=151936, help="vocabulary size V (default 151936, Qwen3)")
    p.add_argument("--device", default="cpu", help="torch device: cpu or cuda (default cpu)")
    p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"], help="logit dtype")
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--trees", type=int, default=3, help="realised trees per budget (default 3)")
    p.add_argument("--repeats", type=int, default=15, help="timed calls per tree and verifier (default 15)")
    p.add_argument("--depth", type=int, default=15, help="draft horizon H (default 15, DFlash block 16)")
    p.add_argument("--verifiers", default="predraw,residual,tev", help="comma-separated subset of predraw,residual,tev")
    p.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: torch's choice)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true", help="print the results (and config) as JSON")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    import torch

    from .verifier_bench import run_verifier_bench

    if args.vocab < 2:
        raise ValueError(f"--vocab must be >= 2, got {args.vocab}")
    if args.trees < 1 or args.repeats < 1:
        raise ValueError("--trees and --repeats must be >= 1")
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError("--device cuda requested but torch sees no CUDA device")
    if args.threads is not None and args.threads < 1:
        raise ValueError(f"--threads must be >= 1, got {args.threads}")
    kinds = tuple(k.strip() for k in args.verifiers.split(",") if k.strip())
    before = torch.get_num_threads()
    try:
        if args.threads is not None:
            torch.set_num_threads(args.threads)
        res = run_verifier_bench(args.budget, args.vocab, device=args.device, trees=args.trees,
                                 repeats=args.repeats, depth=args.depth, temperature=args.temperature,
                                 dtype=args.dtype, kinds=kinds, seed=args.seed)
    finally:
        torch.set_num_threads(before)
    if args.json:
        print(json.dumps({k: v for k, v in res.items() if k != "text"}, indent=1))
    else:
        print(res["text"])
    return 0
