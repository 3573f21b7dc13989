"""The ``exitlaw`` command line: one module per command family, argument helpers in :mod:`.args`.

A family module exposes ``register(subparsers)``; its handlers parse, call one
library function and print. Heavy libraries (JAX, torch) are imported inside
the handlers, so ``exitlaw --help`` stays fast and the engine's commands never
pull in JAX. No module outside this package imports argparse.
"""

from __future__ import annotations

import argparse
import sys
from importlib import import_module

from exitlaw import __version__

COMMAND_FAMILIES = [
    "exitlaw.cli.theory",     # law, law-bench
    "exitlaw.cli.simulate",   # simulate, simulate-exittrain, simulate-bench, check, verifier-sim-bench
    "exitlaw.cli.engine",     # bench, tiny-models, verifier-bench, gpu-check
    "exitlaw.cli.train",      # train
    "exitlaw.cli.repro",      # repro mini|all|full, figures, ledger
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="exitlaw",
        description="Exact exit laws, verifier conformance and tree speculative decoding.",
    )
    parser.add_argument("--version", action="version", version=f"exitlaw {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_FAMILIES:
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
