"""The kit rejects every mutant of the zoo with the right verdict, with computed power.

For mutants written over the randomness interface the kit's power against the
mutant is computed exactly: the mutant's completed-block and block laws are
enumerated on the case where the kit rejected it, pooled as the kit pools, and
fed to the noncentral chi-square at the kit's per-check level.
"""

from __future__ import annotations

import numpy as np
import pytest

from exitlaw.simulate.kit.cases import conditional_cases
from exitlaw.simulate.kit.checks import MIN_EXPECTED, auto_samples, big_sequences, case_block_law
from exitlaw.simulate.kit.conformance import NOT_EXACT, run_kit
from exitlaw.simulate.lab.toy_target import block_tokens, complete_block
from exitlaw.simulate.randomness import enumerate_law
from exitlaw.simulate.stats import cell_power, power_against
from helpers.mutants import MUTANTS


def kit_power(mutant, case, n: int, alpha: float) -> dict:
    """Exact power of the kit's completed-block and block chi-squares (level ``alpha / 2``) against ``mutant``."""
    rows = [np.asarray(r, dtype=np.float64) for r in case.probs]
    law = enumerate_law(lambda r: mutant.procedure(case.tree, rows, r), one=1.0)
    block = np.zeros_like(case.probs)
    for (v, y), p in law.items():
        block[v, y] += p
    canonical = case_block_law(case)[0]
    completed = enumerate_law(
        lambda r: complete_block(
            block_tokens(case.tree, *mutant.procedure(case.tree, rows, r)),
            case.target,
            r,
            case.horizon,
        ),
        one=1.0,
    )
    level = (
        alpha / 2 / case.horizon
    )  # the kit tests every prefix length k at alpha / horizon, half each
    best = 0.0
    for k in range(1, case.horizon + 1):
        truncated: dict = {}
        for s, p in completed.items():
            truncated[s[:k]] = truncated.get(s[:k], 0.0) + p
        big = big_sequences(case.target, k, MIN_EXPECTED / n)
        seqs = sorted(big)
        p_cells = np.array([big[s] for s in seqs] + [max(1.0 - sum(big.values()), 0.0)])
        forbidden = sum(p for s, p in truncated.items() if _prob(case.target, s) == 0.0)
        q_cells = np.array([truncated.get(s, 0.0) for s in seqs] + [0.0])
        q_cells[-1] = max(1.0 - q_cells[:-1].sum() - forbidden, 0.0)
        # mass on sequences the target forbids is a zero-probability cell of its own
        p_all = np.append(p_cells / p_cells.sum(), 0.0)
        q_all = np.append(q_cells, forbidden)
        best = max(best, power_against(n, p_all, q_all, level), cell_power(n, p_all, q_all, level))
    # the kit rejects if the chi-square (alpha / 2) or a Bonferroni cell (alpha / 2) rejects:
    # the larger of the powers is a lower bound on the power of the check
    return {
        "completed_block": best,
        "block": max(
            power_against(n, canonical, block / block.sum(), alpha / 2),
            cell_power(n, canonical, block / block.sum(), alpha / 2),
        ),
    }


def _prob(target, seq) -> float:
    p = 1.0
    for t in range(len(seq)):
        p *= float(target(seq[:t])[seq[t]])
    return p


@pytest.mark.slow
@pytest.mark.parametrize("mutant", MUTANTS, ids=[m.name for m in MUTANTS])
def test_kit_rejects_mutant_with_the_right_verdict_and_computed_power(mutant, seed_below):
    seed = seed_below(1000)
    rep = run_kit(
        mutant.sample, name=f"property_tests.helpers.mutants:{mutant.name}_verifier", seed=seed
    )
    assert rep.verdict == mutant.expected, (
        f"{mutant.name} ({mutant.bug}): verdict {rep.verdict!r}, expected {mutant.expected!r}; "
        f"seed {seed}; failure {rep.failure}"
    )
    assert rep.exit_code != 0
    failed = rep.failure
    assert {"case", "tree", "check", "statistic", "pvalue"} <= set(failed)
    if mutant.procedure is None:
        return  # raw-uniform mutant: its law is not enumerable; rejection across seeds is shown above
    # power of the whole kit >= 1 - prod over cases (1 - power of the case's deciding check):
    # cases use independent streams. Start with the case that rejected; stop at 0.999.
    cases = conditional_cases(seed)
    cases.sort(key=lambda c: c.name != failed["case"])
    check = "completed_block" if mutant.expected == NOT_EXACT else "block"
    miss, per_case = 1.0, {}
    for case in cases:
        if case.vocab > 10:
            continue  # enumeration too large; its power is not counted (the bound stays valid)
        n = auto_samples(case, rep.alpha_per_check / 2, rep.power_target, rep.delta)
        per_case[case.name] = kit_power(mutant, case, n, rep.alpha_per_check)[check]
        miss *= 1.0 - per_case[case.name]
        if 1.0 - miss >= 0.999:
            break
    print(f"{mutant.name}: computed power of the kit {1 - miss:.6f} (per case {per_case})")
    assert 1.0 - miss >= 0.999, (
        f"{mutant.name}: computed power {1 - miss} (per case {per_case}) at seed {seed}"
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    "mutant", [m for m in MUTANTS if m.procedure is None], ids=lambda m: m.name
)
def test_kit_rejects_raw_uniform_mutants_on_a_second_seed(mutant, seed_below):
    seed = seed_below(1000) + 1
    rep = run_kit(mutant.sample, name=mutant.name, seed=seed)
    assert rep.verdict == mutant.expected, f"seed {seed}: {rep.failure}"


def test_zoo_has_at_least_fifteen_mutants_with_distinct_names():
    assert len(MUTANTS) >= 15
    assert len({m.name for m in MUTANTS}) == len(MUTANTS)
