"""Imports inside functions in the source (issue 47's "Done when": at most 60, each with its reason).

An import runs inside a function when it sits anywhere under a ``def`` (a method, a nested function).
Such an import is allowed only where a heavy optional dependency or the command line's lazy loading
needs it, and it says why on its first line, in a comment that starts ``# lazy:``::

    import torch  # lazy: torch stays out of `exitlaw --help`

(a parenthesised ``from x import (`` carries the comment after its bracket). Run
``python -m property_tests.helpers.function_imports`` from the repository root: it prints the count
per part and every import that lacks a reason (``--all`` lists every one). It reports and exits 0:
``property_tests/test_architecture.py`` holds the limits.
"""

from __future__ import annotations

import argparse
import ast
import io
import tokenize
from dataclasses import dataclass
from pathlib import Path

from .function_lengths import source_files

REASON = "# lazy:"
LIMIT = 60


@dataclass(frozen=True)
class FunctionImport:
    """One import statement inside a function: where, what, and the reason its line gives."""

    path: Path
    line: int
    module: str
    reason: str | None


def _comments(text: str) -> dict[int, str]:
    """Line -> the comment on it."""
    out = {}
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT:
            out[tok.start[0]] = tok.string
    return out


def function_imports(path: Path) -> list[FunctionImport]:
    """Every import statement under a ``def`` in one file, with the ``# lazy:`` reason of its first line."""
    text = path.read_text(encoding="utf-8")
    comments = _comments(text)
    found: list[FunctionImport] = []

    def visit(node: ast.AST, inside: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)) and inside:
                if isinstance(child, ast.ImportFrom):
                    module = "." * child.level + (child.module or "")
                else:
                    module = ", ".join(a.name for a in child.names)
                comment = comments.get(child.lineno, "")
                reason = comment[len(REASON) :].strip() if comment.startswith(REASON) else None
                found.append(FunctionImport(path, child.lineno, module, reason or None))
            visit(child, inside or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)))

    visit(ast.parse(text, filename=str(path)), False)
    return found


def all_function_imports(root: Path) -> list[FunctionImport]:
    """Every import inside a function in the source under ``root``."""
    return [imp for path in source_files(root) for imp in function_imports(path)]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=Path("."), help="repository root")
    parser.add_argument("--all", action="store_true", help="list every import inside a function")
    args = parser.parse_args(argv)
    found = all_function_imports(args.root)
    per_part: dict[str, int] = {}
    for imp in found:
        part = imp.path.relative_to(args.root).parts[0]
        per_part[part] = per_part.get(part, 0) + 1
    for imp in found:
        if args.all or imp.reason is None:
            why = imp.reason or "NO REASON"
            print(f"{imp.path.relative_to(args.root)}:{imp.line}  {imp.module}  ({why})")
    missing = sum(imp.reason is None for imp in found)
    print(
        f"{len(found)} imports inside functions (limit {LIMIT}), {missing} without a reason; {per_part}"
    )


if __name__ == "__main__":
    main()
