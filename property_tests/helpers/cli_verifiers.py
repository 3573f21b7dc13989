"""Verifiers the suite loads by name through the command line (`exitlaw prove helpers.cli_verifiers:NAME`):
test modules are not importable by name under pytest's importlib import mode, helpers are."""

from __future__ import annotations

import numpy as np

from exitlaw.simulate.verifiers.sampled_draft import _path, draw_draft
from helpers.mutants import inverse_cdf


def numpy_predraw(tree, probs, rng):
    """Predraw: one token per level by inverse CDF of a fresh uniform, follow it if it is a child."""
    kids = [{int(tree.token[c]): int(c) for c in tree.children[v]} for v in range(tree.num_nodes)]
    v = 0
    while True:
        y = inverse_cdf(probs[v], rng.random())
        if y not in kids[v]:
            return v, y
        v = kids[v][y]


def rrs_bonus_from_target(topology, target, draft, rand):
    """Recursive rejection whose bonus after a rejection is drawn from the target row, not norm((p - q)+)."""
    tokens = draw_draft(topology, draft, rand, without_replacement=True)
    kids = [[u for u in range(1, len(topology)) if topology[u] == v] for v in range(len(topology))]
    v = 0
    while True:
        p, q = target(_path(topology, tokens, v)), draft(_path(topology, tokens, v))
        nxt = None
        for u in kids[v]:
            x = tokens[u]
            if rand.bernoulli(min(p[x] / q[x], p[x] - p[x] + 1), stream="accept"):
                nxt = u
                break
        if nxt is None:
            return _path(topology, tokens, v) + (
                rand.categorical(p, stream="bonus"),
            )  # BUG: not the residual
        v = nxt


def numpy_predraw_temperature_twice(tree, probs, rng):
    """Lossy on purpose (the zoo's `temperature_twice`, fast): predraw on p^2 renormalised, i.e. the
    temperature applied a second time. `exitlaw serve --verifier helpers.cli_verifiers:...` plants it."""
    sharp = np.asarray(probs, dtype=np.float64) ** 2
    return numpy_predraw(tree, sharp / sharp.sum(axis=1, keepdims=True), rng)
