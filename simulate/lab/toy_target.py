"""A small context-dependent synthetic target (and drafter) for exact tests.

``ToyModel(vocab, seed)(prefix)`` returns ``p(. | prefix)`` as exact rationals,
a deterministic function of ``(seed, prefix)``: rows differ per node and per
parent, and some entries are exactly zero (hard cases). ``float_row`` gives the
same row in float64. Also here: the completed-block extension and multi-round
decoding used by the losslessness properties (docs/design.md §1.3, "completed-block law").
"""

from __future__ import annotations

from fractions import Fraction
from typing import Callable, Sequence

import numpy as np

from exitlaw.simulate.randomness import Randomness
from exitlaw.theory import DraftTree


class ToyModel:
    """``p(. | prefix)`` with integer weights in ``[0, max_weight]`` (zeros with prob. ``zero_prob``)."""

    def __init__(
        self,
        vocab: int,
        seed: int,
        *,
        max_weight: int = 9,
        zero_prob: float = 0.25,
        exact: bool = True,
    ):
        if vocab < 2:
            raise ValueError(f"vocab must be >= 2, got {vocab}")
        self.vocab, self.seed, self.max_weight, self.zero_prob = vocab, seed, max_weight, zero_prob
        self.exact = exact
        self._cache: dict[tuple[int, ...], list[Fraction]] = {}

    def weights(self, prefix: Sequence[int]) -> list[int]:
        g = np.random.default_rng([self.seed, len(prefix), *[int(t) for t in prefix]])
        w = g.integers(1, self.max_weight + 1, size=self.vocab)
        w[g.random(self.vocab) < self.zero_prob] = 0
        if w.sum() == 0:
            w[int(g.integers(self.vocab))] = 1
        return [int(x) for x in w]

    def fraction_row(self, prefix: Sequence[int]) -> list[Fraction]:
        key = tuple(int(t) for t in prefix)
        row = self._cache.get(key)
        if row is None:
            w = self.weights(key)
            total = sum(w)
            row = self._cache[key] = [Fraction(x, total) for x in w]
        return row

    def float_row(self, prefix: Sequence[int]) -> np.ndarray:
        return np.array([float(x) for x in self.fraction_row(prefix)])

    def __call__(self, prefix: Sequence[int]):
        """Exact row when ``exact`` (the default), else a float64 row."""
        return (
            self.fraction_row(prefix)
            if self.exact
            else [float(x) for x in self.fraction_row(prefix)]
        )

    def tree_rows(self, tree: DraftTree, context: Sequence[int] = ()) -> list:
        """``rows[v] = p(. | context, path(v))``."""
        return [self(tuple(context) + tree.path(v)) for v in range(tree.num_nodes)]

    def sequence_law(self, length: int, context: Sequence[int] = ()) -> dict:
        """Autoregressive law ``prod_t p(y_t | context, y_<t)`` of all ``length``-token continuations."""
        one = Fraction(1) if self.exact else 1.0
        law = {(): one}
        for _ in range(length):
            nxt = {}
            for seq, pr in law.items():
                for y, p in enumerate(self(tuple(context) + seq)):
                    if p > 0:
                        nxt[seq + (y,)] = pr * p
            law = nxt
        return law


def block_tokens(tree: DraftTree, exit_node: int, bonus: int) -> tuple[int, ...]:
    """The emitted block: path tokens of the exit node, then the bonus token."""
    return tree.path(exit_node) + (int(bonus),)


def complete_block(
    block: Sequence[int],
    target: Callable,
    rand: Randomness,
    horizon: int,
    context: Sequence[int] = (),
) -> tuple[int, ...]:
    """Extend ``block`` by exact target sampling (stream ``extend``) to ``horizon`` tokens."""
    out = tuple(int(t) for t in block)
    if len(out) > horizon:
        raise ValueError(f"block of length {len(out)} exceeds the horizon {horizon}")
    while len(out) < horizon:
        out = out + (rand.categorical(target(tuple(context) + out), stream="extend"),)
    return out


def decode_rounds(
    target: Callable, build_tree: Callable, verifier: Callable, rand: Randomness, num_tokens: int
) -> tuple[int, ...]:
    """Multi-round speculative decoding; the first ``num_tokens`` tokens generated.

    ``build_tree(context) -> DraftTree``; ``verifier(tree, rows, rand) -> (exit, bonus)``
    with ``rows[v] = target(context + path(v))``.
    """
    out: tuple[int, ...] = ()
    while len(out) < num_tokens:
        tree = build_tree(out)
        rows = [target(out + tree.path(v)) for v in range(tree.num_nodes)]
        v, y = verifier(tree, rows, rand)
        out = out + block_tokens(tree, v, y)
    return out[:num_tokens]


__all__ = ["ToyModel", "block_tokens", "complete_block", "decode_rounds"]
