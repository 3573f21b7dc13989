"""An embedded demo: random trees with per-node target rows, and exits drawn from ``w``.

Everything is generated from a fixed seed, so ``exitlaw law --demo`` needs no
files and prints the same numbers on every machine.
"""

from __future__ import annotations

import numpy as np

from .distributions import gather_edge_probs
from .exact import reference_block_law
from .law import exit_law_from_edges
from .trace.format import Trace, TraceRound
from .tree import DraftTree


def random_tree(
    rng: np.random.Generator, budget: int, vocab: int, max_children: int = 3
) -> DraftTree:
    """A random prefix-closed tree: each new node hangs under a uniformly chosen non-full node."""
    parent, token = [-1], [0]
    used: dict[int, set[int]] = {0: set()}
    for u in range(1, budget + 1):
        open_nodes = [v for v in used if len(used[v]) < min(max_children, vocab)]
        par = int(rng.choice(open_nodes))
        tok = int(rng.choice([t for t in range(vocab) if t not in used[par]]))
        used[par].add(tok)
        used[u] = set()
        parent.append(par)
        token.append(tok)
    return DraftTree(parent=np.array(parent), token=np.array(token))


def random_rows(
    rng: np.random.Generator, num_nodes: int, vocab: int, concentration: float = 0.3
) -> np.ndarray:
    """Per-node Dirichlet rows (different for every node)."""
    return rng.dirichlet(np.full(vocab, concentration), size=num_nodes)


def demo_trace(seed: int = 0, rounds: int = 200, budget: int = 12, vocab: int = 6) -> Trace:
    """Rounds whose exit and bonus are drawn from the exact block law (a perfect verifier)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(rounds):
        tree = random_tree(rng, budget, vocab)
        rows = random_rows(rng, tree.num_nodes, vocab)
        joint = np.asarray(reference_block_law(tree, rows.tolist(), 1.0), dtype=np.float64)
        k = int(rng.choice(joint.size, p=joint.ravel() / joint.sum()))
        exit_node, bonus = divmod(k, vocab)
        out.append(
            TraceRound(tree, gather_edge_probs(tree, rows), exit_node=exit_node, bonus=bonus)
        )
    return Trace(
        meta={"source": "exitlaw law --demo", "seed": seed, "budget": budget, "vocab": vocab},
        rounds=out,
    )


def format_demo_tree(rnd: TraceRound) -> str:
    """The per-node exit law of one round (``a``, ``P``, ``rho``, ``w``), then ``sum w``, ``C_p`` and the ceiling."""
    law = exit_law_from_edges(rnd.tree, rnd.edge_prob)
    lines = [
        "demo round 0: per-node exit law",
        f"{'node':>4} {'parent':>6} {'depth':>5} {'token':>5} {'a(u)':>8} {'P':>8} {'rho':>8} {'w':>8}",
    ]
    for v in range(rnd.tree.num_nodes):
        lines.append(
            f"{v:>4} {int(rnd.tree.parent[v]):>6} {int(rnd.tree.depth[v]):>5} {int(rnd.tree.token[v]):>5} "
            f"{float(law.edge[v]):>8.4f} {float(law.prefix[v]):>8.4f} {float(law.rho[v]):>8.4f} "
            f"{float(law.w[v]):>8.4f}"
        )
    lines.append(
        f"sum w = {float(law.w.sum()):.12f}   C_p = {float(law.coverage):.6f}   "
        f"ceiling 1 + C_p = {float(law.expected_length):.6f}\n"
    )
    return "\n".join(lines)
