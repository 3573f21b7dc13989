"""The small randomness interface every verifier is written against.

A verifier procedure draws only through two calls,

* ``rand.bernoulli(p, stream=...)``  -> ``True`` with probability ``p``;
* ``rand.categorical(weights, stream=...)`` -> index ``i`` with probability
  ``weights[i] / sum(weights)`` (weights are non-negative, not necessarily
  normalised; a zero weight is never drawn),

so the *same code* runs two ways:

* :class:`GeneratorRandomness` draws from numpy generators, one per named
  stream (draft, acceptance, exit, bonus, ... never share a stream);
* :func:`enumerate_law` runs the procedure once per branch of every draw
  (depth-first replay of recorded choice sequences), multiplying branch
  probabilities, and so returns the *law of the implementation itself* as a
  dict ``{outcome: probability}``. With ``Fraction`` inputs the law is exact;
  with ``float`` inputs it is the float64 law.

Probabilities handed to ``bernoulli`` outside ``[0, 1]`` by float rounding are
clipped to ``[0, 1]`` (documented here, the only clipping done).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Callable, Hashable, Protocol

import numpy as np

from exitlaw.theory import DistributionError

STREAMS = ("draft", "accept", "exit", "bonus", "predraw", "extend", "plan")


class Randomness(Protocol):
    def bernoulli(self, p, *, stream: str) -> bool: ...

    def categorical(self, weights, *, stream: str) -> int: ...


def _check_stream(stream: str) -> None:
    if stream not in STREAMS:
        raise ValueError(f"unknown randomness stream {stream!r}; known streams: {STREAMS}")


class GeneratorRandomness:
    """Draws from numpy generators, one independent generator per stream.

    Stream generators are spawned lazily from ``rng`` (``Generator.spawn``), so
    a stream that a procedure never uses costs nothing and the draws of one
    stream never move another.
    """

    def __init__(self, rng: np.random.Generator):
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
        self._root = rng
        self._streams: dict[str, np.random.Generator] = {}

    def _gen(self, stream: str) -> np.random.Generator:
        g = self._streams.get(stream)
        if g is None:
            _check_stream(stream)
            g = self._streams[stream] = self._root.spawn(1)[0]
        return g

    def bernoulli(self, p, *, stream: str) -> bool:
        return bool(self._gen(stream).random() < float(p))

    def categorical(self, weights, *, stream: str) -> int:
        g = self._gen(stream)
        w = np.asarray(weights, dtype=np.float64)
        if w.ndim != 1 or w.size == 0:
            raise DistributionError(
                f"categorical weights must be a non-empty vector, got shape {w.shape}"
            )
        cdf = np.cumsum(w)
        total = cdf[-1]
        if not np.isfinite(total) or total <= 0 or (w < 0).any():
            raise DistributionError(
                f"categorical weights must be finite, >= 0 and not all zero (sum {total!r})"
            )
        u = g.random() * total
        # cdf[i-1] <= u < cdf[i]: never a zero weight
        i = int(np.searchsorted(cdf, u, side="right"))
        if i >= w.size:  # u rounded up to the total: take the last positive weight
            i = int(np.flatnonzero(w > 0)[-1])
        return i


class _Replay:
    """One run of a procedure: replays ``prefix`` choices, then takes branch 0 of each new draw."""

    def __init__(self, prefix: list[int], one):
        self.prefix = prefix
        self.one = one
        self.trace: list[tuple[list, int]] = []

    def _branch(self, options: list):
        k = len(self.trace)
        idx = self.prefix[k] if k < len(self.prefix) else 0
        self.trace.append((options, idx))
        return options[idx][0]

    def bernoulli(self, p, *, stream: str) -> bool:
        _check_stream(stream)
        one = self.one
        if p >= one:
            return self._branch([(True, one)])
        if p <= 0:
            return self._branch([(False, one)])
        return self._branch([(True, p), (False, one - p)])

    def categorical(self, weights, *, stream: str) -> int:
        _check_stream(stream)
        ws = [w for w in weights]
        total = sum(ws, self.one - self.one)
        if any(w < 0 for w in ws) or not total > 0:
            raise DistributionError(f"categorical weights must be >= 0 and not all zero, got {ws}")
        return self._branch([(i, w / total) for i, w in enumerate(ws) if w > 0])


def enumerate_law(
    procedure: Callable[[Randomness], Hashable], *, one=1.0, max_runs: int = 1_000_000
) -> dict:
    """Law ``{outcome: probability}`` of ``procedure(rand)`` over every branch of its draws.

    ``one`` fixes the number type (``1.0`` for float64, ``Fraction(1)`` for exact
    rationals; inputs the procedure reads must use the same type). Branches of
    probability zero are never run. ``max_runs`` bounds the number of leaves.
    """
    law: dict = {}
    prefix: list[int] = []
    for _ in range(max_runs):
        rep = _Replay(prefix, one)
        out = procedure(rep)
        prob = one
        for options, idx in rep.trace:
            prob = prob * options[idx][1]
        law[out] = law.get(out, one - one) + prob
        k = len(rep.trace) - 1
        while k >= 0 and rep.trace[k][1] + 1 >= len(rep.trace[k][0]):
            k -= 1
        if k < 0:
            return law
        prefix = [idx for _, idx in rep.trace[:k]] + [rep.trace[k][1] + 1]
    raise ValueError(
        f"enumerate_law: more than {max_runs} branches; use a smaller tree or vocabulary"
    )


def as_number_rows(probs, one) -> list[list]:
    """Rows as nested lists of ``type(one)`` (``Fraction`` rows are exact images of the floats)."""
    if isinstance(one, Fraction):
        return [
            [x if isinstance(x, Fraction) else Fraction(float(x)) for x in row] for row in probs
        ]
    return [[float(x) for x in row] for row in np.asarray(probs, dtype=np.float64)]


__all__ = ["Randomness", "GeneratorRandomness", "enumerate_law", "as_number_rows", "STREAMS"]
