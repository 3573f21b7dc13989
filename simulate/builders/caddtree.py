"""CaDDTree: a per-round budget that maximises expected tokens per unit time.

Latency model (:class:`LatencyModel`, arbitrary time units, e.g. ms): one round
costs ``C_draft + C_verify(n)`` for a tree of ``n`` non-root nodes, with

    C_verify(n) = base + linear * (n + 1) + quadratic * (n + 1)^2 + tile_cost * ceil((n + 1) / tile)

(the target forward over the root and ``n`` drafted tokens). Autoregressive
decoding costs ``C_verify(0)`` per token (a one-token forward, no drafter), so
the simulated speedup of a run is ``sum_r L_r * C_verify(0) / sum_r (C_draft + C_verify(n_r))``.
With ``tile_cost = 0`` and non-negative coefficients ``C_verify`` is convex and increasing.

CaDDTree (docs/design.md §1.9, Builders): DDTree pops prefixes in decreasing draft score;
``Phi(n) = sum_{i <= n} exp(score_i)`` is the draft-side expected coverage of
the first ``n`` pops (increments never increase, so ``Phi`` is concave). The
round picks ``n`` maximising ``f(n) = (1 + Phi(n)) / (C_draft + C_verify(n))``,
scanning ``n = 0, 1, ...`` and stopping at the first strict decrease. With a
convex increasing ``C_verify``, ``f`` is quasi-concave (a concave over a convex
positive function), so the first strict decrease is the global maximum. A
tiled (step) cost breaks convexity, and the rule can stop early
(:func:`first_decrease_misses`).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from exitlaw.simulate.builders.settings import check_fields, check_positive
from exitlaw.simulate.builders.table import BuildFn, sim_builder
from exitlaw.simulate.builders.trees import Built, ddtree_order
from exitlaw.theory import DraftTree


@dataclass(frozen=True)
class LatencyModel:
    draft: float = 3.0
    base: float = 20.0
    linear: float = 0.05
    quadratic: float = 0.002
    tile: int = 0
    tile_cost: float = 0.0

    def __post_init__(self) -> None:
        for name in ("draft", "base", "linear", "quadratic", "tile_cost"):
            val = getattr(self, name)
            if not (math.isfinite(val) and val >= 0):
                raise ValueError(f"latency {name} must be finite and >= 0, got {val!r}")
        if self.base + self.linear + self.quadratic <= 0:
            raise ValueError("C_verify(0) must be positive: give base, linear or quadratic > 0")
        if self.tile < 0 or (self.tile_cost > 0 and self.tile == 0):
            raise ValueError(f"tile must be >= 1 when tile_cost > 0, got tile={self.tile}")

    @property
    def convex(self) -> bool:
        return self.tile_cost == 0

    def verify(self, n) -> np.ndarray:
        """``C_verify(n)`` for ``n`` non-root nodes (vectorised)."""
        m = np.asarray(n, dtype=np.float64) + 1.0
        cost = self.base + self.linear * m + self.quadratic * m * m
        if self.tile_cost:
            cost = cost + self.tile_cost * np.ceil(m / self.tile)
        return cost

    def round_cost(self, n) -> np.ndarray:
        return self.draft + self.verify(n)

    @property
    def autoregressive_cost(self) -> float:
        """Cost of one token of plain autoregressive decoding: ``C_verify(0)``."""
        return float(self.verify(0))

    def speedup(self, block_lengths, budgets) -> float:
        """``sum L * C_verify(0) / sum (C_draft + C_verify(n))`` over rounds."""
        lengths, budgets = np.asarray(block_lengths, dtype=np.float64), np.asarray(budgets)
        return float(lengths.sum() * self.autoregressive_cost / self.round_cost(budgets).sum())

    def to_dict(self) -> dict:
        return asdict(self)


def throughput_curve(scores: np.ndarray, latency: LatencyModel) -> np.ndarray:
    """``f(n) = (1 + Phi(n)) / (C_draft + C_verify(n))`` for ``n = 0..len(scores)-1``.

    ``scores[0]`` is the root (ignored); ``scores[i]`` is the cumulative draft
    log-probability of the ``i``-th pop.
    """
    phi = np.concatenate([[0.0], np.cumsum(np.exp(np.asarray(scores[1:], dtype=np.float64)))])
    return (1.0 + phi) / latency.round_cost(np.arange(phi.size))


def first_decrease(curve: np.ndarray) -> int:
    """Smallest ``n`` with ``curve[n + 1] < curve[n]`` (the last index if none): the greedy stop."""
    drops = np.flatnonzero(np.diff(curve) < 0)
    return int(drops[0]) if drops.size else int(curve.size - 1)


def first_decrease_misses(curve: np.ndarray, rtol: float = 1e-12) -> bool:
    """Whether the greedy stop loses to the global maximum (possible only for non-convex costs)."""
    return bool(curve[first_decrease(curve)] < curve.max() * (1 - rtol))


def caddtree(
    marginals: np.ndarray,
    latency: LatencyModel,
    *,
    max_budget: int,
    min_budget: int = 1,
    root_token: int = -1,
) -> tuple[Built, int]:
    """Per-round CaDDTree: ``(DDTree at the chosen budget n*, n*)``, ``min_budget <= n* <= max_budget``.

    When the drafter admits fewer than ``min_budget`` prefixes, ``n*`` is all of
    them (DDTree's shortage rule, ``exitlaw.theory.best_first``).
    """
    if not 0 <= min_budget <= max_budget:
        raise ValueError(f"need 0 <= min_budget <= max_budget, got {min_budget}, {max_budget}")
    tree, lp, score = ddtree_order(marginals, max_budget, root_token=root_token)
    curve = throughput_curve(score, latency)
    low = min(min_budget, tree.budget)
    n = low + first_decrease(curve[low:])
    keep = n + 1
    return Built(DraftTree(parent=tree.parent[:keep], token=tree.token[:keep]), lp[:keep]), n


@dataclass(frozen=True)
class CaDDTreeSettings:
    """CaDDTree's largest budget: each round picks its budget in ``[1, max_budget]``."""

    max_budget: int = 128

    def __post_init__(self) -> None:
        check_fields(self, "caddtree setting")
        check_positive(self, "caddtree setting")


@sim_builder("caddtree", settings=CaDDTreeSettings, max_nodes=lambda cfg, s: s.max_budget)
def make_caddtree(cfg, target, pos, ar, settings: CaDDTreeSettings) -> BuildFn:
    lat = cfg.latency_model()
    return lambda c, rng: caddtree(
        pos.marginals(c, cfg.horizon), lat, max_budget=settings.max_budget
    )[0]
