"""Long functions and stranded comments in the source (issue 47's "Done when": no function over 100
lines, at most 8 over 80; the comments the formatter left after closing brackets moved back).

A function's length is ``end_lineno - lineno + 1`` of its ``FunctionDef`` / ``AsyncFunctionDef`` node
(decorators not counted, docstring and nested functions counted). A comment is *stranded* when the only
code before it on its line is closing brackets (and commas / colons): ``)  # comment`` after a
multi-line call, where it explains none of the line it sits on (tool directives such as
``# fmt: skip`` are not counted).

Run ``python -m property_tests.helpers.function_lengths`` from the repository root; ``--over N`` lists
the functions longer than N lines (default 80), ``--stranded`` lists the stranded comments. It reports
and exits 0: it is a measuring tool, not a test.
"""

from __future__ import annotations

import argparse
import ast
import io
import tokenize
from pathlib import Path

# the source the issue counts over (tests excluded)
SOURCE_DIRS = ("theory", "simulate", "engine", "figures", "paper_repro", "exitlaw")
CLOSERS = {")", "]", "}", ",", ":"}
# directives to a tool, not explanations: they belong where the tool reads them
PRAGMAS = ("# fmt:", "# noqa", "# type:", "# pragma")


def source_files(root: Path) -> list[Path]:
    """Every ``.py`` file under the source directories, sorted."""
    return sorted(p for d in SOURCE_DIRS for p in (root / d).rglob("*.py") if p.is_file())


def function_lengths(path: Path) -> list[tuple[int, str, int]]:
    """(length, qualified name, first line) of every function and method in one file."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found: list[tuple[int, str, int]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            name = prefix
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = f"{prefix}{child.name}"
                found.append((child.end_lineno - child.lineno + 1, name, child.lineno))
                name += "."
            elif isinstance(child, ast.ClassDef):
                name = f"{prefix}{child.name}."
            visit(child, name)

    visit(tree, "")
    return found


def stranded_comments(path: Path) -> list[tuple[int, str]]:
    """(line, text) of each comment whose line holds only closing brackets before it."""
    found = []
    code_on_line: dict[int, list[str]] = {}
    for tok in tokenize.generate_tokens(io.StringIO(path.read_text()).readline):
        row = tok.start[0]
        if tok.type == tokenize.COMMENT:
            if tok.string.startswith(PRAGMAS):
                continue
            before = code_on_line.get(row, [])
            if before and all(t in CLOSERS for t in before) and any(t in ")]}" for t in before):
                found.append((row, tok.string))
        elif tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
            code_on_line.setdefault(row, []).append(tok.string)
    return found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=Path("."), help="repository root")
    parser.add_argument("--over", type=int, default=80, help="list functions longer than this")
    parser.add_argument("--stranded", action="store_true", help="list the stranded comments")
    args = parser.parse_args(argv)
    files = source_files(args.root)
    if not files:
        parser.error(f"no source files under {args.root.resolve()} (run from the repository root)")
    rows = [
        (n, f"{p.relative_to(args.root)}:{line} {name}")
        for p in files
        for n, name, line in function_lengths(p)
    ]
    long_rows = sorted((r for r in rows if r[0] > args.over), reverse=True)
    for n, where in long_rows:
        print(f"{n:5d}  {where}")
    stranded = [(p, line, text) for p in files for line, text in stranded_comments(p)]
    if args.stranded:
        for p, line, text in stranded:
            print(f"stranded  {p.relative_to(args.root)}:{line}  {text}")
    print(
        f"{len(files)} files, {len(rows)} functions: {sum(n > 100 for n, _ in rows)} over 100 lines, "
        f"{sum(n > 80 for n, _ in rows)} over 80; {len(stranded)} stranded comments"
    )


if __name__ == "__main__":
    main()
