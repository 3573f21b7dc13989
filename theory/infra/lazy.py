"""A package face's names that load their module on first access (PEP 562), written once.

A face re-exports its light names statically; a name whose module would load torch or JAX where a
light import needs the face (``exitlaw --help``, theory's numpy parts) sits in a ``_LAZY`` table
``name -> (module relative to the package, attribute)``, imported under ``TYPE_CHECKING`` too so
static tools can follow it, and the face sets ``__getattr__, __dir__ = lazy_attributes(__name__,
_LAZY)``. No import hook, no alias: each module keeps one dotted path.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from importlib import import_module


def lazy_attributes(
    package: str, table: Mapping[str, tuple[str, str]]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: ``table[name] = (module, attribute)`` loads
    ``package.module`` when ``name`` is first read; any other missing name is an AttributeError."""

    def __getattr__(name: str) -> object:
        if name in table:
            module, attr = table[name]
            return getattr(import_module(f".{module}", package), attr)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *table})

    return __getattr__, __dir__


__all__ = ["lazy_attributes"]
