"""The paper's experiments: ``repro mini|all|full``, ``figures`` and ``ledger``."""

from __future__ import annotations

import argparse
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from . import library as lib
from . import main as run_command
from .args import (
    add_threads,
    json_arg,
    no_progress_arg,
    nonneg_int_list,
    out_args,
    positive_int,
    seed_arg,
    set_torch_threads,
    show_progress,
)
from .grammar import Command, Group, json_text, move_aside, opt, out_dir, out_files


def _mini(args: argparse.Namespace) -> int:
    set_torch_threads(args.threads)
    if args.quick and args.preset not in (None, "quick"):
        raise ValueError(f"--quick contradicts --preset {args.preset}")
    if args.preset in ("authors-regime", "authors-regime-quick"):
        return _authors_regime(args)
    if args.preset in ("paper-regime", "paper-regime-quick"):
        if args.overwrite:
            raise ValueError(
                "--overwrite: a paper-regime run is never replaced; choose another --out"
            )
        cfg = lib.PAPER_REGIME_PRESETS[args.preset]
        cfg = replace(cfg, base=replace(cfg.base, seed=args.seed)) if args.seed else cfg
        lib.run_paper_regime(args.out, cfg, progress=show_progress(args), workers=args.workers)
        print((Path(args.out) / "results.md").read_text(encoding="utf-8"))
        return 0
    cfg = lib.config_for(args.preset or ("quick" if args.quick else "smoke"), seed=args.seed)
    results = lib.run_mini(
        args.out,
        cfg,
        overwrite=args.overwrite,
        progress=show_progress(args),
        log=lambda line: print(line, flush=True),
    )
    print((Path(args.out) / "results.md").read_text(encoding="utf-8"))
    print(f"results: {Path(args.out) / 'results.json'} ({len(results['cells'])} cells)")
    return 0


def _authors_regime(args: argparse.Namespace) -> int:
    if args.overwrite or args.seed:
        raise ValueError(
            "--overwrite / --seed: an authors-regime run is never replaced and its seeds are the "
            "design's; choose another --out"
        )
    report = lib.run_authors_regime(
        args.out,
        lib.AUTHORS_REGIME_PRESETS[args.preset],
        progress=show_progress(args),
        workers=args.workers,
        seeds_only=tuple(args.seeds) if args.seeds else None,
    )
    if report is None:
        print(f"authors-regime: not every seed is done yet; rerun to resume ({args.out})")
    else:
        print((Path(args.out) / "results.md").read_text(encoding="utf-8"))
    return 0


def _mechanism(args: argparse.Namespace) -> int:
    out_files(args, lib.MECHANISM_JSON, lib.MECHANISM_MD)  # refused before any work
    set_torch_threads(args.threads)
    inputs = lib.regime_inputs(args.regime)
    result = lib.run_mechanism(
        args.out, inputs, progress=show_progress(args), log=lambda line: print(line, flush=True)
    )
    print(json_text(result) if args.json else lib.render_mechanism(result))
    return 0


def _sim_authors(args: argparse.Namespace) -> int:
    out_files(args, *lib.SIM_AUTHORS_FILES)  # refused before any work
    lib.run_sim_authors(
        args.out, from_simulation=args.from_simulation, overwrite=args.overwrite, log=print
    )
    print((Path(args.out) / "results.md").read_text(encoding="utf-8"))
    return 0


def _pilot(args: argparse.Namespace) -> int:
    cands = tuple(c.strip() for c in args.candidates.split(",") if c.strip())
    known = lib.PILOT_CANDIDATES
    unknown = sorted(set(cands) - set(known))
    if unknown or not cands:
        raise ValueError(f"unknown candidate(s) {unknown}; choose from {', '.join(known)}")
    if args.report:
        out_files(args, "pilot.json", "pilot.md")  # refused before any work
        print(lib.format_pilot(lib.pilot_report(args.out, cands)))
    else:
        print(lib.run_pilot(args.out, cands, progress=show_progress(args)))
    return 0


def _units(args: argparse.Namespace) -> int:
    if args.out is None:
        args.out = args.regime
    (path,) = out_files(args, "acceptance.json")  # refused before any work
    print(lib.write_regime_units(args.regime, path))
    return 0


def _all(args: argparse.Namespace) -> int:
    set_torch_threads(args.threads)
    summary = lib.reproduce(
        args.out,
        quick=args.quick,
        from_scratch=args.from_scratch,
        seed=args.seed,
        overwrite=args.overwrite,
        progress=show_progress(args),
        log=lambda line: print(line, flush=True),
    )
    print(
        f"done: ledger {summary['ledger'][0]}, figures in {summary['figures']}, "
        f"stage times (s, first run) {', '.join(f'{k} {v:.0f}' for k, v in summary['times'].items())}"
    )
    return 0


def _full(args: argparse.Namespace) -> int:
    if args.dry_run:
        return _full_dry_run(args)
    print(lib.render_full_scale(args.configs, args.runs))
    return 0


def _full_dry_run(args: argparse.Namespace) -> int:
    set_torch_threads(args.threads)
    if args.overwrite:
        move_aside(out_dir(args))
    workdir = args.out or tempfile.mkdtemp(prefix="exitlaw-dry-run-")

    def show(rec: dict) -> None:
        print(f"{rec['config']}: {rec['command'].split(' --')[0]}: {rec['status']}", flush=True)

    report = lib.dry_run(
        workdir,
        args.configs or None,
        run_command=run_command,  # the command line itself: each config's commands run in-process
        shrink=lib.Shrink(all_repeats=args.all_repeats),
        progress=show,
    )
    print(lib.format_dry_run(report))
    return 1 if report.limitations else 0


def _figures(args: argparse.Namespace) -> int:
    figures = lib.FIGURES
    if args.list:
        print("\n".join(figures))
        return 0
    names = (
        list(figures)
        if args.only is None
        else [n.strip() for n in args.only.split(",") if n.strip()]
    )
    unknown = [n for n in names if n not in figures]
    if unknown:
        raise ValueError(f"unknown figure(s) {unknown}; figures: {', '.join(figures)}")
    for name in names:  # refuse before computing anything
        lib.check_figure_out(args.out, name, args.overwrite)
    for name in names:
        t0 = time.perf_counter()
        paths = lib.make_figure(
            name,
            args.out,
            seed=args.seed,
            quick=args.quick,
            overwrite=args.overwrite,
            mini_dir=args.mini,
            latency_json=args.latency_json,
        )
        print(
            f"{name:<22} {time.perf_counter() - t0:6.1f} s  " + "  ".join(str(p) for p in paths),
            flush=True,
        )
    if args.ledger:  # the ledger of these figures, its other inputs the defaults
        same = {k: getattr(args, k) for k in ("mini", "latency_json", "quick", "seed", "overwrite")}
        _ledger(argparse.Namespace(figures=args.out, out=args.out, **same, **_LEDGER_DEFAULTS))
    return 0


_LEDGER_DEFAULTS = dict(
    from_shipped=False, make_shipped_inputs=False, checks=None, mini_deep=None, sweep=None
)


def _ledger(args: argparse.Namespace) -> int:
    if args.make_shipped_inputs:
        if not args.from_shipped:
            raise ValueError("--make-shipped-inputs goes with --from-shipped")
        lib.make_shipped_inputs(lib.LEDGER_RESULTS, seed=args.seed, overwrite=args.overwrite)
    if args.figures is not None and not Path(args.figures).is_dir():
        raise FileNotFoundError(
            f"--figures {args.figures} is not a directory (only the default runs/figures "
            "is created when missing)"
        )
    if args.from_shipped:
        _, md, js = lib.ledger_from_shipped(
            args.out or lib.LEDGER_RESULTS, overwrite=args.overwrite
        )
    else:
        _, md, js = lib.make_ledger(
            args.figures or "runs/figures",
            args.out or "runs/ledger",
            mini_dir=args.mini,
            latency_json=args.latency_json,
            checks_dir=args.checks,
            mini_deep=args.mini_deep,
            sweep_dir=args.sweep,
            quick=args.quick,
            seed=args.seed,
            overwrite=args.overwrite,
        )
    print(Path(md).read_text(encoding="utf-8"))
    print(f"ledger: {md} and {js}")
    return 0


def _run_args(overwrite_help: str):
    """The flags of a resumable run in ``--out``: ``--seed``, ``--overwrite`` (``overwrite_help`` says
    what it replaces), ``--threads`` (default 1) and ``--no-progress``."""

    def add(parser: argparse.ArgumentParser) -> None:
        seed_arg(0)(parser)
        parser.add_argument("--overwrite", action="store_true", help=overwrite_help)
        add_threads(parser, default=1)
        no_progress_arg(parser)

    return add


_MINI_PRESET_HELP = (
    "smoke (default: README's main run; starts from the shipped base pair and trains only the "
    "objectives; a few minutes; a pipeline check, not evidence), full (the same pipeline trained "
    "from scratch, shallow trees, ~25 min), quick (CI size), deep (deep trees, 3 training seeds, the first pre-registered "
    "ExitTrain run, outside the paper's regime), deep-budgets (deep at B = 32/64/128), or "
    "paper-regime (ExitTrain decided in the paper's regime: fresh fine-tuning data, a calibrated "
    "rate, the scoring temperature evaluated, the authors' strength and literal recipe; design "
    "in paper_repro/PAPER_REGIME.md; hours) and its CI-sized twin paper-regime-quick, or "
    "authors-regime (ExitTrain on the authors' recipe: greedy data, weights at T = 1, judged at "
    "T = 0 and T = 1 in per-step acceptance; design in paper_repro/AUTHORS_REGIME.md; hours) and "
    "its CI-sized twin authors-regime-quick"
)

MINI = Command(
    "mini",
    _mini,
    help="train a small target and DFlash drafter on the stdlib, compare objectives",
    description="Target LM on the Python standard library, a distilled DFlash drafter, then "
    "token-only / prefix-weighted / exit-guided training with matched compute; tau "
    "and CPU speedup at B = 32/64/128, T = 0/1, predraw and TEV, on held-out code "
    "and prose. Artefacts are cached in --out; rerunning resumes.",
    pieces=(
        opt(
            "--out",
            metavar="DIR",
            required=True,
            help="folder: the run (resumed if it holds the same configuration)",
        ),
        opt(
            "--quick",
            action="store_true",
            help="tiny preset for smoke tests (about a minute on 2 cores); same as --preset quick",
        ),
        opt(
            "--preset",
            choices=(
                "smoke",
                "quick",
                "full",
                "deep",
                "deep-budgets",
                "paper-regime",
                "paper-regime-quick",
                "authors-regime",
                "authors-regime-quick",
            ),
            default=None,
            help=_MINI_PRESET_HELP,
        ),
        opt(
            "--workers",
            type=positive_int,
            default=1,
            help="paper-regime / authors-regime: processes for the training runs and evaluation "
            "cells (one torch thread each; results do not depend on it)",
        ),
        opt(
            "--seeds",
            type=nonneg_int_list,
            default=None,
            metavar="S,S",
            help="authors-regime: train and evaluate only these training seeds now (a later call "
            "resumes the rest; default: every seed of the design)",
        ),
        _run_args("if --out holds a run of another configuration, move it aside and start again"),
    ),
)

ALL = Command(
    "all",
    _all,
    help="the kit on predraw/residual/TEV, the mini run, every figure and the ledger",
    description="One command on a CPU: conformance checks of exitlaw's own verifiers, "
    "`repro mini`, every figure (drawn from the mini run) and the claims ledger, "
    "each stage cached under --out (a rerun resumes).",
    pieces=(
        opt(
            "--out",
            metavar="DIR",
            default="runs/repro",
            help="folder: the run (default runs/repro)",
        ),
        opt(
            "--quick",
            action="store_true",
            help="small presets everywhere (CI size, about two minutes)",
        ),
        opt(
            "--from-scratch",
            action="store_true",
            help="train the mini target and drafter here (preset full, ~25 min more) instead of "
            "starting from the shipped base pair",
        ),
        _run_args(
            "if --out holds a run of another configuration, start again (old mini runs are "
            "moved aside)"
        ),
    ),
)

FULL = Command(
    "full",
    _full,
    help="the GPU commands for the paper's Tables 1-5 (from paper_repro/configs)",
    description="Prints the `exitlaw train`, `exitlaw bench decoding` and `exitlaw gpu-check` "
    "commands of each full-scale config (default: every shipped config). --dry-run executes "
    "them on a CPU instead: random-weight stand-ins of each target's architecture "
    "family at tiny sizes, real tokenizers with chat templates, local datasets in "
    "the Hub rows' shapes, shrunk lengths and steps; budgets, temperatures, "
    "verifiers and objectives as configured.",
    pieces=(
        opt("configs", nargs="*", help="config files (default: all in paper_repro/configs)"),
        opt(
            "--runs", default="runs/full", help="where the printed commands write runs and results"
        ),
        opt(
            "--dry-run",
            action="store_true",
            help="execute every command on tiny CPU stand-ins (see above)",
        ),
        out_args(
            "--dry-run: models, data and runs; new or empty, --overwrite moves a former one aside "
            "(default: a new temp folder)"
        ),
        opt(
            "--all-repeats",
            action="store_true",
            help="--dry-run: also run bench repeats that differ from seed 0 only in the seed",
        ),
        lambda parser: add_threads(parser, default=1),
    ),
)

MECHANISM = Command(
    "mechanism",
    _mechanism,
    help="one matched-norm step along the exit, prefix, CE and a random direction: change in C_p",
    description="From the paper-regime base drafter and a token-tuned one, steps of one length along "
    "the gradients of the exit and prefix tree terms and of CE (and a random direction) on the same "
    "training batches; trees rebuilt on the same held-out anchors; the change in C_p at T = 0 and "
    "T = 1 with prompt-clustered intervals (issue 34). Writes mechanism.json and mechanism.md into "
    "--out; the greedy data and the token-tuned drafter are cached there. Minutes on one core.",
    pieces=(
        opt(
            "--out",
            metavar="DIR",
            required=True,
            help="folder: mechanism.json, mechanism.md and the cached data and drafter",
        ),
        opt(
            "--overwrite",
            action="store_true",
            help="replace mechanism.json and mechanism.md a former run wrote in --out (the cached "
            "data and drafter are reused)",
        ),
        json_arg,
        opt(
            "--regime",
            metavar="DIR",
            default="paper_repro/results/paper_regime",
            help="a paper-regime run folder: base/target, base/drafter_base/final, ft_data, "
            "prompt_sets.json (default: the shipped one)",
        ),
        lambda parser: add_threads(parser, default=1),
        no_progress_arg,
    ),
)

SIM_AUTHORS = Command(
    "sim-authors",
    _sim_authors,
    help="ExitTrain on the authors' recipe in simulation: exact tau, verdicts in a and relative tau",
    description="Greedy data, tree weights at T = 1, token / prefix / exit / exit-depth at matched "
    "tree-term strength on a low-entropy synthetic target, 10 seeds, exact tau (issue 49; "
    "simulate/exittrain/recipe.py). Writes simulation.json, results.json and results.md into --out. "
    "About 3 CPU-minutes; --from-simulation re-judges a shipped simulation.json in seconds.",
    pieces=(
        out_args("simulation.json, results.json, results.md", required=True),
        opt(
            "--from-simulation",
            metavar="JSON",
            default=None,
            help="re-judge this simulation.json instead of training",
        ),
    ),
)

PILOT = Command(
    "pilot",
    _pilot,
    help="the ExitTrain precondition pilot: candidate bases, exact coverage, projected power",
    description="paper_repro/PILOT_PRECONDITION.md: candidate bases tuned token-only on greedy data, "
    "C_p on fixed held-out anchors under the target at T = 0 and the sharpened target (logits x 2) "
    "at T = 1, power projected to the main run, the base chosen by the design's rule. Stages are "
    "cached in --out (two processes may share it); --report writes pilot.json and pilot.md.",
    pieces=(
        opt(
            "--out",
            metavar="DIR",
            required=True,
            help="folder: the pilot's cached stages, pilot.json and pilot.md",
        ),
        opt(
            "--overwrite",
            action="store_true",
            help="--report: replace pilot.json and pilot.md (the cached stages are reused)",
        ),
        opt(
            "--candidates",
            default="full,fallback,other-data",
            help="comma-separated candidate bases (full, fallback, other-data)",
        ),
        opt(
            "--report", action="store_true", help="only write pilot.json / pilot.md from the cache"
        ),
        no_progress_arg,
    ),
)

UNITS = Command(
    "units",
    _units,
    help="the paper-regime run's comparisons in per-step acceptance a, from its cells",
    description="Recomputes the paper-regime run's ExitTrain comparisons in a = 1 - 1/tau (relative "
    "tau beside) from its shipped cells, for the ledger's unit policy (issue 49). Seconds.",
    pieces=(
        opt(
            "--regime",
            metavar="DIR",
            default="paper_repro/results/paper_regime",
            help="a paper-regime run folder (default: the shipped one)",
        ),
        opt(
            "--out",
            metavar="DIR",
            default=None,
            help="folder: acceptance.json (default: the --regime folder)",
        ),
        opt("--overwrite", action="store_true", help="replace acceptance.json"),
    ),
)

REPRO = Group(
    "repro",
    help="reproduce the paper's experiments: mini, all, full, mechanism, sim-authors, pilot, units",
    description="Reproduce the paper's experiments (mini: on a CPU, from the stdlib corpus).",
    commands=(MINI, ALL, FULL, MECHANISM, SIM_AUTHORS, PILOT, UNITS),
)

FIGURES = Command(
    "figures",
    _figures,
    help="regenerate the figures (PNG + PDF + data JSON) on a CPU",
    description="Each figure is computed from embedded defaults (simulation, the engine on tiny "
    "models, or a mini-scale run when --mini is given) and drawn with matplotlib.",
    pieces=(
        out_args("the figures and their data", default="runs/figures"),
        opt("--only", default=None, help="comma-separated figure names (default: all)"),
        seed_arg(0),
        opt(
            "--quick",
            action="store_true",
            help="smaller samples and runs (smoke test, under a minute)",
        ),
        opt(
            "--mini",
            default=None,
            help="an `exitlaw repro mini --out DIR` run directory to draw from",
        ),
        opt(
            "--latency-json",
            default=None,
            help="verifier-stage latencies: the results.json of `exitlaw bench verifiers --out DIR` "
            "or of `exitlaw gpu-check --out DIR` (default: run bench verifiers on this CPU)",
        ),
        opt(
            "--ledger",
            action="store_true",
            help="afterwards write the claims ledger (ledger.md, ledger.json) into --out from these figures",
        ),
        opt("--list", action="store_true", help="list the figure names and exit"),
    ),
)

LEDGER = Command(
    "ledger",
    _ledger,
    help="claims ledger: the paper's numbers vs exitlaw's, with verdicts",
    description="A verdict per claim by a rule fixed in advance. Reads FIGURES/NAME.json written by `exitlaw figures` (computing and drawing any "
    "missing one first), with --mini the mini run's results.json, with --checks the "
    "conformance-kit reports, and the paired-effect files of the deep mini preset "
    "and the simulation sweep (default: the shipped ones). --from-shipped rebuilds "
    "the shipped ledger (paper_repro/results/ledger.md/json) from shipped inputs only.",
    pieces=(
        out_args(
            "ledger.md and ledger.json (default runs/ledger; with --from-shipped: paper_repro/results)"
        ),
        opt(
            "--from-shipped",
            action="store_true",
            help="build from the shipped inputs in paper_repro/results only (byte for byte reproducible)",
        ),
        opt(
            "--make-shipped-inputs",
            action="store_true",
            help="recompute the shipped CPU inputs (figure data, verifier bench, kit reports) first; "
            "needs --overwrite when they exist (minutes)",
        ),
        opt(
            "--figures",
            default=None,
            help="figure data directory (default: runs/figures, created when "
            "missing; a folder given here must exist)",
        ),
        opt("--mini", default=None, help="an `exitlaw repro mini --out DIR` run directory"),
        opt(
            "--checks",
            default=None,
            help="a directory of conformance-kit reports (predraw/residual/tev.json)",
        ),
        opt(
            "--mini-deep",
            default=None,
            help="a deep mini paired-effect JSON (default: the shipped one)",
        ),
        opt(
            "--sweep",
            default=None,
            help="a directory of simulation-sweep paired-effect JSONs (default: the shipped one)",
        ),
        opt(
            "--latency-json",
            default=None,
            help="the results.json of bench verifiers / gpu-check for the latency claim",
        ),
        opt("--quick", action="store_true", help="quick sizes for figure data computed here"),
        seed_arg(0),
    ),
)

COMMANDS = (REPRO, FIGURES, LEDGER)
BENCH = ()
