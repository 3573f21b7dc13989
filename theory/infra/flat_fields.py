"""A config that nests dataclasses, written and read as the flat JSON object it always was (standard
library only).

One rule maps a flat key to its nested place. A config field made with :func:`group` holds a
dataclass whose field ``f`` is written ``prefix + f`` (``group("distill_")``: ``distill.steps`` is
``distill_steps``), unless the group's ``keys`` name another key for it (``keys={"batch":
"batch_size"}``). Any other field is written under its own name; a dataclass value that is not a
group is written as its own flat object (``"target": {...}``), tuples as lists. Reading maps the keys
back the same way, refuses a key no field owns, and gives an absent key its field's default.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import MISSING, fields, is_dataclass, replace
from typing import Any

GROUP = "flat_group"  # a config field's metadata: the flat-key prefix of the group it holds
KEYS = "flat_keys"  # a config field's metadata: group field name -> its flat key, where not prefix + name


def group(prefix: str, *, default: Any = MISSING, keys: dict[str, str] | None = None) -> Any:
    """A config field holding a group (a frozen dataclass) written flat under ``prefix``."""
    return dataclasses.field(default=default, metadata={GROUP: prefix, KEYS: dict(keys or {})})


def _is_group(f: dataclasses.Field) -> bool:
    return GROUP in f.metadata


def group_keys(f: dataclasses.Field, group_type: Any) -> dict[str, str]:
    """Flat key -> group field name, for the config field ``f`` holding a ``group_type``."""
    rename = f.metadata[KEYS]
    return {rename.get(g.name, f.metadata[GROUP] + g.name): g.name for g in fields(group_type)}


def _plain(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        return to_flat(value)
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def to_flat(config: Any) -> dict[str, Any]:
    """The flat JSON object of ``config``: keys in field order, each group's keys in its place."""
    out: dict[str, Any] = {}
    for f in fields(config):
        value = getattr(config, f.name)
        if _is_group(f):
            out.update({k: _plain(getattr(value, n)) for k, n in group_keys(f, value).items()})
        else:
            out[f.name] = _plain(value)
    return out


def _default(f: dataclasses.Field) -> Any:
    if f.default is not MISSING:
        return f.default
    if f.default_factory is not MISSING:
        return f.default_factory()
    return MISSING


_UnionType = type(int | None)


def _typed(hint: Any, value: Any, what: str) -> Any:
    """``value`` read back as ``hint`` says: a list as a tuple, an object as its dataclass."""
    if is_dataclass(hint) and isinstance(value, dict):
        return from_flat(hint, value, what=what)
    options = typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, _UnionType) else ()
    if isinstance(value, list) and (
        typing.get_origin(hint) is tuple or any(typing.get_origin(o) is tuple for o in options)
    ):
        return tuple(value)
    return value


def flat_keys(cls: Any) -> list[str]:
    """Every flat key a ``cls`` config owns."""
    hints = typing.get_type_hints(cls)
    keys: list[str] = []
    for f in fields(cls):
        keys += list(group_keys(f, hints[f.name])) if _is_group(f) else [f.name]
    twice = sorted({k for k in keys if keys.count(k) > 1})
    if twice:
        raise ValueError(f"{cls.__name__}: flat keys {twice} name two fields")
    return keys


def from_flat(cls: Any, data: dict[str, Any], *, what: str | None = None) -> Any:
    """The ``cls`` config written as ``data``; ``ValueError`` naming the keys no field owns."""
    what = what or cls.__name__
    if not isinstance(data, dict):
        raise ValueError(f"{what} must be a JSON object, got {type(data).__name__}")
    unknown = sorted(set(data) - set(flat_keys(cls)))
    if unknown:
        raise ValueError(f"{what}: unknown keys {unknown}; known keys: {sorted(flat_keys(cls))}")
    hints = typing.get_type_hints(cls)
    given: dict[str, Any] = {}
    for f in fields(cls):
        if not _is_group(f):
            if f.name in data:
                given[f.name] = _typed(hints[f.name], data[f.name], f"{what}.{f.name}")
            continue
        kind = hints[f.name]
        ghints = typing.get_type_hints(kind)
        mine = {n: data[k] for k, n in group_keys(f, kind).items() if k in data}
        mine = {n: _typed(ghints[n], v, f"{what}.{f.name}.{n}") for n, v in mine.items()}
        base = _default(f)
        if mine:
            given[f.name] = replace(base, **mine) if base is not MISSING else kind(**mine)
    return cls(**given)


def replace_flat(config: Any, **changes: Any) -> Any:
    """``config`` with ``changes`` made, each named by its field (a whole group included) or its flat
    key (``distill_steps=6``); ``ValueError`` naming a name that is neither."""
    by_key = {}
    for f in fields(config):
        if _is_group(f):
            by_key.update(
                {k: (f.name, n) for k, n in group_keys(f, getattr(config, f.name)).items()}
            )
    names = {f.name for f in fields(config)}
    top = {k: v for k, v in changes.items() if k in names}
    unknown = sorted(k for k in changes if k not in names and k not in by_key)
    if unknown:
        raise ValueError(
            f"{type(config).__name__}: unknown fields {unknown}; known: {sorted(names | set(by_key))}"
        )
    inner: dict[str, dict[str, Any]] = {}
    for key, value in changes.items():
        if key not in names:
            where, name = by_key[key]
            inner.setdefault(where, {})[name] = value
    for where, values in inner.items():
        top[where] = replace(top.get(where, getattr(config, where)), **values)
    return replace(config, **top)


__all__ = [
    "GROUP",
    "KEYS",
    "flat_keys",
    "from_flat",
    "group",
    "group_keys",
    "replace_flat",
    "to_flat",
]
