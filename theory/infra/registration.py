"""One slot per name in a table of callables, filled by a decorator where the callable is defined.

Every backend table (the engine's and the simulator's verifiers and builders, docs/architecture.md
§6) registers a function with :func:`register_once`: the first function for a name takes the slot;
the same function again (a reloaded module: same module and qualified name) replaces it; any other
function is refused, naming the one that holds the slot, so two modules can never claim one name
silently. A package whose modules register themselves loads every module of its folder with
:func:`import_every_module`, so a module added there needs no import line.
"""

from __future__ import annotations

import pkgutil
from collections.abc import Callable, Iterable, MutableMapping
from importlib import import_module
from typing import TypeVar

F = TypeVar("F", bound=Callable)


def register_once(table: MutableMapping[str, Callable], name: str, what: str) -> Callable[[F], F]:
    """A decorator storing the function it decorates as ``table[name]``; ``ValueError`` when the slot
    holds a different function (``what`` names the slot in the message, e.g. "engine verifier
    'tev' (batched form)")."""

    def register(fn: F) -> F:
        old = table.get(name)
        same = old is not None and (old.__module__, old.__qualname__) == (
            fn.__module__,
            fn.__qualname__,
        )
        if old is not None and not same:
            raise ValueError(
                f"{what} is already registered: {old.__module__}.{old.__qualname__} "
                f"(refused: {fn.__module__}.{fn.__qualname__})"
            )
        table[name] = fn
        return fn

    return register


def import_every_module(package: str, path: Iterable[str]) -> None:
    """Import every module of the package ``package`` (its ``__path__``): each registers its callables
    as it loads, so a module added to the folder is registered without an import line naming it."""
    for module in pkgutil.iter_modules(path):
        import_module(f"{package}.{module.name}")


__all__ = ["import_every_module", "register_once"]
