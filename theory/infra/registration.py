"""One slot per name in a table of callables, filled by a decorator where the callable is defined.

Every backend table (the engine's and the simulator's verifiers and builders, docs/architecture.md
§6) registers a function with :func:`register_once`: the first function for a name takes the slot;
the same function again (a reloaded module: same module and qualified name) replaces it; any other
function is refused, naming the one that holds the slot, so two modules can never claim one name
silently.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
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


__all__ = ["register_once"]
