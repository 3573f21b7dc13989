"""Shared pieces of the tests that hold a fast sampler to its exact twin ``verify_sampled``."""

from __future__ import annotations

import os

import numpy as np
from hypothesis import note
from hypothesis import strategies as st

from exitlaw.simulate.randomness import enumerate_law
from exitlaw.simulate.stats import describe_seed, seed_for
from exitlaw.simulate.verifiers import verify_sampled


def int_rows(data, n: int, vocab: int, low: int, high: int) -> np.ndarray:
    """``n`` drawn rows of ``vocab`` integer weights in [low, high], as floats (not normalised)."""
    row = st.lists(st.integers(low, high), min_size=vocab, max_size=vocab)
    return np.array(data.draw(st.lists(row, min_size=n, max_size=n)), dtype=np.float64)


def exact_exit_bonus_law(tree, p, q, vocab: int, without_replacement: bool) -> np.ndarray:
    """``Pr[exit = v, bonus = y]`` of ``verify_sampled`` on ``tree``, enumerated over its randomness."""
    law = enumerate_law(
        lambda r: verify_sampled(
            list(tree.parent), list(tree.token), p, q, r, without_replacement=without_replacement
        )
    )
    exact = np.zeros((tree.num_nodes, vocab))
    for (v, y), pr in law.items():
        exact[v, y] += pr
    return exact


def seed_of_test(*parts: str):
    """The seed of the running test and ``parts`` (noted, so a failure can be replayed)."""
    seq = seed_for("|".join([os.environ.get("PYTEST_CURRENT_TEST", ""), *parts]))
    note(describe_seed(seq))
    return seq
