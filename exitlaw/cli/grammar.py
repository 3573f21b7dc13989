"""The command-line grammar, built from small declarative pieces, and its one output writer.

A command is a :class:`Command`: its name, its handler, a one-line help, a description and a
tuple of *pieces*. A piece is a function that adds arguments to a parser: :func:`opt` wraps one
``add_argument``; :mod:`.args` holds the shared groups (``--out`` with ``--overwrite``, ``--json``,
``--seed``, the model pair, the device). A :class:`Group` is a command with subcommands
(``exitlaw bench law``). Family modules list their commands; :func:`add_commands` registers them.

Output, the same in every command (the test property_tests/test_cli_grammar.py holds it):

* ``--out DIR`` names a folder; a command that writes one JSON result writes ``DIR/results.json``
  (:data:`RESULTS`), others write their named files there;
* ``--overwrite`` comes with every ``--out``: without it a command refuses, before any work,
  to replace a file it would write (:func:`refuse_overwrite`, the one guard);
* ``--json`` prints the JSON result on stdout instead of the text (notes go to stderr);
* JSON is written by :func:`write_json` only (through a temporary name and a rename).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

from exitlaw.theory.infra.atomic_io import atomic_write_text

Piece = Callable[[argparse.ArgumentParser], object]
RESULTS = "results.json"


def opt(*flags: str, **kwargs: Any) -> Piece:
    """One ``parser.add_argument(*flags, **kwargs)`` as a piece."""
    return lambda parser: parser.add_argument(*flags, **kwargs)


@dataclass(frozen=True)
class Command:
    """One command: ``exitlaw NAME`` (or ``exitlaw GROUP NAME``) runs ``func(args)``."""

    name: str
    func: Callable[[argparse.Namespace], int]
    help: str
    pieces: tuple[Piece, ...] = ()
    description: str | None = None


@dataclass(frozen=True)
class Group:
    """A command with subcommands; alone it prints its help and exits with status 2."""

    name: str
    help: str
    commands: tuple[Command | Group, ...]
    description: str | None = None


# An unknown flag whose setting lives in a config file: the command, the flags, where the setting is.
IN_A_CONFIG = {
    "simulate run": (
        (
            "--budget",
            "--vocab",
            "--horizon",
            "--temperature",
            "--order",
            "--zipf",
            "--jitter",
            "--drafter-mode",
            "--drafter-noise",
            "--drafter-temperature",
            "--oracle",
            "--prompt-length",
            "--target-seed",
            "--drafter-seed",
            "--store-rows",
        ),
        "is a field of the simulation config, not a flag: write it in a JSON CONFIG file "
        '(keys of SimConfig, simulate/lab/presets.py; e.g. {{"preset": "small", "{field}": ...}}) '
        "and run `exitlaw simulate run CONFIG`; `--list-presets` prints every field's value",
    )
}


class CommandParser(argparse.ArgumentParser):
    """A command's parser: an error is one line, ``exitlaw COMMAND: error: ...`` (exit status 2),
    an unknown flag is refused by the command itself, and one whose setting lives in a config file
    (:data:`IN_A_CONFIG`) says which file and field hold it."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")

    def parse_known_args(self, args=None, namespace=None):  # type: ignore[override]
        ns, extra = super().parse_known_args(args, namespace)
        if extra and not self._subparsers:  # a command (a group passes its command's extras on)
            self.error(f"unrecognized arguments: {' '.join(extra)}" + _config_hint(self, extra))
        return ns, extra


def _config_hint(parser: argparse.ArgumentParser, extra: list[str]) -> str:
    command = parser.prog.removeprefix("exitlaw ")
    flags, where = IN_A_CONFIG.get(command, ((), ""))
    known = [f for f in (e.split("=")[0] for e in extra) if f in flags]
    if not known:
        return ""
    return f"; {known[0]} " + where.format(field=known[0][2:].replace("-", "_"))


def add_commands(
    sub: argparse._SubParsersAction, entries: Iterable[Command | Group], path: str = ""
) -> None:
    """Register ``entries`` under ``sub``; ``args.command`` is the full path (``"bench law"``)."""
    sub._parser_class = CommandParser  # every command's parser (argparse takes it from the action)
    for entry in entries:
        name = f"{path}{entry.name}"
        parser = sub.add_parser(
            entry.name, help=entry.help, description=entry.description or entry.help
        )
        if isinstance(entry, Group):
            inner = parser.add_subparsers(dest=f"{entry.name}_command", metavar="COMMAND")
            add_commands(inner, entry.commands, f"{name} ")
            parser.set_defaults(func=_group_help(parser), command=name)
        else:
            for piece in entry.pieces:
                piece(parser)
            parser.set_defaults(func=entry.func, command=name)


def _group_help(parser: argparse.ArgumentParser) -> Callable[[argparse.Namespace], int]:
    def show(args: argparse.Namespace) -> int:
        parser.print_help()
        return 2

    return show


def pick(args: argparse.Namespace, *names: str, **renamed: str) -> dict[str, Any]:
    """The flags ``names`` as keyword arguments of the same names, and ``renamed`` as
    ``{keyword: flag}`` (``pick(args, "seed", family_alpha="alpha")``): a handler hands its flags to
    its one library call by name, once."""
    return {
        **{n: getattr(args, n) for n in names},
        **{k: getattr(args, f) for k, f in renamed.items()},
    }


def refuse_overwrite(paths: Iterable[str | Path], overwrite: bool) -> None:
    """The one guard: refuse to replace any of ``paths`` unless ``overwrite``."""
    for path in paths:
        if Path(path).exists() and not overwrite:
            raise FileExistsError(f"{path} exists; pass --overwrite to replace it")


def out_dir(args: argparse.Namespace) -> Path | None:
    """``--out`` as a folder (``None`` when not given); an existing file there is refused."""
    if not getattr(args, "out", None):
        return None
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} is a file, not a directory (--out names a folder)")
    return out


def out_files(args: argparse.Namespace, *names: str) -> list[Path] | None:
    """The files ``names`` in the ``--out`` folder, refused now (before any work) if one exists
    without ``--overwrite``; ``None`` without ``--out``."""
    out = out_dir(args)
    if out is None:
        return None
    paths = [out / n for n in names]
    refuse_overwrite(paths, args.overwrite)
    return paths


def result_path(args: argparse.Namespace, name: str = RESULTS) -> Path | None:
    """``--out/results.json`` (or ``name``), checked as :func:`out_files` does."""
    paths = out_files(args, name)
    return None if paths is None else paths[0]


def move_aside(path: Path | None) -> Path | None:
    """``--overwrite`` of a whole-run folder: a non-empty ``path`` is renamed ``NAME.old-<time>``
    (never deleted) so the run starts again; returns where it went (``None``: nothing to move)."""
    if path is None or not path.is_dir() or not any(path.iterdir()):
        return None
    aside = path.with_name(f"{path.name}.old-{time.strftime('%Y%m%d-%H%M%S')}")
    path.rename(aside)
    print(f"moved the previous run aside to {aside}", file=sys.stderr)
    return aside


def json_text(data: Any) -> str:
    """The JSON of a result as printed and written (numpy scalars as numbers)."""
    return json.dumps(data, indent=1, default=_plain)


def _plain(value: Any) -> Any:
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    return float(value)


def write_json(path: str | Path, data: Any) -> Path:
    """The one JSON writer: through a temporary name and a rename (a cut run leaves the old file
    or none, never half); says where on stderr."""
    atomic_write_text(path, json_text(data) + "\n")
    print(f"wrote {path}", file=sys.stderr)
    return Path(path)


def emit(args: argparse.Namespace, data: Any, text: str | None, path: Path | None) -> None:
    """Print ``data`` as JSON (``--json``) or ``text``, and write it to ``path`` (from
    :func:`result_path`) when ``--out`` was given."""
    if path is not None:
        write_json(path, data)
    if getattr(args, "json", False):
        print(json_text(data))
    elif text is not None:
        print(text)
