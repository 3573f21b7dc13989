"""A training run's configuration, the two named readings of ExitTrain, the one LR schedule, and a
training schedule's size (:class:`Schedule`, :class:`DrafterSchedule`: the groups configs hold).

Presets (:data:`PRESETS`; explicit options override them, :func:`preset_config`):

* ``paper``: the paper's reading (docs/design.md §1.10, ExitTrain): weight ``exit`` (``w = P rho``),
  normalisation ``batch`` (weights sum to one over the batch), ``lam = 1`` (the
  extracted paper text lost lambda's value; 1 is exitlaw's reading of "weights summing
  to one beside CE"), no edge floor, training budget 64 (the paper's Table 2, ``B = 64``).
* ``authors-code``: the authors' public code (hsj576/TEV, SpecForge ``algorithms/exittrain``
  and ``algorithms/dted``): weight ``prefix`` (its configs ship ``P_tgt``; its own "exit"
  weight is ``exit-depth``), normalisation ``nodes`` (the tree term summed and divided
  by the number of tree nodes), ``lam = 0.1`` (``1.0 * CE + 0.1 * tree term``), edge
  floor ``1e-4``, training budget 32 (every shipped ExitTrain config). Not carried over:
  their 32 anchors per sequence and 64-token context window for tree scoring (exitlaw
  scores trees over the full context).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from exitlaw.engine.training.objectives import AUTHORS_EDGE_FLOOR, AUTHORS_LAMBDA, check_objective
from exitlaw.theory.infra.flat_fields import from_flat, group, replace_flat, to_flat
from exitlaw.theory.sampling_settings import (
    FILTERS,
    HF_ORDER,
    VLLM_ORDER,
    SamplingSettings,
    check_settings,
)

SAMPLING_ORDERS = {"vllm": VLLM_ORDER, "hf": HF_ORDER}
# the flat fields runs saved before ``TrainConfig.scoring`` (read by ``from_saved``)
LEGACY_SCORING = {f"target_{k}": k for k in ("temperature", *FILTERS, "sampling_order")}

PRESETS: dict[str, dict] = {
    "paper": {
        "objective": "exit",
        "weight_norm": "batch",
        "lam": 1.0,
        "edge_floor": None,
        "budget": 64,
    },
    "authors-code": {
        "objective": "prefix",
        "weight_norm": "nodes",
        "lam": AUTHORS_LAMBDA,
        "edge_floor": AUTHORS_EDGE_FLOOR,
        "budget": 32,
    },
}


@dataclass(frozen=True)
class Schedule:
    """How long, how big and how fast one training stage runs: ``steps`` optimizer steps of
    ``batch`` sequences at peak learning rate ``lr`` (the mini target, the distillation, the
    fine-tuning: each config holds one per stage)."""

    steps: int
    batch: int
    lr: float

    def __post_init__(self):
        for name in ("steps", "batch"):
            if not getattr(self, name) >= 1:
                raise ValueError(f"a schedule's {name} must be >= 1, got {getattr(self, name)!r}")
        if not self.lr > 0:
            raise ValueError(f"a schedule's lr must be > 0, got {self.lr!r}")


@dataclass(frozen=True)
class DrafterSchedule(Schedule):
    """A drafter's :class:`Schedule`, with ``anchors`` block anchors drawn per sequence."""

    anchors: int = 8

    def __post_init__(self):
        super().__post_init__()
        if not self.anchors >= 1:
            raise ValueError(f"a schedule's anchors must be >= 1, got {self.anchors!r}")


# the schedule's flat keys in a saved ``config.json``, in the order runs have always written them
SCHEDULE_KEYS = {"steps": "steps", "batch": "batch_size", "anchors": "anchors_per_seq", "lr": "lr"}


@dataclass(frozen=True)
class TrainConfig:
    """One training run (``exitlaw train`` flags map one to one). Its :class:`DrafterSchedule` is
    written flat (``steps``, ``batch_size``, ``anchors_per_seq``, ``lr``: :meth:`to_saved`)."""

    objective: str = "exit"  # token | prefix | exit | exit-depth | draft-opd | vat
    lam: float = 1.0
    weight_norm: str = "batch"  # batch | tree | nodes: how the tree term's weights are normalised
    edge_floor: float | None = (
        None  # alpha of the authors' code (P from max(a, alpha)); None: raw edges
    )
    budget: int = 64
    # steps; batch: sequences per step and rank; lr: the peak learning rate; anchors: per sequence
    schedule: DrafterSchedule = group(
        "",
        default=DrafterSchedule(steps=100, batch=4, lr=1e-4, anchors=8),
        keys={k: v for k, v in SCHEDULE_KEYS.items() if k != v},
    )
    min_lr_ratio: float = 0.1  # cosine decays to lr * min_lr_ratio
    warmup_steps: int = 0
    weight_decay: float = 0.01
    grad_clip: float = 1.0
    checkpoint_every: int = 50
    log_every: int = 1
    seed: int = 0
    score_trees: bool = True  # False only for token-only warm-up/distillation (not matched compute)
    # the scoring law: the node weights come from the target processed at the scoring temperature T_s
    # and its filters (off by default)
    scoring: SamplingSettings = SamplingSettings(1.0)
    prefix_window: int | None = (
        None  # score trees over only the last N context tokens (the authors' code: 64)
    )
    amp: str = "auto"  # auto | bf16 | off

    def __post_init__(self):
        check_objective(self.objective, self.weight_norm, self.edge_floor)
        if not self.score_trees and self.objective != "token":
            raise ValueError(f"objective {self.objective!r} needs scored trees (score_trees=True)")
        if not isinstance(self.schedule, DrafterSchedule):
            raise TypeError(
                f"schedule must be a DrafterSchedule, got {type(self.schedule).__name__}"
            )
        for name in ("budget", "checkpoint_every", "log_every"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not 0 <= self.min_lr_ratio <= 1 or self.grad_clip <= 0 or not self.lam >= 0:
            raise ValueError("need 0 <= min_lr_ratio <= 1, grad_clip > 0, lam >= 0")
        check_settings(self.scoring)
        if self.warmup_steps < 0 or self.scoring.temperature <= 0:
            raise ValueError("need warmup_steps >= 0 and a scoring temperature > 0")
        if self.prefix_window is not None and (
            isinstance(self.prefix_window, bool) or self.prefix_window < 1
        ):
            raise ValueError(f"prefix_window must be None or >= 1 token, got {self.prefix_window}")
        if self.prefix_window is not None and self.objective == "draft-opd":
            raise ValueError("prefix_window scores trees only: it does not combine with draft-opd")
        if self.amp not in ("auto", "bf16", "off"):
            raise ValueError(f"amp must be auto, bf16 or off, got {self.amp!r}")
        if self.scoring.filtered and self.objective == "draft-opd":
            raise ValueError(
                "draft-opd scores sampled chains with full target rows: it does not take scoring filters"
            )

    def to_saved(self) -> dict:
        """The flat JSON object ``config.json`` records (``train``): every field under its own name, the
        schedule's four keys in its place (:data:`SCHEDULE_KEYS`), the scoring law as its own object."""
        flat = to_flat(self)
        out: dict = {}
        for key, value in flat.items():
            if key == "steps":
                out.update({k: flat[k] for k in SCHEDULE_KEYS.values()})
            elif key not in SCHEDULE_KEYS.values():
                out[key] = value
        return out

    @classmethod
    def from_saved(cls, saved: dict) -> "TrainConfig":
        """The config of a saved run (:meth:`to_saved`, as ``config.json`` records it); fields a run
        saved before they existed take their defaults. Runs saved before the scoring law was one
        :class:`SamplingSettings` spelled it as flat ``target_*`` fields: read too."""
        saved = dict(saved)
        old = {k: saved.pop(k) for k in LEGACY_SCORING if k in saved}
        if old:
            if "scoring" in saved:
                raise ValueError("saved training config has both scoring and target_* fields")
            order = old.pop("target_sampling_order", "vllm")
            if order not in SAMPLING_ORDERS:
                raise ValueError(f"target_sampling_order must be vllm or hf, got {order!r}")
            saved["scoring"] = {"order": SAMPLING_ORDERS[order]}
            saved["scoring"].update({LEGACY_SCORING[k]: v for k, v in old.items()})
        if "scoring" in saved:
            saved["scoring"] = SamplingSettings.from_record(saved["scoring"], temperature=1.0)
        return from_flat(cls, saved, what="saved training config")


def preset_config(preset: str | None = None, **overrides) -> TrainConfig:
    """``TrainConfig`` of a named preset (module docstring) with ``overrides`` on top (``schedule=`` a
    :class:`DrafterSchedule`); ``None``: the defaults."""
    if preset is not None and preset not in PRESETS:
        raise ValueError(f"unknown training preset {preset!r}; choose one of {', '.join(PRESETS)}")
    base = dict(PRESETS[preset]) if preset else {}
    changes = {**base, **overrides}
    return replace_flat(TrainConfig(), **changes) if changes else TrainConfig()


def cosine_factor(step: int, *, steps: int, warmup_steps: int, min_lr_ratio: float) -> float:
    """LR multiplier: linear warm-up ``(step + 1) / warmup_steps``, then a cosine from 1 to
    ``min_lr_ratio`` at ``steps``: ``r + (1 - r) (1 + cos(pi t)) / 2``, ``t = (step - warmup) / (steps - warmup)``
    clipped to 1."""
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    span = max(1, steps - warmup_steps)
    t = min(1.0, (step - warmup_steps) / span)
    return min_lr_ratio + (1 - min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * t))


__all__ = [
    "PRESETS",
    "DrafterSchedule",
    "SCHEDULE_KEYS",
    "Schedule",
    "TrainConfig",
    "preset_config",
    "cosine_factor",
]
