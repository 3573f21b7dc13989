"""Figure: where a real draft tree loses target mass (the paper's Fig. 1/2 idea).

One round recorded by the engine (:func:`exitlaw.engine.generate` with a
:class:`exitlaw.theory.TraceWriter`: DFlash drafter, DDTree builder, TEV) is
read back, and its exit law is computed from the recorded target edge
probabilities (:func:`exitlaw.theory.exit_law_from_edges`). Left: nodes shaded
by the prefix probability ``P(v)``; middle: by the exit law ``w(v) = P(v) rho(v)``
(the mass that reaches ``v`` and leaves the tree there); right: the exit mass
by depth, split into internal nodes (target token not drafted) and leaves.
Models: the ``models`` input ``(target_dir, draft_dir, label)`` when given
(``exitlaw figures --mini DIR`` passes a mini run's target and base drafter),
else the random tiny pair of ``exitlaw tiny-models`` (the title says which).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import matplotlib.colors as mcolors
import numpy as np
import torch
from transformers import AutoTokenizer

from exitlaw.engine import DecodeConfig, generate, load_pair, write_tiny_models
from exitlaw.theory import DraftTree, SamplingSettings, TraceWriter, exit_law_from_edges, read_trace

from .style import headline, new_figure, require, save

NAME = "tree_exit"
PROMPT = 'def fibonacci(n):\n    """Return the n-th Fibonacci number."""\n    if n < 2:\n        return n\n'


def _models(
    models: tuple[str, str, str] | None, scratch: Path, seed: int
) -> tuple[Path, Path, str]:
    if models is not None:
        target, draft, label = Path(models[0]), Path(models[1]), str(models[2])
        for p in (target, draft):
            if not (p / "config.json").is_file():
                raise FileNotFoundError(
                    f"tree_exit: checkpoint directory {str(p)!r} has no config.json"
                )
        return target, draft, label
    target, draft = write_tiny_models(scratch / "tiny", seed=seed)
    return target, draft, "random tiny Qwen3 target + DFlash drafter (exitlaw tiny-models)"


def compute(
    *,
    seed: int = 0,
    quick: bool = False,
    models: tuple[str, str, str] | None = None,
    budget: int = 32,
    temperature: float = 1.0,
    max_new_tokens: int | None = None,
) -> dict:
    """Decode one prompt with the engine, record the trace, keep the round of largest coverage."""
    torch.manual_seed(seed)
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        tdir, ddir, label = _models(models, scratch, seed)
        target, drafter = load_pair(str(tdir), str(ddir), device="cpu")
        prompt = AutoTokenizer.from_pretrained(str(tdir)).encode(PROMPT)
        cfg = DecodeConfig(
            method="ddtree",
            verifier="tev",
            budget=budget,
            settings=SamplingSettings(temperature),
            max_new_tokens=max_new_tokens or (12 if quick else 48),
            seed=seed,
        )
        with TraceWriter(scratch / "trace.jsonl", {"models": label, "budget": budget}) as writer:
            generate(target, drafter, prompt, cfg, trace=writer)
        trace = read_trace(scratch / "trace.jsonl")
    best, best_cov = None, -1.0
    for i, rd in enumerate(trace.rounds):
        cov = float(exit_law_from_edges(rd.tree, rd.edge_prob).coverage)
        if cov > best_cov:
            best, best_cov = i, cov
    rd = trace.rounds[best]
    return {
        "figure": NAME,
        "seed": seed,
        "models": label,
        "budget": budget,
        "temperature": temperature,
        "round": best,
        "rounds": len(trace.rounds),
        "parent": rd.tree.parent.tolist(),
        "token": rd.tree.token.tolist(),
        "edge_prob": np.asarray(rd.edge_prob, dtype=np.float64).tolist(),
        "exit_node": rd.exit_node,
    } | _words(label, budget, temperature)


def _words(label: str, budget, temperature) -> dict:
    """Title (scale and setting), symbols and notes of the figure (docs/design.md §1.11)."""
    trained = "mini-scale" in label
    return {
        "title": (
            f"One DDTree round recorded by the engine on a CPU (B = {budget}, T = {temperature}): {label}"
        ),
        "symbols": {
            "P(v)": "prefix probability: the target's probability of the path root..v",
            "rho(v)": "1 - target mass on v's drafted children",
            "w(v)": "exit law P(v) rho(v): the mass that reaches v and leaves the tree there",
            "C_p(T)": "coverage: sum of P(v) over non-root nodes; 1 + C_p(T) = E[L]",
            "B, T": "tree budget (non-root nodes), sampling temperature",
        },
        "notes": []
        if trained
        else ["Random untrained models: a pipeline check of the drawing, not evidence."],
    }


def layout(parent: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(x, depth)``: leaves spaced one apart in depth-first order, parents centred over their children."""
    n = parent.size
    kids = [[] for _ in range(n)]
    for u in range(1, n):
        kids[parent[u]].append(u)
    depth = np.zeros(n, dtype=int)
    for u in range(1, n):
        depth[u] = depth[parent[u]] + 1
    x = np.zeros(n)
    nxt = [0.0]

    def place(v: int) -> None:
        if not kids[v]:
            x[v] = nxt[0]
            nxt[0] += 1.0
            return
        for u in kids[v]:
            place(u)
        x[v] = 0.5 * (x[kids[v][0]] + x[kids[v][-1]])

    place(0)
    return x, depth


def draw(data: dict, out_dir: str | Path, *, overwrite: bool = False) -> list[Path]:
    require(data, ("parent", "token", "edge_prob", "models"), NAME)
    tree = DraftTree(parent=data["parent"], token=data["token"])
    law = exit_law_from_edges(tree, np.asarray(data["edge_prob"], dtype=np.float64))
    P, w = np.asarray(law.prefix, dtype=np.float64), np.asarray(law.w, dtype=np.float64)
    x, depth = layout(tree.parent)
    fig, axes = new_figure(3, width=4.0, height=3.6)
    norm = mcolors.LogNorm(vmin=1e-4, vmax=1.0)
    size = 160 if tree.num_nodes <= 40 else 60
    panels = (
        (axes[0], P, "prefix probability P(v)", "P(v)"),
        (axes[1], w, "exit law w(v) = P(v) rho(v)", "w(v)"),
    )
    for ax, vals, name, short in panels:
        for u in range(1, tree.num_nodes):
            ax.plot(
                [x[tree.parent[u]], x[u]],
                [-depth[tree.parent[u]], -depth[u]],
                color="0.7",
                lw=0.8,
                zorder=1,
            )
        sc = ax.scatter(
            x,
            -depth,
            c=np.clip(vals, 1e-4, 1.0),
            cmap="viridis",
            norm=norm,
            s=size,
            edgecolors="k",
            linewidths=0.5,
            zorder=2,
        )
        if data.get("exit_node") is not None:
            e = int(data["exit_node"])
            ax.scatter(
                [x[e]],
                [-depth[e]],
                s=size * 2.2,
                facecolors="none",
                edgecolors="#d62728",
                linewidths=1.5,
                zorder=3,
                label="TEV's sampled exit",
            )
            ax.legend(loc="upper right", frameon=False, fontsize=7)
        fig.colorbar(sc, ax=ax, shrink=0.8, label=f"{short} (probability, log scale)")
        ax.set_ylim(-tree.max_depth - 0.4, 0.6)
        ax.set_yticks(-np.arange(tree.max_depth + 1), [str(d) for d in range(tree.max_depth + 1)])
        ax.set_ylabel("depth (tokens after the root)")
        ax.set_xticks([])
        ax.set_xlabel("nodes (leaves in depth-first order)")
        ax.set_title(f"shaded by {name}")
    internal = ~tree.is_leaf
    d = np.arange(tree.max_depth + 1)
    w_int = np.array([w[(depth == k) & internal].sum() for k in d])
    w_leaf = np.array([w[(depth == k) & ~internal].sum() for k in d])
    ax = axes[2]
    ax.bar(d, w_int, color="#ff7f0e", label="at internal nodes (next target token not drafted)")
    ax.bar(d, w_leaf, bottom=w_int, color="#1f77b4", label="at leaves")
    ax.set_xticks(d)
    ax.set_xlabel("exit depth (accepted draft tokens)")
    ax.set_ylabel("target mass leaving the tree (probability)")
    ax.set_title(f"exit mass by depth; 1 + C_p(T) = {float(law.expected_length):.3f}")
    ax.set_ylim(0, max(float((w_int + w_leaf).max()), 1e-9) * 1.45)
    ax.legend(loc="upper right", frameon=False, fontsize=7)
    words = _words(data["models"], tree.budget, data.get("temperature"))
    headline(fig, {**words, **{k: data[k] for k in words if k in data}, "figure": NAME})
    return save(fig, out_dir, NAME, overwrite=overwrite)
