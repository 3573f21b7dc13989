"""Exact laws of the verifier implementations, by enumeration of every draw.

Each verifier is run under ``enumerate_law`` (the same code as the sampling
form), so these properties are about the implementation, not a formula.
Rows differ per node and per parent (strategies and ``ToyModel``).
"""

from __future__ import annotations

from fractions import Fraction

import jax
import numpy as np
import pytest
from hypothesis import assume, example, given, note, settings
from hypothesis import strategies as st

from exitlaw.simulate.lab.toy_target import ToyModel, block_tokens, complete_block, decode_rounds
from exitlaw.simulate.randomness import GeneratorRandomness, enumerate_law
from exitlaw.simulate.stats import describe_seed, dkw_check, pooled_chisquare
from exitlaw.simulate.strategies import draft_trees, logits_rows, trees_with_rows
from exitlaw.simulate.verifiers import (
    chain_speculative,
    greedy,
    greedy_procedure,
    implementation_block_law,
    implementation_law,
    predraw,
    predraw_procedure,
    residual,
    residual_procedure,
    speculative_round,
    tev,
    tev_procedure,
    tsubame_round,
    verify_sampled,
)
from exitlaw.simulate.verifiers.fast import FAST_SAMPLERS, chain_speculative_many
from exitlaw.theory import DraftTree, block_law, oracle_tree, reference_block_law, reference_law
from helpers.sampled_law import exact_exit_bonus_law, int_rows, seed_of_test

_PAD = 12  # trees_with_rows() has at most 12 nodes: one compilation per vocabulary size
_jit_block_law = jax.jit(block_law)


def _jax_block_law(tree: DraftTree, floats: np.ndarray) -> np.ndarray:
    """``exitlaw.theory.block_law`` (JAX, float64) on the tree padded to a fixed node count."""
    pad = np.full((_PAD, floats.shape[1]), 1.0 / floats.shape[1])
    pad[: tree.num_nodes] = floats
    return np.asarray(_jit_block_law(tree.padded(_PAD), pad))[: tree.num_nodes]


EXACT = {"predraw": predraw_procedure, "residual": residual_procedure, "tev": tev_procedure}
ONE = Fraction(1)


def _residual_with_order(perm_seed: int):
    """Residual with a child order drawn per node from ``perm_seed`` (any order must give the same law)."""

    def proc(tree, rows, rand):
        g = np.random.default_rng(perm_seed)
        orders = {v: list(g.permutation(tree.children[v])) for v in range(tree.num_nodes)}
        return residual_procedure(tree, rows, rand, child_order=orders.__getitem__)

    return proc


@given(case=trees_with_rows(), name=st.sampled_from(sorted(EXACT)), perm_seed=st.integers(0, 2**16))
def test_exact_law_of_predraw_residual_tev_equals_canonical_block_law(case, name, perm_seed):
    tree, floats, exact = case
    proc = _residual_with_order(perm_seed) if name == "residual" else EXACT[name]
    got = implementation_block_law(proc, tree, exact, one=ONE)
    assert got == reference_block_law(tree, exact)
    got_f = implementation_block_law(proc, tree, floats)
    np.testing.assert_allclose(got_f, _jax_block_law(tree, floats), rtol=0, atol=1e-12)


@given(case=trees_with_rows(), name=st.sampled_from(sorted(EXACT)))
def test_expected_block_length_equals_one_plus_coverage(case, name):
    tree, _, exact = case
    law = implementation_law(EXACT[name], tree, exact, one=ONE)
    mean_len = sum(((int(tree.depth[v]) + 1) * p for (v, _), p in law.items()), Fraction(0))
    assert mean_len == reference_law(tree, exact).expected_length


@given(data=st.data(), vocab=st.integers(2, 5))
def test_greedy_is_the_zero_temperature_limit(data, vocab):
    tree = data.draw(draft_trees(max_nodes=8, vocab_size=vocab))
    logits = data.draw(logits_rows(tree.num_nodes, vocab_size=vocab))
    top2 = np.sort(logits, axis=1)[:, -2:]
    assume(np.all(top2[:, 1] - top2[:, 0] > 0.25))  # a unique argmax per row
    target = greedy_procedure(tree, logits)
    assert greedy(tree, np.exp(logits) / np.exp(logits).sum(1, keepdims=True), None) == target
    misses = []
    for temp in (1.0, 0.1, 0.02):
        z = logits / temp
        probs = np.exp(z - z.max(1, keepdims=True))
        probs /= probs.sum(1, keepdims=True)
        for name, proc in EXACT.items():
            law = implementation_law(proc, tree, probs)
            misses.append((temp, name, 1.0 - law.get(target, 0.0)))
    note(misses)
    for name in EXACT:
        m = [miss for t, n, miss in misses if n == name]
        assert m[2] <= m[1] + 1e-12 and m[1] <= m[0] + 1e-12, (
            "mass off greedy must shrink as T -> 0"
        )
        assert m[2] < 1e-4
    one_hot = np.eye(vocab)[logits.argmax(1)]
    for proc in EXACT.values():
        assert implementation_law(proc, tree, one_hot) == {target: 1.0}


@given(case=trees_with_rows(), seed=st.integers(0, 2**16))
def test_tev_is_sibling_order_invariant(case, seed):
    tree, _, exact = case
    perm = tree.reorder_siblings(np.random.default_rng(seed))
    rows_by_path = {tree.path(v): exact[v] for v in range(tree.num_nodes)}
    perm_rows = [rows_by_path[perm.path(v)] for v in range(perm.num_nodes)]
    a = implementation_law(tev_procedure, tree, exact, one=ONE)
    b = implementation_law(tev_procedure, perm, perm_rows, one=ONE)
    by_path = lambda law, t: {(t.path(v), y): p for (v, y), p in law.items()}  # noqa: E731
    assert by_path(a, tree) == by_path(b, perm)


@given(
    tree=draft_trees(max_nodes=7, max_depth=3, vocab_size=3),
    seed=st.integers(0, 10**6),
    name=st.sampled_from(sorted(EXACT)),
)
def test_completed_block_law_equals_target_law(tree, seed, name):
    target = ToyModel(3, seed)
    rows = target.tree_rows(tree)
    horizon = tree.max_depth + 1
    proc = EXACT[name]
    law = enumerate_law(
        lambda r: complete_block(block_tokens(tree, *proc(tree, rows, r)), target, r, horizon),
        one=ONE,
    )
    assert law == target.sequence_law(horizon)


def _oracle_builder(drafter: ToyModel, budget: int):
    return lambda ctx: oracle_tree(
        lambda prefix: drafter.float_row(tuple(ctx) + tuple(prefix)), budget
    )


@settings(max_examples=10)
@given(seed=st.integers(0, 10**6), budget=st.integers(1, 4), name=st.sampled_from(sorted(EXACT)))
def test_multi_round_decoding_reproduces_target_autoregressive_law(seed, budget, name):
    k = 4
    target, drafter = ToyModel(3, seed), ToyModel(3, seed + 1)
    build = _oracle_builder(drafter, budget)
    proc = EXACT[name]
    exact = enumerate_law(lambda r: decode_rounds(target, build, proc, r, k), one=ONE)
    assert exact == target.sequence_law(k)
    ftarget = ToyModel(3, seed, exact=False)
    floats = enumerate_law(lambda r: decode_rounds(ftarget, build, proc, r, k), one=1.0)
    ref = target.sequence_law(k)
    assert set(floats) <= set(ref)
    assert max(abs(floats.get(s, 0.0) - float(p)) for s, p in ref.items()) <= 1e-12


# ----- sampled drafts: exact marginally, not conditionally ---------------------------------
TOPOLOGIES = {
    "chain": [-1, 0, 1, 2],
    "specinfer": [-1, 0, 0, 1, 1],
    "without_replacement": [-1, 0, 0, 1, 2],
}


@settings(max_examples=15)
@given(
    seed=st.integers(0, 10**6), rule=st.sampled_from(sorted(TOPOLOGIES)), vocab=st.integers(2, 4)
)
def test_sampled_draft_verifiers_are_marginally_exact(seed, rule, vocab):
    target = ToyModel(vocab, seed)
    drafter = ToyModel(vocab, seed + 7, zero_prob=0.0 if rule == "without_replacement" else 0.3)
    topology = TOPOLOGIES[rule]
    if rule == "without_replacement" and vocab < 2:
        return
    horizon = 4
    law = enumerate_law(
        lambda r: complete_block(
            speculative_round(topology, target, drafter, r, rule=rule)[0], target, r, horizon
        ),
        one=ONE,
    )
    assert law == target.sequence_law(horizon)


@settings(max_examples=10)
@given(seed=st.integers(0, 10**6), budget=st.integers(1, 4))
def test_tsubame_two_pass_is_marginally_exact(seed, budget):
    target, drafter = ToyModel(3, seed), ToyModel(3, seed + 3, zero_prob=0.0)
    horizon = budget + 1
    law = enumerate_law(
        lambda r: complete_block(
            tsubame_round(target, drafter, r, budget=budget), target, r, horizon
        ),
        one=ONE,
    )
    assert law == target.sequence_law(horizon)


def _fraction_row(weights):
    total = sum(weights)
    return [Fraction(w, total) for w in weights]


@given(
    p=st.lists(st.lists(st.integers(0, 6), min_size=2, max_size=2), min_size=2, max_size=2),
    q=st.lists(st.lists(st.integers(1, 6), min_size=2, max_size=2), min_size=2, max_size=2),
    tokens=st.lists(st.integers(0, 1), min_size=1, max_size=1),
)
@example(p=[[1, 1], [1, 1]], q=[[1, 1], [1, 1]], tokens=[0])  # E[L] = 2 > 1 + C_p = 1.5
def test_sampled_draft_verifiers_are_not_conditionally_exact(p, q, tokens):
    """Chain speculative sampling on a realised chain: conditional ``E[L] >= 1 + C_p(T)``, strict
    exactly when some accepted-with-positive-probability edge has ``p < 1`` and ``q < 1``; when
    strict, the conditional completed-block law is not the target's law."""
    assume(all(sum(r) > 0 for r in p))
    tree = DraftTree.chain(tokens)
    p_rows = [_fraction_row(r) for r in p][: tree.num_nodes]
    q_rows = [_fraction_row(r) for r in q][: tree.num_nodes]
    law = enumerate_law(
        lambda r: verify_sampled(
            list(tree.parent), list(tree.token), p_rows, q_rows, r, without_replacement=False
        ),
        one=ONE,
    )
    mean_len = sum(((int(tree.depth[v]) + 1) * pr for (v, _), pr in law.items()), Fraction(0))
    ceiling = reference_law(tree, p_rows).expected_length
    assert mean_len >= ceiling
    strict = False
    for v in range(1, tree.num_nodes):
        pv, qv = p_rows[v - 1][tokens[v - 1]], q_rows[v - 1][tokens[v - 1]]
        if pv == 0:
            break
        strict = strict or (pv < 1 and qv < 1)
    assert (mean_len > ceiling) == strict
    if strict:
        # completed-block law under a target that continues with p_rows[-1] is not the target's
        target = lambda prefix: p_rows[min(len(prefix), len(p_rows) - 1)]  # noqa: E731
        horizon = tree.max_depth + 1
        completed = enumerate_law(
            lambda r: complete_block(
                block_tokens(
                    tree,
                    *verify_sampled(
                        list(tree.parent),
                        list(tree.token),
                        p_rows,
                        q_rows,
                        r,
                        without_replacement=False,
                    ),
                ),
                target,
                r,
                horizon,
            ),
            one=ONE,
        )
        truth = {(): ONE}
        for _ in range(horizon):
            truth = {
                s + (y,): pr * pp
                for s, pr in truth.items()
                for y, pp in enumerate(target(s))
                if pp > 0
            }
        assert completed != truth


# ----- the public sampling forms run the same procedures ----------------------------------
@pytest.mark.parametrize("name,fn", [("predraw", predraw), ("residual", residual), ("tev", tev)])
def test_public_sampling_forms_match_their_procedure_draw_for_draw(name, fn):
    tree = DraftTree.from_paths([(0,), (1,), (0, 2), (0, 1), (1, 0)])
    probs = np.random.default_rng(3).dirichlet(np.ones(3), size=tree.num_nodes)
    for s in range(50):
        a = fn(tree, probs, np.random.default_rng(s))
        b = EXACT[name](tree, probs, GeneratorRandomness(np.random.default_rng(s)))
        assert a == b and isinstance(a[0], int) and isinstance(a[1], int)


def test_chain_speculative_rejects_a_branching_tree():
    tree = DraftTree.from_paths([(0,), (1,)])
    probs = np.full((3, 2), 0.5)
    with pytest.raises(ValueError, match="chain"):
        chain_speculative(tree, probs, probs, np.random.default_rng(0))


# ----- fast vectorised samplers against their exact twins -----------------------------------
@given(
    case=trees_with_rows(vocab_sizes=(2, 3, 6)),
    name=st.sampled_from(["predraw", "residual", "tev", "greedy"]),
)
def test_fast_samplers_follow_the_exact_law_of_their_twin(case, name):
    """Pooled chi-square (alpha 1e-6, zero cells fail at once) and DKW on the exit depth (alpha 1e-6)."""
    tree, floats, _ = case
    seq = seed_of_test(repr(tree), floats.tobytes().hex(), name)
    exact = implementation_block_law("greedy" if name == "greedy" else name, tree, floats)
    exact = exact / exact.sum()
    n = 20_000
    exits, bonus = FAST_SAMPLERS[name](tree, floats, np.random.default_rng(seq), n)
    counts = np.zeros_like(exact)
    np.add.at(counts, (exits, bonus), 1)
    chi = pooled_chisquare(counts, exact)
    assert not chi.zero_cell_hits and chi.pvalue >= 1e-6, (chi, describe_seed(seq))
    depth_law = np.bincount(tree.depth, weights=exact.sum(1), minlength=tree.max_depth + 1)
    sup, eps = dkw_check(tree.depth[exits], np.cumsum(depth_law), alpha=1e-6)
    assert sup <= eps, (sup, eps, describe_seed(seq))


@given(vocab=st.integers(2, 5), depth=st.integers(1, 4), data=st.data())
def test_fast_chain_speculative_sampler_follows_its_exact_twin(vocab, depth, data):
    tokens = data.draw(st.lists(st.integers(0, vocab - 1), min_size=depth, max_size=depth))
    tree = DraftTree.chain(tokens)
    p = int_rows(data, depth + 1, vocab, 0, 5)
    q = int_rows(data, depth + 1, vocab, 1, 5)
    assume(np.all(p.sum(1) > 0))
    p, q = p / p.sum(1, keepdims=True), q / q.sum(1, keepdims=True)
    exact = exact_exit_bonus_law(tree, p, q, vocab, without_replacement=False)
    seq = seed_of_test(repr(tree), p.tobytes().hex(), q.tobytes().hex())
    exits, bonus = chain_speculative_many(tree, p, q, np.random.default_rng(seq), 20_000)
    counts = np.zeros_like(exact)
    np.add.at(counts, (exits, bonus), 1)
    chi = pooled_chisquare(counts, exact / exact.sum())
    assert not chi.zero_cell_hits and chi.pvalue >= 1e-6, (chi, describe_seed(seq))
