"""Simulation configs (a dataclass, flat JSON on disk) and named presets.

A config fixes one synthetic world (:mod:`.world`): a target (``cfg.target``) and the mismatch
of its drafters (``cfg.drafter``), one position-wise drafter (used by ``ddtree``, ``chain``,
``static``, ``caddtree``, ``tsubame``, and as DARTree's proposal) and one autoregressive drafter
(used by ``eagle``, ``opt-tree`` and DARTree's correction: ``simulate.opt_tree``,
``simulate.dartree``); the builders to compare and each builder's own settings (the dataclass
its module registers with its maker: ``cfg.builder_settings("eagle").depth``); the verifier (by
name: ``tev``, ``predraw``, ``residual``, ``greedy`` from ``exitlaw.simulate.verifiers``, or
``tev-fast``, the vectorised twin ``verifiers.fast.tev_many`` with one sample, for large V), the
number of rounds and the latency model. On disk the keys are flat (:mod:`.flat`:
``{"vocab": 128, "drafter_noise": 1.0, "eagle_depth": 5}``).
``chain`` always drafts ``horizon`` tokens (DFlash's default); ``caddtree``
picks its budget per round in ``[1, caddtree_max_budget]``; every other
builder uses ``budget``.

Row labels (:func:`row_label`): ``tsubame`` is Tsubame's two-pass tree
*verified by the config's verifier* (TEV by default), labelled e.g.
``tsubame+tev``; ``tsubame-rrs`` is Tsubame's tree under its own sampled-draft
rule, and ``tsubame-univer`` the same re-sampled tree under UniVer
(``verifiers.univer``). Latency per builder (:meth:`SimConfig.builder_latency`): a DFlash-style
drafter (position-wise rows) costs one drafter call per round; EAGLE-2's
dynamic expansion calls its autoregressive drafter once per tree depth level,
``eagle_depth`` sequential calls, so its round costs
``eagle_depth * C_draft + C_verify(n)``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from exitlaw.simulate.builders.caddtree import CaDDTreeSettings, LatencyModel
from exitlaw.simulate.builders.settings import check_fields
from exitlaw.simulate.builders.table import SIM_SETTINGS, BuildFn, sim_builder_names
from exitlaw.simulate.builders.table import drafter_calls as builder_drafter_calls
from exitlaw.simulate.builders.table import make_builder as _make_builder
from exitlaw.simulate.builders.table import max_nodes as builder_max_nodes
from exitlaw.simulate.builders.trees import EagleSettings, StaticSettings
from exitlaw.simulate.lab.flat import BUILDER_SETTINGS, from_flat, to_flat
from exitlaw.simulate.lab.models import AutoregressiveDrafter, NGramTarget, PositionWiseDrafter
from exitlaw.simulate.lab.world import (
    SyntheticDrafter,
    SyntheticTarget,
    drafter_field,
    target_field,
)
from exitlaw.simulate.verifiers.table import implemented, sim_function
from exitlaw.theory import registry
from exitlaw.theory.infra.json_read import read_json_file

BUILDERS = sim_builder_names()
# builders whose rounds are verified by a sampled-draft rule instead of the config's verifier:
# Tsubame's own scheme, its re-sampled tree verified by recursive rejection without replacement,
# and the same re-sampled tree verified by UniVer (builder -> its registered sampled-draft verifier)
SAMPLED_DRAFT_RULES = {
    b.name: b.sampled_draft_rule for b in registry.BUILDERS if b.sampled_draft_rule is not None
}
VERIFIERS = implemented(registry.SIMULATOR, kind=registry.FIXED_TREE)


@dataclass(frozen=True)
class SimConfig:
    name: str = "custom"
    target: SyntheticTarget = target_field()
    drafter: SyntheticDrafter = drafter_field()
    horizon: int = 8
    # builders: the rows to compare, and each builder's own settings (builder name -> its settings
    # dataclass, registered with its maker; a builder left out gets its settings' defaults)
    budget: int = 16
    builders: tuple[str, ...] = ("ddtree", "chain", "oracle")
    settings: dict[str, Any] = field(default_factory=dict, metadata={BUILDER_SETTINGS: True})
    # decoding
    verifier: str = "tev"
    rounds: int = 200
    seed: int = 0
    prompt_length: int = 4
    oracle: bool = True
    store_rows: bool = False
    latency: dict[str, Any] = field(default_factory=lambda: asdict(LatencyModel()))

    def __post_init__(self) -> None:
        check_fields(self)  # a JSON "budget": "16" is refused by name, not coerced
        self._check_world()
        object.__setattr__(self, "builders", tuple(self.builders))
        object.__setattr__(self, "settings", _all_settings(self.settings))
        bad = [b for b in self.builders if b not in BUILDERS]
        if bad or not self.builders:
            raise ValueError(
                f"unknown builders {bad} (known: {', '.join(BUILDERS)})"
                if bad
                else "builders is empty"
            )
        if self.verifier not in VERIFIERS:
            raise ValueError(f"unknown verifier {self.verifier!r} (known: {', '.join(VERIFIERS)})")
        if registry.verifier(self.verifier).greedy_only and self.target.temperature != 0:
            raise ValueError(
                f"the {self.verifier} verifier is exact only for a T=0 target; set temperature to 0"
            )
        for name in ("horizon", "rounds", "budget"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        self.latency_model()  # validates
        check_work_bounds(self)

    def _check_world(self) -> None:
        for name, kind in (("target", SyntheticTarget), ("drafter", SyntheticDrafter)):
            if not isinstance(getattr(self, name), kind):
                raise ValueError(
                    f"config field {name!r} must be a {kind.__name__}, got {getattr(self, name)!r}"
                )

    def builder_settings(self, name: str) -> Any:
        """The settings of builder ``name`` (its registered dataclass: ``EagleSettings`` for
        ``eagle``); ``ValueError`` for a builder that has none."""
        if name not in self.settings:
            raise ValueError(
                f"builder {name!r} has no settings (builders with settings: {', '.join(self.settings)})"
            )
        return self.settings[name]

    def latency_model(self) -> LatencyModel:
        try:
            return LatencyModel(**self.latency)
        except TypeError as err:
            raise ValueError(f"bad latency config {self.latency}: {err}") from None

    def drafter_calls(self, name: str) -> int:
        """Sequential drafter calls per round of builder ``name``, as the builder declared them with its
        maker (EAGLE-2: one per depth level; OPT-Tree: one per layer; DARTree: two passes; else one)."""
        if name not in BUILDERS:
            raise ValueError(f"unknown builder {name!r} (known: {', '.join(BUILDERS)})")
        return builder_drafter_calls(name, self)

    def builder_latency(self, name: str) -> LatencyModel:
        """The latency model that charges builder ``name``'s rounds: ``C_draft`` times its drafter calls."""
        lat = self.latency_model()
        return replace(lat, draft=lat.draft * self.drafter_calls(name))

    def to_dict(self) -> dict[str, Any]:
        """The flat JSON form (:mod:`.flat`): ``{"vocab": 64, ..., "eagle_depth": 6, ...}``."""
        return to_flat(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "SimConfig":
        """The config of the flat keys in ``data`` over the defaults (:mod:`.flat`)."""
        return from_flat(cls(), data)

    @classmethod
    def from_file(cls, path: str | Path) -> "SimConfig":
        data = read_json_file(path, "config file")
        preset = data.pop("preset", None)
        if preset is not None and not isinstance(preset, str):
            raise ValueError(f"{path}: preset must be a name, got {preset!r}")
        base = get_preset(preset).to_dict() if preset else {}
        return cls.from_dict({**base, **data})

    def make_builder(
        self, name: str, target: NGramTarget, pos: PositionWiseDrafter, ar: AutoregressiveDrafter
    ) -> BuildFn:
        """``(context, draft_rng) -> Built`` for builder ``name`` (the table in
        :mod:`exitlaw.simulate.builders.table`; ``ValueError`` for an unregistered name)."""
        return _make_builder(name, self, target, pos, ar)


def _all_settings(given: Any) -> dict[str, Any]:
    """Every builder's settings, in registry order: ``given``'s, the defaults for the rest."""
    if not isinstance(given, dict):
        raise ValueError(
            f"config field 'settings' must map builder names to settings, got {given!r}"
        )
    unknown = sorted(set(given) - set(SIM_SETTINGS))
    if unknown:
        raise ValueError(
            f"settings for {unknown}: no such builder has settings "
            f"(builders with settings: {', '.join(SIM_SETTINGS)})"
        )
    out = {}
    for name in sim_builder_names():
        if name in SIM_SETTINGS:
            kind = SIM_SETTINGS[name]
            out[name] = given.get(name, kind())
            if not isinstance(out[name], kind):
                raise ValueError(
                    f"settings of builder {name!r} must be of type {kind.__name__}, got {out[name]!r}"
                )
    return out


# Work bounds. A round of the exact simulation builds and verifies trees over rows of
# ``vocab`` floats: the drafter's ``horizon`` rows, the verifier's ``nodes`` target rows, the
# oracle's ``budget`` rows. These caps refuse configs that cannot finish on one machine.
MAX_HORIZON = 512
MAX_ROUNDS = 1_000_000
MAX_ROW_FLOATS = 1 << 28  # one round's rows: 2 GiB of float64
MAX_TOTAL_ROW_FLOATS = 1 << 40  # rows over the whole run: hours of work at ~1e8 floats/s


class WorkBoundError(ValueError):
    """A config whose size cannot finish; the message gives the estimate and the field to lower."""


def estimated_work(cfg: "SimConfig") -> dict[str, float]:
    """Per-round and whole-run float counts of the rows a config touches, and the memory of one round."""
    nodes = max(cfg.budget, cfg.horizon, *(builder_max_nodes(b, cfg) for b in cfg.builders)) + 1
    per_round = (
        cfg.horizon + nodes + (nodes if cfg.oracle or "oracle" in cfg.builders else 0)
    ) * cfg.target.vocab
    total = per_round * cfg.rounds * len(cfg.builders)
    return {
        "floats_per_round": float(per_round),
        "bytes_per_round": 8.0 * per_round,
        "floats_total": float(total),
        "seconds_at_1e8_floats_per_s": total / 1e8,
    }


def check_work_bounds(cfg: "SimConfig") -> None:
    """Refuse sizes that cannot finish (:class:`WorkBoundError` with the estimate)."""
    if cfg.horizon > MAX_HORIZON:
        raise WorkBoundError(
            f"horizon {cfg.horizon} exceeds {MAX_HORIZON}: every round drafts and verifies "
            f"a tree this deep; lower horizon"
        )
    if cfg.rounds > MAX_ROUNDS:
        raise WorkBoundError(f"rounds {cfg.rounds} exceeds {MAX_ROUNDS}; split the run over seeds")
    work = estimated_work(cfg)
    if work["floats_per_round"] > MAX_ROW_FLOATS:
        raise WorkBoundError(
            f"one round touches about {work['bytes_per_round'] / 2**30:.1f} GiB of rows "
            f"(vocab {cfg.target.vocab} x nodes, budget {cfg.budget}, horizon {cfg.horizon}); "
            f"the limit is {8 * MAX_ROW_FLOATS / 2**30:.0f} GiB: lower vocab or budget"
        )
    if work["floats_total"] > MAX_TOTAL_ROW_FLOATS:
        raise WorkBoundError(
            f"the run touches about {work['floats_total']:.3g} row floats, about "
            f"{work['seconds_at_1e8_floats_per_s'] / 3600:.0f} hours at 1e8 floats/s; "
            f"lower rounds, vocab or budget"
        )


PRESETS: dict[str, SimConfig] = {
    "small": SimConfig(
        name="small",
        target=SyntheticTarget(vocab=64, order=2, zipf=2.0),
        horizon=6,
        budget=16,
        rounds=150,
        builders=("ddtree", "chain", "static", "eagle", "oracle", "caddtree", "tsubame"),
        settings={
            "static": StaticSettings(branching=(4, 2, 1, 1, 1, 1)),
            "eagle": EagleSettings(depth=5, top_k=4),
            "caddtree": CaDDTreeSettings(max_budget=48),
        },
    ),
    "medium": SimConfig(
        name="medium",
        target=SyntheticTarget(vocab=1000, order=2, zipf=2.0),
        horizon=8,
        budget=64,
        rounds=150,
        builders=("ddtree", "chain", "oracle", "caddtree"),
        settings={"caddtree": CaDDTreeSettings(max_budget=128)},
    ),
    "greedy": SimConfig(
        name="greedy",
        target=SyntheticTarget(vocab=256, order=3, zipf=1.5, temperature=0.0),
        drafter=SyntheticDrafter(noise=0.5),
        horizon=8,
        budget=32,
        rounds=150,
        builders=("ddtree", "chain", "eagle", "oracle"),
        verifier="greedy",
        settings={"eagle": EagleSettings(depth=6, top_k=6)},
    ),
    "mismatch": SimConfig(
        name="mismatch",
        target=SyntheticTarget(vocab=128, order=2, zipf=2.0),
        drafter=SyntheticDrafter(noise=1.5, temperature=1.5),
        horizon=8,
        budget=32,
        rounds=150,
        builders=("ddtree", "eagle", "oracle", "tsubame", "tsubame-rrs"),
        settings={"eagle": EagleSettings(depth=6, top_k=6)},
    ),
    # the rest of the field beside DDTree / EAGLE-2 / CaDDTree: OPT-Tree and DARTree builders,
    # Tsubame's re-sampled tree under recursive rejection and under UniVer
    "field": SimConfig(
        name="field",
        target=SyntheticTarget(vocab=64, order=2, zipf=2.0),
        drafter=SyntheticDrafter(noise=1.0),
        horizon=6,
        budget=16,
        rounds=150,
        builders=(
            "ddtree",
            "eagle",
            "caddtree",
            "opt-tree",
            "dartree",
            "oracle",
            "tsubame-rrs",
            "tsubame-univer",
        ),
        settings={
            "eagle": EagleSettings(depth=5, top_k=4),
            "caddtree": CaDDTreeSettings(max_budget=48),
        },
    ),
}


def row_label(name: str, cfg: SimConfig) -> str:
    """The table label of builder ``name``: ``tsubame`` says that its tree is verified by the config's verifier."""
    if name == "tsubame":
        return f"tsubame+{cfg.verifier}"
    return name


def verifier_fn(name: str):
    """The sampling verifier ``f(tree, probs, rng) -> (exit_node, bonus)`` called ``name``: the
    function registered for it in :mod:`exitlaw.simulate.verifiers` (a fast twin such as
    ``tev-fast`` registers its vectorised sampler with one sample)."""
    if name not in VERIFIERS:
        raise ValueError(f"unknown verifier {name!r} (known: {', '.join(VERIFIERS)})")
    return sim_function(name)


def sampled_verifier_fn(builder: str):
    """The sampled-draft rule ``f(tree, probs, draft_rows, rng)`` that verifies ``builder``'s rounds, or None."""
    rule = SAMPLED_DRAFT_RULES.get(builder)
    return None if rule is None else sim_function(rule)


def get_preset(name: str) -> SimConfig:
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; presets: {', '.join(PRESETS)}")
    return PRESETS[name]


def with_overrides(config: SimConfig, **changes: Any) -> SimConfig:
    """Copy of ``config`` with the non-``None`` flat keys in ``changes`` (``vocab=128``,
    ``eagle_depth=5``: the keys of a config file) replaced."""
    given = {k: v for k, v in changes.items() if v is not None}
    return from_flat(config, given) if given else config
