"""DraftTree validation: the vector check (:func:`exitlaw.theory.tree._valid_fast`) accepts exactly the
trees the rule-by-rule check (:func:`exitlaw.theory.tree._raise_first_error`) accepts, and a rejected
tree gets the message of its first broken rule."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exitlaw.theory import DraftTree, TreeError
from exitlaw.theory.tree import _raise_first_error, _valid_fast


def _slow_ok(parent, token) -> bool:
    try:
        _raise_first_error(parent, token)
    except TreeError as e:
        return "invalid draft tree" in str(e)  # the fall-through: no rule broken
    return True


@settings(max_examples=400, deadline=None)
@given(
    st.integers(1, 9).flatmap(
        lambda n: st.tuples(
            st.lists(st.integers(-2, n + 1), min_size=n - 1, max_size=n - 1),
            st.lists(st.integers(-2, 3), min_size=n, max_size=n),
        )
    )
)
def test_the_vector_check_accepts_exactly_what_the_rule_by_rule_check_accepts(case):
    par_tail, token = case
    parent = np.array([-1] + par_tail, dtype=np.int64)
    token = np.array(token, dtype=np.int64)
    slow_ok = _slow_ok(parent, token)
    assert _valid_fast(parent, token) == slow_ok
    if slow_ok:
        DraftTree(parent, token)
    else:
        with pytest.raises(TreeError) as info:
            DraftTree(parent, token)
        assert "invalid draft tree" not in str(info.value)  # the first broken rule is named


@pytest.mark.parametrize(
    "parent, token, message",
    [
        ([-1, 0, 0], [5, 1, 1], "siblings under node 0 with the same token 1"),
        ([-1, 0, 2, 1], [5, 1, 2, 3], "node 2 lies on a cycle"),
        ([-1, 0, 3, 1], [5, 1, 2, 3], "parent 3 >= 2: parents must come before children"),
        ([-1, 0, -1], [5, 1, 2], "second root"),
        ([-1, 0, 7], [5, 1, 2], "out of range"),
        ([-1, 0, 1], [5, 1, -3], "negative token"),
        ([-1, 0], [-2, 1], "root token must be >= -1"),
    ],
)
def test_each_broken_rule_is_named(parent, token, message):
    with pytest.raises(TreeError, match=message):
        DraftTree(np.array(parent), np.array(token))
