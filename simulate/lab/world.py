"""The synthetic world of a lab config: one target and its drafters' mismatch, one dataclass each.

:class:`SyntheticTarget` builds the hashed n-gram target (:class:`.models.NGramTarget`: a Zipf
spectrum ``p ∝ r^(-zipf/T)``, optionally jittered); :class:`SyntheticDrafter` builds the two
drafters that model it with the same mismatch (:class:`.models.PositionWiseDrafter`, DFlash-like,
and :class:`.models.AutoregressiveDrafter`, EAGLE-like). ``SimConfig`` and ``FieldLabConfig``
hold one of each (``cfg.target.vocab``, ``cfg.drafter.noise``), as the fields
:func:`target_field` and :func:`drafter_field` make: their keys in a config file are flat
(:mod:`exitlaw.theory.infra.flat_fields`), the target's fields under their own names (its ``seed``
as ``target_seed``, beside the run's own ``seed``), the drafter's as ``drafter_<field>``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from exitlaw.simulate.builders.settings import check_fields
from exitlaw.simulate.lab.models import AutoregressiveDrafter, NGramTarget, PositionWiseDrafter
from exitlaw.theory.infra.flat_fields import group

DRAFTER_MODES = ("greedy_path", "marginal")


def _at_least(what: str, value: float, low: float, *, strict: bool = False) -> None:
    if value < low or (strict and value == low):
        raise ValueError(f"{what} must be {'>' if strict else '>='} {low}, got {value!r}")


@dataclass(frozen=True)
class SyntheticTarget:
    """The target: ``vocab`` tokens, an n-gram of ``order`` (context ``order - 1``), Zipf exponent
    ``zipf``, sampling temperature (0: greedy), logit ``jitter`` and its hash ``seed``."""

    vocab: int = 64
    order: int = 2
    zipf: float = 1.1
    temperature: float = 1.0
    jitter: float = 0.0
    seed: int = 0

    def __post_init__(self) -> None:
        check_fields(self, "SyntheticTarget field")
        _at_least("vocab", self.vocab, 1)
        _at_least("order", self.order, 1)
        _at_least("zipf", self.zipf, 0, strict=True)
        _at_least("temperature", self.temperature, 0)
        _at_least("jitter", self.jitter, 0)

    def model(self) -> NGramTarget:
        return NGramTarget(
            self.vocab,
            order=self.order,
            zipf=self.zipf,
            temperature=self.temperature,
            jitter=self.jitter,
            seed=self.seed,
        )


@dataclass(frozen=True)
class SyntheticDrafter:
    """The drafters' mismatch to the target: logit ``noise``, ``temperature``, floor ``eps`` and
    ``seed``; the position-wise drafter's ``mode`` (``greedy_path`` rows along the target's greedy
    path, or exact ``marginal`` rows; docs/design.md, lab models)."""

    mode: str = "greedy_path"
    noise: float = 0.5
    temperature: float = 1.0
    eps: float = 1e-3
    seed: int = 1

    def __post_init__(self) -> None:
        check_fields(self, "SyntheticDrafter field")
        if self.mode not in DRAFTER_MODES:
            raise ValueError(f"drafter_mode must be one of {DRAFTER_MODES}, got {self.mode!r}")
        _at_least("drafter_noise", self.noise, 0)
        _at_least("drafter_temperature", self.temperature, 0, strict=True)
        if not 0 <= self.eps < 1:
            raise ValueError(f"drafter_eps must lie in [0, 1), got {self.eps!r}")

    def position_wise(self, target: NGramTarget) -> PositionWiseDrafter:
        return PositionWiseDrafter(target, mode=self.mode, **self._mismatch())

    def autoregressive(self, target: NGramTarget) -> AutoregressiveDrafter:
        return AutoregressiveDrafter(target, **self._mismatch())

    def models(self, target: NGramTarget) -> tuple[PositionWiseDrafter, AutoregressiveDrafter]:
        """Both drafters of ``target``: ``(position-wise, autoregressive)``."""
        return self.position_wise(target), self.autoregressive(target)

    def _mismatch(self) -> dict[str, float | int]:
        return dict(noise=self.noise, temperature=self.temperature, eps=self.eps, seed=self.seed)


def target_field(default: SyntheticTarget = SyntheticTarget()) -> Any:
    """A config field holding the target, written flat: ``vocab``, ..., ``target_seed``."""
    return group("", default=default, keys={"seed": "target_seed"})


def drafter_field(default: SyntheticDrafter = SyntheticDrafter()) -> Any:
    """A config field holding the drafters' mismatch, written flat: ``drafter_<field>``."""
    return group("drafter_", default=default)


__all__ = ["DRAFTER_MODES", "SyntheticDrafter", "SyntheticTarget", "drafter_field", "target_field"]
