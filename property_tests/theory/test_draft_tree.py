"""DraftTree's derived structure agrees with its definition; padding changes nothing."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from exitlaw.simulate.strategies import draft_trees
from exitlaw.theory import DraftTree


@given(draft_trees(max_nodes=15))
def test_ancestor_matrix_is_ancestor_or_self(tree):
    for v in range(tree.num_nodes):
        assert set(np.flatnonzero(tree.ancestor_matrix[v])) == set(tree.path_nodes(v))
        assert tree.depth[v] == len(tree.path(v))


@given(parents=st.lists(st.integers(0, 10**6), max_size=300), seed=st.integers(0, 2**16))
def test_bitset_ancestor_matrix_equals_the_row_copy_twin_on_wide_trees(parents, seed):
    """Up to 301 nodes (bitsets across many bytes and 64-bit words): the same matrix as the row-copy
    loop, read-only, and depths equal to the path lengths."""
    parent = [-1] + [p % (i + 1) for i, p in enumerate(parents)]
    tree = DraftTree(
        parent=parent, token=np.random.default_rng(seed).permutation(10**4)[: len(parent)].tolist()
    )
    a = tree.ancestor_matrix
    assert a.dtype == bool and a.shape == (tree.num_nodes,) * 2 and not a.flags.writeable
    np.testing.assert_array_equal(a, tree._ancestor_matrix_rows())
    np.testing.assert_array_equal(tree.depth, a.sum(axis=1) - 1)


@given(draft_trees(max_nodes=15))
def test_child_matrix_and_leaves_match_parents(tree):
    for v in range(tree.num_nodes):
        kids = set(np.flatnonzero(tree.child_matrix[v]))
        assert kids == {u for u in range(1, tree.num_nodes) if tree.parent[u] == v}
        assert kids == set(tree.children[v].tolist())
        assert tree.is_leaf[v] == (not kids)


@given(draft_trees(max_nodes=15))
def test_from_paths_roundtrip(tree):
    again = DraftTree.from_paths(
        [tree.path(v) for v in range(1, tree.num_nodes)], root_token=int(tree.token[0])
    )
    assert {again.path(v) for v in range(again.num_nodes)} == {
        tree.path(v) for v in range(tree.num_nodes)
    }


@given(draft_trees(max_nodes=15), st.integers(0, 2**32 - 1))
def test_reorder_siblings_keeps_the_set_of_paths(tree, seed):
    other = tree.reorder_siblings(np.random.default_rng(seed))
    assert sorted(other.path(v) for v in range(other.num_nodes)) == sorted(
        tree.path(v) for v in range(tree.num_nodes)
    )


@given(draft_trees(max_nodes=10), st.integers(0, 5))
def test_padding_marks_extra_nodes_invalid(tree, extra):
    p = tree.padded(tree.num_nodes + extra)
    assert p.valid.sum() == tree.num_nodes
    assert not p.child[:, tree.num_nodes :].any()
    np.testing.assert_array_equal(
        p.ancestor[: tree.num_nodes, : tree.num_nodes], tree.ancestor_matrix
    )
