"""``exitlaw check`` (the conformance kit) and ``exitlaw verifier-sim-bench``."""

from __future__ import annotations

import argparse
import json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "check", help="conformance kit: is a verifier exact and saturating?",
        description="Loads MODULE:CALLABLE with the signature f(tree, probs, rng) -> (exit_node, bonus_token) "
                    "(marginal mode: f(tree, probs, draft_probs, rng)), samples it on hard-case trees and "
                    "runs calibrated checks. Exit status: 0 exact and saturating, 1 not exact, "
                    "3 exact but not saturating, 2 usage error.")
    p.add_argument("verifier", metavar="MODULE:CALLABLE")
    p.add_argument("--mode", choices=("conditional", "marginal"), default="conditional",
                   help="conditional: fixed-tree verifier; marginal: sampled-draft verifier (trees drawn by the kit)")
    p.add_argument("--seed", type=int, default=0, help="seed of the cases and of every draw (default 0)")
    p.add_argument("--budget", type=int, default=8, help="node budget B of the random tree case (default 8)")
    p.add_argument("--vocab", type=int, default=4, help="vocabulary of the random cases (default 4)")
    p.add_argument("--samples", type=int, default=None,
                   help="rounds per case (default: chosen from --alpha, --power and --delta)")
    p.add_argument("--alpha", type=float, default=1e-6, help="false-failure rate of the whole run (default 1e-6)")
    p.add_argument("--delta", type=float, default=0.1, help="total-variation distance for the power claim")
    p.add_argument("--power", type=float, default=0.999, help="power per distribution check at --delta")
    p.add_argument("--chains-only", action="store_true",
                   help="marginal mode: draft chains only (for chain speculative sampling)")
    p.add_argument("--keep-going", action="store_true", help="run every case even after a 'not exact' case")
    p.add_argument("--json", action="store_true", help="print the full report as JSON")
    p.set_defaults(func=_check)

    b = sub.add_parser("verifier-sim-bench",
                       help="benchmark: samples/s of the simulated verifier samplers and the kit's wall time")
    b.add_argument("--budget", type=int, default=64)
    b.add_argument("--vocab", type=int, nargs="+", default=[1000, 32000])
    b.add_argument("--samples", type=int, default=100_000, help="rounds per vectorised call")
    b.add_argument("--calls", type=int, default=500, help="calls of each per-call public form")
    b.add_argument("--no-kit", action="store_true", help="skip timing the conformance kit")
    b.add_argument("--json", action="store_true")
    b.set_defaults(func=_bench)


def _check(args: argparse.Namespace) -> int:
    from .conformance import load_verifier, run_kit

    fn = load_verifier(args.verifier)
    if args.chains_only and args.mode != "marginal":
        raise ValueError("--chains-only applies to --mode marginal")
    if args.samples is not None and args.samples < 1:
        raise ValueError(f"--samples must be >= 1, got {args.samples}")
    report = run_kit(fn, name=args.verifier, mode=args.mode, seed=args.seed, budget=args.budget,
                     vocab=args.vocab, samples=args.samples, family_alpha=args.alpha, delta=args.delta,
                     power=args.power, keep_going=args.keep_going, chains_only=args.chains_only)
    print(json.dumps(report.to_json(), indent=1, default=float) if args.json else format_report(report))
    return report.exit_code


def _fmt(x) -> str:
    if x is None:
        return "-"
    return f"{x:.3g}" if isinstance(x, float) else str(x)


def format_report(rep) -> str:
    out = [f"exitlaw check {rep.verifier}   mode {rep.mode}   seed {rep.seed}",
           f"false-failure rate <= {rep.family_alpha:g} for the whole run: alpha = {rep.alpha_per_check:.3g} per check "
           f"(Bonferroni), half to the pooled chi-square, half to the per-cell binomials",
           f"power >= {rep.power_target} per distribution check against TV >= {rep.delta} on pooled cells "
           f"(smallest computed: {rep.min_power:.4f})",
           f"{'case':<12} {'samples':>7}  {'check':<16} {'statistic':>10} {'dof':>4} {'p-value':>9} {'power':>7}  result"]
    for case in rep.cases:
        for i, c in enumerate(case["checks"]):
            head = f"{case['name']:<12} {case['samples']:>7}" if i == 0 else " " * 20
            res = "REJECT" if c["rejected"] else "ok"
            out.append(f"{head}  {c['name']:<16} {_fmt(float(c['statistic'])):>10} {c['dof']:>4} "
                       f"{_fmt(float(c['pvalue'])):>9} {_fmt(c['power']):>7}  {res}")
        if "ceiling" in case:
            out.append(" " * 20 + f"  E[L] observed {case['mean_length']:.4f}   1 + C_p = {case['ceiling']:.4f}")
    out.append(f"verdict: {rep.verdict.upper() if rep.exit_code else rep.verdict}   (exit status {rep.exit_code})")
    if rep.failure:
        f = dict(rep.failure)
        out.append(f"  case {f.pop('case')}: tree {f.pop('tree')}")
        out.append(f"  check {f.pop('check')}: statistic {_fmt(float(f.pop('statistic')))}, "
                   f"p-value {_fmt(float(f.pop('pvalue')))}")
        cell = f.pop("cell", {})
        where = {**(cell if isinstance(cell, dict) else {"cell": cell}), **f}
        if "node" in where:
            out.append(f"  node {where.pop('node')}: " + ", ".join(f"{k} {_fmt(v)}" for k, v in where.items()))
        else:
            out.append("  where: " + ", ".join(f"{k} {_fmt(v)}" for k, v in where.items()))
        out.append(f"  reproduce: {rep.reproduce}")
    return "\n".join(out)


def _bench(args: argparse.Namespace) -> int:
    from .verifier_bench import run_verifier_bench

    res = run_verifier_bench(vocabs=tuple(args.vocab), budget=args.budget, samples=args.samples,
                             calls=args.calls, kit=not args.no_kit)
    print(json.dumps(res, indent=1) if args.json else res["text"])
    return 0
