"""Verdict rules of the claims ledger, fixed before any data is read (docs/design.md §1.11, "Claims and verdicts").

A claim is decided from ONE interval: the confidence interval (two-sided, level
``1 - alpha``, alpha = 0.05 unless the claim table says otherwise) of its primary
effect, in the units its :class:`Rule` names. Exact computations (enumeration,
closed forms) give a point interval ``[x, x]``. The rules, in order:

R0  scale.   A claim whose decisive setting is not available at the scale of
             the ledger's inputs (``Rule.decidable_at`` not in the scales run,
             e.g. end-to-end speedup needs paper-scale models on a GPU) is
             ``inconclusive`` -- "not decidable at CPU scale" -- whatever the data.
R1  input.   A missing input gives ``inconclusive`` ("input missing: ...").
R2  direction (paper's side ``s`` = +1 or -1, paper's effect ``e`` or none):
             ``reproduced``   when the CI excludes 0 on the paper's side (s*lo > 0 for s=+1, s*hi > 0 for s=-1);
             ``contradicted`` otherwise, when the CI excludes the paper's effect on the
                              other side (for s=+1: hi < e; with no quoted ``e``: hi < 0);
             ``inconclusive`` otherwise.
R3  size:    as R2, but ``reproduced`` also needs the CI to contain ``e`` (compatible with
             the paper's effect); a CI that excludes 0 on the paper's side but lies
             beyond ``e`` (a larger effect than the paper's) is ``inconclusive``; one that lies
             wholly below ``e`` is ``contradicted`` even when it excludes 0 (the direction
             holds, the paper's size does not: the reason says both).
R4  equivalence (two one-sided tests, TOST, margin ``m`` in the effect's units):
             ``reproduced``   when the ``1 - 2 alpha`` interval (90 %) lies inside ``(-m, m)``;
             ``contradicted`` when the ``1 - alpha`` interval (95 %) lies outside ``[-m, m]``
                              (the difference exceeds the margin);
             ``inconclusive`` otherwise -- "underpowered" when the 90 % half-width is
                              ``>= m`` (no estimate could pass), else "not shown within the margin".

R5  test (a calibrated hypothesis test of an exact law, with its own stated alpha):
             ``contradicted`` when it rejects; ``reproduced`` when it does not and its power
             against its stated alternatives is >= 0.8; ``inconclusive`` (underpowered) otherwise.

Every verdict states the minimal detectable effect (MDE) of its interval: the
true effect a two-sided level-alpha test would detect with 80 % power,
``(z_{1-alpha/2} + z_{0.8}) * se`` with ``se`` = half-width / ``z_{1-alpha/2}``
(the normal reading of the interval; 0 for exact point intervals).

Pooling (when a claim table declares several cells as one estimand):
:func:`pool` takes the equal-weight mean of the cells' estimates with
``se = sqrt(sum se_i^2) / k`` (independent cells, normal approximation); cells that share
their prompts, seeds or models are correlated, and ``correlated=True`` then uses
``se = sum se_i / k``, the largest standard error the mean can have under any correlation
between the cells (Minkowski), so the interval holds whatever the correlation, at the price of width.

Scale words (docs/design.md §1.11: a verdict says its scale): :func:`scaled_verdict` is the verdict
as the ledger prints it, e.g. ``direction reproduced (size not comparable: CPU)`` for a direction
rule met at a scale that is not the paper's; a mini-scale row reads ``reproduced`` / ``not reproduced``
/ ``inconclusive at mini scale (CPU)`` (:data:`MINI_WORDS`), never a bare ``contradicted`` beside a
paper-scale number; the ledger adds the row's regime (:mod:`exitlaw.paper_repro.regimes`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

REPRODUCED, CONTRADICTED, INCONCLUSIVE = "reproduced", "contradicted", "inconclusive"
VERDICTS = (REPRODUCED, CONTRADICTED, INCONCLUSIVE)
KINDS = ("direction", "size", "equivalence", "test")
SCALES = ("cpu", "gpu")
POWER = 0.8
_N = NormalDist()


class VerdictError(ValueError):
    """A rule or an interval that cannot be decided (bad level, NaN bound, unknown kind...)."""


def _z(level: float) -> float:
    return _N.inv_cdf(0.5 + level / 2)


@dataclass(frozen=True)
class Interval:
    """A two-sided confidence interval ``[lo, hi]`` of level ``level`` around ``estimate``."""

    estimate: float
    lo: float
    hi: float
    level: float = 0.95
    exact: bool = (
        False  # a computed quantity: [lo, hi] is its float rounding band, not a sampling interval
    )

    def __post_init__(self) -> None:
        vals = (self.estimate, self.lo, self.hi)
        if not all(isinstance(v, (int, float)) and math.isfinite(v) for v in vals):
            raise VerdictError(f"interval bounds must be finite numbers, got {vals}")
        if not self.lo <= self.estimate <= self.hi:
            raise VerdictError(
                f"need lo <= estimate <= hi, got {self.lo} <= {self.estimate} <= {self.hi}"
            )
        if not 0 < self.level < 1:
            raise VerdictError(f"interval level must lie in (0, 1), got {self.level}")

    @classmethod
    def normal(cls, estimate: float, se: float, level: float = 0.95) -> "Interval":
        if not (math.isfinite(se) and se >= 0):
            raise VerdictError(f"standard error must be finite and >= 0, got {se}")
        h = _z(level) * se
        return cls(float(estimate), float(estimate) - h, float(estimate) + h, level)

    @classmethod
    def computed(cls, value: float, tol: float = 0.0) -> "Interval":
        """A computed (not sampled) quantity: ``[value - tol, value + tol]``, ``tol`` its rounding band."""
        if not (math.isfinite(tol) and tol >= 0):
            raise VerdictError(f"rounding band must be finite and >= 0, got {tol}")
        return cls(float(value), float(value) - tol, float(value) + tol, exact=True)

    @property
    def is_exact(self) -> bool:
        return self.exact

    @property
    def se(self) -> float:
        """Normal reading of the interval: the larger half-width over ``z_{(1+level)/2}`` (0 when computed)."""
        if self.exact:
            return 0.0
        return max(self.hi - self.estimate, self.estimate - self.lo) / _z(self.level)

    def at_level(self, level: float) -> "Interval":
        """The same estimate and ``se`` at another level (normal reading; exact intervals stay points)."""
        if self.is_exact:
            return self
        return Interval.normal(self.estimate, self.se, level)

    def text(self, digits: int = 3, unit: str = "") -> str:
        f = f"{{:+.{digits}f}}"
        if self.is_exact:
            band = f" +- {(self.hi - self.lo) / 2:.0e}" if self.hi > self.lo else ""
            return f.format(self.estimate) + unit + f" (computed{band})"
        return (
            f.format(self.estimate) + unit + f" [{f.format(self.lo)}, {f.format(self.hi)}] "
            f"({100 * self.level:g} % CI)"
        )


def pool(cells: list[Interval], level: float = 0.95, *, correlated: bool = False) -> Interval:
    """Equal-weight mean of the cells: ``se = sqrt(sum se_i^2) / k`` for independent cells, ``sum se_i / k``
    (the bound under any correlation) with ``correlated`` (module docstring)."""
    if not cells:
        raise VerdictError("nothing to pool: no cells")
    k = len(cells)
    if any(c.is_exact for c in cells):
        if not all(c.is_exact for c in cells):
            raise VerdictError("cannot pool computed and sampled cells")
        return Interval.computed(
            sum(c.estimate for c in cells) / k, max(c.hi - c.estimate for c in cells)
        )
    se = (sum(c.se for c in cells) if correlated else math.sqrt(sum(c.se**2 for c in cells))) / k
    return Interval.normal(sum(c.estimate for c in cells) / k, se, level)


# the scales a row can be measured at, as the ledger names them (docs/design.md §1.11)
SCALE_KINDS = ("simulation", "mini-scale, CPU", "CPU", "GPU", "GPU, not run")


def scale_kind(scale: str) -> str:
    """The kind of a row's scale text: ``simulation`` (simulation, exact enumeration, the kit),
    ``mini-scale, CPU``, ``CPU``, ``GPU`` (measured on a CUDA device) or ``GPU, not run`` (nothing
    measured)."""
    low = str(scale).lower()
    if low in ("", "-") or "not run" in low:
        return "GPU, not run"
    if any(w in low for w in ("simulation", "enumeration", "conformance kit", "field lab")):
        return "simulation"
    if "mini" in low:
        return "mini-scale, CPU"
    if low.startswith("cuda"):
        return "GPU"
    return "CPU"


# a mini-scale row's verdict in words that say the scale (issue 34): a mini-scale engine run cannot contradict
# a Qwen3-4B number, it fails to reproduce it at mini scale; the decision (and the ``verdict`` field) is unchanged
MINI_WORDS = {
    REPRODUCED: "reproduced at mini scale",
    CONTRADICTED: "not reproduced at mini scale",
    INCONCLUSIVE: "inconclusive at mini scale",
}


def scaled_verdict(rule: "Rule", verdict: str, scale: str) -> str:
    """The verdict with its scale: a mini-scale row reads :data:`MINI_WORDS` (``not reproduced at mini scale
    (CPU)``; a direction met with a paper size beside it adds ``direction only, size not comparable``); a
    direction rule met at another scale not the paper's reads ``direction reproduced (size not comparable:
    KIND)``; every other verdict ``VERDICT (KIND)``."""
    kind = scale_kind(scale)
    if kind == "mini-scale, CPU":
        if rule.kind == "direction" and verdict == REPRODUCED:
            size = (
                "the paper states no size"
                if rule.paper_effect is None
                else "direction only, size not comparable"
            )
            return f"{MINI_WORDS[verdict]} (CPU; {size})"
        return f"{MINI_WORDS[verdict]} (CPU)"
    if rule.kind == "direction" and verdict == REPRODUCED and kind != "GPU, not run":
        if rule.paper_effect is None:
            return f"direction reproduced ({kind}; the paper states no size)"
        return f"direction reproduced (size not comparable: {kind})"
    return f"{verdict} ({kind})"


@dataclass(frozen=True)
class Rule:
    """How one claim is decided; declared in the claim table before any data is read.

    ``kind``: ``direction`` | ``size`` | ``equivalence``; ``side``: +1 when the paper's
    effect is positive, -1 when negative (direction/size); ``paper_effect``: the paper's
    effect in the interval's units (the smallest the paper reports, for ranges), or
    ``None`` for a qualitative claim; ``margin``: the equivalence margin; ``unit``: the
    effect's unit; ``decidable_at``: the scales at which the claim's decisive setting exists.
    """

    kind: str
    unit: str
    side: int = 1
    paper_effect: float | None = None
    margin: float | None = None
    decidable_at: tuple[str, ...] = ("cpu", "gpu")
    alpha: float = 0.05

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise VerdictError(f"rule kind must be one of {KINDS}, got {self.kind!r}")
        if self.side not in (1, -1):
            raise VerdictError(f"side must be +1 or -1, got {self.side}")
        if not 0 < self.alpha < 0.5:
            raise VerdictError(f"alpha must lie in (0, 0.5), got {self.alpha}")
        bad = [s for s in self.decidable_at if s not in SCALES]
        if bad or not self.decidable_at:
            raise VerdictError(
                f"decidable_at must be a non-empty subset of {SCALES}, got {self.decidable_at}"
            )
        if self.kind == "equivalence":
            if self.margin is None or not self.margin > 0:
                raise VerdictError(f"an equivalence rule needs a margin > 0, got {self.margin}")
        elif self.kind == "size" and self.paper_effect is None:
            raise VerdictError("a size rule needs the paper's effect")
        if (
            self.paper_effect is not None
            and self.kind != "equivalence"
            and self.side * self.paper_effect <= 0
        ):
            raise VerdictError(
                f"the paper's effect {self.paper_effect} is not on its declared side {self.side:+d}"
            )

    def text(self) -> str:
        if self.kind == "test":
            return f"calibrated test ({self.unit}): no rejection with power >= {POWER}"
        if self.kind == "equivalence":
            return (
                f"equivalence (TOST, alpha {self.alpha:g}) at margin +-{self.margin:g} {self.unit}"
            )
        sign = ">" if self.side > 0 else "<"
        if self.kind == "size":
            return (
                f"size: reproduced when the {100 * (1 - self.alpha):g} % CI excludes 0 and contains the "
                f"paper's effect {self.paper_effect:+g} {self.unit}; contradicted when it excludes that "
                f"effect on the side of 0 (a smaller effect, even one that excludes 0: the direction "
                f"alone does not reproduce a stated size)"
            )
        paper = (
            f"; paper's effect {self.paper_effect:+g} {self.unit}"
            if self.paper_effect is not None
            else ""
        )
        return f"{self.kind}: effect {sign} 0 ({self.unit}){paper}; {100 * (1 - self.alpha):g} % CI"


@dataclass(frozen=True)
class Verdict:
    verdict: str
    reason: str
    mde: float | None = None

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise VerdictError(f"verdict must be one of {VERDICTS}, got {self.verdict!r}")


def mde(ci: Interval, alpha: float = 0.05, power: float = POWER) -> float:
    """Minimal detectable effect of ``ci``'s standard error (module docstring)."""
    return (_z(1 - alpha) + _N.inv_cdf(power)) * ci.se


def not_decidable(rule: Rule, scale: str) -> Verdict | None:
    """R0: the scale rule; ``None`` when the claim is decidable at ``scale``."""
    if scale not in SCALES:
        raise VerdictError(f"scale must be one of {SCALES}, got {scale!r}")
    if scale in rule.decidable_at:
        return None
    return Verdict(
        INCONCLUSIVE,
        f"not decidable at {scale.upper()} scale (declared: decidable at "
        f"{'/'.join(s.upper() for s in rule.decidable_at)} scale only)",
    )


def missing(what: str) -> Verdict:
    """R1."""
    return Verdict(INCONCLUSIVE, f"input missing: {what}")


def decide(rule: Rule, ci: Interval) -> Verdict:
    """R2-R4 for one interval (the claim's primary effect)."""
    if rule.kind == "test":
        raise VerdictError("a 'test' rule is decided by decide_test, not from an interval")
    if abs(ci.level - (1 - rule.alpha)) > 1e-9 and not ci.is_exact:
        raise VerdictError(
            f"the interval's level {ci.level} is not the rule's 1 - alpha = {1 - rule.alpha}"
        )
    u, m_d = rule.unit, mde(ci, rule.alpha)
    if rule.kind == "equivalence":
        return _tost(rule, ci, m_d)
    s = rule.side
    lo, hi = (ci.lo, ci.hi) if s > 0 else (-ci.hi, -ci.lo)  # in the paper's direction
    e = None if rule.paper_effect is None else s * rule.paper_effect
    if lo > 0 and (rule.kind == "direction" or lo <= e <= hi):
        return Verdict(
            REPRODUCED,
            "CI excludes 0 on the paper's side"
            + (" and contains the paper's effect" if rule.kind == "size" else ""),
            m_d,
        )
    if rule.kind == "size" and lo > e:
        return Verdict(
            INCONCLUSIVE,
            f"excludes 0 on the paper's side but not compatible with the paper's "
            f"effect {rule.paper_effect:+g} {u} (the effect is larger)",
            m_d,
        )
    bound = 0.0 if e is None else e
    if rule.kind == "size" and lo > 0 and hi < e:
        return Verdict(
            CONTRADICTED,
            f"CI excludes 0 on the paper's side (the direction holds) but lies below the paper's "
            f"effect {rule.paper_effect:+g} {u}: the size is not reproduced",
            m_d,
        )
    if hi < bound:
        what = "0" if e is None else f"the paper's effect {rule.paper_effect:+g} {u}"
        return Verdict(CONTRADICTED, f"CI excludes {what} on the other side", m_d)
    return Verdict(INCONCLUSIVE, f"CI contains 0; minimal detectable effect {m_d:.3g} {u}", m_d)


def _tost(rule: Rule, ci: Interval, m_d: float) -> Verdict:
    m, u = rule.margin, rule.unit
    ci90 = ci.at_level(1 - 2 * rule.alpha)
    if -m < ci90.lo and ci90.hi < m:
        return Verdict(
            REPRODUCED,
            f"{100 * ci90.level:g} % CI [{ci90.lo:+.3g}, {ci90.hi:+.3g}] inside +-{m:g} {u}",
            m_d,
        )
    if ci.lo > m or ci.hi < -m:
        return Verdict(CONTRADICTED, f"{100 * ci.level:g} % CI lies outside +-{m:g} {u}", m_d)
    half90 = (ci90.hi - ci90.lo) / 2
    if half90 >= m:
        return Verdict(
            INCONCLUSIVE,
            f"underpowered: the 90 % half-width {half90:.3g} {u} is >= the margin {m:g} {u}",
            m_d,
        )
    return Verdict(
        INCONCLUSIVE, f"not shown within +-{m:g} {u}: 90 % CI [{ci90.lo:+.3g}, {ci90.hi:+.3g}]", m_d
    )


def decide_test(rule: Rule, rejected: bool, power: float) -> Verdict:
    """R5 for a calibrated test's outcome."""
    if rule.kind != "test":
        raise VerdictError(f"decide_test needs a 'test' rule, got {rule.kind!r}")
    if not 0 <= power <= 1:
        raise VerdictError(f"power must lie in [0, 1], got {power}")
    if rejected:
        return Verdict(CONTRADICTED, "the calibrated test rejects")
    if power >= POWER:
        return Verdict(
            REPRODUCED, f"the calibrated test does not reject (power {power:.3f} >= {POWER})"
        )
    return Verdict(
        INCONCLUSIVE, f"underpowered: the test does not reject but its power {power:.3f} < {POWER}"
    )


def bootstrap_interval(
    values, *, statistic, resamples: int = 2000, level: float = 0.95, seed: int = 0
) -> Interval:
    """Percentile bootstrap of ``statistic(values[idx])`` over the rows of ``values`` (numpy
    ``Generator(PCG64(seed))``, so the interval is a pure function of its inputs)."""
    x = np.asarray(values, dtype=np.float64)
    if x.ndim < 1 or x.shape[0] < 2 or not np.isfinite(x).all():
        raise VerdictError(f"bootstrap needs >= 2 finite rows, got shape {x.shape}")
    rng = np.random.Generator(np.random.PCG64(seed))
    idx = rng.integers(0, x.shape[0], size=(resamples, x.shape[0]))
    stats = np.array([statistic(x[i]) for i in idx])
    est = float(statistic(x))
    q = (1 - level) / 2
    lo, hi = (float(v) for v in np.quantile(stats, [q, 1 - q]))
    return Interval(est, min(lo, est), max(hi, est), level)


__all__ = [
    "REPRODUCED",
    "CONTRADICTED",
    "INCONCLUSIVE",
    "VERDICTS",
    "KINDS",
    "SCALES",
    "Interval",
    "Rule",
    "Verdict",
    "VerdictError",
    "decide",
    "decide_test",
    "pool",
    "scale_kind",
    "scaled_verdict",
    "SCALE_KINDS",
    "MINI_WORDS",
    "mde",
    "not_decidable",
    "missing",
    "bootstrap_interval",
]
