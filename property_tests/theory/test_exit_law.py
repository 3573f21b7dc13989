"""Properties of the canonical exit law (docs/design.md §1.2), JAX against the Fraction oracle."""

from fractions import Fraction
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import given, note
from hypothesis import strategies as st

from exitlaw.simulate.strategies import draft_trees, logits_rows, trees_with_rows
from exitlaw.theory import (
    DraftTree,
    block_law,
    exit_law,
    exit_law_from_edges,
    exit_law_from_logits,
    gather_edge_probs,
    reference_block_law,
    reference_law,
    residual_rows,
    stack_trees,
)

TOL = 1e-12


@given(trees_with_rows())
def test_exit_law_sums_to_one(case):
    tree, rows, _ = case
    law = exit_law(tree, rows)
    assert abs(float(law.w.sum()) - 1.0) < TOL


@given(trees_with_rows())
def test_exit_law_is_nonnegative(case):
    tree, rows, _ = case
    assert float(exit_law(tree, rows).w.min()) >= -TOL


@given(trees_with_rows())
def test_coverage_is_sum_of_prefixes_and_expected_exit_depth(case):
    tree, rows, _ = case
    law = exit_law(tree, rows)
    by_prefix = float(law.prefix[1:].sum())
    by_depth = float(jnp.sum(tree.depth * law.w))
    assert abs(float(law.coverage) - by_prefix) < TOL
    assert abs(float(law.coverage) - by_depth) < 1e-11
    assert abs(float(law.expected_length) - 1 - by_prefix) < TOL


@given(trees_with_rows())
def test_jax_float64_equals_fraction_oracle(case):
    tree, rows, exact = case
    law = exit_law(tree, rows)
    ref = reference_law(tree, exact)
    for name in ("prefix", "rho", "w"):
        got = np.asarray(getattr(law, name))
        want = np.array([float(x) for x in getattr(ref, name)])
        note(f"{name}: got {got}, want {want}")
        np.testing.assert_allclose(got, want, rtol=0, atol=TOL)
    assert abs(float(law.coverage) - float(ref.coverage)) < TOL


@given(trees_with_rows(max_nodes=8, vocab_sizes=(2, 3, 4)))
def test_block_law_equals_fraction_oracle_and_marginalises_to_w(case):
    tree, rows, exact = case
    joint = np.asarray(block_law(tree, rows))
    ref = np.array([[float(x) for x in r] for r in reference_block_law(tree, exact)])
    np.testing.assert_allclose(joint, ref, rtol=0, atol=TOL)
    np.testing.assert_allclose(joint.sum(1), np.asarray(exit_law(tree, rows).w), atol=1e-12)
    for v in range(tree.num_nodes):
        for c in tree.children[v]:
            assert joint[v, tree.token[c]] == 0.0


@given(trees_with_rows(max_nodes=8))
def test_residual_rows_are_distributions_off_children(case):
    tree, rows, _ = case
    res = np.asarray(residual_rows(tree, rows))
    law = exit_law(tree, rows)
    for v in range(tree.num_nodes):
        kids = [int(tree.token[c]) for c in tree.children[v]]
        assert np.all(res[v, kids] == 0)
        if float(law.rho[v]) > 1e-9:
            assert abs(res[v].sum() - 1) < 1e-9


@given(trees_with_rows(), st.data())
def test_one_step_gain_is_parent_prefix_times_edge(case, data):
    tree, rows, exact = case
    vocab = rows.shape[1]
    free = [
        (v, y)
        for v in range(tree.num_nodes)
        for y in range(vocab)
        if tree.child_with_token(v, y) is None
    ]
    if not free:
        return
    v, y = data.draw(st.sampled_from(free))
    grown = DraftTree(parent=np.append(tree.parent, v), token=np.append(tree.token, y))
    grown_rows = np.vstack([rows, rows[v]])  # the new leaf's own row does not enter C_p
    before = reference_law(tree, exact).coverage
    after = reference_law(grown, exact + [exact[v]]).coverage
    gain = reference_law(tree, exact).prefix[v] * exact[v][y]
    assert after - before == gain  # exact rational identity
    jax_gain = float(exit_law(grown, grown_rows).coverage - exit_law(tree, rows).coverage)
    assert abs(jax_gain - float(gain)) < TOL


@given(trees_with_rows())
def test_law_from_edges_equals_law_from_rows(case):
    """Equal field by field; ``rho`` and ``w`` to rounding only: from rows an internal node sums its residual
    entries, from edges it takes ``max(1 - m, 0)`` (the residual-mass rule, theory/law.py)."""
    tree, rows, _ = case
    a = exit_law(tree, rows)
    b = exit_law_from_edges(tree, gather_edge_probs(tree, rows))
    for name, x, y in zip(a._fields, a, b):
        if name in ("rho", "w"):
            np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=0, atol=1e-14)
        else:
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


_VMAPPED = jax.jit(jax.vmap(exit_law))


@given(st.lists(trees_with_rows(max_nodes=10, vocab_sizes=(4,)), min_size=1, max_size=5))
def test_vmap_over_padded_trees_equals_python_loop(cases):
    trees = [c[0] for c in cases]
    n = 12  # fixed padded size (>= max_nodes + 2, so padding is always exercised)
    batch = stack_trees(trees, n)
    rows = np.zeros((len(trees), n, 4))
    rows[:, :, 0] = 1.0  # padding rows: any distribution
    for i, (t, r, _) in enumerate(cases):
        rows[i, : t.num_nodes] = r
    batched = _VMAPPED(batch, rows)
    for i, t in enumerate(trees):
        single = exit_law(t, cases[i][1])
        k = t.num_nodes
        np.testing.assert_allclose(np.asarray(batched.w[i, :k]), np.asarray(single.w), atol=TOL)
        np.testing.assert_array_equal(np.asarray(batched.w[i, k:]), 0.0)
        assert abs(float(batched.coverage[i]) - float(single.coverage)) < TOL


_JIT_LAW = jax.jit(exit_law)


@given(trees_with_rows())
def test_jit_equals_eager(case):
    tree, rows, _ = case
    padded = tree.padded(16)
    rows16 = np.vstack([rows, np.full((16 - tree.num_nodes, rows.shape[1]), 1 / rows.shape[1])])
    eager = exit_law(padded, rows16)
    jitted = _JIT_LAW(padded, rows16)
    for x, y in zip(eager, jitted):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-14, atol=1e-15)


def _coverage_of_logits(logits, padded):
    return exit_law_from_logits(padded, logits, 1.0).coverage


_coverage_and_grad = jax.jit(jax.value_and_grad(_coverage_of_logits))
_coverage_jit = jax.jit(_coverage_of_logits)


@given(draft_trees(max_nodes=10, vocab_size=5), st.data())
def test_coverage_gradient_matches_finite_differences(tree, data):
    logits = np.zeros((16, 5))  # fixed padded shape: one compilation for all examples
    logits[: tree.num_nodes] = data.draw(logits_rows(tree.num_nodes, vocab_size=5))
    padded = tree.padded(16)
    _, grad = _coverage_and_grad(jnp.asarray(logits), padded)
    eps = 1e-6
    direction = np.random.default_rng(0).standard_normal(logits.shape)
    fd = (
        float(_coverage_jit(logits + eps * direction, padded))
        - float(_coverage_jit(logits - eps * direction, padded))
    ) / (2 * eps)
    assert abs(fd - float(np.sum(np.asarray(grad) * direction))) < 1e-6 * max(1.0, abs(fd))


def _greedy_exit(tree, logits):
    node = 0
    while True:
        nxt = tree.child_with_token(node, int(np.argmax(logits[node])))
        if nxt is None:
            return node
        node = nxt


@given(draft_trees(max_nodes=10, vocab_size=5), st.data())
def test_greedy_is_temperature_zero_limit(tree, data):
    logits = data.draw(logits_rows(tree.num_nodes, vocab_size=5))
    # make the argmax of every row unambiguous by a margin of 1 so the T -> 0 limit is clean
    logits[np.arange(tree.num_nodes), logits.argmax(1)] += 1.0
    expected = np.zeros(tree.num_nodes)
    expected[_greedy_exit(tree, logits)] = 1.0
    np.testing.assert_array_equal(np.asarray(exit_law_from_logits(tree, logits, 0.0).w), expected)
    cold = exit_law_from_logits(tree, logits, 0.02)
    np.testing.assert_allclose(np.asarray(cold.w), expected, atol=1e-9)


def test_deep_chain_does_not_underflow():
    depth = 2000
    tree = DraftTree.chain([0] * depth)
    edge = np.full(tree.num_nodes, 0.5)
    law = exit_law_from_edges(tree, edge)
    assert np.isfinite(float(law.log_prefix[-1]))
    assert abs(float(law.log_prefix[-1]) - depth * np.log(0.5)) < 1e-9
    assert abs(float(law.coverage) - (1 - 0.5**depth)) < 1e-12


def test_exit_law_is_float64_under_x64():
    tree = DraftTree.chain([1])
    law = exit_law(tree, np.array([[0.25, 0.75], [0.5, 0.5]]))
    assert law.w.dtype == jnp.float64


def test_known_small_tree():
    # root -> {a (p=.6) -> c (p=.5), b (p=.3)}: P = [1, .6, .3, .3]; C_p = 1.2
    tree = DraftTree(parent=[-1, 0, 0, 1], token=[9, 0, 1, 2])
    rows = np.array([[0.6, 0.3, 0.1], [0.2, 0.3, 0.5], [1 / 3] * 3, [1 / 3] * 3])
    law = exit_law(tree, rows)
    np.testing.assert_allclose(np.asarray(law.prefix), [1, 0.6, 0.3, 0.3], atol=TOL)
    np.testing.assert_allclose(np.asarray(law.w), [0.1, 0.3, 0.3, 0.3], atol=TOL)
    assert abs(float(law.expected_length) - 2.2) < TOL
    assert (
        sum(reference_law(tree, [[Fraction(x).limit_denominator(100) for x in r] for r in rows]).w)
        == 1
    )


from exitlaw.theory.law import _law_from_edges, _log_prefix_matrix  # noqa: E402

_DOUBLING = jax.jit(_law_from_edges)
_MATRIX = jax.jit(partial(_law_from_edges, log_prefix_fn=_log_prefix_matrix))


@given(trees_with_rows(max_nodes=16, max_depth=10))
def test_pointer_doubling_equals_ancestor_matrix_form(case):
    tree, rows, _ = case
    padded = tree.padded(20)  # fixed shape (with padding on purpose): one compilation
    edge = np.zeros(padded.num_nodes)
    edge[: tree.num_nodes] = gather_edge_probs(tree, rows)
    fast = _DOUBLING(padded, jnp.asarray(edge))
    slow = _MATRIX(padded, jnp.asarray(edge))
    for x, y in zip(fast, slow):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-13, atol=1e-15)
