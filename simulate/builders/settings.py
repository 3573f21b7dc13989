"""Typed fields: a builder's settings (and the lab's configs, which read the same JSON) checked by
their declared types.

A builder's settings are one frozen dataclass in the builder's module, registered with its maker
(``@sim_builder(name, settings=...)``, :mod:`.table`); its ``__post_init__`` calls
:func:`check_fields`, so a JSON ``"5"`` where an integer belongs is refused by name, not coerced
(docs/architecture.md §6).
"""

from __future__ import annotations

import math
from dataclasses import fields
from typing import Any, Callable


def _kind(declared: Any) -> str:
    """A field's declared type as text (``"int"``, ``"tuple[int, ...]"``), string or not."""
    return declared.__name__ if isinstance(declared, type) else str(declared)


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# a declared type (its text's start) -> (does a value fit, what the message says it must be)
_RULES: tuple[tuple[str, Callable[[Any], bool], str], ...] = (
    ("int", _integer, "an integer"),
    ("float", _finite, "a finite number"),
    ("str", lambda v: isinstance(v, str), "a string"),
    ("bool", lambda v: isinstance(v, bool), "true or false"),
    (
        "tuple[str",
        lambda v: isinstance(v, (list, tuple)) and all(isinstance(x, str) for x in v),
        "a list of names",
    ),
    (
        "tuple[int",
        lambda v: isinstance(v, (list, tuple)) and all(_integer(x) for x in v),
        "a list of integers",
    ),
    ("dict", lambda v: isinstance(v, dict), "a JSON object"),
)


def check_value(key: str, declared: Any, value: Any, what: str = "config field") -> None:
    """``ValueError`` ``"{what} 'key' must be an integer, got '5'"`` when ``value`` does not have the
    declared type (``int``, ``float``: finite, ``str``, ``bool``, ``tuple[int, ...]``,
    ``tuple[str, ...]``: a list or tuple, ``dict``); other types are not checked here."""
    kind = _kind(declared)
    for start, fits, must in _RULES:
        exact = kind == start or (start.startswith(("tuple", "dict")) and kind.startswith(start))
        if exact and not fits(value):
            raise ValueError(f"{what} {key!r} must be {must}, got {value!r}")


def check_fields(
    obj: Any, what: str = "config field", key: Callable[[str], str] = lambda name: name
) -> None:
    """:func:`check_value` on every field of the dataclass ``obj`` (``key`` names a field in the
    message: the flat JSON key a user wrote)."""
    for f in fields(obj):
        check_value(key(f.name), f.type, getattr(obj, f.name), what)


def check_positive(obj: Any, what: str) -> None:
    """Every integer field of ``obj`` (and every entry of an integer tuple) is ``>= 1``."""
    for f in fields(obj):
        value = getattr(obj, f.name)
        values = value if isinstance(value, tuple) else (value,)
        if _kind(f.type) in ("int", "tuple[int, ...]") and any(v < 1 for v in values):
            raise ValueError(f"{what} {f.name!r} must be >= 1, got {value!r}")


__all__ = ["check_fields", "check_positive", "check_value"]
