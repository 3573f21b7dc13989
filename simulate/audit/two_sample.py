"""Two-sample chi-square test of equal laws, with a stated level and a power bound at a total variation.

Samples ``X_1..X_a`` from law ``p`` and ``Y_1..Y_b`` from law ``q`` over any outcomes (token tuples).
Cells are chosen from the *combined* counts only -- the ``C - 1`` most frequent outcomes with a combined
expected count of at least ``min_expected`` in each sample, the rest pooled into one cell -- which is
symmetric in the two samples, so under ``p = q`` it does not bias the test (the pooling of
:func:`~exitlaw.simulate.stats.pooled_chisquare`, decided from expected counts, in its two-sample form).
The statistic is Pearson's ``sum_cells sum_samples (O - E)^2 / E`` with ``E = n_s (x_c + y_c) / N``;
``df = cells - 1`` (asymptotic level).

Power at total variation ``delta`` (measured on the cells): the noncentrality is
``lambda = (a b / N) sum_c (p_c - q_c)^2 / pi_c`` with ``pi = (a p + b q) / N``, and by Cauchy-Schwarz
``sum (p - q)^2 / pi >= (sum |p - q|)^2 / sum pi = 4 delta^2``, so ``lambda >= 4 delta^2 a b / N``
(``2 n delta^2`` for ``a = b = n``). Power decreases with ``df`` at fixed ``lambda``, so the bound at
``df = C - 1`` holds for every realised number of cells from 2 up to ``C``. A test whose samples fall
into fewer than two cells (every outcome too rare to stand alone, all pooled) has no statistic at all:
its cell laws are equal whatever the servers do, so it has no power (:func:`realised_power`). With ``a = b = n`` this is the
one-sample bound of :func:`~exitlaw.simulate.stats.chisquare_power` at ``delta / sqrt 2``, and the sample size
comes from :func:`~exitlaw.simulate.stats.sample_size` the same way.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

from scipy import stats as sps

from exitlaw.simulate.stats import chisquare_power, sample_size


@dataclass(frozen=True)
class TwoSampleResult:
    statistic: float
    dof: int
    pvalue: float
    cells: list  # outcome per cell ("other" for the pooled one)
    counts_a: list
    counts_b: list

    def rejects(self, alpha: float) -> bool:
        return self.pvalue < alpha


def two_sample_chisquare(a, b, *, max_cells: int = 6, min_expected: float = 5.0) -> TwoSampleResult:
    """Pearson's two-sample test of ``Counter`` ``a`` against ``Counter`` ``b`` (module docstring)."""
    a, b = Counter(a), Counter(b)
    na, nb = sum(a.values()), sum(b.values())
    if na == 0 or nb == 0:
        raise ValueError(f"both samples must be non-empty (sizes {na}, {nb})")
    if max_cells < 2:
        raise ValueError(f"max_cells must be >= 2, got {max_cells}")
    total = a + b
    n = na + nb
    share = min(na, nb) / n  # the smaller sample's share of a cell's combined count
    order = sorted(total, key=lambda o: (-total[o], repr(o)))
    own = [o for o in order if total[o] * share >= min_expected][: max_cells - 1]
    rest = [o for o in order if o not in set(own)]
    cells = [[o] for o in own]
    if rest:
        if sum(total[o] for o in rest) * share < min_expected and cells:
            cells[-1] = cells[-1] + rest  # too small alone: merge into the smallest own cell
        else:
            cells.append(rest)
    ca = [sum(a[o] for o in c) for c in cells]
    cb = [sum(b[o] for o in c) for c in cells]
    labels = [c[0] if len(c) == 1 else "other" for c in cells]
    if len(cells) < 2:
        return TwoSampleResult(0.0, 0, 1.0, labels, ca, cb)
    stat = 0.0
    for x, y in zip(ca, cb):
        t = x + y
        ea, eb = na * t / n, nb * t / n
        stat += (x - ea) ** 2 / ea + (y - eb) ** 2 / eb
    dof = len(cells) - 1
    return TwoSampleResult(float(stat), dof, float(sps.chi2.sf(stat, dof)), labels, ca, cb)


def two_sample_power(na: int, nb: int, *, cells: int, alpha: float, delta: float) -> float:
    """Lower bound on the power of the level-``alpha`` test at TV ``>= delta`` on at most ``cells`` cells."""
    if na <= 0 or nb <= 0:
        return 0.0
    n_eff = na * nb / (na + nb)  # lambda >= 4 delta^2 n_eff
    df = max(cells - 1, 1)
    return float(sps.ncx2.sf(sps.chi2.isf(alpha, df), df, 4.0 * delta**2 * n_eff))


def realised_power(
    res: TwoSampleResult, na: int, nb: int, *, cells: int, alpha: float, delta: float
) -> float:
    """The power bound of the test ``res`` actually ran: :func:`two_sample_power` when its samples fell
    into at least two cells, else 0 (one cell detects nothing)."""
    if len(res.cells) < 2:
        return 0.0
    return two_sample_power(na, nb, cells=cells, alpha=alpha, delta=delta)


def two_sample_size(*, cells: int, alpha: float, power: float, delta: float) -> int:
    """Smallest equal size ``n`` per sample with :func:`two_sample_power` ``>= power``."""
    return sample_size(cells, alpha, power, delta / math.sqrt(2.0))


def pooled_power(
    n_per_test: list[tuple[int, int]], *, cells: int, alpha: float, delta: float
) -> float:
    """Power bound of the pooled test (statistics summed over tests) when *every* test's law is off by
    ``delta``: noncentralities and degrees of freedom add."""
    lam = sum(4.0 * delta**2 * a * b / (a + b) for a, b in n_per_test if a and b)
    df = max(cells - 1, 1) * len(n_per_test)
    return float(sps.ncx2.sf(sps.chi2.isf(alpha, df), df, lam)) if lam > 0 else 0.0


def pooled_detectable_tv(n_per_test, *, cells: int, alpha: float, power: float) -> float:
    """Smallest TV, common to every prompt, that the pooled test finds with probability ``power``."""
    lo, hi = 0.0, 1.0
    if pooled_power(n_per_test, cells=cells, alpha=alpha, delta=hi) < power:
        return float("inf")
    for _ in range(50):
        mid = (lo + hi) / 2
        lo, hi = (
            (lo, mid)
            if pooled_power(n_per_test, cells=cells, alpha=alpha, delta=mid) >= power
            else (mid, hi)
        )
    return hi


__all__ = [
    "TwoSampleResult",
    "two_sample_chisquare",
    "two_sample_power",
    "realised_power",
    "two_sample_size",
    "pooled_power",
    "pooled_detectable_tv",
    "chisquare_power",
]
