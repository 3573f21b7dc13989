"""The flat JSON form of a lab config, as config files, ``--list-presets`` and shipped results have
always written it (``{"vocab": 128, "drafter_noise": 1.0, "eagle_depth": 5}``).

The world's groups follow the one rule of :mod:`exitlaw.theory.infra.flat_fields` (a field made
with ``group(prefix, keys=...)``: :func:`.world.target_field`, :func:`.world.drafter_field`). The
simulator adds one kind of field: the one marked ``BUILDER_SETTINGS`` maps each builder with
settings to its settings dataclass (:mod:`exitlaw.simulate.builders.table`), and setting ``f`` of
builder ``b`` is written ``<b with - as _>_<f>`` (``eagle_depth``, ``caddtree_max_budget``), in
the field's place. Reading checks each value's type by the flat key the file holds
(:func:`exitlaw.simulate.builders.settings.check_value`).
"""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any

from exitlaw.simulate.builders.settings import check_value
from exitlaw.theory.infra import flat_fields

BUILDER_SETTINGS = "builder_settings"  # a config field's metadata: builder name -> its settings


def settings_prefix(builder: str) -> str:
    """The flat-key prefix of builder ``builder``'s settings: ``tsubame-rrs`` -> ``tsubame_rrs_``."""
    return builder.replace("-", "_") + "_"


def _settings_field(config: Any) -> str | None:
    return next((f.name for f in fields(config) if f.metadata.get(BUILDER_SETTINGS)), None)


def _nested_keys(config: Any) -> dict[str, tuple[str, str | None, Any, str]]:
    """Flat key -> ``(config field, builder or None, the group, its field)`` for every key that
    lands inside a group or a builder's settings."""
    out = {}
    for f in fields(config):
        value = getattr(config, f.name)
        if flat_fields.GROUP in f.metadata:
            for key, name in flat_fields.group_keys(f, type(value)).items():
                out[key] = (f.name, None, value, name)
        elif f.metadata.get(BUILDER_SETTINGS):
            for builder, settings in value.items():
                for g in fields(settings):
                    out[settings_prefix(builder) + g.name] = (f.name, builder, settings, g.name)
    return out


def to_flat(config: Any) -> dict[str, Any]:
    """The flat dict of ``config`` (tuples as lists), keys in field order, each group in place."""
    where = _settings_field(config)
    out: dict[str, Any] = {}
    for key, value in flat_fields.to_flat(config).items():
        if key != where:
            out[key] = value
            continue
        for builder, settings in getattr(config, where).items():
            prefix = settings_prefix(builder)
            out.update({prefix + k: v for k, v in flat_fields.to_flat(settings).items()})
    return out


def from_flat(base: Any, data: dict[str, Any]) -> Any:
    """``base`` (a config) with the flat keys in ``data`` put in their nested places; ``ValueError``
    naming the unknown keys (and listing the known ones) or the key of a value of the wrong type."""
    known = to_flat(base)
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise ValueError(f"unknown config keys {unknown}; known keys: {sorted(known)}")
    nested = _nested_keys(base)
    changes: dict[str, Any] = {}
    by_builder: dict[str, dict[str, Any]] = {}
    for key, value in data.items():
        if key not in nested:
            changes[key] = value
            continue
        _, builder, group, name = nested[key]
        check_value(key, next(g.type for g in fields(group) if g.name == name), value)
        if builder is None:
            changes[key] = value
        else:
            by_builder.setdefault(builder, {})[name] = value
    where = _settings_field(base)
    if by_builder:
        mine = getattr(base, where)
        changes[where] = {b: replace(s, **by_builder.get(b, {})) for b, s in mine.items()}
    return flat_fields.replace_flat(base, **changes)


__all__ = ["BUILDER_SETTINGS", "from_flat", "settings_prefix", "to_flat"]
