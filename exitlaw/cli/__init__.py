"""The ``exitlaw`` command line: one module per command family, argument helpers in :mod:`.args`,
the grammar and its output writer in :mod:`.grammar`.

Commands are grouped the way they are used: top-level verbs (``law``, ``simulate run|exittrain|
field-lab``, ``check``, ``prove``, ``train``, ``serve``, ``audit``, ``repro mini|all|full``,
``figures``, ``ledger``, ``tiny-models``, ``gpu-check``) and one benchmark group, ``exitlaw bench
law|simulate|sim-verifiers|verifiers|decoding|batch|ddtree|serve``.

One grammar for every command (property_tests/test_cli_grammar.py walks them all):

* ``--out DIR`` always names a folder. A command with one JSON result writes ``DIR/results.json``;
  runs (``simulate run``, ``train``, ``repro``, ``figures``, ``ledger``, ``tiny-models``) write
  their files there.
* ``--overwrite`` exists wherever ``--out`` does; without it a command refuses, before any work,
  to replace what a former run wrote (one guard, :func:`.grammar.refuse_overwrite`).
* ``--json`` prints the JSON result on stdout instead of the text. Every benchmark has both
  ``--out`` and ``--json``.
* One spelling per concept across commands (``--seed``, ``--budget``, ``--verifier``,
  ``--batch-size``, ``--repeats``, ``--num-prompts``, ``--max-new-tokens``, ...).

A family module lists its commands as declarative :class:`.grammar.Command` values in
``COMMANDS`` (top level) and ``BENCH`` (under ``exitlaw bench``); its handlers parse, call one
library function and print. Every library callable a handler calls is read from one table,
:mod:`.library` (``lib.run_decoding_bench(...)``), whose module loads on first use, so
``exitlaw --help`` stays fast (no torch, no JAX) and the engine's commands never pull in JAX. No
module outside this package imports argparse.
"""

from __future__ import annotations

import argparse
import sys
from importlib import import_module

from exitlaw import __version__

from .grammar import Group, add_commands

COMMAND_FAMILIES = [
    "exitlaw.cli.theory",  # law; bench law
    "exitlaw.cli.simulate",  # simulate run|exittrain|field-lab, check, prove; bench simulate|sim-verifiers
    "exitlaw.cli.train",  # train
    "exitlaw.cli.serve",  # serve, audit; bench serve
    "exitlaw.cli.engine",  # tiny-models, gpu-check; bench decoding|verifiers|batch
    "exitlaw.cli.bench_ddtree",  # bench ddtree
    "exitlaw.cli.repro",  # repro mini|all|full, figures, ledger
]
BENCH_ORDER = (
    "law",
    "simulate",
    "sim-verifiers",
    "verifiers",
    "decoding",
    "batch",
    "ddtree",
    "serve",
)


def check_bench_order(bench) -> None:
    """``ValueError`` unless :data:`BENCH_ORDER` lists every ``bench`` command the families define,
    each once (a command left out would otherwise vanish from the parser without a word)."""
    missing = sorted(set(bench) - set(BENCH_ORDER))
    unknown = sorted(set(BENCH_ORDER) - set(bench))
    if missing or unknown or len(set(BENCH_ORDER)) != len(BENCH_ORDER):
        raise ValueError(
            f"BENCH_ORDER (exitlaw/cli/__init__.py) must list each bench command once: "
            f"missing {missing}, unknown {unknown}, listed {list(BENCH_ORDER)}"
        )


def command_tree() -> list:
    """Every top-level entry (:class:`.grammar.Command` or :class:`.grammar.Group`), ``bench`` included."""
    families = [import_module(name) for name in COMMAND_FAMILIES]
    bench = {c.name: c for f in families for c in f.BENCH}
    check_bench_order(bench)
    entries = [c for f in families for c in f.COMMANDS]
    entries.append(
        Group(
            "bench",
            help="benchmarks: " + " ".join(BENCH_ORDER),
            description="Benchmarks print numbers and never assert; each writes "
            "--out DIR/results.json and prints JSON with --json.",
            commands=tuple(bench[n] for n in BENCH_ORDER),
        )
    )
    return entries


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="exitlaw",
        description="Exact exit laws, verifier conformance and tree speculative decoding. "
        "`--out DIR` names a folder (one JSON result: DIR/results.json), `--overwrite` replaces a "
        "former run's files, `--json` prints the result as JSON.",
    )
    parser.add_argument("--version", action="version", version=f"exitlaw {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    add_commands(sub, command_tree())
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except (ValueError, FileNotFoundError, FileExistsError) as err:
        print(f"exitlaw {args.command}: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
