"""Benchmark: exit laws per second, ``jit`` + ``vmap`` against a per-node Python loop.

Prints numbers side by side in one run; asserts nothing.
"""

from __future__ import annotations

import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .demo import random_tree
from .exact import reference_law_from_edges
from .law import exit_law, exit_law_from_edges
from .tree import stack_trees


def _best_of(fn, repeats: int = 3) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def run_law_bench(
    trees: int = 4096,
    budget: int = 64,
    vocab: int = 32000,
    row_batch: int = 64,
    loop_trees: int = 128,
    seed: int = 0,
) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    pool = [random_tree(rng, budget, vocab=50, max_children=4) for _ in range(64)]
    tree_list = [pool[i % len(pool)] for i in range(trees)]
    batch = jax.device_put(stack_trees(tree_list))  # inputs live on the device, as in a real sweep
    n = batch.num_nodes
    edges = jax.device_put(rng.uniform(0.0, 1.0 / 4, size=(trees, n)))

    law_edges = jax.jit(jax.vmap(lambda t, e: exit_law_from_edges(t, e).coverage))
    law_edges(batch, edges).block_until_ready()
    t_vmap = _best_of(lambda: law_edges(batch, edges).block_until_ready())

    edges_np = np.asarray(edges)

    def loop():
        for i in range(loop_trees):
            reference_law_from_edges(tree_list[i], edges_np[i].tolist(), 1.0)

    t_loop = _best_of(loop, repeats=2) * trees / loop_trees

    # full rows: chunks of `row_batch` trees with [N, V] rows each (float32 rows, float64 laws)
    row_trees = jax.device_put(stack_trees(tree_list[:row_batch]))
    logits = rng.standard_normal((row_batch, n, vocab), dtype=np.float32)
    rows = jax.nn.softmax(jnp.asarray(logits), axis=-1)
    law_rows = jax.jit(jax.vmap(lambda t, p: exit_law(t, p).coverage))
    law_rows(row_trees, rows).block_until_ready()
    t_rows_chunk = _best_of(lambda: law_rows(row_trees, rows).block_until_ready())
    rows_np = np.asarray(rows, dtype=np.float64)

    def loop_rows():
        for i in range(min(loop_trees, row_batch)):
            tr = tree_list[i]
            edge = [1.0] + [
                rows_np[i, int(tr.parent[u]), int(tr.token[u])] for u in range(1, tr.num_nodes)
            ]
            reference_law_from_edges(tr, edge, 1.0)

    t_loop_rows = _best_of(loop_rows, repeats=2) * row_batch / min(loop_trees, row_batch)

    res = {
        "config": {
            "trees": trees,
            "budget": budget,
            "vocab": vocab,
            "row_batch": row_batch,
            "loop_trees_timed": loop_trees,
            "x64": bool(jax.config.jax_enable_x64),
            "backend": jax.default_backend(),
        },
        "edges": {
            "vmap_trees_per_s": trees / t_vmap,
            "loop_trees_per_s": trees / t_loop,
            "ratio": t_loop / t_vmap,
        },
        "rows": {
            "vmap_trees_per_s": row_batch / t_rows_chunk,
            "loop_trees_per_s": row_batch / t_loop_rows,
            "ratio": t_loop_rows / t_rows_chunk,
        },
    }
    res["text"] = (
        f"exit laws, B={budget}, {trees} trees, backend {res['config']['backend']}, x64={res['config']['x64']}\n"
        f"  from edge probs : jit+vmap {res['edges']['vmap_trees_per_s']:>12,.0f} trees/s | "
        f"per-node loop {res['edges']['loop_trees_per_s']:>10,.0f} trees/s | ratio {res['edges']['ratio']:.1f}x\n"
        f"  from rows V={vocab}: jit+vmap {res['rows']['vmap_trees_per_s']:>10,.0f} trees/s | "
        f"per-node loop {res['rows']['loop_trees_per_s']:>10,.0f} trees/s | ratio {res['rows']['ratio']:.1f}x "
        f"(chunks of {row_batch} trees)"
    )
    return res
