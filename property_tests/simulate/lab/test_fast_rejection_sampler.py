"""The vectorised recursive-rejection sampler follows its exact twin (``verify_sampled``, enumerated)."""

import os

import numpy as np
from hypothesis import given, note, strategies as st

from exitlaw.simulate.verifiers.fast import recursive_rejection_many
from exitlaw.simulate.randomness import enumerate_law
from exitlaw.simulate.stats import describe_seed, pooled_chisquare, seed_for
from exitlaw.simulate.strategies import draft_trees
from exitlaw.simulate.verifiers import verify_sampled

SAMPLES = 20_000
ALPHA = 1e-6


def _rows(data, n, vocab, low):
    rows = np.array(
        data.draw(
            st.lists(
                st.lists(st.integers(low, 6), min_size=vocab, max_size=vocab),
                min_size=n,
                max_size=n,
            )
        ),
        dtype=np.float64,
    )
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
    law = enumerate_law(
        lambda r: verify_sampled(
            list(tree.parent), list(tree.token), p, q, r, without_replacement=wor
        )
    )
    exact = np.zeros((tree.num_nodes, vocab))
    for (v, y), pr in law.items():
        exact[v, y] += pr
    seq = seed_for(
        f"{os.environ.get('PYTEST_CURRENT_TEST', '')}|{tree!r}|{wor}|{p.tobytes().hex()}|{q.tobytes().hex()}"
    )
    note(describe_seed(seq))
    exits, bonus = recursive_rejection_many(
        tree, p, q, np.random.default_rng(seq), SAMPLES, without_replacement=wor
    )
    counts = np.zeros_like(exact)
    np.add.at(counts, (exits, bonus), 1)
    chi = pooled_chisquare(counts, exact / exact.sum())
    assert not chi.zero_cell_hits and chi.pvalue >= ALPHA, (chi, describe_seed(seq))


def test_with_and_without_replacement_differ_on_a_star():
    """Two children with the same draft row: the second acceptance probability depends on the rule."""
    from exitlaw.theory import DraftTree
    from exitlaw.simulate.verifiers.fast import _rejection_tables

    tree = DraftTree(parent=[-1, 0, 0], token=[0, 0, 1])
    p = np.array([[0.2, 0.5, 0.3], [1 / 3] * 3, [1 / 3] * 3])
    q = np.array([[0.6, 0.3, 0.1], [1 / 3] * 3, [1 / 3] * 3])
    with_rep, _, _ = _rejection_tables(tree, p, q, False)
    without, _, _ = _rejection_tables(tree, p, q, True)
    assert abs(with_rep[0, 0] - 0.2 / 0.6) < 1e-12 and abs(without[0, 0] - 0.2 / 0.6) < 1e-12
    # after rejecting token 0: r = norm((p - q)+) = [0, 0.2, 0.2] / 0.4 = [0, .5, .5]
    assert abs(with_rep[0, 1] - 1.0) < 1e-12  # 0.5 / 0.3 capped at 1
    assert abs(without[0, 1] - 0.5 / 0.75) < 1e-12  # q(0) removed: q = [0, .75, .25]
