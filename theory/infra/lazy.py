"""A package face's names that load their module on first access (PEP 562), written once.

A face re-exports its light names statically: ``from .module import *`` where it takes a module's
whole ``__all__`` (its ``__all__`` then splices ``*module.__all__``, the module bound by ``from .
import module``, or as ``_module`` from a deeper package), ``from .module import name`` where it
picks (its ``__all__`` lists the picked names, sorted: griffe renders on the API pages what
``__all__`` lists). A name whose module would load torch or JAX where a light import needs the face
(``exitlaw --help``, theory's numpy parts) is imported under ``TYPE_CHECKING`` (static tools follow
it), listed in ``__all__`` and named at runtime in one entry per module::

    __getattr__, __dir__ = lazy_attributes(__name__, {"decode.loop": "generate, DecodeConfig",
                                                      "decode.verifiers": "KINDS as VERIFIER_KINDS"})

(``module`` relative to the package: its names, ``attribute as name`` where the face renames one).
No import hook, no alias: each module keeps one dotted path.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from importlib import import_module


def lazy_table(lazy: Mapping[str, str]) -> dict[str, tuple[str, str]]:
    """``{name: (module, attribute)}`` from ``{module: "attribute, attribute as name, ..."}``."""
    table: dict[str, tuple[str, str]] = {}
    for module, names in lazy.items():
        for entry in names.split(","):
            attr, _, name = (w.strip() for w in entry.partition(" as "))
            if not attr.isidentifier() or (name and not name.isidentifier()):
                raise ValueError(f"{module}: {entry.strip()!r} is not `name` or `name as alias`")
            if (name or attr) in table:
                raise ValueError(f"{name or attr!r} is named twice")
            table[name or attr] = (module, attr)
    return table


def lazy_attributes(
    package: str, lazy: Mapping[str, str]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: a name listed under ``module`` loads
    ``package.module`` when it is first read; any other missing name is an AttributeError."""
    table = lazy_table(lazy)

    def __getattr__(name: str) -> object:
        if name in table:
            module, attr = table[name]
            return getattr(import_module(f".{module}", package), attr)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *table})

    return __getattr__, __dir__


__all__ = ["lazy_attributes", "lazy_table"]
