"""Multi-round simulated tree speculative decoding on a synthetic target.

One round (docs/design.md §1.2): the builder drafts a tree ``T`` from the
committed context; the exact target rows ``p_v = p(. | c, path(v))`` are
queried for every node; the verifier returns ``(exit, bonus)``; the block
``path(exit) + (bonus,)`` of length ``L = depth(exit) + 1`` is committed.

Per round we record ``C_p(T)`` (``exit_law_from_edges``, JAX), the oracle
coverage ``C*_p(B)`` and the allocation gap ``C*_p(B) - C_p(T)``, the exit depth
and the block length. Aggregates: ``tau = mean L`` with its standard error,
mean coverage, mean ``1 + C_p`` (the fixed-tree ceiling of each round), the
z-score of ``mean(L - (1 + C_p))`` (near 0 for a saturating exact verifier,
since ``E[L | T] = 1 + C_p(T)``), and the simulated speedup under a
:class:`~exitlaw.simulate.builders.caddtree.LatencyModel`.

Randomness: one ``SeedSequence`` spawns independent streams for the prompt,
the builder's draft draws and the verifier; they never share a stream.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from exitlaw import theory
from exitlaw.simulate.builders.caddtree import LatencyModel
from exitlaw.simulate.builders.trees import Built
from exitlaw.theory import (
    DraftTree,
    TraceRound,
    TraceWriter,
    coverage_under,
    gather_edge_probs,
    oracle_tree,
)

Verifier = Callable[[DraftTree, np.ndarray, np.random.Generator], tuple[int, int]]
BuildFn = Callable[[tuple[int, ...], np.random.Generator], Built]

SampledVerifier = Callable[
    [DraftTree, np.ndarray, np.ndarray, np.random.Generator], tuple[int, int]
]


def tree_coverage(tree: DraftTree, edge: np.ndarray) -> float:
    """``C_p(T)`` via the JAX exit law (which buckets node counts, so few compilations); JAX loads on
    this first call, through the theory face (``import exitlaw.simulate`` loads no JAX)."""
    return float(theory.exit_law_from_edges(tree, edge).coverage)


@dataclass(frozen=True)
class RoundRecord:
    round: int
    budget: int
    coverage: float
    oracle_coverage: float | None
    allocation_gap: float | None
    exit_node: int
    exit_depth: int
    block_length: int
    bonus: int


@dataclass
class SimulationResult:
    records: list[RoundRecord]
    aggregates: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"aggregates": self.aggregates, "rounds": [asdict(r) for r in self.records]}


def aggregate(
    records: Sequence[RoundRecord], latency: LatencyModel | None = None
) -> dict[str, Any]:
    """Summary statistics of a run (see module docstring)."""
    if not records:
        raise ValueError("no rounds to aggregate")
    L = np.array([r.block_length for r in records], dtype=np.float64)
    cov = np.array([r.coverage for r in records])
    budgets = np.array([r.budget for r in records])
    diff = L - (1.0 + cov)
    n = L.size
    se = float(diff.std(ddof=1) / math.sqrt(n)) if n > 1 else float("nan")
    out: dict[str, Any] = {
        "rounds": n,
        "tokens": int(L.sum()),
        "tau": float(L.mean()),
        "tau_stderr": float(L.std(ddof=1) / math.sqrt(n)) if n > 1 else None,
        "mean_coverage": float(cov.mean()),
        "mean_ceiling": float(1.0 + cov.mean()),
        "tau_minus_ceiling": float(diff.mean()),
        "tau_minus_ceiling_z": float(diff.mean() / se) if se > 0 else 0.0,
        "mean_budget": float(budgets.mean()),
        "exit_depth_histogram": np.bincount([r.exit_depth for r in records]).tolist(),
    }
    if all(r.oracle_coverage is not None for r in records):
        out["mean_oracle_coverage"] = float(np.mean([r.oracle_coverage for r in records]))
        out["mean_allocation_gap"] = float(np.mean([r.allocation_gap for r in records]))
    if latency is not None:
        out["speedup"] = latency.speedup(L, budgets)
        out["speedup_ceiling"] = latency.speedup(1.0 + cov, budgets)
    return out


def _verify(verifier, sampled_verifier, built, probs, rng) -> tuple[int, int]:
    """(exit node, bonus token) of one round: from ``verifier``, or from ``sampled_verifier`` given
    the draft rows the builder sampled from (a builder that reports none is refused)."""
    if sampled_verifier is None:
        exit_node, bonus = verifier(built.tree, probs, rng)
    elif built.draft_rows is None:
        raise ValueError(
            "a sampled-draft verifier needs a builder that reports its draft rows "
            "(e.g. 'tsubame'); this builder does not"
        )
    else:
        exit_node, bonus = sampled_verifier(built.tree, probs, built.draft_rows, rng)
    return int(exit_node), int(bonus)


def simulate_decoding(
    target,
    build: BuildFn,
    verifier: Verifier,
    *,
    rounds: int,
    seed: int = 0,
    prompt_length: int = 4,
    oracle: bool = True,
    latency: LatencyModel | None = None,
    trace: TraceWriter | None = None,
    store_rows: bool = False,
    progress: bool = False,
    desc: str = "simulate",
    sampled_verifier: SampledVerifier | None = None,
) -> SimulationResult:
    """Run ``rounds`` rounds of builder + verifier against ``target``; optionally write a trace.

    With ``sampled_verifier`` (a sampled-draft rule such as recursive rejection), every
    round is verified by ``sampled_verifier(tree, probs, built.draft_rows, rng)``
    instead of ``verifier``; the builder must then report the draft rows it sampled
    from. Such rules are exact only averaged over drafts, so per-round ``L`` is not
    bounded by that round's ``1 + C_p``.
    """
    if rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds}")
    prompt_rng, draft_rng, verify_rng = (
        np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(3)
    )
    window = max(target.context_length, 1)
    context = tuple(int(t) for t in prompt_rng.integers(0, target.vocab, size=prompt_length))
    records: list[RoundRecord] = []
    it = range(rounds)
    if progress:
        from tqdm import (  # lazy: `exitlaw --help` and `import exitlaw.simulate` load this module; tqdm is an extra's
            tqdm,
        )

        it = tqdm(it, desc=desc, unit="round", leave=False)
    for r in it:
        ctx = context[-window:]
        built = build(ctx, draft_rng)
        tree = built.tree
        probs = np.stack([target.probs(ctx + tree.path(v)) for v in range(tree.num_nodes)])
        edge = gather_edge_probs(tree, probs)
        cov = tree_coverage(tree, edge)
        best = gap = None
        if oracle:
            ptarget = target.prefix_target(ctx)
            best = coverage_under(ptarget, oracle_tree(ptarget, tree.budget))
            gap = best - cov
        exit_node, bonus = _verify(verifier, sampled_verifier, built, probs, verify_rng)
        block = tree.path(exit_node) + (bonus,)
        context = (context + block)[-max(window, prompt_length) :]
        rec = RoundRecord(
            r, tree.budget, cov, best, gap, exit_node, int(tree.depth[exit_node]), len(block), bonus
        )
        records.append(rec)
        if trace is not None:
            extra = {"coverage": cov, "budget": tree.budget}
            if oracle:
                extra.update(oracle_coverage=best, allocation_gap=gap)
            rows = probs if store_rows else None
            trace.write(TraceRound(tree, edge, built.draft_logprob, exit_node, bonus, rows, extra))
    return SimulationResult(records, aggregate(records, latency))
