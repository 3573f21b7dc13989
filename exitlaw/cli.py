"""The ``exitlaw`` command line: each part registers its own subcommands.

A command module exposes ``register(subparsers)``; it must import heavy
libraries (JAX, torch) inside its handlers so ``exitlaw --help`` stays fast and
the engine's commands never pull in JAX.
"""

from __future__ import annotations

import argparse
import sys
from importlib import import_module

from . import __version__

COMMAND_MODULES = [
    "exitlaw.theory.commands",
    "exitlaw.simulate.simulate_command",
    "exitlaw.simulate.check_command",
    "exitlaw.engine.bench_commands",
    "exitlaw.engine.verifier_bench_command",
    "exitlaw.engine.train_command",
    "exitlaw.paper_repro.commands",
    "exitlaw.figures.commands",
    "exitlaw.paper_repro.ledger_command",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="exitlaw",
        description="Exact exit laws, verifier conformance and tree speculative decoding.",
    )
    parser.add_argument("--version", action="version", version=f"exitlaw {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
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
