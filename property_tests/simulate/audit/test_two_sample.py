"""The audit's statistics: the two-sample test holds its level, its power bound holds, and the audit
imports neither torch nor JAX."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exitlaw.simulate.audit.client import _sample
from exitlaw.simulate.audit.two_sample import (
    pooled_power,
    two_sample_chisquare,
    two_sample_power,
    two_sample_size,
)
from exitlaw.simulate.stats import sample_size


def _rate(p, q, n, reps, alpha, seed, max_cells=6):
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(reps):
        a = Counter(rng.choice(len(p), size=n, p=p).tolist())
        b = Counter(rng.choice(len(q), size=n, p=q).tolist())
        hits += two_sample_chisquare(a, b, max_cells=max_cells).rejects(alpha)
    return hits / reps


def test_the_two_sample_test_holds_its_level_with_cells_chosen_from_combined_counts():
    p = np.array(
        [0.3, 0.2, 0.15, 0.1, 0.08, 0.07, 0.05, 0.03, 0.02]
    )  # more outcomes than cells: pooling runs
    rate = _rate(p, p, n=120, reps=600, alpha=0.05, seed=1)
    assert 0.025 <= rate <= 0.08, rate  # 0.05 +- ~3.4 standard errors


def test_the_power_bound_holds_at_the_stated_tv_and_the_one_sample_bound_would_overstate_it():
    delta, alpha, power = 0.2, 0.05, 0.8
    p, q = (
        np.array([0.5, 0.5]),
        np.array([0.5 + delta, 0.5 - delta]),
    )  # TV delta, the bound nearly tight
    n = two_sample_size(cells=2, alpha=alpha, power=power, delta=delta)
    assert two_sample_power(n, n, cells=2, alpha=alpha, delta=delta) >= power
    assert _rate(p, q, n, reps=300, alpha=alpha, seed=2, max_cells=2) >= power - 0.07
    # planning with the one-sample bound (4 n delta^2) asks half the samples: the power is then far lower
    n_wrong = sample_size(2, alpha, power, delta)
    assert n_wrong < 0.6 * n
    assert _rate(p, q, n_wrong, reps=300, alpha=alpha, seed=3, max_cells=2) < power - 0.15


def test_the_test_is_symmetric_and_degenerate_samples_give_no_evidence():
    a, b = Counter({(1, 2): 30, (1, 3): 10, (4,): 3}), Counter({(1, 2): 20, (1, 3): 25, (5,): 2})
    ab, ba = two_sample_chisquare(a, b), two_sample_chisquare(b, a)
    assert ab.statistic == pytest.approx(ba.statistic) and ab.pvalue == pytest.approx(ba.pvalue)
    same = two_sample_chisquare(Counter({(7,): 40}), Counter({(7,): 40}))
    assert same.pvalue == 1.0 and not same.rejects(0.5)
    with pytest.raises(ValueError, match="non-empty"):
        two_sample_chisquare(Counter(), b)


def test_token_ids_come_from_token_ids_or_from_vllm_token_id_strings():
    assert _sample({"token_ids": [5, 6], "text": "ab"}, False, "s").tokens == (5, 6)
    lp = {
        "tokens": ["token_id:9", "token_id:3"],
        "top_logprobs": [{"token_id:9": -0.1, "token_id:4": -2.5}, {}],
    }
    s = _sample({"text": "xy", "logprobs": lp}, False, "s")
    assert s.tokens == (9, 3) and s.top[0] == {9: -0.1, 4: -2.5}
    chat = {
        "message": {"content": "x"},
        "logprobs": {
            "content": [
                {
                    "token": "token_id:11",
                    "logprob": -1.0,
                    "top_logprobs": [{"token": "token_id:11", "logprob": -1.0}],
                }
            ]
        },
    }
    assert _sample(chat, True, "s").tokens == (11,)
    from exitlaw.simulate.audit.client import ServerRefused

    with pytest.raises(ServerRefused, match="token ids"):
        _sample({"text": "no ids here"}, False, "s")


def test_the_audit_imports_neither_torch_nor_jax():
    code = (
        "import sys; import exitlaw.simulate.audit.run, exitlaw.cli.serve; from exitlaw.cli import build_parser; "
        "build_parser(); heavy = [m for m in ('torch', 'jax') if m in sys.modules]; print(heavy); "
        "sys.exit(1 if heavy else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@settings(max_examples=100, deadline=None)
@given(
    sizes=st.lists(st.tuples(st.integers(0, 60), st.integers(0, 60)), min_size=1, max_size=4),
    cells=st.integers(2, 6),
    alpha=st.sampled_from([0.001, 0.01, 0.05]),
    delta=st.floats(0.01, 0.5),
)
def test_pooled_power_is_the_two_sample_bound_summed_and_zero_without_information(
    sizes, cells, alpha, delta
):
    """One test pooled is that test's own bound; tests without samples on both sides add nothing;
    with no informative test the pooled test has no power (not its level)."""
    informative = [(a, b) for a, b in sizes if a and b]
    got = pooled_power(sizes, cells=cells, alpha=alpha, delta=delta)
    if not informative:
        assert got == 0.0
    elif len(sizes) == 1:
        a, b = sizes[0]
        want = two_sample_power(a, b, cells=cells, alpha=alpha, delta=delta)
        assert got == pytest.approx(want, rel=1e-9, abs=1e-15)
    else:
        assert alpha <= got <= 1.0 and 0.0 <= got
