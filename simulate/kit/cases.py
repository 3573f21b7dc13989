"""Test cases of the conformance kit: trees, per-node target rows and the target beyond the tree.

Every case carries a deterministic context-dependent target ``target(prefix) -> [V]``
(rows differ per node and per parent; hashed from ``(seed, prefix)``), with
hand-set rows where a hard case needs them:

``random``       a best-first tree of a different (drafter) model, budget ``B``;
``rho_zero``     the root's children cover its whole row (``rho(root) = 0``);
``zero_edge``    drafted children the target gives probability 0 (token 0 at the root), exact zeros;
``tiny_tail``    rows with a dominant token and a tail of ``1e-3`` entries;
``vocab2``       vocabulary 2, a full binary tree of depth 2 under a chain;
``deep_chain``   a chain of depth 6 along high-probability tokens;
``wide_star``    one root with ``V - 1`` children;
``large_vocab``  vocabulary 50, flat tails, enough samples that every tail cell is tested
                 on its own (Gumbel-style tail bugs show here).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from exitlaw.theory import DraftTree, oracle_tree


class HashedTarget:
    """``p(. | prefix)``: hand-set ``overrides[prefix]`` or a Dirichlet row hashed from ``(seed, prefix)``."""

    def __init__(
        self,
        vocab: int,
        seed: int,
        *,
        concentration: float = 1.0,
        zero_prob: float = 0.15,
        overrides: dict | None = None,
    ):
        self.vocab, self.seed = vocab, seed
        self.concentration, self.zero_prob = concentration, zero_prob
        self.overrides = {
            tuple(k): np.asarray(v, dtype=np.float64) for k, v in (overrides or {}).items()
        }
        self._cache: dict[tuple[int, ...], np.ndarray] = {}

    def __call__(self, prefix) -> np.ndarray:
        key = tuple(int(t) for t in prefix)
        row = self._cache.get(key)
        if row is None:
            if key in self.overrides:
                row = self.overrides[key]
            else:
                g = np.random.default_rng([self.seed, len(key), *key])
                row = g.dirichlet(np.full(self.vocab, self.concentration))
                row[g.random(self.vocab) < self.zero_prob] = 0.0
                if row.sum() == 0:
                    row[int(g.integers(self.vocab))] = 1.0
                row = row / row.sum()
            self._cache[key] = row
        return row


@dataclass
class Case:
    name: str
    tree: DraftTree
    target: Callable
    draft: Callable | None = None
    min_samples: int = 0  # at least this many rounds (e.g. so that tail cells are not pooled)
    probs: np.ndarray = field(init=False)

    def __post_init__(self):
        self.probs = np.stack([self.target(self.tree.path(v)) for v in range(self.tree.num_nodes)])

    @property
    def vocab(self) -> int:
        return int(self.probs.shape[1])

    @property
    def horizon(self) -> int:
        """``H + 1``: completed blocks are extended to this many tokens."""
        return self.tree.max_depth + 1


def _row(vocab: int, weights: dict[int, float], rest: float = 0.0) -> np.ndarray:
    row = np.full(vocab, rest)
    for y, w in weights.items():
        row[y] = w
    return row / row.sum()


def conditional_cases(seed: int, *, budget: int = 8, vocab: int = 4) -> list[Case]:
    """The fixed-tree cases (see module docstring)."""
    if vocab < 3:
        raise ValueError(f"--vocab must be >= 3 (vocabulary 2 is a case of its own), got {vocab}")
    if budget < 2:
        raise ValueError(f"--budget must be >= 2, got {budget}")
    s = seed * 1000
    cases = []
    drafter = HashedTarget(vocab, s + 1, concentration=0.5)
    tree = oracle_tree(drafter, budget)
    cases.append(Case("random", tree, HashedTarget(vocab, s + 2, concentration=0.7)))

    cases += _boundary_cases(vocab, s)
    cases += _shape_cases(vocab, s)
    return cases


def _boundary_cases(vocab: int, s: int) -> list[Case]:
    """Hand-built trees at the laws' edges: a child with zero residual (``rho_zero``), a drafted token
    the target never emits (``zero_edge``) and a nearly deterministic target with tiny tails."""
    cases = []
    tree = DraftTree.from_paths([(0,), (1,), (0, 2), (1, 0), (1, 1)])
    cases.append(
        Case(
            "rho_zero",
            tree,
            HashedTarget(
                vocab,
                s + 3,
                overrides={
                    (): _row(vocab, {0: 0.55, 1: 0.45}),
                    (1,): _row(vocab, {0: 0.5, 1: 0.5}),
                },
            ),
        )
    )

    tree = DraftTree.from_paths([(0,), (1,), (2,), (1, 1), (1, 2)])
    cases.append(
        Case(
            "zero_edge",
            tree,
            HashedTarget(
                vocab,
                s + 4,
                overrides={
                    (): _row(vocab, {1: 0.5, 2: 0.3, vocab - 1: 0.2}),
                    (1,): _row(vocab, {0: 0.4, 1: 0.6}),
                },
            ),
        )
    )

    tail = lambda head: _row(vocab, {head: 1.0 - 1e-3 * (vocab - 1)}, rest=1e-3)  # noqa: E731
    tree = DraftTree.from_paths([(1,), (0,), (1, 2), (1, 0)])
    cases.append(
        Case(
            "tiny_tail",
            tree,
            HashedTarget(
                vocab,
                s + 5,
                overrides={(): _row(vocab, {1: 0.6, 0: 0.3}, rest=1e-3), (1,): tail(2)},
            ),
        )
    )

    return cases


def _shape_cases(vocab: int, s: int) -> list[Case]:
    """Trees and vocabularies of unusual shape: vocabulary 2, a deep chain, a wide star and a large
    vocabulary whose root tail cells are each expected often enough."""
    cases = []
    tree = DraftTree.from_paths([(0,), (1,), (0, 0), (0, 1), (1, 0), (1, 1), (0, 0, 1)])
    cases.append(Case("vocab2", tree, HashedTarget(2, s + 6, zero_prob=0.0)))

    chain_target = HashedTarget(vocab, s + 7, concentration=0.2, zero_prob=0.0)
    toks: list[int] = []
    for _ in range(6):
        toks.append(int(np.argmax(chain_target(toks))))
    cases.append(Case("deep_chain", DraftTree.chain(toks), chain_target))

    wide = max(vocab, 8)
    cases.append(
        Case(
            "wide_star",
            DraftTree.from_paths([(y,) for y in range(wide - 1)]),
            HashedTarget(wide, s + 8, concentration=2.0, zero_prob=0.0),
        )
    )

    big = 50
    head = _row(big, {0: 0.35, 1: 0.25}, rest=0.4 / (big - 2))
    # every root tail cell P(root) p(y) = 0.4 / (big - 2) gets >= 1.2 * 20 expected counts
    cases.append(
        Case(
            "large_vocab",
            DraftTree.from_paths([(0,), (0, 1), (0, 2)]),
            HashedTarget(big, s + 9, concentration=5.0, zero_prob=0.0, overrides={(): head}),
            min_samples=int(np.ceil(1.2 * 20 * (big - 2) / 0.4)),
        )
    )
    return cases


@dataclass
class MarginalCase:
    """A topology (parents) whose tokens the kit draws from ``draft`` (siblings without replacement)."""

    name: str
    topology: list[int]
    target: Callable
    draft: Callable

    @property
    def horizon(self) -> int:
        depth = [0] * len(self.topology)
        for u in range(1, len(self.topology)):
            depth[u] = depth[self.topology[u]] + 1
        return max(depth) + 1


def marginal_cases(
    seed: int, *, budget: int = 6, vocab: int = 4, chains_only: bool = False
) -> list[MarginalCase]:
    """Sampled-draft cases: a chain, a binary tree, a wide root, and small-vocabulary sibling sets
    with a peaked drafter (where using the i.i.d. rule on without-replacement drafts shows).
    ``chains_only``: two chains (for chain speculative sampling), the second with a peaked drafter."""
    s = seed * 1000 + 500
    chain = list(range(-1, min(budget, 4)))
    binary = [-1, 0, 0, 1, 1, 2][: max(3, min(budget + 1, 6))]
    star = [-1] + [0] * (vocab - 1)
    specs = [
        ("chain", chain, vocab, 0.8),
        ("binary", binary, vocab, 0.8),
        ("wide_root", star, vocab, 0.8),
        ("siblings_v3", [-1, 0, 0], 3, 0.3),
        ("siblings_v5", [-1, 0, 0, 0], 5, 0.3),
        ("siblings_v6", [-1, 0, 0], 6, 0.2),
    ]
    if chains_only:
        specs = [("chain", chain, vocab, 0.8), ("chain_peaked_v3", [-1, 0, 1, 2], 3, 0.3)]
    return [
        MarginalCase(
            name,
            topo,
            HashedTarget(v, s + i, concentration=0.8),
            HashedTarget(v, s + 50 + i, concentration=conc, zero_prob=0.0),
        )
        for i, (name, topo, v, conc) in enumerate(specs)
    ]


def _zeroed_rows(vocab: int, seed: int, depth: int) -> dict:
    """Hashed rows for every prefix shorter than ``depth``, each with one token set to exactly 0 (the token
    ``(len(prefix) + sum(prefix) + 1) % vocab``, so the zero moves between positions and siblings)."""
    base = HashedTarget(vocab, seed, concentration=1.0, zero_prob=0.0)
    rows: dict = {}
    stack: list[tuple[int, ...]] = [()]
    while stack:
        prefix = stack.pop()
        row = base(prefix).copy()
        row[(len(prefix) + sum(prefix) + 1) % vocab] = 0.0
        rows[prefix] = row / row.sum()
        if len(prefix) + 1 < depth:
            stack += [prefix + (y,) for y in range(vocab)]
    return rows


def boundary_marginal_cases(
    seed: int, *, vocab: int = 4, chains_only: bool = False
) -> list[MarginalCase]:
    """Hard sampled-draft cases of ``check --boundary --mode marginal``: in every target row one token has
    probability exactly 0 while the drafter gives every token positive probability, so a draft token the
    target forbids is drafted at every position (``coin <= p / q`` accepts it at a coin of 0).
    ``chain_zero`` (depth 3, vocabulary 3) and ``chain_zero_wide`` (depth 2, vocabulary ``min(vocab, 5)``);
    without ``chains_only`` also a two-child root with a grandchild (``siblings_zero``, vocabulary 3). Small,
    because boundary mode tries every draft of positive probability."""
    if vocab < 3:
        raise ValueError(f"--vocab must be >= 3, got {vocab}")
    s = seed * 1000 + 700
    specs = [("chain_zero", [-1, 0, 1, 2], 3), ("chain_zero_wide", [-1, 0, 1], min(vocab, 5))]
    if not chains_only:
        specs.append(("siblings_zero", [-1, 0, 0, 1], 3))
    out = []
    for i, (name, topo, vv) in enumerate(specs):
        depth = len(topo)
        out.append(
            MarginalCase(
                name,
                topo,
                HashedTarget(vv, s + i, overrides=_zeroed_rows(vv, s + i, depth)),
                HashedTarget(vv, s + 50 + i, concentration=2.0, zero_prob=0.0),
            )
        )
    return out


__all__ = [
    "HashedTarget",
    "Case",
    "MarginalCase",
    "conditional_cases",
    "marginal_cases",
    "boundary_marginal_cases",
]
