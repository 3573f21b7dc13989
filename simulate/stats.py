"""Calibrated goodness-of-fit statistics with a stated false-failure rate and power.

* :func:`pooled_chisquare` -- Pearson chi-square; cells with expected count below
  ``min_expected`` are pooled, the pooling decided from *expected counts only*
  (never from the observed ones, which would bias the test). Any observation in a
  zero-probability cell fails at once (``p = 0``).
* :func:`cell_binomial` -- per-cell exact binomial tails with a Bonferroni
  correction, and the z-score, to say *where* a law is off.
* :func:`dkw_epsilon` / :func:`dkw_check` -- the DKW band ``sqrt(log(2/alpha) / 2n)``
  for an empirical CDF (exit depths).
* :func:`chisquare_power` / :func:`sample_size` -- power of the level-``alpha`` Pearson
  test against every alternative at total-variation distance ``>= delta``. By
  Cauchy-Schwarz, ``sum (q - p)^2 / p >= (sum |q - p|)^2 = 4 delta^2``, so the
  noncentrality is at least ``4 n delta^2`` and the power is at least
  ``P[ncx2(df, 4 n delta^2) > chi2.isf(alpha, df)]`` (TV measured on the pooled cells).
* :func:`seed_for` -- a ``SeedSequence`` derived from a test id, to print on failure.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np
from scipy import stats


@dataclass(frozen=True)
class ChiSquareResult:
    statistic: float
    dof: int
    pvalue: float
    cells: int  # cells after pooling
    zero_cell_hits: tuple = ()  # indices of zero-probability cells that were observed
    pooled: tuple = ()  # indices pooled into one cell

    def rejects(self, alpha: float) -> bool:
        return self.pvalue < alpha


def pooled_chisquare(counts, probs, *, min_expected: float = 5.0) -> ChiSquareResult:
    """Pearson chi-square of ``counts`` against ``probs`` (same shape, flattened)."""
    c = np.asarray(counts, dtype=np.float64).ravel()
    p = np.asarray(probs, dtype=np.float64).ravel()
    if c.shape != p.shape:
        raise ValueError(f"counts has {c.size} cells but probs has {p.size}")
    if (p < 0).any() or abs(p.sum() - 1) > 1e-9:
        raise ValueError(f"probs must be a distribution (sum {p.sum()!r})")
    n = c.sum()
    zero = p <= 0
    hits = tuple(int(i) for i in np.flatnonzero(zero & (c > 0)))
    if hits:
        return ChiSquareResult(float("inf"), 0, 0.0, 0, hits, ())
    if n == 0:
        return ChiSquareResult(0.0, 0, 1.0, 0)
    idx = np.flatnonzero(~zero)
    exp = n * p[idx]
    order = idx[np.argsort(exp, kind="stable")]
    small = [int(i) for i in order if n * p[i] < min_expected]
    big = [int(i) for i in order if n * p[i] >= min_expected]
    obs_cells = [c[i] for i in big]
    exp_cells = [n * p[i] for i in big]
    pooled: list[int] = []
    if small:
        pooled = small
        po, pe = c[small].sum(), n * p[small].sum()
        if pe < min_expected and exp_cells:
            # the pooled cell is still too small: merge it with the smallest large cell
            j = int(np.argmin(exp_cells))
            pooled = small + [big[j]]
            po, pe = po + obs_cells.pop(j), pe + exp_cells.pop(j)
        obs_cells.append(po)
        exp_cells.append(pe)
    o, e = np.array(obs_cells), np.array(exp_cells)
    k = o.size
    if k < 2:
        return ChiSquareResult(0.0, 0, 1.0, k, (), tuple(pooled))
    stat = float(((o - e) ** 2 / e).sum())
    return ChiSquareResult(stat, k - 1, float(stats.chi2.sf(stat, k - 1)), k, (), tuple(pooled))


@dataclass(frozen=True)
class CellReport:
    cell: int
    count: int
    expected: float
    z: float
    pvalue: float  # two-sided exact binomial tail
    flagged: tuple = field(default=())  # cells below alpha / K


def cell_binomial(counts, probs, *, alpha: float) -> CellReport:
    """Worst cell by exact two-sided binomial tail; ``flagged`` are cells with ``p < alpha / K`` (Bonferroni)."""
    c = np.asarray(counts, dtype=np.int64).ravel()
    p = np.clip(np.asarray(probs, dtype=np.float64).ravel(), 0.0, 1.0)
    n = int(c.sum())
    lower = stats.binom.cdf(c, n, p)
    upper = stats.binom.sf(c - 1, n, p)
    pv = np.minimum(1.0, 2 * np.minimum(lower, upper))
    k = int((p > 0).sum()) or 1
    flagged = tuple(int(i) for i in np.flatnonzero(pv < alpha / k))
    worst = int(np.argmin(pv))
    sd = np.sqrt(n * p[worst] * (1 - p[worst]))
    z = (
        float((c[worst] - n * p[worst]) / sd)
        if sd > 0
        else (0.0 if c[worst] == n * p[worst] else float("inf"))
    )
    return CellReport(worst, int(c[worst]), float(n * p[worst]), z, float(pv[worst]), flagged)


def dkw_epsilon(n: int, alpha: float) -> float:
    """``P[sup |F_n - F| > eps] <= alpha`` for ``eps = sqrt(log(2 / alpha) / (2 n))``."""
    return float(np.sqrt(np.log(2.0 / alpha) / (2.0 * n)))


def dkw_check(samples, cdf, *, alpha: float) -> tuple[float, float]:
    """``(sup |F_n - F|, eps)`` for integer ``samples`` in ``0..len(cdf)-1`` against ``cdf``."""
    s = np.asarray(samples, dtype=np.int64)
    cdf = np.asarray(cdf, dtype=np.float64)
    emp = np.cumsum(np.bincount(s, minlength=cdf.size)[: cdf.size]) / s.size
    return float(np.abs(emp - cdf).max()), dkw_epsilon(s.size, alpha)


def chisquare_power(n: int, cells: int, alpha: float, delta: float) -> float:
    """Lower bound on the power of the level-``alpha`` test with ``cells`` cells at TV ``>= delta``."""
    df = max(cells - 1, 1)
    crit = stats.chi2.isf(alpha, df)
    return float(stats.ncx2.sf(crit, df, 4.0 * n * delta**2))


def power_against(n: int, probs, alt, alpha: float, *, min_expected: float = 5.0) -> float:
    """Power of :func:`pooled_chisquare` at ``n`` samples against a *known* alternative law ``alt``.

    Uses the noncentral chi-square with ``lambda = n sum (alt - p)^2 / p`` over the cells the
    pooling rule forms; an alternative with mass on a zero-probability cell is detected with
    probability ``1 - (1 - mass)^n``.
    """
    p = np.asarray(probs, dtype=np.float64).ravel()
    q = np.asarray(alt, dtype=np.float64).ravel()
    zero_mass = float(q[p <= 0].sum())
    idx = np.flatnonzero(p > 0)
    small = idx[n * p[idx] < min_expected]
    big = idx[n * p[idx] >= min_expected]
    pc = list(p[big]) + ([p[small].sum()] if small.size else [])
    qc = list(q[big]) + ([q[small].sum()] if small.size else [])
    pc, qc = np.array(pc), np.array(qc)
    df = max(pc.size - 1, 1)
    lam = n * float(((qc - pc) ** 2 / pc).sum())
    chi_power = float(stats.ncx2.sf(stats.chi2.isf(alpha, df), df, lam)) if lam > 0 else alpha
    zero_power = 1.0 - (1.0 - zero_mass) ** n
    return min(1.0, 1.0 - (1.0 - chi_power) * (1.0 - zero_power))


def cell_power(n: int, probs, alt, alpha: float) -> float:
    """Power of :func:`cell_binomial`'s Bonferroni rule (``p < alpha / K``) against a known ``alt``:
    the best single cell's rejection probability, a lower bound on the rule's power."""
    p = np.clip(np.asarray(probs, dtype=np.float64).ravel(), 0.0, 1.0)
    q = np.clip(np.asarray(alt, dtype=np.float64).ravel(), 0.0, 1.0)
    k = int((p > 0).sum()) or 1
    level = alpha / k
    c = np.arange(n + 1)
    best = 0.0
    for i in np.flatnonzero(np.abs(q - p) > 0):
        if p[i] <= 0:
            best = max(best, 1.0 - (1.0 - q[i]) ** n)
            continue
        pv = np.minimum(
            1.0, 2 * np.minimum(stats.binom.cdf(c, n, p[i]), stats.binom.sf(c - 1, n, p[i]))
        )
        reject = pv < level
        best = max(best, float(stats.binom.pmf(c[reject], n, q[i]).sum()))
    return min(best, 1.0)


def sample_size(cells: int, alpha: float, power: float, delta: float, *, max_n: int = 10**9) -> int:
    """Smallest ``n`` with :func:`chisquare_power` ``>= power`` (bisection)."""
    if not (0 < alpha < 1 and 0 < power < 1 and 0 < delta <= 1):
        raise ValueError(
            f"need 0 < alpha, power < 1 and 0 < delta <= 1, got {alpha}, {power}, {delta}"
        )
    lo, hi = 1, 1
    while chisquare_power(hi, cells, alpha, delta) < power:
        hi *= 2
        if hi > max_n:
            raise ValueError(f"more than {max_n} samples needed for delta={delta}")
    while lo < hi:
        mid = (lo + hi) // 2
        if chisquare_power(mid, cells, alpha, delta) >= power:
            hi = mid
        else:
            lo = mid + 1
    return lo


def mean_z(values, mean: float, var: float) -> float:
    """z-score of the sample mean of ``values`` against a known mean and variance."""
    v = np.asarray(values, dtype=np.float64)
    if var <= 0:
        return 0.0 if np.allclose(v, mean) else float("inf") * np.sign(v.mean() - mean)
    return float((v.mean() - mean) / np.sqrt(var / v.size))


def seed_for(test_id: str, base: int = 0) -> np.random.SeedSequence:
    """A ``SeedSequence`` derived from a test id (stable across runs and machines)."""
    digest = hashlib.sha256(f"{base}:{test_id}".encode()).digest()
    return np.random.SeedSequence(int.from_bytes(digest[:16], "little"))


def describe_seed(seq: np.random.SeedSequence) -> str:
    return f"SeedSequence(entropy={seq.entropy})"


__all__ = [
    "ChiSquareResult",
    "pooled_chisquare",
    "CellReport",
    "cell_binomial",
    "dkw_epsilon",
    "dkw_check",
    "chisquare_power",
    "power_against",
    "cell_power",
    "sample_size",
    "mean_z",
    "seed_for",
    "describe_seed",
]
