"""The engine's verifier names for the command line's ``choices``, read without importing torch.

The engine's verifiers register themselves with ``@engine_verifier(name)`` /
``@engine_verifier(name, batched=True)`` in the modules of ``engine/decode/verifiers/``
(docs/architecture.md §6). ``exitlaw --help`` must not load torch, so the names are read from those
decorators in the modules' source (``ast``), joined with any registered at run time once the table
is loaded (a verifier module imported from elsewhere); ``property_tests/test_registry.py`` checks
that the two readings agree.
"""

from __future__ import annotations

import ast
import sys
from importlib.util import find_spec
from pathlib import Path

from exitlaw.theory.registry import Names, verifier_names

TABLE = "exitlaw.engine.decode.verifiers.table"


def _package_dir() -> Path:
    spec = find_spec("exitlaw.engine")  # imports the light engine face only
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("exitlaw.engine is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "decode" / "verifiers"


def declared(batched: bool) -> set[str]:
    """Names the engine's verifier modules register in a form (single tree, or batched), from the
    ``@engine_verifier`` decorators in their source."""
    names = set()
    for path in sorted(_package_dir().glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for d in node.decorator_list:
                if not (
                    isinstance(d, ast.Call)
                    and isinstance(d.func, ast.Name)
                    and d.func.id == "engine_verifier"
                ):
                    continue
                is_batched = any(
                    k.arg == "batched" and isinstance(k.value, ast.Constant) and k.value.value
                    for k in d.keywords
                )
                if is_batched == batched and d.args and isinstance(d.args[0], ast.Constant):
                    names.add(d.args[0].value)
    return names


def engine_verifier_names(*, batched: bool = False, **facts) -> Names:
    """The engine's verifiers (``batched``: those with a batched form) in registry order, filtered by
    the registry's facts: the declared ones and, once the table is loaded, those registered since."""
    names = declared(batched)
    table = sys.modules.get(TABLE)
    if table is not None:
        names |= set(table.BATCHED if batched else table.SINGLE)
    return verifier_names(among=names, **facts)


__all__ = ["declared", "engine_verifier_names"]
