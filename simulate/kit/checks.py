"""Statistics of one conformance case: the kit's five checks (see :mod:`.conformance`).

Distribution checks are the pooled Pearson chi-square at ``alpha / 2`` plus the
Bonferroni per-cell binomial at ``alpha / 2``; :func:`auto_samples` picks the rounds
per case from the stated level, power and total-variation distance.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import stats as sps

from exitlaw.simulate.kit.cases import Case, MarginalCase
from exitlaw.simulate.stats import cell_binomial, chisquare_power, pooled_chisquare, sample_size
from exitlaw.theory import DraftTree

# Cells with fewer expected counts are pooled. 20 (not the textbook 5) keeps the chi-square tail
# calibrated at the kit's tiny levels: measured on 4e6 null draws with 31 cells of 20 expected,
# the rate at nominal 1e-6 was 1.25e-6 (at 5 expected, nominal 1e-5 gave 2.8e-5).
MIN_EXPECTED = 20.0


@dataclass
class CheckResult:
    """One test, one row: its statistic, dof, p-value and the threshold that p-value was judged against
    (``rejected`` iff ``pvalue < threshold``). ``test`` names it: ``chi-square`` (pooled Pearson),
    ``max cell`` (the smallest two-sided binomial p-value over the cells, Bonferroni threshold), or
    ``zero cell`` (``statistic`` = count in a zero cell: rejected whatever the sample size), ``z``
    (mean length), ``chi-square sum`` (residual bonus)."""

    name: str
    statistic: float
    dof: int
    pvalue: float
    alpha: float
    rejected: bool
    power: float | None = None
    worst: dict = field(default_factory=dict)
    threshold: float = 0.0
    test: str = "chi-square"


def zero_cell_result(name: str, count: int, alpha: float, worst: dict) -> CheckResult:
    """A count in a zero-probability cell: shown one way everywhere (statistic = that count, p-value 0)."""
    return CheckResult(
        name,
        float(count),
        0,
        0.0,
        alpha,
        True,
        None,
        {**worst, "count": int(count), "expected": 0.0, "reason": "count in a zero cell"},
        alpha,
        "zero cell",
    )


def dist_check(name, counts, probs, alpha, labels, delta) -> list[CheckResult]:
    """Two rows: the pooled chi-square over the positive cells at ``alpha / 2``, and the worst cell's exact
    binomial p-value at ``alpha / 2 / K`` (Bonferroni over the ``K`` positive cells) -- or, if a
    zero-probability cell was observed, the ``zero cell`` row in its place."""
    c = np.asarray(counts, dtype=np.float64).ravel()
    p = np.asarray(probs, dtype=np.float64).ravel()
    zero_hits = np.flatnonzero((p <= 0) & (c > 0))
    pos = p > 0
    chi = pooled_chisquare(c[pos], p[pos] / p[pos].sum(), min_expected=MIN_EXPECTED)
    # power is a property of the design (all n rounds, the cells n makes large enough), not of the data
    n = int(c.sum())
    big = n * p[pos] >= MIN_EXPECTED
    # the large cells plus one pooled cell of the small ones
    cells = int(big.sum()) + int(not big.all())
    power = chisquare_power(n, max(cells, 2), alpha / 2, delta) if n else None
    out = [
        CheckResult(
            name,
            chi.statistic,
            chi.dof,
            chi.pvalue,
            alpha,
            chi.pvalue < alpha / 2,
            power,
            {},
            alpha / 2,
            "chi-square",
        )
    ]
    if zero_hits.size:
        i = int(zero_hits[0])
        out.append(zero_cell_result(name, int(c[i]), alpha / 2, {"cell": labels(i)}))
        return out
    cell = cell_binomial(counts, probs, alpha=alpha / 2)
    k = int(pos.sum()) or 1
    out.append(
        CheckResult(
            name,
            round(abs(cell.z), 4),
            k,
            cell.pvalue,
            alpha,
            bool(cell.flagged),
            None,
            {
                "cell": labels(cell.cell),
                "count": cell.count,
                "expected": round(cell.expected, 3),
                "z": round(cell.z, 2),
            },
            alpha / 2 / k,
            "max cell",
        )
    )
    return out


def extend_counts(blocks: dict, target, horizon: int, rng) -> dict:
    """Multinomial extension of block counts by exact target sampling to ``horizon`` tokens."""
    out: dict = {}
    stack = list(blocks.items())
    while stack:
        prefix, c = stack.pop()
        if len(prefix) >= horizon:
            out[prefix] = out.get(prefix, 0) + c
            continue
        row = np.asarray(target(prefix), dtype=np.float64)
        for y, k in enumerate(rng.multinomial(c, row / row.sum())):
            if k:
                stack.append((prefix + (y,), int(k)))
    return out


def big_sequences(target, horizon: int, thr: float) -> dict:
    """Sequences of ``horizon`` tokens with target probability ``>= thr`` (depth-first, pruned)."""
    big: dict = {}
    stack = [((), 1.0)]
    while stack:
        prefix, p = stack.pop()
        if len(prefix) == horizon:
            big[prefix] = p
            continue
        for y, q in enumerate(np.asarray(target(prefix), dtype=np.float64)):
            if p * q >= thr:
                stack.append((prefix + (y,), p * q))
    return big


def auto_samples(
    case: Case | MarginalCase, alpha: float, power: float, delta: float, *, cap: int = 20000
) -> int:
    """Samples for ``case`` so that the completed-block (every prefix length, at ``alpha / horizon``),
    block and exit chi-squares (at level ``alpha``) all have power ``>= power`` at TV ``delta`` on the
    cells their pooling forms."""
    block = case_block_law(case)[0] if isinstance(case, Case) else None
    n = max(sample_size(30, alpha, power, delta), getattr(case, "min_samples", 0))
    # more samples -> more unpooled cells -> more samples; converges (cells are finite)
    for _ in range(50):
        need = max(
            sample_size(
                len(big_sequences(case.target, k, MIN_EXPECTED / n)) + 1,
                alpha / case.horizon,
                power,
                delta,
            )
            for k in range(1, case.horizon + 1)
        )
        if block is not None:
            need = max(
                [need]
                + [
                    sample_size(c, alpha, power, delta)
                    for c in (
                        int((n * block >= MIN_EXPECTED).sum()) + 1,
                        int((n * block.sum(1) >= MIN_EXPECTED).sum()) + 1,
                    )
                ]
            )
        need = min(cap, need)
        if need <= n:
            return n
        n = need
    return n


def _seq_prob(target, seq) -> float:
    p = 1.0
    for t in range(len(seq)):
        p *= float(target(seq[:t])[seq[t]])
    return p


def completed_check(
    observed: dict, target, horizon: int, n: int, alpha: float, delta: float, tree: DraftTree | None
) -> list[CheckResult]:
    """The completed sequences' first ``k`` tokens against the target's ``k``-token law, for every
    ``k = 1..horizon``, each its own pair of rows (:func:`dist_check`) at level ``alpha / horizon``
    (short prefixes have few cells, hence power against bonus-law bugs; the full horizon sees every
    token). Chi-square over the sequences of expected count >= MIN_EXPECTED plus one pooled remainder.
    Observed sequences the target gives probability zero are a ``zero cell`` row at their length."""
    level = alpha / horizon
    results = []
    for k in range(1, horizon + 1):
        obs_k: dict = {}
        for s, c in observed.items():
            obs_k[s[:k]] = obs_k.get(s[:k], 0) + c
        zero = sorted(s for s in obs_k if _seq_prob(target, s) == 0.0)
        big = big_sequences(target, k, MIN_EXPECTED / n)
        seqs = sorted(big)
        n_pos = n - sum(obs_k[s] for s in zero)
        counts = [obs_k.get(s, 0) for s in seqs] + [n_pos - sum(obs_k.get(s, 0) for s in seqs)]
        probs = np.array([big[s] for s in seqs] + [max(1.0 - sum(big.values()), 0.0)])

        def label(i, seqs=seqs):
            return (
                {"sequence": "pooled rare sequences"}
                if i >= len(seqs)
                else _seq_label(seqs[i], tree)
            )

        rows = dist_check(
            f"completed_block k={k}", counts, probs / probs.sum(), level, label, delta
        )
        if zero:
            rows = [r for r in rows if r.test == "chi-square"] + [
                zero_cell_result(
                    f"completed_block k={k}",
                    obs_k[zero[0]],
                    level / 2,
                    {**_seq_label(zero[0], tree), "reason": "count in a zero cell"},
                )
            ]
        for r in rows:
            r.worst["prefix_length"] = k
        results += rows
    return results


def _seq_label(seq, tree):
    out = {"sequence": list(seq)}
    if tree is not None:
        node = 0
        for t in seq:
            nxt = tree.child_with_token(node, t)
            if nxt is None:
                break
            node = nxt
        out["node"] = node
    return out


def case_block_law(case: Case):
    probs = case.probs
    tree = case.tree
    edge = np.ones(tree.num_nodes)
    edge[1:] = probs[tree.parent[1:], tree.token[1:]]
    prefix = np.ones(tree.num_nodes)
    for u in range(1, tree.num_nodes):
        prefix[u] = prefix[tree.parent[u]] * edge[u]
    masked = probs.copy()
    masked[tree.parent[1:], tree.token[1:]] = 0.0
    block = prefix[:, None] * masked
    return block / block.sum(), prefix


def _residual_bonus_checks(tree, counts, block, w, alpha: float) -> list[CheckResult]:
    """The residual bonus law: a sum of per-node chi-squares of the bonus counts given each exit
    node's count (a diagnostic naming the node whose bonus law is off; its power is not claimed),
    plus a zero-cell result when a bonus was one of its exit node's child tokens."""
    res = []
    stat, dof, worst, zero_hit = 0.0, 0, (1.0, {}), None
    for v in range(tree.num_nodes):
        m = counts[v].sum()
        if m == 0 or w[v] <= 0:
            continue
        r = block[v] / w[v]
        chi = pooled_chisquare(counts[v], r / r.sum(), min_expected=MIN_EXPECTED)
        if chi.zero_cell_hits:
            zero_hit = {
                "node": v,
                "bonus": chi.zero_cell_hits[0],
                "reason": "bonus is a child token",
            }
        stat += chi.statistic if np.isfinite(chi.statistic) else 0.0
        dof += chi.dof
        if chi.dof and chi.pvalue < worst[0]:
            worst = (chi.pvalue, {"node": v, "statistic": round(chi.statistic, 2), "dof": chi.dof})
    p = float(sps.chi2.sf(stat, dof)) if dof else 1.0
    # diagnostic (names the node whose bonus law is off); its power is not claimed
    res.append(
        CheckResult(
            "residual_bonus",
            stat,
            dof,
            p,
            alpha,
            p < alpha,
            None,
            worst[1],
            alpha,
            "chi-square sum",
        )
    )
    if zero_hit:
        res.append(
            zero_cell_result(
                "residual_bonus", int(counts[zero_hit["node"], zero_hit["bonus"]]), alpha, zero_hit
            )
        )
    return res


def _mean_length_check(tree, w, exits, alpha: float) -> tuple[CheckResult, dict]:
    """The z-test of the mean block length against the ceiling ``sum_v w(v) (depth(v) + 1)``; with
    the observed mean, the ceiling and z."""
    n = exits.size
    depth = tree.depth.astype(np.float64)
    mean = float((w * (depth + 1)).sum())
    var = float((w * (depth + 1) ** 2).sum() - mean**2)
    obs = float((tree.depth[exits] + 1).mean())
    z = (
        (obs - mean) / np.sqrt(var / n)
        if var > 0
        else (0.0 if np.isclose(obs, mean) else np.inf * np.sign(obs - mean))
    )
    pz = float(2 * sps.norm.sf(abs(z)))
    check = CheckResult(
        "mean_length",
        float(z),
        0,
        pz,
        alpha,
        pz < alpha,
        None,
        {"observed": round(obs, 5), "ceiling": round(mean, 5)},
        alpha,
        "z",
    )
    return check, {"mean_length": obs, "ceiling": mean, "z": float(z)}


def check_case(
    case: Case,
    exits: np.ndarray,
    bonus: np.ndarray,
    alpha: float,
    delta: float,
    rng: np.random.Generator,
) -> tuple[list[CheckResult], dict]:
    """Every check of one conditional-mode case on ``exits`` / ``bonus`` (the exit node and bonus
    token of each call): the completed-block law, the block and exit laws, the residual bonus law and
    the mean length; with the observed mean length, its ceiling and z."""
    tree, n = case.tree, exits.size
    block, prefix = case_block_law(case)
    counts = np.zeros_like(block)
    np.add.at(counts, (exits, bonus), 1)
    res = []
    blocks: dict = {}
    for (v, y), c in zip(*np.unique(np.stack([exits, bonus], 1), axis=0, return_counts=True)):
        key = tree.path(int(v)) + (int(y),)
        blocks[key] = blocks.get(key, 0) + int(c)
    observed = extend_counts(blocks, case.target, case.horizon, rng)
    res += completed_check(observed, case.target, case.horizon, n, alpha, delta, tree)
    vocab = case.vocab
    node_label = lambda i: {"node": int(i // vocab), "bonus": int(i % vocab)}  # noqa: E731
    res += dist_check("block", counts, block, alpha, node_label, delta)
    w = block.sum(1)
    res += dist_check("exit", counts.sum(1), w, alpha, lambda i: {"node": int(i)}, delta)
    res += _residual_bonus_checks(tree, counts, block, w, alpha)
    mean_check, lengths = _mean_length_check(tree, w, exits, alpha)
    res.append(mean_check)
    return res, lengths


__all__ = [
    "MIN_EXPECTED",
    "CheckResult",
    "zero_cell_result",
    "dist_check",
    "extend_counts",
    "big_sequences",
    "auto_samples",
    "completed_check",
    "case_block_law",
    "check_case",
]
