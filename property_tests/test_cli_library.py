"""The command line's one table of library callables (exitlaw/cli/library.py, docs/architecture.md §3).

Every handler reaches the library through ``lib.NAME``, loaded on first use; a renamed or removed
library function must fail here, not only when a user runs that command. (That building the parser
loads neither torch nor JAX is property_tests/test_architecture.py::test_cli_help_imports_neither_torch_nor_jax.)
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from exitlaw.cli import library
from exitlaw.theory.infra.lazy import lazy_table

CLI = Path(library.__file__).parent


def unresolved(package: str, lazy: dict[str, str]) -> list[str]:
    """What of a ``lazy_attributes`` table does not resolve: a module that does not import, or a
    name its module lacks (empty: every name is an object of its module)."""
    problems = []
    for name, (module, attr) in lazy_table(lazy).items():
        try:
            loaded = importlib.import_module(f"{package}.{module}")
        except ImportError as err:
            problems.append(f"{name}: {package}.{module} does not import ({err})")
            continue
        if not hasattr(loaded, attr):
            problems.append(f"{name}: {package}.{module} has no {attr!r}")
    return problems


def lib_reads(source: str) -> set[str]:
    """Every ``lib.NAME`` a module's source reads."""
    return {
        node.attr
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "lib"
    }


def type_checking_imports(source: str) -> dict[str, tuple[str, str]]:
    """``{name: (module, attribute)}`` of the imports under ``if TYPE_CHECKING:``."""
    out = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom), ast.dump(imp)
                for alias in imp.names:
                    out[alias.asname or alias.name] = (imp.module, alias.name)
    return out


def test_every_name_of_the_table_is_an_object_of_its_module():
    assert unresolved("exitlaw", library.LIBRARY) == []
    table = lazy_table(library.LIBRARY)
    for name, (module, attr) in table.items():
        want = getattr(importlib.import_module(f"exitlaw.{module}"), attr)
        assert getattr(library, name) is want, name


def test_a_planted_table_naming_a_missing_attribute_or_module_is_caught():
    bad = {"cli.grammar": "write_json, no_such_function", "cli.no_such_module": "anything"}
    problems = unresolved("exitlaw", bad)
    assert len(problems) == 2, problems
    assert "exitlaw.cli.grammar has no 'no_such_function'" in problems[0]
    assert "exitlaw.cli.no_such_module does not import" in problems[1]


def test_all_lists_the_table_s_names_and_the_static_block_imports_the_same():
    table = lazy_table(library.LIBRARY)
    assert sorted(library.__all__) == sorted(table)
    assert library.__all__ == sorted(library.__all__)
    static = type_checking_imports(Path(library.__file__).read_text(encoding="utf-8"))
    assert static == {name: (f"exitlaw.{m}", attr) for name, (m, attr) in table.items()}


def test_the_handlers_read_only_listed_names_and_every_listed_name_is_read():
    reads = {}
    for path in sorted(CLI.glob("*.py")):
        for name in lib_reads(path.read_text(encoding="utf-8")):
            reads.setdefault(name, path.name)
    table = set(lazy_table(library.LIBRARY))
    assert {n: f for n, f in reads.items() if n not in table} == {}, "read but not listed"
    assert sorted(table - set(reads)) == [], "listed but no handler reads it"
    assert "check_verifier" in reads  # the walk sees the family modules (not an empty glob)


def test_a_planted_read_of_an_unlisted_name_is_seen_and_refused():
    assert lib_reads("def f(args):\n    return lib.run_missing(args) + other.x\n") == {
        "run_missing"
    }
    with pytest.raises(
        AttributeError, match="'exitlaw.cli.library' has no attribute 'run_missing'"
    ):
        library.run_missing  # noqa: B018
