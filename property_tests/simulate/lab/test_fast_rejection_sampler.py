"""The vectorised recursive-rejection sampler follows its exact twin (``verify_sampled``, enumerated)."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from exitlaw.simulate.stats import describe_seed, pooled_chisquare
from exitlaw.simulate.strategies import draft_trees
from exitlaw.simulate.verifiers.fast import recursive_rejection_many
from helpers.sampled_law import exact_exit_bonus_law, int_rows, seed_of_test

SAMPLES = 20_000
ALPHA = 1e-6


def _rows(data, n, vocab, low):
    rows = int_rows(data, n, vocab, low, 6)
    rows[rows.sum(1) == 0, 0] = 1.0
    return rows / rows.sum(1, keepdims=True)


@given(
    tree=draft_trees(max_nodes=7, max_depth=3, max_branching=3, vocab_size=4),
    wor=st.booleans(),
    data=st.data(),
)
def test_fast_recursive_rejection_follows_its_exact_twin(tree, wor, data):
    vocab = 4
    p = _rows(data, tree.num_nodes, vocab, 0)
    q = _rows(data, tree.num_nodes, vocab, 1)
    exact = exact_exit_bonus_law(tree, p, q, vocab, without_replacement=wor)
    seq = seed_of_test(repr(tree), str(wor), p.tobytes().hex(), q.tobytes().hex())
    exits, bonus = recursive_rejection_many(
        tree, p, q, np.random.default_rng(seq), SAMPLES, without_replacement=wor
    )
    counts = np.zeros_like(exact)
    np.add.at(counts, (exits, bonus), 1)
    chi = pooled_chisquare(counts, exact / exact.sum())
    assert not chi.zero_cell_hits and chi.pvalue >= ALPHA, (chi, describe_seed(seq))


def test_with_and_without_replacement_differ_on_a_star():
    """Two children with the same draft row: the second acceptance probability depends on the rule."""
    from exitlaw.simulate.verifiers.fast import _rejection_tables
    from exitlaw.theory import DraftTree

    tree = DraftTree(parent=[-1, 0, 0], token=[0, 0, 1])
    p = np.array([[0.2, 0.5, 0.3], [1 / 3] * 3, [1 / 3] * 3])
    q = np.array([[0.6, 0.3, 0.1], [1 / 3] * 3, [1 / 3] * 3])
    with_rep, _, _ = _rejection_tables(tree, p, q, False)
    without, _, _ = _rejection_tables(tree, p, q, True)
    assert abs(with_rep[0, 0] - 0.2 / 0.6) < 1e-12 and abs(without[0, 0] - 0.2 / 0.6) < 1e-12
    # after rejecting token 0: r = norm((p - q)+) = [0, 0.2, 0.2] / 0.4 = [0, .5, .5]
    assert abs(with_rep[0, 1] - 1.0) < 1e-12  # 0.5 / 0.3 capped at 1
    assert abs(without[0, 1] - 0.5 / 0.75) < 1e-12  # q(0) removed: q = [0, .75, .25]
