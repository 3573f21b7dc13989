"""The registry's facts checked by what the verifiers do, not by their names (issue 52).

Each engine verifier that samples is run through the public dispatchers (``verify`` and
``verify_batch``, by registered name) at ``T > 0`` under a top-k / top-p filter, where every fact the
dispatch reads changes the law if it is wrong: ``engine_rows`` (which rows are processed: a verifier
handed raw rows samples tokens the filter removed), ``greedy_only`` (a sampling verifier walked
greedily gives a one-hot law) and ``saturating`` (the exit law is the block law of the processed rows,
so ``E[L] = 1 + C_p(T)``, the coverage of the processed target). The expected law is computed here
from :func:`exitlaw.theory.process_logits` and the tree, by hand, not by the code under test. With
top-k = 1 the processed target is one-hot, so every saturating verifier must return exactly the greedy
walk. The simulator's exact procedures are held to the same facts on rational rows processed by
:func:`exitlaw.theory.process_rows_exact`.
"""

from __future__ import annotations

from collections import Counter
from fractions import Fraction

import numpy as np
import pytest
import torch
from scipy import stats as sps

from exitlaw.engine.decode.batch_tree import to_batch_tree
from exitlaw.engine.decode.device_tree import to_device_tree
from exitlaw.engine.decode.dispatch import DISPATCH, verify, verify_batch
from exitlaw.engine.decode.verifiers import VerifierGenerators
from exitlaw.theory import DraftTree, SamplingSettings, process_logits, process_rows_exact, registry
from exitlaw.theory.registry import FIXED_TREE

# root 0; children of the root: tokens 1, 2; of node 1: tokens 0, 3; of node 2: token 1; of node 3: 2
PARENT = np.array([-1, 0, 0, 1, 1, 2, 3])
TOKEN = np.array([0, 1, 2, 0, 3, 1, 2])
V = 5
TREE = DraftTree(parent=PARENT, token=TOKEN)
# the engine's verifiers are those its dispatch table holds (registered where they are defined)
SAMPLING = [n for n in DISPATCH if not registry.verifier(n).greedy_only]
ALPHA = 1e-4  # per goodness-of-fit test (fixed seeds: the outcome is deterministic)


def _logits(seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(len(PARENT), V, generator=g, dtype=torch.float64) * 1.5


def block_law(probs: np.ndarray) -> dict[tuple[int, int], float]:
    """``P(exit v, bonus x) = P(v) p_v(x)`` for ``x`` not a child token of ``v`` (docs/design.md §1.2),
    with ``P(v)`` the product of the rows along the path: the law of every saturating verifier."""
    reach = np.ones(len(PARENT))
    for u in range(1, len(PARENT)):
        reach[u] = reach[PARENT[u]] * probs[PARENT[u], TOKEN[u]]
    law = {}
    for v in range(len(PARENT)):
        kids = {int(TOKEN[u]) for u in range(1, len(PARENT)) if PARENT[u] == v}
        for x in range(V):
            if x not in kids and reach[v] * probs[v, x] > 0:
                law[(v, x)] = reach[v] * probs[v, x]
    return law


def coverage(probs: np.ndarray) -> float:
    """``C_p = sum_{u != root} P(u)``: ``E[L] = 1 + C_p`` for a saturating verifier."""
    reach = np.ones(len(PARENT))
    for u in range(1, len(PARENT)):
        reach[u] = reach[PARENT[u]] * probs[PARENT[u], TOKEN[u]]
    return float(reach[1:].sum())


def _depth(v: int) -> int:
    d = 0
    while PARENT[v] >= 0:
        v, d = int(PARENT[v]), d + 1
    return d


def _samples(name: str, logits: torch.Tensor, settings, n: int, batched: bool) -> list:
    if batched:
        b = 250
        bt = to_batch_tree([TREE] * b)
        out = []
        for k in range(n // b):
            rows = logits.expand(b, *logits.shape).contiguous()
            out += verify_batch(name, bt, rows, settings, VerifierGenerators(1000 + k))
        return [(r.exit_node, r.bonus) for r in out]
    dt = to_device_tree(TREE, "cpu")
    gens = VerifierGenerators(7)
    return [
        (r.exit_node, r.bonus) for r in (verify(name, dt, logits, settings, gens) for _ in range(n))
    ]


def _fits(counts: Counter, law: dict, n: int) -> tuple[bool, str]:
    outside = {k: c for k, c in counts.items() if k not in law}
    if outside:
        return False, f"outcomes of probability 0 under the processed law: {outside}"
    cells = sorted(law)
    obs = np.array([counts.get(k, 0) for k in cells], dtype=float)
    exp = np.array([law[k] for k in cells]) * n
    # pool cells expected below 5 into one
    small = exp < 5
    if small.any():
        obs = np.append(obs[~small], obs[small].sum())
        exp = np.append(exp[~small], exp[small].sum())
    p = sps.chisquare(obs, exp).pvalue if len(obs) > 1 else 1.0
    return p >= ALPHA, f"chi-square p = {p:.3g}"


SETTINGS = [
    SamplingSettings(1.0, top_k=2),
    SamplingSettings(0.7, top_p=0.6),
    SamplingSettings(1.3, min_p=0.3, top_k=3),
]


@pytest.mark.parametrize("settings", SETTINGS, ids=lambda s: str(s.filters()))
@pytest.mark.parametrize("name", SAMPLING)
def test_each_sampling_engine_verifier_samples_the_block_law_of_the_processed_rows(name, settings):
    logits = _logits()
    probs = process_logits(logits.numpy(), settings)
    law = block_law(probs)
    raw = block_law(process_logits(logits.numpy(), SamplingSettings(settings.temperature)))
    assert set(raw) - set(law), "the filter removes no outcome here: the test would see no fact"
    n = 2000
    facts = registry.verifier(name)
    forms = [False] + ([True] if DISPATCH[name].batched is not None else [])
    for batched in forms:
        got = _samples(name, logits, settings, n, batched)
        ok, why = _fits(Counter(got), law, n)
        assert ok, (name, "batched" if batched else "single", why)
        if facts.saturating:  # E[L] = 1 + C_p(T) of the processed target
            lengths = np.array([_depth(v) + 1 for v, _ in got], dtype=float)
            want = 1 + coverage(probs)
            assert sum(p * (_depth(v) + 1) for (v, _), p in law.items()) == pytest.approx(want)
            se = lengths.std(ddof=1) / np.sqrt(n)
            assert abs(lengths.mean() - want) < 4.5 * se + 1e-12, (name, lengths.mean(), want)


@pytest.mark.parametrize("name", SAMPLING)
def test_with_top_k_1_every_saturating_verifier_returns_the_greedy_walk(name):
    """Top-k = 1 makes every processed row one-hot on its first maximum: a saturating verifier whose
    rows are processed accepts the greedy path and its bonus, every time, single and batched; raw rows
    would not (the unfiltered rows here are far from one-hot)."""
    logits = _logits(3)
    settings = SamplingSettings(1.0, top_k=1)
    greedy = verify("greedy", to_device_tree(TREE, "cpu"), logits, SamplingSettings(0.0), None)
    assert registry.verifier(name).saturating
    probs_raw = process_logits(logits.numpy(), SamplingSettings(1.0))
    assert probs_raw.max() < 0.95
    got = set(_samples(name, logits, settings, 200, False))
    if DISPATCH[name].batched is not None:
        got |= set(_samples(name, logits, settings, 250, True))
    assert got == {(greedy.exit_node, greedy.bonus)}, name


def test_the_greedy_only_fact_routes_exactly_the_greedy_verifier_to_the_walk_at_t_above_0():
    """At T = 1 without a filter: ``greedy`` (greedy_only) is deterministic, every other engine verifier
    gives more than one outcome on rows far from one-hot."""
    logits = _logits(5)
    dt = to_device_tree(TREE, "cpu")
    assert SAMPLING and "greedy" in DISPATCH
    for name in DISPATCH:
        outs = {
            tuple(verify(name, dt, logits, SamplingSettings(1.0), VerifierGenerators(s))[:2])
            for s in range(40)
        }
        assert (len(outs) == 1) == registry.verifier(name).greedy_only, (name, outs)


def test_each_exact_procedure_of_a_saturating_verifier_is_the_block_law_of_processed_rows():
    """The simulator's exact enumeration (Fractions) of every registered procedure on rows processed by
    the exact filters: the block law, so ``E[L] = 1 + C_p(T)`` exactly, for each sampling setting."""
    from exitlaw.simulate.verifiers import implementation_block_law
    from exitlaw.theory import reference_block_law

    tree = DraftTree(np.array([-1, 0, 0, 1]), np.array([0, 1, 2, 0]))
    base = [[5, 3, 2, 1], [1, 4, 4, 2], [2, 2, 1, 6], [3, 1, 1, 1]]
    from exitlaw.simulate.verifiers import PROCEDURES

    names = [v.name for v in registry.VERIFIERS if v.kind == FIXED_TREE and v.name in PROCEDURES]
    assert len(names) >= 4 and all(registry.verifier(n).saturating for n in names)
    # top-k 1 makes every row one-hot (no ties in ``base``): the greedy procedure's target too
    for settings in (
        SamplingSettings(1.0, top_k=2),
        SamplingSettings(1.0, top_p=0.5),
        SamplingSettings(1.0, top_k=1),
    ):
        rows = process_rows_exact(base, settings)
        reach = [Fraction(1)] * 4
        for u in range(1, 4):
            reach[u] = reach[tree.parent[u]] * rows[tree.parent[u]][tree.token[u]]
        want_length = 1 + sum(reach[1:])  # 1 + C_p(T)
        for name in names:
            if registry.verifier(name).greedy_only and settings.top_k != 1:
                continue
            got = implementation_block_law(name, tree, rows, one=Fraction(1))
            assert got == reference_block_law(tree, rows), (name, settings)
            depth = [0, 1, 1, 2]
            length = sum(sum(row) * (depth[v] + 1) for v, row in enumerate(got))
            assert length == want_length, (name, settings, length, want_length)


def test_a_fast_twin_samples_the_law_of_its_saturating_original():
    """Each registered fast twin (``twin_of``) of a saturating verifier samples the block law of the
    processed rows (the fact ``saturating`` it carries), here TEV's vectorised twin."""
    from exitlaw.simulate.verifiers.fast import tev_many

    twins = [v for v in registry.VERIFIERS if v.twin_of is not None]
    assert twins and all(v.saturating == registry.verifier(v.twin_of).saturating for v in twins)
    assert {v.twin_of for v in twins} == {"tev"}
    probs = process_logits(_logits(11).numpy(), SamplingSettings(1.0, top_k=3))
    n = 20000
    exit_node, bonus = tev_many(TREE, probs, np.random.default_rng(0), n)
    for v in twins:
        assert v.saturating
        ok, why = _fits(Counter(zip(exit_node.tolist(), bonus.tolist())), block_law(probs), n)
        assert ok, (v.name, why)
        lengths = np.array([_depth(int(x)) + 1 for x in exit_node], dtype=float)
        se = lengths.std(ddof=1) / np.sqrt(n)
        assert abs(lengths.mean() - (1 + coverage(probs))) < 4.5 * se
