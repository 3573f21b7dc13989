"""Every malformed input class raises TreeError / DistributionError naming the node or row."""

import numpy as np
import pytest

from exitlaw.theory import (
    DistributionError,
    DraftTree,
    TreeError,
    check_temperature,
    exit_law,
    exit_law_from_edges,
    exit_law_from_logits,
)

GOOD_ROWS = np.array([[0.5, 0.5], [0.25, 0.75]])


@pytest.mark.parametrize(
    "parent, token, message",
    [
        ([0, 0], [0, 1], "node 0 must be the root"),
        ([-1, 5], [0, 1], "out of range"),
        ([-1, 1], [0, 1], "cycle"),
        ([-1, 2, 1], [0, 1, 2], "cycle"),
        ([-1, 0, 3, 0], [0, 1, 2, 3], "parents must come before children"),
        ([-1, -1], [0, 1], "second root"),
        ([-1, 0, 0], [0, 1, 1], "same token 1"),
        ([-1, 0], [0, -3], "negative token"),
        ([-1, 0, 0], [0, 1], "length mismatch"),
        ([], [], "at least the root"),
        ([[-1, 0]], [[0, 1]], "1-D"),
        ([-1, 0.5], [0, 1], "integers"),
    ],
)
def test_malformed_tree_raises_tree_error(parent, token, message):
    with pytest.raises(TreeError, match=message):
        DraftTree(parent=parent, token=token)


def test_tree_errors_are_value_errors():
    assert issubclass(TreeError, ValueError) and issubclass(DistributionError, ValueError)


def test_out_of_vocabulary_token_names_node():
    tree = DraftTree(parent=[-1, 0, 1], token=[0, 1, 7])
    with pytest.raises(TreeError, match="node 2 has token 7, outside vocabulary of size 2"):
        exit_law(tree, np.full((3, 2), 0.5))


@pytest.mark.parametrize(
    "rows, message",
    [
        (np.array([[0.5, 0.5], [np.nan, 1.0]]), "row 1 has a non-finite entry"),
        (np.array([[0.5, 0.5], [np.inf, 1.0]]), "row 1 has a non-finite entry"),
        (np.array([[1.5, -0.5], [0.5, 0.5]]), "row 0 has a negative entry"),
        (np.array([[0.5, 0.5], [0.5, 0.4]]), "row 1 sums to 0.9"),
        (np.array([0.5, 0.5]), "shape"),
        (np.full((3, 2), 0.5), "3 rows but the tree has 2 nodes"),
        (np.zeros((2, 0)), "empty vocabulary"),
    ],
)
def test_malformed_rows_raise_distribution_error(rows, message):
    with pytest.raises(DistributionError, match=message):
        exit_law(DraftTree.chain([1]), rows)


@pytest.mark.parametrize(
    "edges, message",
    [
        ([1.0, 1.5], "node 1 has edge probability 1.5"),
        ([1.0, -0.1], "node 1 has edge probability"),
        ([1.0, np.nan], "node 1 has edge probability"),
        ([1.0], "shape"),
    ],
)
def test_malformed_edges_raise_distribution_error(edges, message):
    with pytest.raises(DistributionError, match=message):
        exit_law_from_edges(DraftTree.chain([1]), edges)


def test_children_mass_above_one_names_parent():
    tree = DraftTree(parent=[-1, 0, 0], token=[0, 1, 2])
    with pytest.raises(DistributionError, match="children of node 0 carry target mass 1.2"):
        exit_law_from_edges(tree, [1.0, 0.6, 0.6])


@pytest.mark.parametrize("temperature", [-1.0, float("nan"), float("inf"), "hot"])
def test_bad_temperature_raises(temperature):
    with pytest.raises(DistributionError, match="temperature"):
        exit_law_from_logits(DraftTree.chain([1]), np.zeros((2, 2)), temperature)


def test_zero_temperature_rejected_where_sampling_needs_positive():
    with pytest.raises(DistributionError, match="> 0"):
        check_temperature(0.0, allow_zero=False)
    assert check_temperature(0.0, allow_zero=True) == 0.0


def test_nonfinite_logits_raise():
    with pytest.raises(DistributionError, match="NaN or inf"):
        exit_law_from_logits(DraftTree.chain([1]), np.array([[0.0, np.nan], [0.0, 0.0]]), 1.0)


def test_inputs_are_not_modified_or_renormalised():
    rows = np.array([[0.5, 0.5 + 2e-6], [0.25, 0.75]])  # within tolerance: accepted as given
    copy = rows.copy()
    exit_law(DraftTree.chain([1]), rows)
    np.testing.assert_array_equal(rows, copy)
