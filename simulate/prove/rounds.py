"""``exitlaw prove --rounds 2``: two-round losslessness of a fixed-tree verifier, with symbolic target rows.

Round one verifies a tree ``T1`` against the target rows ``p(. | path)`` and emits a block ``b1``; round
two verifies a tree ``T2`` in the context ``b1`` (rows ``p(. | b1 + path)``) and emits ``b2``. Decoding is
lossless over two rounds when the output ``b1 b2``, completed by exact target sampling to the horizon
``H = (depth T1 + 1) + (depth T2 + 1)``, has the target's law on every ``H``-token sequence
(:func:`~.prove_sampled.marginal_gaps`). Every target row of every prefix shorter than ``H`` is symbolic
(:mod:`.symbolic`), so on each pair ``(T1, T2)`` of trees with ``<= N`` nodes (every shape, every token
assignment up to relabelling, one vocabulary ``V``) the check is an identity of rational functions.
``context(b1)`` (default: ``b1`` itself) is the context round two is verified in: an engine that drops or
shifts it is refuted the same way. A failing identity is confirmed at a rational point (``Fraction`` rows).
A verifier that cannot run on symbols is searched at rational points (status ``unproved`` if nothing found).
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from typing import Callable

import numpy as np

from exitlaw.simulate.prove.prover import (
    COUNTEREXAMPLE,
    EXIT_CODES,
    PROVED,
    UNPROVED,
    ProofError,
    ReportClock,
    report_text,
    source_sha256,
    unproved_on_symbols,
)
from exitlaw.simulate.prove.sampled import marginal_gaps, prefixes
from exitlaw.simulate.prove.symbolic import SymbolicError, rows_at, symbolic_one, symbolic_rows
from exitlaw.simulate.prove.tree_enum import token_assignments, tree_shapes
from exitlaw.simulate.randomness import enumerate_law
from exitlaw.theory import DraftTree


@dataclass
class RoundsReport:
    verifier: str
    status: str
    exit_code: int
    max_nodes: int
    vocab: int
    source_sha256: str
    pairs: int = 0
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    symbolic: bool = True
    note: str = ""
    counterexample: dict = field(default_factory=dict)
    scope: str = (
        "every pair (T1, T2) of trees with <= max_nodes nodes in one vocabulary (every shape, token "
        "assignments up to relabelling), T2 verified in the context of the first block; symbolic "
        "interior target rows for every prefix shorter than the two-round horizon"
    )

    def to_json(self) -> dict:
        return asdict(self)


def trees(max_nodes: int, vocab: int) -> list[DraftTree]:
    """Every tree with ``<= max_nodes`` nodes whose tokens lie in ``0..vocab-1`` (up to relabelling)."""
    return [
        DraftTree(parent=np.array(p), token=np.array(t))
        for n in range(1, max_nodes + 1)
        for p in tree_shapes(n)
        for t in token_assignments(p, vocab)
    ]


def two_round_law(
    proc: Callable, t1: DraftTree, t2: DraftTree, target: Callable, one, context=None
) -> dict:
    """Law of the two-round output ``b1 + b2`` (module docstring)."""

    def run(rand):
        p1 = [target(t1.path(v)) for v in range(t1.num_nodes)]
        v, y = proc(t1, p1, rand)
        b1 = t1.path(v) + (int(y),)
        ctx = b1 if context is None else tuple(context(b1))
        p2 = [target(ctx + t2.path(u)) for u in range(t2.num_nodes)]
        v2, y2 = proc(t2, p2, rand)
        return b1 + t2.path(v2) + (int(y2),)

    return enumerate_law(run, one=one)


def _rows(vocab, horizon, point=None):
    pre = prefixes(vocab, horizon)
    index = {t: i for i, t in enumerate(pre)}
    if point is None:
        rows, one = symbolic_rows(len(pre), vocab), symbolic_one(len(pre), vocab)
    else:
        rows, one = rows_at(len(pre), vocab, point), Fraction(1)
    return (lambda prefix: list(rows[index[tuple(prefix)]])), one, len(pre) * (vocab - 1)


def _concrete(proc, t1, t2, V, H, point, context):
    target, one, _ = _rows(V, H, point)
    law = two_round_law(proc, t1, t2, target, one, context)
    return law, marginal_gaps(law, target, V, H, one), target


def prove_two_rounds(
    proc: Callable,
    *,
    name: str = "verifier",
    max_nodes: int = 3,
    vocab: int = 2,
    seed: int = 0,
    context: Callable | None = None,
    search_points: int = 6,
) -> RoundsReport:
    """Two-round losslessness on every pair of trees (module docstring); stops at the first counterexample."""
    if not 1 <= max_nodes <= 4:
        raise ProofError(f"--max-nodes must be in 1..4 with --rounds 2, got {max_nodes}")
    if not 1 <= vocab <= 3:
        raise ProofError(f"--vocab must be in 1..3 with --rounds 2, got {vocab}")
    rng = random.Random(seed)
    rep = RoundsReport(name, PROVED, EXIT_CODES[PROVED], max_nodes, vocab, source_sha256(proc))
    done = ReportClock(rep).done
    all_t = trees(max_nodes, vocab)

    for t1 in all_t:
        for t2 in all_t:
            rep.pairs += 1
            H = int(t1.max_depth) + int(t2.max_depth) + 2
            target, one, nsym = _rows(vocab, H)
            tries = 0
            if rep.symbolic:
                try:
                    law = two_round_law(proc, t1, t2, target, one, context)
                except SymbolicError as err:
                    rep.symbolic = False
                    rep.note = f"not symbolic: {err}; searched {search_points} rational points per pair instead"
                    tries = search_points
                else:
                    if all(g == 0 for g in marginal_gaps(law, target, vocab, H, one).values()):
                        continue
                    tries = 200  # a non-zero rational function: random points find a non-root
            else:
                tries = search_points
            for _ in range(tries):
                pt = {i: Fraction(rng.randint(1, 9), rng.randint(1, 4)) for i in range(nsym)}
                law, gaps, tg = _concrete(proc, t1, t2, vocab, H, pt, context)
                bad = {",".join(map(str, s)): str(g) for s, g in gaps.items() if g != 0}
                if bad:
                    used = sorted(
                        {t1.path(v) for v in range(t1.num_nodes)}
                        | {
                            b1 + t2.path(u)
                            for b1 in {s[:k] for s in law for k in range(1, len(s))}
                            for u in range(t2.num_nodes)
                            if len(b1 + t2.path(u)) < H
                        }
                    )
                    rep.counterexample = {
                        "tree1": {"parent": t1.parent.tolist(), "token": t1.token.tolist()},
                        "tree2": {"parent": t2.parent.tolist(), "token": t2.token.tolist()},
                        "vocab": vocab,
                        "horizon": H,
                        "target_rows": {
                            ",".join(map(str, s)) or "()": [str(x) for x in tg(s)] for s in used
                        },
                        "output_law": {
                            ",".join(map(str, b)): str(p) for b, p in sorted(law.items())
                        },
                        "completed_minus_target": bad,
                    }
                    return done(COUNTEREXAMPLE)
            if rep.symbolic:
                raise ProofError(
                    f"the two-round identity fails symbolically on trees {t1.parent.tolist()} / "
                    f"{t2.parent.tolist()} but no rational witness was found in {tries} points"
                )
    return done(PROVED if rep.symbolic else UNPROVED)


def _rounds_counterexample(c: dict) -> list[str]:
    """The two trees, the target rows and where the completed output leaves the target's law."""
    out = [
        f"COUNTEREXAMPLE (not lossless over two rounds): tree 1 parent {c['tree1']['parent']} token "
        f"{c['tree1']['token']}, tree 2 parent {c['tree2']['parent']} token {c['tree2']['token']}, "
        f"vocabulary {c['vocab']}, horizon {c['horizon']}"
    ]
    out += [f"  p(.|{k}) = [{', '.join(r)}]" for k, r in c["target_rows"].items()]
    for s, g in list(c["completed_minus_target"].items())[:8]:
        out.append(f"  sequence {s}: completed output - target = {g}")
    return out


def format_rounds(rep: RoundsReport) -> str:
    says = {
        PROVED: "PROVED (lossless over two rounds): the two blocks, completed by the target, have the "
        "target's law on every horizon-length sequence, as identities of rational functions on every "
        "tree pair",
        UNPROVED: unproved_on_symbols("the verifier"),
    }
    return report_text(
        rep,
        f"exitlaw prove --rounds 2 {rep.verifier}   max nodes {rep.max_nodes}   vocabulary {rep.vocab}",
        f"{rep.pairs} tree pairs",
        says,
        _rounds_counterexample,
    )


__all__ = ["prove_two_rounds", "two_round_law", "format_rounds", "trees", "RoundsReport"]
