"""Paired comparisons of drafter objectives over training seeds and evaluation prompts.

Design (the deep mini preset): every objective ``o`` is trained from the *same* base
drafter once per training seed ``s`` (the seed fixes the batches and anchors, the
same for every objective: common random numbers), and every drafter decodes the
*same* ``P`` held-out prompts with the same decode seeds. For objectives ``A, B``:

    d[s, p] = tau_{A, s}(p) - tau_{B, s}(p)        [S, P]  (per-prompt tau difference)

The estimate is the grand mean ``dbar``. Both the seeds and the prompts are random
samples, so ``d`` is a two-way crossed random-effects layout without replication,
``d[s, p] = mu + a_s + b_p + e_sp``, and

    Var(dbar) = sigma_a^2 / S + sigma_b^2 / P + sigma_e^2 / (S P)

is estimated from the ANOVA mean squares ``MS_seed = P * var_s(dbar_s)``,
``MS_prompt = S * var_p(dbar_p)``, ``MS_resid`` (``E[MS_seed] = sigma_e^2 + P sigma_a^2``
etc.), with the seed and prompt components truncated at zero:

    V = (max(MS_seed - MS_resid, 0) + max(MS_prompt - MS_resid, 0) + MS_resid) / (S P)

and Satterthwaite's degrees of freedom for the linear combination of mean squares.
The 95 % interval is ``dbar +- t_{0.975, df} sqrt(V)``; the minimal detectable effect
(two-sided 5 % test, 80 % power) is ``(t_{0.975, df} + t_{0.80, df}) sqrt(V)``.
With one seed the seed component cannot be estimated: the interval is the paired
t-interval over prompts and the result says ``seed_variance_estimated: False``.
Relative effects divide by the mean tau of ``B`` over the same seeds and prompts
(treated as fixed).
"""

from __future__ import annotations

import math

import numpy as np


class PairingError(ValueError):
    """The two arms of a paired comparison do not cover the same seeds and prompts."""


def crossed_mean_ci(d, level: float = 0.95, power: float = 0.8) -> dict:
    """Grand mean of ``d [S, P]`` with the crossed random-effects interval (module docstring)."""
    from scipy import stats  # lazy: scipy (simulate extra); the ledger imports stats

    d = np.asarray(d, dtype=np.float64)
    if d.ndim != 2 or d.shape[1] < 2 or not np.isfinite(d).all():
        raise PairingError(
            f"need a finite [seeds, prompts] array with >= 2 prompts, got shape {d.shape}"
        )
    if not 0 < level < 1 or not 0 < power < 1:
        raise ValueError(f"level and power must lie in (0, 1), got {level}, {power}")
    s, p = d.shape
    mean = float(d.mean())
    seed_means, prompt_means = d.mean(axis=1), d.mean(axis=0)
    if s == 1:
        ms_prompt = float(d[0].var(ddof=1))
        var, df = ms_prompt / p, float(p - 1)
        comps = {"ms_prompt": ms_prompt}
    else:
        ms_seed = p * float(seed_means.var(ddof=1))
        ms_prompt = s * float(prompt_means.var(ddof=1))
        resid = d - seed_means[:, None] - prompt_means[None, :] + mean
        df_e = (s - 1) * (p - 1)
        ms_resid = float((resid**2).sum() / df_e)
        terms = [(ms_resid, df_e)]  # (coefficient x mean square, its df) of the combination
        if ms_seed > ms_resid:
            terms += [(ms_seed, s - 1)]
            terms[0] = (terms[0][0] - ms_resid, df_e)
        if ms_prompt > ms_resid:
            terms += [(ms_prompt, p - 1)]
            terms[0] = (terms[0][0] - ms_resid, df_e)
        total = sum(x for x, _ in terms)
        var = total / (s * p)
        denom = sum(x * x / k for x, k in terms)
        df = float(total * total / denom) if denom > 0 else float(df_e)
        comps = {"ms_seed": ms_seed, "ms_prompt": ms_prompt, "ms_resid": ms_resid}
    se = math.sqrt(max(var, 0.0))
    tq = float(stats.t.ppf(0.5 + level / 2, df))
    tp = float(stats.t.ppf(power, df))
    return {
        "mean": mean,
        "se": se,
        "df": df,
        "lo": mean - tq * se,
        "hi": mean + tq * se,
        "level": level,
        "mde": (tq + tp) * se,
        "power": power,
        "seeds": s,
        "prompts": p,
        "seed_variance_estimated": s > 1,
        "per_seed_mean": [float(x) for x in seed_means],
        **comps,
    }


def paired_difference(a: dict, b: dict, level: float = 0.95) -> dict:
    """``A - B`` from ``{seed: per-prompt tau list}`` dicts over the same seeds and prompts.

    Returns :func:`crossed_mean_ci` of the differences plus the same quantities
    relative to the mean tau of ``B`` (``rel_*``, in percent).
    """
    if sorted(a) != sorted(b):
        raise PairingError(f"arms trained with different seeds: {sorted(a)} vs {sorted(b)}")
    seeds = sorted(a)
    lens = {len(a[s]) for s in seeds} | {len(b[s]) for s in seeds}
    if len(lens) != 1:
        raise PairingError(f"arms evaluated on different numbers of prompts: {sorted(lens)}")
    ta = np.asarray([a[s] for s in seeds], dtype=np.float64)
    tb = np.asarray([b[s] for s in seeds], dtype=np.float64)
    res = crossed_mean_ci(ta - tb, level=level)
    ref = float(tb.mean())
    res.update({"mean_a": float(ta.mean()), "mean_b": ref, "seed_list": seeds})
    for key in ("mean", "lo", "hi", "mde", "se"):
        res[f"rel_{key}"] = 100.0 * res[key] / ref
    return res


VERDICTS = ("A > B", "A < B", "smaller than the paper's effect", "inconclusive")


def pair_verdict(rel_lo: float, rel_hi: float, margin_pct: float) -> str:
    """The pre-registered rule on a relative 95 % interval ``[rel_lo, rel_hi]`` (percent).

    ``A > B`` if it excludes zero from above, ``A < B`` if from below; ``smaller than
    the paper's effect`` if it contains zero and excludes ``+margin`` (the smallest
    effect the paper reports); otherwise (it contains zero and ``+margin``) ``inconclusive``.
    """
    if not rel_lo <= rel_hi or margin_pct <= 0:
        raise ValueError(
            f"need rel_lo <= rel_hi and margin > 0, got [{rel_lo}, {rel_hi}], {margin_pct}"
        )
    if rel_lo > 0:
        return VERDICTS[0]
    if rel_hi < 0:
        return VERDICTS[1]
    if rel_hi < margin_pct:
        return VERDICTS[2]
    return VERDICTS[3]


def claim_verdict(pair: str) -> str:
    """An ``A beats B`` claim from :func:`pair_verdict` (docs/design.md §1.11, "Claims and verdicts").

    ``reproduced`` when the interval excludes zero on the paper's side, ``contradicted``
    when it excludes the paper's effect from below (``A < B`` or smaller than the
    paper's effect), ``inconclusive`` otherwise.
    """
    if pair not in VERDICTS:
        raise ValueError(f"unknown pair verdict {pair!r}")
    return {
        VERDICTS[0]: "reproduced",
        VERDICTS[1]: "contradicted",
        VERDICTS[2]: "contradicted",
    }.get(pair, "inconclusive")


__all__ = [
    "PairingError",
    "crossed_mean_ci",
    "paired_difference",
    "pair_verdict",
    "claim_verdict",
    "VERDICTS",
]
