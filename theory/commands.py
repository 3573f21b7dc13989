"""``exitlaw law`` and ``exitlaw law-bench``."""

from __future__ import annotations

import argparse
import json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("law", help="exit law, coverage and ceiling of recorded tree traces",
                       description="Per-round C_p, ceiling 1 + C_p, observed block lengths and the "
                                   "exit-depth histogram of a tree trace (JSON lines).")
    p.add_argument("trace", nargs="?", help="path of a tree trace (.jsonl)")
    p.add_argument("--demo", action="store_true", help="use an embedded synthetic trace instead of a file")
    p.add_argument("--json", action="store_true", help="print the full summary as JSON")
    p.set_defaults(func=_law)

    b = sub.add_parser("law-bench", help="benchmark: exit laws per second, jit+vmap vs a per-node loop")
    b.add_argument("--trees", type=int, default=4096)
    b.add_argument("--budget", type=int, default=64)
    b.add_argument("--vocab", type=int, default=32000)
    b.add_argument("--row-batch", type=int, default=64, help="trees per chunk for the full-row case")
    b.add_argument("--json", action="store_true")
    b.set_defaults(func=_bench)


def _enable_x64() -> None:
    import jax

    jax.config.update("jax_enable_x64", True)


def _law(args: argparse.Namespace) -> int:
    _enable_x64()
    from .summary import format_summary, summarize_trace
    from .trace import read_trace

    if args.demo == (args.trace is not None):
        raise ValueError("give either a TRACE path or --demo")
    if args.demo:
        from .demo import demo_trace

        trace = demo_trace()
    else:
        trace = read_trace(args.trace)
    summary = summarize_trace(trace)
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        if args.demo:
            _print_demo_tree(trace.rounds[0])
        print(format_summary(summary))
    return 0


def _print_demo_tree(rnd) -> None:
    from .law import exit_law_from_edges

    law = exit_law_from_edges(rnd.tree, rnd.edge_prob)
    print("demo round 0: per-node exit law")
    print(f"{'node':>4} {'parent':>6} {'depth':>5} {'token':>5} {'a(u)':>8} {'P':>8} {'rho':>8} {'w':>8}")
    for v in range(rnd.tree.num_nodes):
        print(f"{v:>4} {int(rnd.tree.parent[v]):>6} {int(rnd.tree.depth[v]):>5} {int(rnd.tree.token[v]):>5} "
              f"{float(law.edge[v]):>8.4f} {float(law.prefix[v]):>8.4f} {float(law.rho[v]):>8.4f} {float(law.w[v]):>8.4f}")
    print(f"sum w = {float(law.w.sum()):.12f}   C_p = {float(law.coverage):.6f}   ceiling 1 + C_p = {float(law.expected_length):.6f}\n")


def _bench(args: argparse.Namespace) -> int:
    _enable_x64()
    from .bench import run_law_bench

    result = run_law_bench(trees=args.trees, budget=args.budget, vocab=args.vocab, row_batch=args.row_batch)
    print(json.dumps(result, indent=1) if args.json else result["text"])
    return 0
