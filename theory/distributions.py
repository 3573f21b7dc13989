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
from .sampling_settings import check_temperature_floor
from .tree import DraftTree

ROW_SUM_ATOL = 1e-5


def check_atol(atol) -> float:
    """A tolerance must be a finite real number ``>= 0`` (``nan`` would disable every check)."""
    if isinstance(atol, (bool, np.bool_)) or not isinstance(
        atol, (int, float, np.integer, np.floating)
    ):
        raise DistributionError(f"atol must be a finite number >= 0, got {atol!r}")
    if not np.isfinite(atol) or atol < 0:
        raise DistributionError(f"atol must be a finite number >= 0, got {atol!r}")
    return float(atol)


def as_real_array(values, name: str) -> np.ndarray:
    """``values`` as a float array; bool, complex, string and object inputs are refused by name.

    Integer arrays are promoted to float64 (an exact conversion for probabilities 0 and 1).
    """
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError) as err:
        raise DistributionError(f"{name} must be a numeric array ({err})") from None
    kind = arr.dtype.kind
    if kind == "f":
        return arr
    if kind in "iu":
        return arr.astype(np.float64)
    what = {"b": "bool", "c": "complex", "U": "string", "S": "bytes", "O": "object"}.get(
        kind, str(arr.dtype)
    )
    # name the first entry numpy could not hold (an int beyond 64 bits, a string, None, ...)
    if kind == "O":
        for i, x in enumerate(arr.ravel()):
            if (
                not isinstance(x, (int, float, np.integer, np.floating))
                or isinstance(x, bool)
                or (isinstance(x, int) and not -(2**63) <= x < 2**64)
            ):
                raise DistributionError(
                    f"{name} must hold real numbers, got entry {i} = {x!r} "
                    f"({'an integer beyond 64 bits' if isinstance(x, int) and not isinstance(x, bool) else type(x).__name__})"
                )
    raise DistributionError(f"{name} must hold real numbers, got {what} values (dtype {arr.dtype})")


def check_rows(probs, *, atol: float = ROW_SUM_ATOL, name: str = "probs") -> np.ndarray:
    """Return ``probs`` as an array after checking it is a ``[N, V]`` table of distributions."""
    atol = check_atol(atol)
    arr = as_real_array(probs, name)
    if arr.ndim != 2:
        raise DistributionError(f"{name} must have shape [N, V], got shape {arr.shape}")
    if arr.shape[1] == 0:
        raise DistributionError(f"{name} has an empty vocabulary (shape {arr.shape})")
    bad = ~np.isfinite(arr)
    if bad.any():
        r, c = np.argwhere(bad)[0]
        raise DistributionError(
            f"{name} row {r} has a non-finite entry {float(arr[r, c])} at token {c}"
        )
    neg = arr < 0
    if neg.any():
        r, c = np.argwhere(neg)[0]
        raise DistributionError(
            f"{name} row {r} has a negative entry {float(arr[r, c])} at token {c}"
        )
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
    arr = as_real_array(probs, "probs")
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
    atol = check_atol(atol)
    arr = as_real_array(edge_probs, "edge_probs").astype(np.float64)
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


def check_padded_edges(parent, valid, edge_probs, *, atol: float = ROW_SUM_ATOL) -> np.ndarray:
    """:func:`check_edge_probs` for concrete padded arrays (``[..., N]``; padding entries ignored).

    Every valid non-root node needs ``a(u)`` in ``[0, 1]`` and every node a child mass ``<= 1 + atol``.
    """
    atol = check_atol(atol)
    arr = as_real_array(edge_probs, "edge_probs").astype(np.float64)
    parent, valid = np.asarray(parent), np.asarray(valid, dtype=bool)
    if arr.shape != parent.shape:
        raise DistributionError(f"edge_probs must have shape {parent.shape}, got {arr.shape}")
    n = parent.shape[-1]
    flat_e, flat_p, flat_v = arr.reshape(-1, n), parent.reshape(-1, n), valid.reshape(-1, n)
    for b in range(flat_e.shape[0]):
        where = f"tree {b}: " if flat_e.shape[0] > 1 else ""
        real = flat_v[b].copy()
        real[0] = False
        e = flat_e[b]
        bad = np.flatnonzero(real & (~np.isfinite(e) | (e < 0) | (e > 1 + atol)))
        if bad.size:
            i = int(bad[0])
            raise DistributionError(
                f"{where}node {i} has edge probability {float(e[i])!r}, not in [0, 1]"
            )
        mass = np.zeros(n)
        np.add.at(mass, np.clip(flat_p[b][real], 0, n - 1), e[real])
        over = np.flatnonzero(mass > 1 + atol)
        if over.size:
            v = int(over[0])
            raise DistributionError(
                f"{where}children of node {v} carry target mass {float(mass[v])!r} > 1 "
                f"(tolerance {atol:g})"
            )
    return arr


def check_temperature(temperature: float, *, allow_zero: bool) -> float:
    """``temperature`` must be finite and positive (or zero when ``allow_zero``: the greedy limit), and
    not below :data:`~exitlaw.theory.sampling_settings.MIN_TEMPERATURE` when positive."""
    if isinstance(temperature, (bool, np.bool_, str, bytes)):
        raise DistributionError(f"temperature must be a number, got {temperature!r}")
    try:
        t = float(temperature)
    except (TypeError, ValueError):
        raise DistributionError(f"temperature must be a number, got {temperature!r}") from None
    if not np.isfinite(t) or t < 0 or (t == 0 and not allow_zero):
        need = ">= 0" if allow_zero else "> 0"
        raise DistributionError(f"temperature must be finite and {need}, got {temperature!r}")
    return check_temperature_floor(t, allow_zero=allow_zero)


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
    "check_padded_edges",
    "check_atol",
    "as_real_array",
    "check_temperature",
    "softmax_with_temperature",
    "gather_edge_probs",
    "TreeError",
]
