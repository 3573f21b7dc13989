"""Simulation configs (a dataclass, JSON on disk) and named presets.

A config fixes one synthetic target, one position-wise drafter (used by
``ddtree``, ``chain``, ``static``, ``caddtree``, ``tsubame``, and as DARTree's
proposal) and one autoregressive drafter with the same mismatch settings (used
by ``eagle``, ``opt-tree`` and DARTree's correction: ``simulate.opt_tree``,
``simulate.dartree``),
the builders to compare, the verifier (by name: ``tev``, ``predraw``,
``residual``, ``greedy`` from ``exitlaw.simulate.verifiers``, or ``tev-fast``,
the vectorised twin ``verifiers.fast.tev_many`` with one sample, for large V),
the number of rounds and the latency model.
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

from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from exitlaw.simulate.builders.caddtree import LatencyModel
from exitlaw.simulate.builders.table import BuildFn, sim_builder_names
from exitlaw.simulate.builders.table import make_builder as _make_builder
from exitlaw.simulate.lab.models import AutoregressiveDrafter, NGramTarget, PositionWiseDrafter
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
    # target
    vocab: int = 64
    order: int = 2
    zipf: float = 1.1
    temperature: float = 1.0
    jitter: float = 0.0
    target_seed: int = 0
    # drafters
    drafter_mode: str = "greedy_path"
    drafter_noise: float = 0.5
    drafter_temperature: float = 1.0
    drafter_eps: float = 1e-3
    drafter_seed: int = 1
    horizon: int = 8
    # builders
    budget: int = 16
    builders: tuple[str, ...] = ("ddtree", "chain", "oracle")
    static_branching: tuple[int, ...] = (4, 2, 2, 1, 1, 1, 1, 1)
    eagle_depth: int = 6
    eagle_top_k: int = 8
    caddtree_max_budget: int = 128
    dartree_widen: int = 2
    # decoding
    verifier: str = "tev"
    rounds: int = 200
    seed: int = 0
    prompt_length: int = 4
    oracle: bool = True
    store_rows: bool = False
    latency: dict[str, Any] = field(default_factory=lambda: asdict(LatencyModel()))

    def __post_init__(self) -> None:
        self._check_types()
        object.__setattr__(self, "builders", tuple(self.builders))
        object.__setattr__(self, "static_branching", tuple(int(b) for b in self.static_branching))
        bad = [b for b in self.builders if b not in BUILDERS]
        if bad or not self.builders:
            raise ValueError(
                f"unknown builders {bad} (known: {', '.join(BUILDERS)})"
                if bad
                else "builders is empty"
            )
        if self.verifier not in VERIFIERS:
            raise ValueError(f"unknown verifier {self.verifier!r} (known: {', '.join(VERIFIERS)})")
        if registry.verifier(self.verifier).greedy_only and self.temperature != 0:
            raise ValueError(
                f"the {self.verifier} verifier is exact only for a T=0 target; set temperature to 0"
            )
        for name in ("vocab", "horizon", "rounds", "budget", "dartree_widen"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        self.latency_model()  # validates
        check_work_bounds(self)

    def _check_types(self) -> None:
        """Every field has its declared type (a JSON ``"budget": "16"`` is refused by name, not coerced)."""
        for f in fields(self):
            value, kind = getattr(self, f.name), f.type
            if kind == "int" and (isinstance(value, bool) or not isinstance(value, int)):
                raise ValueError(f"config field {f.name!r} must be an integer, got {value!r}")
            if kind == "float":
                if (
                    isinstance(value, bool)
                    or not isinstance(value, (int, float))
                    or value != value
                    or value in (float("inf"), float("-inf"))
                ):
                    raise ValueError(
                        f"config field {f.name!r} must be a finite number, got {value!r}"
                    )
            if kind == "str" and not isinstance(value, str):
                raise ValueError(f"config field {f.name!r} must be a string, got {value!r}")
            if kind == "bool" and not isinstance(value, bool):
                raise ValueError(f"config field {f.name!r} must be true or false, got {value!r}")
            if kind.startswith("tuple[str"):
                if not isinstance(value, (list, tuple)) or not all(
                    isinstance(x, str) for x in value
                ):
                    raise ValueError(
                        f"config field {f.name!r} must be a list of names, got {value!r}"
                    )
            if kind.startswith("tuple[int"):
                if not isinstance(value, (list, tuple)) or not all(
                    isinstance(x, int) and not isinstance(x, bool) for x in value
                ):
                    raise ValueError(
                        f"config field {f.name!r} must be a list of integers, got {value!r}"
                    )
            if kind.startswith("dict") and not isinstance(value, dict):
                raise ValueError(f"config field {f.name!r} must be a JSON object, got {value!r}")

    def latency_model(self) -> LatencyModel:
        try:
            return LatencyModel(**self.latency)
        except TypeError as err:
            raise ValueError(f"bad latency config {self.latency}: {err}") from None

    def drafter_calls(self, name: str) -> int:
        """Sequential drafter calls per round of builder ``name`` (EAGLE-2: one per depth level;
        OPT-Tree: one per layer, ``horizon``; DARTree: a diffusion pass and one correction pass)."""
        if name not in BUILDERS:
            raise ValueError(f"unknown builder {name!r} (known: {', '.join(BUILDERS)})")
        return {"eagle": self.eagle_depth, "opt-tree": self.horizon, "dartree": 2}.get(name, 1)

    def builder_latency(self, name: str) -> LatencyModel:
        """The latency model that charges builder ``name``'s rounds: ``C_draft`` times its drafter calls."""
        lat = self.latency_model()
        return replace(lat, draft=lat.draft * self.drafter_calls(name))

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["builders"], d["static_branching"] = list(self.builders), list(self.static_branching)
        return d

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "SimConfig":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown config keys {unknown}; known keys: {sorted(known)}")
        return cls(**data)

    @classmethod
    def from_file(cls, path: str | Path) -> "SimConfig":
        data = read_json_file(path, "config file")
        preset = data.pop("preset", None)
        if preset is not None and not isinstance(preset, str):
            raise ValueError(f"{path}: preset must be a name, got {preset!r}")
        base = get_preset(preset).to_dict() if preset else {}
        return cls.from_dict({**base, **data})

    # ----- objects --------------------------------------------------------
    def target(self) -> NGramTarget:
        return NGramTarget(
            self.vocab,
            order=self.order,
            zipf=self.zipf,
            temperature=self.temperature,
            jitter=self.jitter,
            seed=self.target_seed,
        )

    def drafters(self, target: NGramTarget) -> tuple[PositionWiseDrafter, AutoregressiveDrafter]:
        kw = dict(
            noise=self.drafter_noise,
            temperature=self.drafter_temperature,
            eps=self.drafter_eps,
            seed=self.drafter_seed,
        )
        return PositionWiseDrafter(target, mode=self.drafter_mode, **kw), AutoregressiveDrafter(
            target, **kw
        )

    def make_builder(
        self, name: str, target: NGramTarget, pos: PositionWiseDrafter, ar: AutoregressiveDrafter
    ) -> BuildFn:
        """``(context, draft_rng) -> Built`` for builder ``name`` (the table in
        :mod:`exitlaw.simulate.builders.table`; ``ValueError`` for an unregistered name)."""
        return _make_builder(name, self, target, pos, ar)


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
    nodes = (
        max(cfg.budget, cfg.caddtree_max_budget if "caddtree" in cfg.builders else 0, cfg.horizon)
        + 1
    )
    per_round = (
        cfg.horizon + nodes + (nodes if cfg.oracle or "oracle" in cfg.builders else 0)
    ) * cfg.vocab
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
            f"(vocab {cfg.vocab} x nodes, budget {cfg.budget}, horizon {cfg.horizon}); "
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
        vocab=64,
        order=2,
        zipf=2.0,
        horizon=6,
        budget=16,
        rounds=150,
        builders=("ddtree", "chain", "static", "eagle", "oracle", "caddtree", "tsubame"),
        static_branching=(4, 2, 1, 1, 1, 1),
        eagle_depth=5,
        eagle_top_k=4,
        caddtree_max_budget=48,
    ),
    "medium": SimConfig(
        name="medium",
        vocab=1000,
        order=2,
        zipf=2.0,
        horizon=8,
        budget=64,
        rounds=150,
        builders=("ddtree", "chain", "oracle", "caddtree"),
        caddtree_max_budget=128,
    ),
    "greedy": SimConfig(
        name="greedy",
        vocab=256,
        order=3,
        zipf=1.5,
        temperature=0.0,
        drafter_noise=0.5,
        horizon=8,
        budget=32,
        rounds=150,
        builders=("ddtree", "chain", "eagle", "oracle"),
        verifier="greedy",
        eagle_depth=6,
        eagle_top_k=6,
    ),
    "mismatch": SimConfig(
        name="mismatch",
        vocab=128,
        order=2,
        zipf=2.0,
        drafter_noise=1.5,
        drafter_temperature=1.5,
        horizon=8,
        budget=32,
        rounds=150,
        builders=("ddtree", "eagle", "oracle", "tsubame", "tsubame-rrs"),
        eagle_depth=6,
        eagle_top_k=6,
    ),
    # the rest of the field beside DDTree / EAGLE-2 / CaDDTree: OPT-Tree and DARTree builders,
    # Tsubame's re-sampled tree under recursive rejection and under UniVer
    "field": SimConfig(
        name="field",
        vocab=64,
        order=2,
        zipf=2.0,
        drafter_noise=1.0,
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
        eagle_depth=5,
        eagle_top_k=4,
        caddtree_max_budget=48,
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
    """Copy of ``config`` with the non-``None`` fields in ``changes`` replaced."""
    return replace(config, **{k: v for k, v in changes.items() if v is not None})
