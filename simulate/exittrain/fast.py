"""Jitted, vmappable ExitTrain for the simulated position-wise drafter: DDTree in levels, exit laws, training.

Fast twin of :mod:`exitlaw.simulate.exittrain.mini` (whose numpy DDTree and
``exit_law_from_edges`` are the references; ``property_tests/simulate/exittrain/test_sweep.py``
checks that they agree). Everything here is one instance (one drafter, one
objective); seeds and objectives are batched with ``jax.vmap`` outside.

**DDTree in levels.** With factorised scores ``score(x_1..x_d) = sum_k log q_k(x_k)``
the top-``B`` prefixes (docs/design.md §1.9, Builders) are found level by level: the
``B`` best length-``d`` prefixes extend only the ``B`` best length-``(d-1)``
ones (a prefix outside that set is beaten by ``>= B`` prefixes of its length,
each extended by the same token), and of the pairs (parent rank ``i``, token
rank ``j``) only those with ``(i+1)(j+1) <= B`` can be in a top-``B`` (each is
dominated by the ``(i+1)(j+1) - 1`` pairs of smaller ranks). The tree is the
global top-``B`` of the ``H x B`` level winners (ties to the shallower level).
Node ``(d, b)``: token ``tok[d, b]``, parent slot ``par[d, b]`` in level ``d-1``
(level ``-1`` is the root), ``sel[d, b]`` = in the tree.

**Draft-OPD (the paper's Table 1 baseline; Lei et al. 2026, "Draft-OPD:
On-Policy Distillation for Speculative Draft Models", arXiv 2605.29343).**
That paper distils the drafter on draft-induced states: target-assisted rollout
gives stable continuations, and drafting is replayed from the positions where
verification rejected the draft, so the drafter gets target feedback on its
accepted and rejected proposals. Assumed here for a position-wise drafter
(only the abstract and summaries were available, not the loss equations):

1. on-policy block: ``x_d ~ q_d(. | c)``, ``d = 1..H`` (the drafter's own chain);
2. verification by the target: ``R_d ~ p(. | c, x_<d)``, accepted while ``R_d = x_d``;
   the first rejected depth ``j`` is the exposed error position;
3. distillation at the visited states ``d = 1..min(j, H)`` (accepted ones and the
   rejected one): forward KL ``KL(p(. | c, x_<d) || q_d(. | c))`` with the full target
   row as soft label (implemented as its cross-entropy; the target entropy is a constant);
4. one replay per context: the target-assisted continuation token ``R_j`` becomes the new
   context, a fresh on-policy block is drafted from it and distilled the same way
   (no replay when the whole block was accepted);
5. the term is the mean over all visited states of the batch, and it replaces the tree
   term: ``loss = CE + lambda * opd_term`` (same CE, lambda and data as the other objectives).
"""

from __future__ import annotations

from functools import lru_cache

import jax
import jax.numpy as jnp
import numpy as np

from exitlaw.simulate.exittrain.objectives import coefficients
from exitlaw.simulate.exittrain.vat import vat_term

NEG = -jnp.inf


@lru_cache(maxsize=None)
def pair_grid(budget: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Static ``(i, j)`` pairs with ``(i+1)(j+1) <= budget``, ``i < budget``, ``j < k``: the only candidates."""
    ii, jj = [], []
    for i in range(budget):
        for j in range(min(k, budget // (i + 1))):
            ii.append(i), jj.append(j)
    return np.array(ii, dtype=np.int32), np.array(jj, dtype=np.int32)


def ddtree_levels(logq, budget: int):
    """DDTree of per-depth marginals ``logq [H, V]`` in levels: ``(tok, par, sel)``, each ``[H, B]``."""
    horizon, vocab = logq.shape
    k = min(budget, vocab)
    ii, jj = pair_grid(budget, k)
    tok_lp, tok_id = jax.lax.top_k(logq, k)  # [H, K], sorted
    beam = jnp.full((budget,), NEG, logq.dtype).at[0].set(0.0)  # the root
    toks, pars, scores = [], [], []
    for d in range(horizon):
        cand = beam[ii] + tok_lp[d, jj]  # [G]
        sc, idx = jax.lax.top_k(cand, budget)
        (
            pars.append(jnp.asarray(ii)[idx]),
            toks.append(tok_id[d, jnp.asarray(jj)[idx]]),
            scores.append(sc),
        )
        beam = sc
    score = jnp.stack(scores)  # [H, B]
    _, best = jax.lax.top_k(score.reshape(-1), budget)  # depth-major: ties -> shallower
    sel = jnp.zeros(horizon * budget, bool).at[best].set(True).reshape(
        horizon, budget
    ) & jnp.isfinite(score)
    return jnp.stack(toks), jnp.stack(pars), sel


def level_law(ctx, tok, par, sel, matrix, alpha):
    """``(P_floored, rho, P_raw)`` ``[H, B]`` of a level tree under an order-2 target ``matrix [V, V]``.

    ``a(u) = M[token(par u), token u]``; ``P`` multiplies ``max(a, alpha)`` down the path;
    ``rho = max(1 - sum of raw child edges, 0)`` (edges only: the residual-mass rule, part 2,
    :mod:`exitlaw.theory.law`).
    """
    horizon, budget = tok.shape
    prev_tok = jnp.concatenate(
        [jnp.full((1, budget), ctx), jnp.take_along_axis(tok[:-1], par[1:], axis=1)]
    )
    edge = jnp.where(sel, matrix[prev_tok, tok], 0.0)  # [H, B]
    floored = jnp.maximum(edge, alpha)
    p_f, p_r = [floored[0]], [edge[0]]
    for d in range(1, horizon):
        p_f.append(p_f[-1][par[d]] * floored[d]), p_r.append(p_r[-1][par[d]] * edge[d])
    rows = (par[1:] + budget * jnp.arange(horizon - 1)[:, None]).reshape(-1)  # child -> parent slot
    mass = jax.ops.segment_sum(edge[1:].reshape(-1), rows, num_segments=(horizon - 1) * budget)
    mass = jnp.concatenate([mass.reshape(horizon - 1, budget), jnp.zeros((1, budget), edge.dtype)])
    rho = jnp.maximum(1.0 - mass, 0.0)
    return (
        jnp.where(sel, jnp.stack(p_f), 0.0),
        jnp.where(sel, rho, 0.0),
        jnp.where(sel, jnp.stack(p_r), 0.0),
    )


def coverage(logq, ctx, matrix, budget: int):
    """``C_p(DDTree_B)`` of one context (``logq [H, V]``) under ``matrix``."""
    tok, par, sel = ddtree_levels(logq, budget)
    return level_law(ctx, tok, par, sel, matrix, 0.0)[2].sum()


def tree_term(code, logq, ctx, matrix, budget: int):
    """``sum_v c(v) (-log q_depth(v)(x_v))`` over the batch's trees (``logq [S, H, V]``, trees from its stop-grad)."""
    fixed = jax.lax.stop_gradient(logq)
    tok, par, sel = jax.vmap(ddtree_levels, in_axes=(0, None))(fixed, budget)  # [S, H, B]
    p_f, rho, _ = jax.vmap(level_law, in_axes=(0, 0, 0, 0, None, None))(
        ctx, tok, par, sel, matrix, code[8]
    )
    depth = jnp.arange(1, logq.shape[1] + 1, dtype=logq.dtype)[None, :, None]
    coef = jax.lax.stop_gradient(coefficients(code, p_f, rho, depth, sel))
    nll = -jnp.take_along_axis(logq, tok, axis=-1)  # [S, H, B]
    return (coef * nll).sum()


def _visited(key, logq_sg, ctx, matrix):
    """On-policy block, target verification: ``(prev [S, H], visited mask [S, H], replay ctx [S], replay ok [S])``."""
    k1, k2 = jax.random.split(key)
    x = jax.random.categorical(k1, logq_sg)  # [S, H]
    prev = jnp.concatenate([ctx[:, None], x[:, :-1]], axis=1)
    r = jax.random.categorical(k2, jnp.log(matrix[prev]))  # [S, H]
    accepted = jnp.cumprod(r == x, axis=1).sum(1)  # [S]
    horizon = x.shape[1]
    visited = jnp.arange(horizon)[None] <= accepted[:, None]  # accepted + first rejected
    err = jnp.take_along_axis(r, jnp.minimum(accepted, horizon - 1)[:, None], axis=1)[:, 0]
    return prev, visited, err, accepted < horizon


def opd_term(key, params, draft_logprobs, logq, ctx, matrix):
    """Draft-OPD term (module docstring): mean over visited states of ``sum_y p(y | state) (-log q_d(y | c))``."""
    k1, k2 = jax.random.split(key)
    prev, vis, err, ok = _visited(k1, jax.lax.stop_gradient(logq), ctx, matrix)
    logq_r = draft_logprobs(params, err)  # replay from the error token
    prev_r, vis_r, _, _ = _visited(k2, jax.lax.stop_gradient(logq_r), err, matrix)
    vis_r = vis_r & ok[:, None]
    ce = -(matrix[prev] * logq).sum(-1)  # [S, H]
    ce_r = -(matrix[prev_r] * logq_r).sum(-1)
    n = vis.sum() + vis_r.sum()
    return (jnp.where(vis, ce, 0.0).sum() + jnp.where(vis_r, ce_r, 0.0).sum()) / jnp.maximum(n, 1)


# ----- training and exact evaluation (one instance; vmap outside) -------------------------------------
def loss_one(params, code, ctx, cont, key, matrix, budget: int, draft_logprobs):
    """``CE(cont) + lambda * ((1 - opd - vat) * tree_term + opd * opd_term + vat * vat_term)`` for one batch.

    ``ctx [S]``, ``cont [S, H]``; every term is computed for every objective (matched compute, one ``vmap``).
    """
    logq = draft_logprobs(params, ctx)  # [S, H, V]
    ce = -jnp.take_along_axis(logq, cont[..., None], axis=-1).mean()
    tt = tree_term(code, logq, ctx, matrix, budget)
    ot = opd_term(key, params, draft_logprobs, logq, ctx, matrix)
    vt = vat_term(logq, cont)
    return ce + code[6] * ((1.0 - code[7] - code[9]) * tt + code[7] * ot + code[9] * vt)


def make_trainer(optimizer, budget: int, draft_logprobs):
    """``train(params0, code, ctx [T, S], cont [T, S, H], keys [T, 2], matrix) -> (params, losses [T])``."""

    def train(params0, code, ctx, cont, keys, matrix):
        def step(carry, xs):
            params, state = carry
            c, y, k = xs
            loss, grads = jax.value_and_grad(loss_one)(
                params, code, c, y, k, matrix, budget, draft_logprobs
            )
            upd, state = optimizer.update(grads, state, params)
            return (jax.tree_util.tree_map(jnp.add, params, upd), state), loss

        (params, _), losses = jax.lax.scan(
            step, (params0, optimizer.init(params0)), (ctx, cont, keys)
        )
        return params, losses

    return train


def make_pretrainer(optimizer, draft_logprobs):
    """Token-only (CE) pretraining: ``pretrain(params0, ctx [T, S], cont [T, S, H]) -> params`` (no trees)."""

    def pretrain(params0, ctx, cont):
        def step(carry, xs):
            params, state = carry
            c, y = xs

            def ce(p):
                return -jnp.take_along_axis(draft_logprobs(p, c), y[..., None], axis=-1).mean()

            grads = jax.grad(ce)(params)
            upd, state = optimizer.update(grads, state, params)
            return (jax.tree_util.tree_map(jnp.add, params, upd), state), None

        (params, _), _ = jax.lax.scan(step, (params0, optimizer.init(params0)), (ctx, cont))
        return params

    return pretrain


def tau_table(params, matrices, pi, budgets: tuple[int, ...], draft_logprobs):
    """``tau [len(budgets), len(matrices)]``: ``1 + sum_c pi(c) C_p(DDTree_B(c))`` for every context (exact)."""
    vocab = pi.shape[0]
    ctx = jnp.arange(vocab)
    logq = draft_logprobs(params, ctx)  # [V, H, V]
    out = []
    for b in budgets:
        tok, par, sel = jax.vmap(ddtree_levels, in_axes=(0, None))(logq, b)
        row = []
        for m in matrices:
            cov = jax.vmap(level_law, in_axes=(0, 0, 0, 0, None, None))(ctx, tok, par, sel, m, 0.0)[
                2
            ].sum((1, 2))
            row.append(1.0 + pi @ cov)
        out.append(jnp.stack(row))
    return jnp.stack(out)


def rollouts(
    rng: np.random.Generator,
    matrix: np.ndarray,
    pi: np.ndarray,
    steps: int,
    batch: int,
    horizon: int,
):
    """Training data (numpy, one stream per seed): contexts ``[T, S] ~ pi`` and continuations ``[T, S, H] ~ p``."""
    vocab = matrix.shape[0]
    cum = np.cumsum(matrix, axis=1)
    ctx = rng.choice(vocab, size=(steps, batch), p=pi)
    cont = np.empty((steps, batch, horizon), dtype=np.int32)
    prev = ctx
    for d in range(horizon):  # y_d ~ p(. | y_{d-1}) by inverse CDF
        u = rng.random((steps, batch))
        prev = np.minimum((cum[prev] < u[..., None]).sum(-1), vocab - 1)
        cont[..., d] = prev
    return ctx.astype(np.int32), cont
