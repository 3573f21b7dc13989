"""The flat JSON form of a lab config that nests dataclasses: one key per leaf, as config files,
``--list-presets`` and shipped results have always written them (``{"vocab": 128, "eagle_depth": 5}``).

One rule maps a flat key to its nested place. A config's own field is its name. A nested group
(the synthetic target, the drafters: :mod:`.world`) writes its field ``f`` as ``FLAT_PREFIX + f``
(the group class's prefix: ``""`` for the target, ``"drafter_"`` for the drafters), unless the
field's metadata names its key (``KEY``: the target's ``seed`` is ``target_seed``, beside the run's
own ``seed``). The field marked ``BUILDER_SETTINGS`` maps each builder with settings to its settings
(:mod:`exitlaw.simulate.builders.table`); setting ``f`` of builder ``b`` is written
``<b with - as _>_<f>`` (``eagle_depth``, ``caddtree_max_budget``).
"""

from __future__ import annotations

from dataclasses import fields, is_dataclass, replace
from typing import Any

from exitlaw.simulate.builders.settings import check_value

KEY = "flat_key"  # a group field's metadata: its flat key when that is not prefix + name
BUILDER_SETTINGS = "builder_settings"  # a config field's metadata: builder name -> its settings


def settings_prefix(builder: str) -> str:
    """The flat-key prefix of builder ``builder``'s settings: ``tsubame-rrs`` -> ``tsubame_rrs_``."""
    return builder.replace("-", "_") + "_"


def leaf_keys(group: Any, prefix: str) -> dict[str, str]:
    """Flat key -> field name, for the fields of the dataclass ``group`` (a class or an instance)."""
    return {f.metadata.get(KEY, prefix + f.name): f.name for f in fields(group)}


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def leaves(group: Any, prefix: str | None = None) -> dict[str, Any]:
    """The flat keys and values of one nested group (``prefix``: the group class's own by default)."""
    prefix = type(group).FLAT_PREFIX if prefix is None else prefix
    return {k: _plain(getattr(group, n)) for k, n in leaf_keys(group, prefix).items()}


def _groups(config: Any):
    """``(field, builder, value, prefix)`` for each field of ``config``: ``prefix`` is None for a
    leaf, the group's prefix for a nested group; a builder-settings mapping yields one entry per
    builder (``builder``: its name; None elsewhere)."""
    for f in fields(config):
        value = getattr(config, f.name)
        if f.metadata.get(BUILDER_SETTINGS):
            for builder, settings in value.items():
                yield f, builder, settings, settings_prefix(builder)
        elif is_dataclass(value):
            yield f, None, value, type(value).FLAT_PREFIX
        else:
            yield f, None, value, None


def to_flat(config: Any) -> dict[str, Any]:
    """The flat dict of ``config`` (tuples as lists), keys in field order, each group in place."""
    out: dict[str, Any] = {}
    for f, _, value, prefix in _groups(config):
        if prefix is None:
            out[f.name] = _plain(value)
        else:
            out.update(leaves(value, prefix))
    return out


def _group_from(group: Any, prefix: str, data: dict[str, Any]) -> Any:
    """``group`` with the flat keys of ``data`` that belong to it replaced (types checked by key)."""
    given = {}
    types = {f.name: f.type for f in fields(group)}
    for key, name in leaf_keys(group, prefix).items():
        if key in data:
            check_value(key, types[name], data[key])
            given[name] = data[key]
    return replace(group, **given) if given else group


def from_flat(base: Any, data: dict[str, Any]) -> Any:
    """``base`` (a config) with the flat keys in ``data`` put in their nested places; ``ValueError``
    naming the unknown keys (and listing the known ones) or the key of a value of the wrong type."""
    known = to_flat(base)
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise ValueError(f"unknown config keys {unknown}; known keys: {sorted(known)}")
    top: dict[str, Any] = {}
    for f, builder, value, prefix in _groups(base):
        if prefix is None:
            if f.name in data:
                top[f.name] = data[f.name]
        elif builder is not None:
            top.setdefault(f.name, {})[builder] = _group_from(value, prefix, data)
        else:
            top[f.name] = _group_from(value, prefix, data)
    return replace(base, **top)


__all__ = [
    "BUILDER_SETTINGS",
    "KEY",
    "from_flat",
    "leaf_keys",
    "leaves",
    "settings_prefix",
    "to_flat",
]
