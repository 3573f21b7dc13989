"""Exact exit laws on a fixed draft tree, in JAX (docs/design.md §1.2).

For a tree with edge probabilities ``a(u) = p_par(u)(x_u)``:

* prefix probability ``P(u) = prod_{ancestors} a`` computed in log space as
  ``log P = A @ log a`` (``A`` the ancestor-or-self matrix), so deep trees do
  not underflow;
* child mass ``m = C @ a`` (``C`` the child incidence), exit probability
  ``rho = 1 - m``;
* exit law ``w = P * rho`` (sums to one), coverage ``C_p = sum_{v != root} P(v)``,
  ceiling ``E[L] <= 1 + C_p``.

**Residual-mass rule** (the one rule for ``rho`` near zero; every implementation of the
exit law cites it: this module, :func:`exitlaw.theory.exact.reference_law`, the simulated
TEV ``simulate.verifiers.procedures.tev_weights`` and ``simulate.verifiers.fast.tev_many``,
the engine's TEV ``engine.decode.verifiers.tev._tev_exit_law`` and ``batch_exit_law``,
ExitTrain's ``engine.training.law.tree_law`` and ``simulate.exittrain.fast.level_law``).
``rho(v)`` is the mass of ``p_v`` off ``v``'s child tokens, ``sum_{y not a child token} p_v(y)``
(docs/design.md §1.2: the exit marginal of the block law).

1. *With the rows at hand* ``rho(v)`` is that sum of non-negative entries, summed directly,
   never the difference ``1 - m(v)``: the difference carries the row's rounding (up to the
   row tolerance :data:`ROW_SUM_ATOL`, ~1e-7 for float32 rows) and cancels when the children
   cover the row. So ``rho >= 0`` always; ``rho = 0`` exactly iff every residual entry is 0 (no
   positive exit weight for a node whose residual row is empty); and a true residual of 1e-12
   or 1e-16 keeps its value to the rows' relative precision: it is a real weight. A leaf's
   residual is its whole row, of mass 1 (rows are distributions); ``rho(leaf) = 1``.
2. *With edge probabilities only* (a trace, ExitTrain's scored edges) the residual entries
   are unknown: ``rho(v) = max(1 - m(v), 0)``. Never negative; a residual below the edges'
   rounding (a few ``1e-16`` in float64) cannot be told from 0 and may read as 0 or as that
   rounding. A child mass above one by more than the tolerance is an input error.

Functions act on *one* tree; batch with ``jax.vmap`` over a
:class:`~exitlaw.theory.tree.PaddedTree` built by ``stack_trees``. All are
pure and ``jit``/``vmap``/``grad``-friendly; values are float64 when
``jax_enable_x64`` is on. Concrete inputs are validated before any tracing;
traced inputs (inside ``jit``/``vmap``/``grad``) are shape-checked only.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .distributions import (
    ROW_SUM_ATOL,
    as_real_array,
    check_atol,
    check_edge_probs,
    check_padded_edges,
    check_rows,
    check_temperature,
    check_tree_rows,
)
from .errors import DistributionError
from .sampling_settings import SamplingSettings, process_logits
from .tree import DraftTree, PaddedTree

_FIELDS = ("parent", "token", "depth", "valid", "ancestor", "child")
jax.tree_util.register_pytree_node(
    PaddedTree,
    lambda t: (tuple(getattr(t, f) for f in _FIELDS), None),
    lambda _, leaves: PaddedTree(*leaves),
)


class ExitLaw(NamedTuple):
    """Per-node quantities of the canonical exit law (shape ``[N]`` unless scalar)."""

    edge: jax.Array  # a(u); a(root) = 1; 0 on padding
    log_prefix: jax.Array  # log P(u)
    prefix: jax.Array  # P(u)
    child_mass: jax.Array  # m(v)
    rho: jax.Array  # residual mass (rows) or max(1 - m(v), 0) (edges): the residual-mass rule
    w: jax.Array  # P(v) rho(v)
    coverage: jax.Array  # C_p(T) = sum_{v != root} P(v)
    expected_length: jax.Array  # 1 + C_p(T)


def _is_traced(*xs) -> bool:
    return any(isinstance(x, jax.core.Tracer) for x in xs)


def _padded(tree: DraftTree | PaddedTree) -> PaddedTree:
    if isinstance(tree, DraftTree):
        return tree.padded(tree.num_nodes)
    if isinstance(tree, PaddedTree):
        return tree
    raise TypeError(f"expected a DraftTree or PaddedTree, got {type(tree).__name__}")


def _log_prefix_matrix(t: PaddedTree, edge: jax.Array) -> jax.Array:
    """``log P = A @ log a`` with the ancestor-or-self matrix (the level-parallel TEV form).

    Reference twin of :func:`_log_prefix_doubling`; ``O(N^2)`` per tree.
    """
    positive = edge > 0
    log_edge = jnp.where(positive, jnp.log(jnp.where(positive, edge, 1.0)), -jnp.inf)
    # written with `where` so that 0 * (-inf) never occurs
    return jnp.sum(jnp.where(t.ancestor, log_edge[None, :], 0.0), axis=-1)


def _log_prefix_doubling(t: PaddedTree, edge: jax.Array) -> jax.Array:
    """``log P(v) = sum of log a over path(v)`` by pointer doubling: ``O(N log N)`` gathers.

    After step ``k`` each node holds the sum over its ``2^k`` nearest ancestors-or-self
    and points ``2^k`` levels up; ``ceil(log2 N)`` steps reach the root. Zero edges
    are counted separately so no ``-inf`` enters the sums (finite gradients).
    """
    n = edge.shape[-1]
    positive = edge > 0
    log_edge = jnp.log(jnp.where(positive, edge, 1.0))
    zeros = (~positive).astype(jnp.int32)
    jump = jnp.maximum(t.parent, 0)  # the root points at itself and carries log a = 0
    for _ in range(max(1, int(np.ceil(np.log2(max(n, 2)))))):
        # indices are always in range; "clip" avoids the masking of the default gather mode
        log_edge = log_edge + log_edge.at[jump].get(mode="clip")  # the root holds 0: adds nothing
        zeros = zeros + zeros.at[jump].get(mode="clip")
        jump = jump.at[jump].get(mode="clip")
    return jnp.where(zeros > 0, -jnp.inf, log_edge)


def _law_from_edges(
    t: PaddedTree, edge: jax.Array, *, log_prefix_fn=_log_prefix_doubling
) -> ExitLaw:
    n = edge.shape[-1]
    is_root = jnp.arange(n) == 0
    edge = jnp.where(is_root, 1.0, jnp.where(t.valid, edge, 0.0)).astype(edge.dtype)
    log_prefix = log_prefix_fn(t, edge)
    prefix = jnp.exp(log_prefix)
    # m = C @ a as a segment sum over parents (padding and the root add nothing)
    parent_row = jnp.where(t.valid & ~is_root, t.parent, n)
    child_mass = jnp.zeros(n, dtype=edge.dtype).at[parent_row].add(edge, mode="drop")
    rho = jnp.maximum(1.0 - child_mass, 0.0)  # residual-mass rule, part 2 (edges only)
    w = prefix * rho
    coverage = jnp.sum(jnp.where(t.valid & ~is_root, prefix, 0.0))
    return ExitLaw(edge, log_prefix, prefix, child_mass, rho, w, coverage, 1.0 + coverage)


def _edges_from_rows(t: PaddedTree, probs: jax.Array) -> jax.Array:
    parent = jnp.maximum(t.parent, 0)
    return probs[parent, t.token]


def _child_token_mask(t: PaddedTree, vocab: int) -> jax.Array:
    """``M[v, y] = 1`` iff ``y`` is the token of a child of ``v``."""
    n = t.parent.shape[-1]
    real_child = t.valid & (jnp.arange(n) > 0)
    rows = jnp.where(real_child, t.parent, n)  # out-of-range rows are dropped
    return jnp.zeros((n, vocab), dtype=bool).at[rows, t.token].set(True, mode="drop")


def _check_rows_shape(t: PaddedTree, probs) -> None:
    if probs.ndim != 2 or probs.shape[0] != t.parent.shape[-1]:
        raise DistributionError(
            f"probs must have shape [N={t.parent.shape[-1]}, V], got {tuple(probs.shape)}"
        )


def _bucket(num_nodes: int) -> int:
    """Node count rounded up to a power of two (>= 8), so trees of similar size share one compilation."""
    return max(8, 1 << (num_nodes - 1).bit_length())


def _on_bucket(tree: DraftTree | PaddedTree, array, core):
    """Run a jitted ``core(padded_tree, array)``; a DraftTree is padded to its bucket and sliced back."""
    if isinstance(tree, PaddedTree):
        return core(tree, jnp.asarray(array))
    t = _padded(tree)
    n, b = t.num_nodes, _bucket(t.num_nodes)
    arr = jnp.asarray(array)
    arr = jnp.pad(arr, [(0, b - n)] + [(0, 0)] * (arr.ndim - 1))
    out = core(tree.padded(b), arr)
    return jax.tree_util.tree_map(lambda x: x[:n] if x.ndim >= 1 else x, out)


def _residual_mass(t: PaddedTree, probs: jax.Array) -> jax.Array:
    """``rho`` by the residual-mass rule, part 1: an internal node sums its residual entries; a leaf has 1."""
    mask = _child_token_mask(t, probs.shape[-1])
    return jnp.where(mask.any(-1), jnp.sum(jnp.where(mask, 0.0, probs), axis=-1), 1.0)


def _law_from_rows(t: PaddedTree, probs: jax.Array) -> ExitLaw:
    law = _law_from_edges(t, _edges_from_rows(t, probs))
    rho = _residual_mass(t, probs)
    return law._replace(rho=rho, w=law.prefix * rho)


@jax.jit
def _rows_core(t: PaddedTree, probs: jax.Array) -> ExitLaw:
    return _law_from_rows(t, probs)


@jax.jit
def _edges_core(t: PaddedTree, edge: jax.Array) -> ExitLaw:
    return _law_from_edges(t, edge)


@jax.jit
def _block_core(t: PaddedTree, probs: jax.Array) -> jax.Array:
    law = _law_from_edges(t, _edges_from_rows(t, probs))
    mask = _child_token_mask(t, probs.shape[-1])
    out = law.prefix[:, None] * jnp.where(mask, 0.0, probs)
    return jnp.where(t.valid[:, None], out, 0.0)


@jax.jit
def _residual_core(t: PaddedTree, probs: jax.Array) -> jax.Array:
    kept = jnp.where(_child_token_mask(t, probs.shape[-1]), 0.0, probs)
    mass = kept.sum(-1, keepdims=True)
    return jnp.where(mass > 0, kept / jnp.where(mass > 0, mass, 1.0), 0.0)


def _checked_rows(tree: DraftTree | PaddedTree, probs, atol: float):
    """Concrete rows are validated (a PaddedTree's padding rows excepted) and returned as a float array."""
    check_atol(atol)
    if not _is_traced(probs, *(getattr(tree, f) for f in _FIELDS if isinstance(tree, PaddedTree))):
        if isinstance(tree, DraftTree):
            probs = check_tree_rows(tree, probs, atol=atol)
        else:
            arr = as_real_array(probs, "probs")
            _check_rows_shape(_padded(tree), arr)
            valid = np.asarray(tree.valid, dtype=bool)
            if valid.ndim == 1:
                check_rows(arr[valid], atol=atol)
                _check_padded_tokens(tree, arr.shape[-1])
            probs = arr
    _check_rows_shape(_padded(tree), jnp.asarray(probs) if not hasattr(probs, "ndim") else probs)
    return probs


def _check_padded_tokens(t: PaddedTree, vocab: int) -> None:
    token, valid = np.asarray(t.token), np.asarray(t.valid, dtype=bool)
    bad = np.flatnonzero(valid & (np.arange(token.size) > 0) & ((token < 0) | (token >= vocab)))
    if bad.size:
        i = int(bad[0])
        raise DistributionError(
            f"node {i} has token {int(token[i])}, outside vocabulary of size {vocab}"
        )


def exit_law(tree: DraftTree | PaddedTree, probs, *, atol: float = ROW_SUM_ATOL) -> ExitLaw:
    """Exit law from full target rows ``probs[v] = p_v`` (shape ``[N, V]``); ``rho`` is each internal
    node's residual mass summed directly (residual-mass rule, part 1, module docstring)."""
    return _on_bucket(tree, _checked_rows(tree, probs, atol), _rows_core)


def exit_law_from_edges(
    tree: DraftTree | PaddedTree, edge_probs, *, atol: float = ROW_SUM_ATOL
) -> ExitLaw:
    """Exit law from edge probabilities alone (``edge_probs[u] = a(u)``; entry 0 ignored).

    This is what a recorded trace keeps: ``rho = max(1 - m, 0)`` (residual-mass rule, part 2,
    module docstring); a child mass above one by more than ``atol`` is rejected.
    """
    check_atol(atol)
    if not _is_traced(edge_probs):
        if isinstance(tree, DraftTree):
            edge_probs = check_edge_probs(tree, edge_probs, atol=atol)
        elif isinstance(tree, PaddedTree) and not _is_traced(tree.parent, tree.valid):
            edge_probs = check_padded_edges(tree.parent, tree.valid, edge_probs, atol=atol)
    t = _padded(tree)
    edge = jnp.asarray(edge_probs)
    if edge.shape != t.parent.shape:
        raise DistributionError(f"edge_probs must have shape {t.parent.shape}, got {edge.shape}")
    if not jnp.issubdtype(edge.dtype, jnp.floating):
        edge = edge.astype(jnp.result_type(float))
    return _on_bucket(tree, edge, _edges_core)


def probs_from_logits(logits, temperature: float) -> jax.Array:
    """``softmax(logits / T)`` over the last axis; ``T = 0`` is the greedy one-hot limit (first argmax)."""
    if not _is_traced(logits):
        z = as_real_array(logits, "logits")
        if not np.all(np.isfinite(z)):
            raise DistributionError("logits contain NaN or inf")
    logits = jnp.asarray(logits)
    if _is_traced(temperature):
        return jax.nn.softmax(logits / temperature, axis=-1)
    t = check_temperature(temperature, allow_zero=True)
    if t == 0:
        return jax.nn.one_hot(jnp.argmax(logits, axis=-1), logits.shape[-1], dtype=logits.dtype)
    return jax.nn.softmax(logits / t, axis=-1)


def exit_law_from_logits(tree: DraftTree | PaddedTree, logits, temperature: float = 1.0) -> ExitLaw:
    """Exit law of ``p_v = softmax(logits_v / T)``."""
    if not _is_traced(logits) and not np.all(np.isfinite(as_real_array(logits, "logits"))):
        raise DistributionError("logits contain NaN or inf")
    return exit_law(tree, probs_from_logits(logits, temperature))


def block_law(tree: DraftTree | PaddedTree, probs, *, atol: float = ROW_SUM_ATOL) -> jax.Array:
    """Joint law of (exit node, bonus token): ``P(v) p_v(y) [y not a child token of v]``, shape ``[N, V]``."""
    return _on_bucket(tree, _checked_rows(tree, probs, atol), _block_core)


def residual_rows(tree: DraftTree | PaddedTree, probs, *, atol: float = ROW_SUM_ATOL) -> jax.Array:
    """Residual bonus laws ``p_v^res(y) = p_v(y) [y not a child token] / rho(v)``.

    The normaliser is the row's mass off the child tokens, which equals ``rho(v)``
    for rows that sum to one. Rows with ``rho(v) = 0`` (children cover all mass)
    are returned as zeros: that exit has probability zero, its bonus law is undefined.
    """
    return _on_bucket(tree, _checked_rows(tree, probs, atol), _residual_core)


def exit_depth_law(tree: DraftTree | PaddedTree, law: ExitLaw, max_depth: int) -> jax.Array:
    """Law of the exit depth (accepted draft tokens): ``Pr[depth(V) = d]`` for ``d = 0..max_depth``."""
    t = _padded(tree)
    return (
        jnp.zeros(max_depth + 1, dtype=law.w.dtype).at[t.depth].add(jnp.where(t.valid, law.w, 0.0))
    )


def processed_exit_law(tree, logits, settings: SamplingSettings) -> ExitLaw:
    """The exit law (``w = P rho``, :func:`exit_law`) of ``tree`` when every node's row is the
    processed target ``process_logits(logits[v], settings)`` (docs/design.md §1.7); coverage
    ``C = sum P`` and ceilings follow from it as from any rows."""
    return exit_law(tree, process_logits(logits, settings))
