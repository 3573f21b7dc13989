"""The simulation lab and the conformance kit: ``simulate run|exittrain|field-lab``, ``check``,
``prove``, ``bench simulate`` and ``bench sim-verifiers`` (JAX loads with the handlers' library
calls, :mod:`.library`)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from exitlaw.simulate.verifiers.table import implemented
from exitlaw.theory.registry import FIXED_TREE, SIMULATOR

from . import library as lib
from .args import (
    add_sampling_args,
    enable_x64,
    json_arg,
    no_progress_arg,
    out_args,
    positive_int,
    result_out_args,
    sampling_given,
    sampling_settings_from,
    seed_arg,
    show_progress,
    temperature_value,
)
from .grammar import Command, Group, emit, opt, out_dir, out_files, pick, result_path, write_json


def _simulate(args: argparse.Namespace) -> int:
    if args.list_presets:
        print(json.dumps({k: v.to_dict() for k, v in lib.SIM_PRESETS.items()}, indent=1))
        return 0
    if (args.config is None) == (args.preset is None):
        raise ValueError("give either a CONFIG file or --preset NAME")
    cfg = lib.SimConfig.from_file(args.config) if args.config else lib.get_preset(args.preset)
    builders = tuple(b.strip() for b in args.builders.split(",")) if args.builders else None
    cfg = lib.with_overrides(
        cfg, rounds=args.rounds, seed=args.seed, builders=builders, verifier=args.verifier
    )
    out = out_dir(args) or Path("runs") / "simulate" / cfg.name
    enable_x64()
    lib.run_simulation(cfg, out, overwrite=args.overwrite, progress=show_progress(args))
    return 0


def _exittrain_sweep(args: argparse.Namespace) -> int:
    if out_dir(args) is None:
        raise ValueError("--sweep needs --out DIR")
    res = lib.sweep_to_dir(args.sweep, args.out, overwrite=args.overwrite, log=print)
    drawn = lib.draw_exittrain_sweep(res, args.out, overwrite=args.overwrite)
    paths = res["paths"] + [str(p) for p in drawn]
    print(
        json.dumps(
            {
                "primary": res["primary"].get("by_lambda"),
                "paths": paths,
                "seconds": round(res["seconds_total"], 1),
            },
            indent=1,
        )
    )
    return 0


def _exittrain(args: argparse.Namespace) -> int:
    if args.sweep is not None:
        return _exittrain_sweep(args)
    path = result_path(args)
    enable_x64()
    regimes = lib.EXITTRAIN_REGIMES
    names = list(regimes) if args.regime == "all" else [args.regime]
    for n in names:
        if n not in regimes:
            raise ValueError(f"unknown regime {n!r}; regimes: {', '.join(regimes)}, all")
    report = {}
    for n in names:
        report[n] = lib.run_exittrain_mini(
            regimes[n], steps=args.steps, seed=args.seed, progress=True
        )
        print(lib.format_exittrain_table(report[n]) + "\n")
    if path is not None:
        write_json(path, report)
    return 0


def _sim_bench(args: argparse.Namespace) -> int:
    path = result_path(args)
    enable_x64()
    res = lib.run_sim_bench(
        budget=args.budget, vocabs=args.vocab, rounds=args.rounds, verifier=args.verifier
    )
    emit(args, res, res["text"], path)
    return 0


def _field_lab(args: argparse.Namespace) -> int:
    given = pick(args, "vocab", "budget", "horizon", "seeds", "contexts")
    configs = [lib.FieldLabConfig.from_dict({"drafter_noise": n, **given}) for n in args.noise]
    json_path, _ = out_files(args, "field_lab.json", "field_lab.md")
    print(lib.render_field_lab(lib.run_field_lab(configs, json_path, overwrite=args.overwrite)))
    return 0


def _check(args: argparse.Namespace) -> int:
    if args.chains_only and args.mode != "marginal":
        raise ValueError("--chains-only applies to --mode marginal")
    settings = _check_settings(args)
    if args.boundary:
        if settings is not None:
            raise ValueError(
                "--boundary takes probability-row verifiers; settings mode (--settings, --temperature, "
                "--top-k, --top-p, --min-p) is statistical only"
            )
        return _check_boundary(args)
    names = ("mode", "seed", "budget", "vocab", "samples", "delta", "power", "keep_going")
    names += ("chains_only", "timeout", "verifier_format")
    given = pick(args, *names, family_alpha="alpha", only_case="case")
    report = lib.check_verifier(args.verifier, settings=settings, **given)
    if report.verdict == lib.BAD_INPUT:
        print(f"exitlaw check: error: {report.error}", file=sys.stderr)
    if args.json:
        print(json.dumps(report.to_json(), indent=1, default=float))
    elif report.verdict != lib.BAD_INPUT:
        print(lib.format_report(report))
    return report.exit_code


def _check_settings(args: argparse.Namespace):
    """``None`` (probability rows), the default panel (``--settings`` alone), or the one setting given."""
    if args.temperature is None and not sampling_given(args):
        if args.sampling_order is not None:
            raise ValueError(
                "--sampling-order needs settings mode "
                "(--settings or a --temperature/--top-k/--top-p/--min-p)"
            )
        if not args.settings:
            return None
        return lib.DEFAULT_PANEL
    return sampling_settings_from(args, 1.0 if args.temperature is None else args.temperature)


def _check_boundary(args: argparse.Namespace) -> int:
    lib.check_chain_format(args.verifier_format, args.mode, args.chains_only)
    fn = lib.adapt_verifier(lib.load_verifier(args.verifier), args.verifier_format, mode=args.mode)
    given = pick(args, "mode", "seed", "budget", "vocab", "chains_only", name="verifier")
    rep = lib.run_boundary(fn, **given)
    print(json.dumps(rep.to_json(), indent=1) if args.json else lib.format_boundary(rep))
    return rep.exit_code


def _prove(args: argparse.Namespace) -> int:
    path = result_path(args)
    names = ("mode", "rounds", "raw", "every_child_order", "thorough", "max_nodes", "vocab")
    rep, text = lib.run_prove(args.verifier, **pick(args, *names, "points", "seed"))
    emit(args, rep.to_json(), text, path)
    return rep.exit_code


def _verifier_sim_bench(args: argparse.Namespace) -> int:
    path = result_path(args)
    res = lib.run_sim_verifier_bench(
        vocabs=tuple(args.vocab),
        budget=args.budget,
        samples=args.samples,
        calls=args.calls,
        kit=not args.no_kit,
    )
    emit(args, res, res["text"], path)
    return 0


SIMULATE_RUN = Command(
    "run",
    _simulate,
    help="simulated tree speculative decoding on a synthetic target",
    description="Run builders + a verifier for many rounds on a synthetic n-gram target with "
    "exact conditionals; write JSON results and tree traces.",
    pieces=(
        opt(
            "config",
            nargs="?",
            help="JSON config file (keys of SimConfig; may name a base 'preset')",
        ),
        opt("--preset", help="named preset (small, medium, greedy, mismatch, field)"),
        out_args("results and traces (default runs/simulate/<config name>)"),
        opt("--rounds", type=positive_int, help="override the number of rounds"),
        seed_arg(None, help="override the decoding seed"),
        opt("--builders", help="comma-separated builders to run (override)"),
        opt(
            "--verifier",
            choices=implemented(SIMULATOR, kind=FIXED_TREE),
            metavar="VERIFIER",
            help="override the verifier (tev, predraw, residual, greedy, tev-fast)",
        ),
        no_progress_arg,
        opt("--list-presets", action="store_true", help="print the presets as JSON and exit"),
    ),
)

EXITTRAIN = Command(
    "exittrain",
    _exittrain,
    help="ExitTrain in miniature: token-only vs prefix-weighted vs exit-guided",
    description="Train a parametric position-wise drafter (JAX + optax) against a synthetic target "
    "under three objectives with matched compute; evaluate tau = 1 + C_p at budgets "
    "32/64/128 and T in {0, 1}.",
    pieces=(
        out_args(
            "the table and settings as results.json; with --sweep: sweep.json, sweep.md, "
            "config.json, exittrain_sweep.png/.pdf"
        ),
        opt(
            "--regime",
            default="lowrank-peaked",
            help="named regime (lowrank, lowrank-peaked, lowrank-flat, lowrank-deep, overconfident, "
            "underconfident, table), or 'all' (about a minute each)",
        ),
        opt("--steps", type=int, help="override training steps"),
        seed_arg(0),
        opt(
            "--sweep",
            metavar="PRESET|CONFIG.json",
            help="instead: the paired seed sweep of every objective (token, prefix, exit, exit-depth, "
            "draft-opd, vat x normalisations x lambda 0.1/1), preset deep, shallow, all (~20 min), "
            "matched (trained and judged at T = 0.5) or quick, or a sweep's config.json to rerun it; "
            "needs --out DIR; float32",
        ),
    ),
)

FIELD_LAB = Command(
    "field-lab",
    _field_lab,
    help="UniVer and HSD against recursive rejection on the same drafted trees",
    description="Exact E[L | T] of UniVer, RRS without / with replacement (Tsubame trees) and HSD, "
    "chain speculative sampling (chains) on the same contexts and drafts; paired "
    "effects with 95 %% t-intervals over seeds, in the ledger's record shape.",
    pieces=(
        out_args("field_lab.json and its table field_lab.md", default="runs/field_lab"),
        opt(
            "--noise",
            type=float,
            nargs="+",
            default=[1.0, 0.5],
            help="drafter noise, one run per value",
        ),
        opt("--seeds", type=int, default=20),
        opt("--contexts", type=int, default=400, help="contexts (drafted trees) per seed"),
        opt("--budget", type=int, default=16),
        opt("--horizon", type=int, default=6),
        opt("--vocab", type=int, default=64),
    ),
)

SIMULATE = Group(
    "simulate",
    help="the simulation lab: run, exittrain, field-lab",
    commands=(SIMULATE_RUN, EXITTRAIN, FIELD_LAB),
)


def _check_settings_args(c: argparse.ArgumentParser) -> None:
    """Settings mode of ``check``: the default panel, or one sampling setting (the shared sampling flags)."""
    c.add_argument(
        "--settings",
        action="store_true",
        help="settings mode: the verifier takes raw logits and the sampling settings, f(tree, logits, "
        "settings, rng) or, with --mode marginal, f(tree, logits, draft_logits, settings, rng); the kit "
        "drafts from the processed draft rows and judges against the processed target law. Alone: a "
        "panel of one setting per filter plus all three (simulate/kit/settings_cases.py)",
    )
    c.add_argument(
        "--temperature",
        type=temperature_value,
        default=None,
        help="settings mode with this one setting (default temperature 1 when a filter is given)",
    )
    add_sampling_args(c, "the target and draft rows (settings mode with this one setting)")


_MODE_HELP = (
    "conditional: fixed-tree verifier; marginal: sampled-draft verifier (trees drawn by the kit)"
)

CHECK = Command(
    "check",
    _check,
    help="conformance kit: is a verifier exact and saturating?",
    description="Loads MODULE:CALLABLE with the signature f(tree, probs, rng) -> (exit_node, bonus_token) "
    "(marginal mode: f(tree, probs, draft_probs, rng)), samples it on hard-case trees and "
    "runs calibrated checks. Exit status, first that applies whatever the case order: "
    "2 bad input (the module cannot be imported -- ImportError, SyntaxError, sys.exit or any "
    "error at import -- or the callable has the wrong signature or returns no (node, token)); "
    "1 not exact (some case showed it); 4 verifier failed (a call raised or ran past --timeout; "
    "the case, tree, seed, reproduce command and traceback are reported, a traceback repeated "
    "across cases once, and the other cases still run); 3 exact but not saturating; 5 insufficient samples (no rejection, but the "
    "computed power is below --power, so no exactness verdict); 0 exact and saturating. "
    "With --json the report is printed in every case.",
    pieces=(
        opt("verifier", metavar="MODULE:CALLABLE"),
        opt("--mode", choices=("conditional", "marginal"), default="conditional", help=_MODE_HELP),
        opt(
            "--format",
            dest="verifier_format",
            choices=("exitlaw", "eagle", "sglang", "ddtree", "vllm"),
            default="exitlaw",
            help="the layout the verifier is written in (conditional mode): exitlaw f(tree, probs, rng); "
            "eagle f(candidates, retrieve_indices, probs, rng) -> (best_candidate, accept_length, "
            "bonus_token); sglang tree_speculative_sampling_target_only's arguments (bs 1, outputs "
            "written in place, coins drawn by the kit); ddtree f(root_token_id, node_token_ids, "
            "node_depths, parents, child_maps, visibility, target_probs, rng) -> (accepted_indices, "
            "next_token); with --mode marginal --chains-only, vllm: a chain rejection sampler "
            "f(draft_token_ids, cu_num_draft_tokens, draft_probs, target_probs, bonus_token_ids, "
            "uniform_probs, rng) -> output_token_ids [1, K + 1], -1 after the first rejection (coins "
            "and bonus drawn by the kit). See simulate/kit/formats.py and simulate/kit/chain_formats.py",
        ),
        seed_arg(0, help="seed of the cases and of every draw (default 0)"),
        opt(
            "--budget",
            type=int,
            default=8,
            help="node budget B of the random tree case (default 8)",
        ),
        opt("--vocab", type=int, default=4, help="vocabulary of the random cases (default 4)"),
        opt(
            "--samples",
            type=positive_int,
            default=None,
            help="rounds per case (default: chosen from --alpha, --power and --delta)",
        ),
        opt(
            "--alpha",
            type=float,
            default=1e-6,
            help="false-failure rate of the whole run (default 1e-6)",
        ),
        opt(
            "--delta", type=float, default=0.1, help="total-variation distance for the power claim"
        ),
        opt("--power", type=float, default=0.999, help="power per distribution check at --delta"),
        opt(
            "--chains-only",
            action="store_true",
            help="marginal mode: draft chains only (for chain speculative sampling)",
        ),
        opt(
            "--keep-going", action="store_true", help="run every case even after a 'not exact' case"
        ),
        opt(
            "--timeout",
            type=float,
            default=10.0,
            help="seconds one verifier call may take before its case is reported as failed (default 10)",
        ),
        opt("--case", help="run only the case of this name (as printed in a reproduce command)"),
        opt(
            "--boundary",
            action="store_true",
            help="boundary-coin mode: drive the verifier's Generator with 0, the largest double and "
            "float32 below 1, exact cumulative boundaries (and, with --mode marginal, acceptance ratios "
            "p/q on every draft of positive probability of hard cases where the target gives 0 to a "
            "drafted token), on systematic schedules, and flag any emitted block of target "
            "probability 0 (exit status 0 passes, 1 flagged, 4 verifier failed, 2 bad input); "
            "only Generator.random/uniform/spawn are driven",
        ),
        _check_settings_args,
        json_arg,
    ),
)

PROVE = Command(
    "prove",
    _prove,
    help="symbolic proof that a verifier is exact and saturating",
    description="Bounded-exhaustive symbolic proof that a verifier procedure is exact and saturating. Loads MODULE:CALLABLE written over exitlaw's randomness interface, f(tree, rows, rand) -> "
    "(exit_node, bonus_token), runs it with symbolic target rows on every tree shape with <= N "
    "nodes and every child-token assignment up to relabelling, and proves the block law, "
    "E[L] = 1 + C_p and the completed-block law as identities of rational functions, or prints a "
    "counterexample with rational rows. A raw verifier f(tree, probs, rng) over a numpy Generator "
    "gets its exact law at dyadic rational rows instead (interval uniforms). "
    "Exit status: 0 proved, 1 counterexample, 3 unproved or exact only at the points searched "
    "(the verifier compares probabilities, so it was only searched at rational points), "
    "2 usage error.",
    pieces=(
        opt("verifier", metavar="MODULE:CALLABLE"),
        opt(
            "--max-nodes",
            type=positive_int,
            default=None,
            help="largest tree size N (default 6, 8 with --thorough; 3 for raw verifiers, --mode "
            "marginal and --rounds 2)",
        ),
        opt(
            "--vocab",
            type=positive_int,
            default=None,
            help="largest vocabulary V (default 3, 2 in marginal mode; shapes with larger sibling sets "
            "get k and k + 1)",
        ),
        opt("--thorough", action="store_true", help="the long run: --max-nodes 8 unless given"),
        opt(
            "--every-child-order",
            action="store_true",
            help="call f(tree, rows, rand, child_order=...) once per permutation of every node's children",
        ),
        seed_arg(0, help="seed of the rational points tried for counterexamples"),
        opt(
            "--raw",
            action="store_true",
            help="the verifier is f(tree, probs, rng) over a numpy Generator (automatic when its third "
            "parameter is named rng): its exact law is searched at dyadic rational rows with interval "
            "uniforms; no counterexample gives status exact_at_points (exit 3: evidence, not a proof)",
        ),
        opt(
            "--mode",
            choices=("conditional", "marginal"),
            default="conditional",
            help="marginal: a sampled-draft rule f(topology, target, draft, rand) -> block (e.g. "
            "exitlaw.simulate.prove.sampled:without_replacement_rule), proved exact averaged over the "
            "drafts with symbolic target and draft rows, plus a fixed-tree witness for the built-in "
            "rules (default --max-nodes 3, --vocab 2)",
        ),
        opt(
            "--rounds",
            type=int,
            choices=(1, 2),
            default=1,
            help="2: two-round losslessness of f(tree, rows, rand) (a second tree verified in the context "
            "of the first block), with symbolic target rows (default --max-nodes 3, --vocab 2)",
        ),
        opt(
            "--points",
            type=positive_int,
            default=4,
            help="rational points per tree for raw verifiers (default 4)",
        ),
        out_args("the certificate as results.json"),
        json_arg,
    ),
)

BENCH_SIMULATE = Command(
    "simulate",
    _sim_bench,
    help="simulated decoding rounds per second",
    pieces=(
        opt("--budget", type=int, default=64),
        opt("--vocab", type=int, nargs="+", default=[1000, 32000]),
        opt("--rounds", type=int, default=30),
        opt(
            "--verifier",
            default="tev",
            choices=implemented(SIMULATOR, kind=FIXED_TREE),
            metavar="VERIFIER",
            help="verifier to time (tev, tev-fast, predraw, residual)",
        ),
        result_out_args,
    ),
)

BENCH_SIM_VERIFIERS = Command(
    "sim-verifiers",
    _verifier_sim_bench,
    help="samples/s of the simulated verifier samplers and the kit's wall time",
    pieces=(
        opt("--budget", type=int, default=64),
        opt("--vocab", type=int, nargs="+", default=[1000, 32000]),
        opt("--samples", type=int, default=100_000, help="rounds per vectorised call"),
        opt("--calls", type=int, default=500, help="calls of each per-call public form"),
        opt("--no-kit", action="store_true", help="skip timing the conformance kit"),
        result_out_args,
    ),
)

COMMANDS = (SIMULATE, CHECK, PROVE)
BENCH = (BENCH_SIMULATE, BENCH_SIM_VERIFIERS)
