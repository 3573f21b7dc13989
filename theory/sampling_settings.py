"""The processed target distribution: temperature, then top-k, top-p and min-p (numpy and Fraction).

One definition (docs/design.md §1.7; §1.1 takes ``p_v`` as given, this module says which ``p_v`` a
sampling setting gives). From logits ``z`` and :class:`SamplingSettings`:

1. **temperature** first (both vLLM and HF do so): ``p = softmax(z / T)``; ``T = 0`` is the
   greedy limit, the one-hot argmax with the first maximum on ties (``numpy.argmax``,
   ``torch.argmax`` and the engine's greedy verifier all take the first). Every filter keeps the
   argmax, so at ``T = 0`` the filters change nothing.
2. the **filters**, in ``settings.order``, each on the row the previous ones left (renormalised),
   each a *threshold* mask that keeps ties (as vLLM and HF mask ``< threshold``):

   * ``top_k = k``: keep ``y`` iff ``p(y) >= p_(k)``, the ``k``-th largest entry (ties at the
     ``k``-th place all kept, so more than ``k`` tokens may survive);
   * ``top_p = t``: keep ``y`` iff ``sum_{x: p(x) > p(y)} p(x) < t sum_x p(x)``: the smallest
     set of largest entries reaching mass ``t``, plus every entry tied with its smallest member
     (``t = 1`` keeps every positive entry; the argmax is always kept);
   * ``min_p = m``: keep ``y`` iff ``p(y) >= m max_x p(x)`` (``m = 0`` keeps everything).

   Filtered entries become 0 and the row is renormalised: ``p'(y) = p(y) [kept] / sum_kept p``.

Orders (temperature always comes first). ``top_k`` and ``min_p`` commute (both keep the
argmax and threshold on the ranking), so the two engines differ only where ``top_p`` sits:

* :data:`VLLM_ORDER` ``(min_p, top_k, top_p)``: vLLM's sampler (temperature, min-p, then its
  joint top-k/top-p, top-p on the top-k survivors); **the default**, because it is the order of
  the serving engine people run speculative decoding in, and its top-p acts last on the
  renormalised survivors of the other two filters;
* :data:`HF_ORDER` ``(top_k, top_p, min_p)``: HF transformers' logits warpers.

:func:`process_rows_exact` is the exact reference of step 2 on rational rows given after the
temperature; :func:`process_rows` its float64 twin (the same comparisons, in floating point);
:func:`process_logits` steps 1 and 2 from logits (the exit law of a tree under processed rows is
:func:`exitlaw.theory.law.processed_exit_law`, with the JAX laws), and :func:`processed_target`
a prefix target for coverage and the oracle ceiling ``C*_p(B)`` under processed rows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from fractions import Fraction
from numbers import Integral, Real
from typing import Any, Callable

import numpy as np

from .errors import DistributionError


@dataclass(frozen=True)
class Filter:
    """One sampling filter, every fact about it in one record (docs/architecture.md §6).

    ``type``: ``int`` or ``float``; ``bounds``: its range in words and ``valid`` the test of it;
    ``off``: the values at which it removes nothing (``None`` always among them); ``neutral``: the
    OpenAI/vLLM request values that mean off (the server reads them by name); ``flag`` / ``metavar``
    / ``help`` / ``expected``: the command line's flag, its text, and the words of its error;
    ``exact(p, keep, value)``: the rule on exact rows (``Fraction``; the kept flags after it);
    ``keep(live, value)``: its float64 twin on live weights ``[..., V]`` (the same comparisons). The
    engine's torch rule registers itself under ``name`` (``engine/decode/sampling_settings.py``).
    """

    name: str
    type: type
    bounds: str
    valid: Callable[[Any], bool]
    off: tuple
    neutral: tuple
    flag: str
    metavar: str
    help: str
    expected: str
    exact: Callable[[list, list, Any], list]
    keep: Callable[[np.ndarray, Any], np.ndarray]

    def off_text(self) -> str:
        values = [f"{v:g}" for v in self.off if v is not None]
        return (" or ".join(values) + " or None" if values else "or None") + " for off"


def _top_k_exact(p, keep, k):
    live = [x for x, kept in zip(p, keep) if kept]
    kth = sorted(live, reverse=True)[min(k, len(live)) - 1]
    return [kept and x >= kth for x, kept in zip(p, keep)]


def _top_k_keep(live, k):
    k = min(k, live.shape[-1])
    return live >= -np.partition(-live, k - 1, axis=-1)[..., k - 1 : k]


def _top_p_exact(p, keep, t):
    live = [x for x, kept in zip(p, keep) if kept]
    bar = Fraction(t) * sum(live)
    return [kept and sum(z for z in live if z > x) < bar for x, kept in zip(p, keep)]


def _top_p_keep(live, t):
    desc = -np.sort(-live, axis=-1)
    above = np.cumsum(desc, axis=-1) - desc  # exclusive: mass strictly before each place
    bar = t * desc.sum(axis=-1, keepdims=True)
    last = (above < bar).sum(axis=-1, keepdims=True) - 1  # >= 0: above[0] = 0 < bar
    return live >= np.take_along_axis(desc, last, axis=-1)


def _min_p_exact(p, keep, m):
    bar = Fraction(m) * max(x for x, kept in zip(p, keep) if kept)
    return [kept and x >= bar for x, kept in zip(p, keep)]


def _min_p_keep(live, m):
    return live >= m * live.max(axis=-1, keepdims=True)


FILTER_RECORDS: tuple[Filter, ...] = (
    Filter(
        "top_k",
        int,
        ">= 1",
        lambda k: k >= 1,
        off=(None,),
        neutral=(0, -1),
        flag="--top-k",
        metavar="K",
        help="keep the K most likely tokens (ties kept)",
        expected="an integer >= 1",
        exact=_top_k_exact,
        keep=_top_k_keep,
    ),
    Filter(
        "top_p",
        float,
        "in (0, 1]",
        lambda t: 0 < t <= 1,  # nan fails too
        off=(None, 1.0),
        neutral=(1,),
        flag="--top-p",
        metavar="P",
        help="keep the smallest head of mass >= P (ties kept)",
        expected="a top-p in (0, 1]",
        exact=_top_p_exact,
        keep=_top_p_keep,
    ),
    Filter(
        "min_p",
        float,
        "in [0, 1)",
        lambda m: 0 <= m < 1,
        off=(None, 0.0),
        neutral=(0,),
        flag="--min-p",
        metavar="M",
        help="keep tokens with probability >= M x the largest",
        expected="a min-p in [0, 1)",
        exact=_min_p_exact,
        keep=_min_p_keep,
    ),
)
FILTERS = tuple(f.name for f in FILTER_RECORDS)
VLLM_ORDER = ("min_p", "top_k", "top_p")
HF_ORDER = ("top_k", "top_p", "min_p")
DEFAULT_ORDER = VLLM_ORDER
_OFF = {f.name: f.off for f in FILTER_RECORDS}  # values at which a filter is off


def filter_record(name: str) -> Filter:
    """The record of filter ``name`` (``DistributionError`` naming the filters)."""
    for f in FILTER_RECORDS:
        if f.name == name:
            return f
    raise DistributionError(f"unknown filter {name!r}; the filters are {', '.join(FILTERS)}")


NEAR_TIE_MARGIN = 0.05
"""At ``T = 0``, a greedy token whose log-probability leads the runner-up's by less than this is a
*near-tie*: batch-variant numerics (padded batches, bf16, another kernel) may flip it without any
bug. Below it the audit and the decoding bench report a divergence apart; above it, as an error."""

MIN_TEMPERATURE = 1e-6
"""The smallest positive temperature accepted (``T = 0`` is greedy; ``0 < T < MIN_TEMPERATURE`` is
refused). The device verifiers scale float32 logits by ``1 / T``: at ``T = 1e-6`` a logit of
magnitude ``1e4`` (far beyond a language model's) becomes ``1e10``, 28 orders of magnitude below
float32's largest ``3.4e38``, so ``z / T``, ``1 / T`` and the max-shift ``(z - max z) / T`` stay
finite; below ``~3e-39`` ``1 / T`` itself is ``inf`` in float32. The floor is a stated boundary of
the engine, not a law: every verifier is tested at it (docs/design.md §1.7)."""


def check_temperature_floor(t: float, *, allow_zero: bool = True) -> float:
    """``t`` unless ``0 < t < MIN_TEMPERATURE`` (:class:`DistributionError` naming both)."""
    if 0 < t < MIN_TEMPERATURE:
        greedy = "; use 0 for greedy" if allow_zero else ""
        raise DistributionError(
            f"temperature {t!r} is below the floor MIN_TEMPERATURE = {MIN_TEMPERATURE:g} "
            f"(the float32 device verifiers are stated and tested down to it){greedy}"
        )
    return t


def _real(value, name: str) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (Real, np.floating, np.integer)
    ):
        raise DistributionError(f"{name} must be a real number, got {value!r}")
    return float(value)


def _checked(f: Filter, value):
    """``value`` as filter ``f``'s type, or ``DistributionError`` naming the filter and its range."""
    if f.type is int:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, Integral):
            raise DistributionError(
                f"{f.name} must be an integer {f.bounds} ({f.off_text()}), got {value!r}"
            )
        value = int(value)
    else:
        value = _real(value, f.name)
    if not f.valid(value):
        raise DistributionError(f"{f.name} must be {f.bounds} ({f.off_text()}), got {value!r}")
    return value


@dataclass(frozen=True)
class SamplingSettings:
    """Temperature and the optional filters (``None`` / ``top_p = 1`` / ``min_p = 0``: off).

    ``temperature`` finite, ``0`` (greedy) or ``>= MIN_TEMPERATURE``; ``top_k >= 1`` an integer; ``top_p`` in ``(0, 1]``;
    ``min_p`` in ``[0, 1)``; ``order`` a permutation of :data:`FILTERS` (default
    :data:`DEFAULT_ORDER`, vLLM's). Bad values raise :class:`DistributionError` naming them.
    """

    temperature: float
    top_k: int | None = None
    top_p: float | None = None
    min_p: float | None = None
    order: tuple[str, ...] = DEFAULT_ORDER

    def __post_init__(self):
        t = _real(self.temperature, "temperature")
        if not math.isfinite(t) or t < 0:
            raise DistributionError(
                f"temperature must be finite and >= 0, got {self.temperature!r}"
            )
        object.__setattr__(self, "temperature", check_temperature_floor(t))
        for f in FILTER_RECORDS:
            value = getattr(self, f.name)
            if value is not None:
                object.__setattr__(self, f.name, _checked(f, value))
        order = self.order
        if isinstance(order, str) or not all(isinstance(o, str) for o in order):
            raise DistributionError(
                f"order must be a sequence of filter names {FILTERS}, got {order!r}"
            )
        order = tuple(order)
        unknown = [o for o in order if o not in FILTERS]
        if unknown:
            raise DistributionError(
                f"unknown filter name(s) {unknown} in order; the filters are {', '.join(FILTERS)}"
            )
        if sorted(order) != sorted(FILTERS):
            raise DistributionError(
                f"order must name each of {', '.join(FILTERS)} exactly once, got {order!r}"
            )
        object.__setattr__(self, "order", order)

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    def active(self) -> tuple[str, ...]:
        """The filters that can remove a token, in order (``top_p = 1`` and ``min_p = 0`` cannot)."""
        return tuple(f for f in self.order if getattr(self, f) not in _OFF[f])

    @property
    def filtered(self) -> bool:
        return bool(self.active())

    def filters(self) -> dict:
        """JSON-ready record of the filters and their order, without the temperature (bench runs,
        training records and cache keys)."""
        return {**{f: getattr(self, f) for f in FILTERS}, "order": list(self.order)}

    def as_dict(self) -> dict:
        """JSON-ready record (bench results, training configs)."""
        return {"temperature": self.temperature, **self.filters()}

    def at(self, temperature: float) -> "SamplingSettings":
        """The same filters at another temperature."""
        return replace(self, temperature=temperature)

    @classmethod
    def from_record(
        cls, record: dict | None, temperature: float | None = None
    ) -> "SamplingSettings":
        """Settings from a record of :meth:`as_dict` or :meth:`filters` (``order`` a list, filters
        absent or ``None`` for off); ``temperature`` given when the record has none. Unknown keys are
        refused by name."""
        record = dict(record or {})
        if temperature is not None:
            record.setdefault("temperature", temperature)
        unknown = sorted(set(record) - {"temperature", "order", *FILTERS})
        if unknown:
            raise DistributionError(
                f"unknown sampling setting(s) {unknown}; use temperature, {', '.join(FILTERS)}, order"
            )
        if "order" in record and not isinstance(record["order"], str):
            record["order"] = tuple(record["order"])
        return cls(**record)


def check_settings(settings) -> SamplingSettings:
    """``settings`` itself if it is a :class:`SamplingSettings`, else ``TypeError`` naming what came: the
    one door through which every function that takes settings (theory's and the engine's) reads them."""
    if not isinstance(settings, SamplingSettings):
        raise TypeError(
            f"expected SamplingSettings, got {type(settings).__name__} {settings!r} "
            "(a temperature t is SamplingSettings(t))"
        )
    return settings


# ----------------------------------------------------------------- exact reference
def process_rows_exact(rows, settings: SamplingSettings) -> list[list[Fraction]]:
    """The filters of ``settings`` on rational rows given *after* the temperature (exact ``Fraction``).

    ``rows``: ``[N][V]`` non-negative rationals (ints, Fractions, or strings ``Fraction`` reads),
    each row with positive mass (it need not sum to 1; the result is normalised). The temperature
    of ``settings`` is not applied (it was, to make the rows). Returns the processed rows.
    """
    settings = check_settings(settings)
    out = []
    for r, row in enumerate(rows):
        try:
            p = [Fraction(x) for x in row]
        except (TypeError, ValueError) as err:
            raise DistributionError(f"row {r} must hold rationals ({err})") from None
        if not p:
            raise DistributionError(f"row {r} is empty")
        if any(x < 0 for x in p) or sum(p) <= 0:
            raise DistributionError(f"row {r} must be non-negative with positive mass")
        keep = [x > 0 for x in p]
        for name in settings.active():
            keep = filter_record(name).exact(p, keep, getattr(settings, name))
        total = sum(x for x, k in zip(p, keep) if k)
        out.append([x / total if k else Fraction(0) for x, k in zip(p, keep)])
    return out


# ----------------------------------------------------------------- float64
def keep_mask(weights: np.ndarray, settings: SamplingSettings) -> np.ndarray:
    """Boolean ``[..., V]``: which tokens the filters keep, from non-negative (unnormalised) rows.

    The comparisons of :func:`process_rows_exact` in float64: top-k against the ``k``-th largest
    live weight, min-p against ``m max``, top-p by the exclusive cumulative mass of the sorted live
    weights (the last sorted entry whose mass above is ``< t S`` sets the threshold).
    """
    w = np.asarray(weights, dtype=np.float64)
    keep = w > 0
    for name in check_settings(settings).active():
        keep &= filter_record(name).keep(np.where(keep, w, 0.0), getattr(settings, name))
    return keep


def process_rows(rows, settings: SamplingSettings) -> np.ndarray:
    """Float64 twin of :func:`process_rows_exact`: the filters on rows given after the temperature."""
    w = np.asarray(rows, dtype=np.float64)
    if w.ndim < 1 or w.shape[-1] == 0 or not np.isfinite(w).all() or (w < 0).any():
        raise DistributionError(
            f"rows must be finite, non-negative, with a non-empty last axis (shape {w.shape})"
        )
    if (w.sum(axis=-1) <= 0).any():
        raise DistributionError("every row needs positive mass")
    kept = np.where(keep_mask(w, settings), w, 0.0)
    return kept / kept.sum(axis=-1, keepdims=True)


def process_logits(logits, settings: SamplingSettings) -> np.ndarray:
    """Processed probability rows (float64 ``[..., V]``) from logits: temperature, then the filters.

    ``T = 0``: one-hot argmax (first maximum on ties). ``-inf`` logits are probability 0.
    """
    settings = check_settings(settings)
    z = np.asarray(logits, dtype=np.float64)
    if z.ndim < 1 or z.shape[-1] == 0:
        raise DistributionError(f"logits must have a non-empty last axis, got shape {z.shape}")
    if np.isnan(z).any() or np.isposinf(z).any():
        raise DistributionError("logits contain NaN or +inf")
    if np.isneginf(z).all(axis=-1).any():
        raise DistributionError("a logits row is all -inf (no token has positive probability)")
    if settings.greedy:
        out = np.zeros_like(z)
        np.put_along_axis(out, z.argmax(-1)[..., None], 1.0, axis=-1)
        return out
    e = np.exp((z - z.max(axis=-1, keepdims=True)) / settings.temperature)
    return process_rows(e, settings)


def processed_target(logits_of, settings: SamplingSettings):
    """A :class:`~exitlaw.theory.oracle.PrefixTarget` from a logits one: ``prefix -> process_logits(
    logits_of(prefix), settings)``. Feed it to :func:`~exitlaw.theory.oracle_tree` (the ceiling
    ``C*_p(B)`` under the setting), :func:`~exitlaw.theory.coverage_under` or
    :func:`~exitlaw.theory.allocation_gap`."""
    settings = check_settings(settings)

    def target(prefix: tuple[int, ...]) -> np.ndarray:
        return process_logits(logits_of(prefix), settings)

    return target


__all__ = [
    "Filter",
    "FILTER_RECORDS",
    "filter_record",
    "FILTERS",
    "VLLM_ORDER",
    "HF_ORDER",
    "DEFAULT_ORDER",
    "MIN_TEMPERATURE",
    "NEAR_TIE_MARGIN",
    "check_temperature_floor",
    "SamplingSettings",
    "check_settings",
    "process_rows_exact",
    "process_rows",
    "keep_mask",
    "process_logits",
    "processed_target",
]
