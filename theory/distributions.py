"""Validation and construction of target rows ``p_v`` (numpy only).

Row-sum tolerance: a row is a distribution when every entry is finite and
``>= 0`` and ``|sum - 1| <= ROW_SUM_ATOL`` (1e-5, enough for float32 rows over
a 150k vocabulary; pass ``atol`` to tighten). Nothing here renormalises
silently: :func:`softmax_with_temperature` is the only function that creates
distributions, and it says so.
"""

from __future__ import annotations

import numpy as np

from .errors import DistributionError, TreeError
from .tree import DraftTree

ROW_SUM_ATOL = 1e-5


def check_rows(probs, *, atol: float = ROW_SUM_ATOL, name: str = "probs") -> np.ndarray:
    """Return ``probs`` as an array after checking it is a ``[N, V]`` table of distributions."""
    arr = np.asarray(probs)
    if arr.ndim != 2:
        raise DistributionError(f"{name} must have shape [N, V], got shape {arr.shape}")
    if arr.shape[1] == 0:
        raise DistributionError(f"{name} has an empty vocabulary (shape {arr.shape})")
    if not np.issubdtype(arr.dtype, np.floating):
        if arr.dtype == object:
            raise DistributionError(f"{name} must be a float array, got dtype object")
        arr = arr.astype(np.float64)
    bad = ~np.isfinite(arr)
    if bad.any():
        r, c = np.argwhere(bad)[0]
        raise DistributionError(f"{name} row {r} has a non-finite entry {float(arr[r, c])} at token {c}")
    neg = arr < 0
    if neg.any():
        r, c = np.argwhere(neg)[0]
        raise DistributionError(f"{name} row {r} has a negative entry {float(arr[r, c])} at token {c}")
    sums = arr.sum(axis=1, dtype=np.float64)
    off = np.abs(sums - 1.0) > atol
    if off.any():
        r = int(np.flatnonzero(off)[0])
        raise DistributionError(
            f"{name} row {r} sums to {float(sums[r])!r}, not 1 within tolerance {atol:g}"
        )
    return arr


def check_tree_rows(tree: DraftTree, probs, *, atol: float = ROW_SUM_ATOL) -> np.ndarray:
    """Check that ``probs`` has one distribution per node of ``tree`` and covers its tokens."""
    arr = np.asarray(probs)
    if arr.ndim != 2:
        raise DistributionError(f"probs must have shape [N, V], got shape {arr.shape}")
    if arr.shape[0] != tree.num_nodes:
        raise DistributionError(
            f"probs has {arr.shape[0]} rows but the tree has {tree.num_nodes} nodes"
        )
    arr = check_rows(arr, atol=atol)
    tree.check_vocab(arr.shape[1])
    return arr


def check_edge_probs(tree: DraftTree, edge_probs, *, atol: float = ROW_SUM_ATOL) -> np.ndarray:
    """Check edge probabilities ``a(u)`` (entry 0, the root, is ignored) and child masses ``<= 1 + atol``."""
    arr = np.asarray(edge_probs, dtype=np.float64)
    if arr.shape != (tree.num_nodes,):
        raise DistributionError(
            f"edge_probs must have shape [{tree.num_nodes}] (one per node), got {arr.shape}"
        )
    body = arr[1:]
    bad = np.flatnonzero(~np.isfinite(body) | (body < 0) | (body > 1 + atol))
    if bad.size:
        i = int(bad[0]) + 1
        raise DistributionError(f"node {i} has edge probability {float(arr[i])!r}, not in [0, 1]")
    mass = np.zeros(tree.num_nodes)
    np.add.at(mass, tree.parent[1:], body)
    over = np.flatnonzero(mass > 1 + atol)
    if over.size:
        v = int(over[0])
        raise DistributionError(
            f"children of node {v} carry target mass {float(mass[v])!r} > 1 (tolerance {atol:g})"
        )
    return arr


def check_temperature(temperature: float, *, allow_zero: bool) -> float:
    """``temperature`` must be finite and positive (or zero when ``allow_zero``: the greedy limit)."""
    try:
        t = float(temperature)
    except (TypeError, ValueError):
        raise DistributionError(f"temperature must be a number, got {temperature!r}") from None
    if not np.isfinite(t) or t < 0 or (t == 0 and not allow_zero):
        need = ">= 0" if allow_zero else "> 0"
        raise DistributionError(f"temperature must be finite and {need}, got {temperature!r}")
    return t


def softmax_with_temperature(logits, temperature: float) -> np.ndarray:
    """``softmax(logits / T)`` row-wise in float64; ``T = 0`` gives the one-hot argmax (first on ties)."""
    t = check_temperature(temperature, allow_zero=True)
    z = np.asarray(logits, dtype=np.float64)
    if z.ndim < 1 or z.shape[-1] == 0:
        raise DistributionError(f"logits must have a non-empty last axis, got shape {z.shape}")
    if np.isnan(z).any() or np.isposinf(z).any():
        raise DistributionError("logits contain NaN or +inf")
    if t == 0:
        out = np.zeros_like(z)
        np.put_along_axis(out, z.argmax(-1)[..., None], 1.0, axis=-1)
        return out
    z = z / t
    z = z - z.max(-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(-1, keepdims=True)


def gather_edge_probs(tree: DraftTree, probs: np.ndarray) -> np.ndarray:
    """``a(u) = p_{par(u)}(x_u)``; ``a(root) = 1``."""
    edge = np.ones(tree.num_nodes, dtype=np.float64)
    edge[1:] = probs[tree.parent[1:], tree.token[1:]]
    return edge


__all__ = [
    "ROW_SUM_ATOL",
    "check_rows",
    "check_tree_rows",
    "check_edge_probs",
    "check_temperature",
    "softmax_with_temperature",
    "gather_edge_probs",
    "TreeError",
]
