"""ExitTrain in miniature: three draft-training objectives on a synthetic target.

Target: an order-2 :class:`~exitlaw.simulate.lab.models.NGramTarget` (a Markov
chain with Zipf rows), so every tree-parent row is exact. Drafter: a
position-wise model ``q_d(. | c) = softmax(logits_d(c_last))`` for
``d = 1..H`` (a full table ``[H, V, V]``, or low rank ``E[c] W_d + b_d``).

Training step (docs/design.md §1.10, ExitTrain), for a batch of contexts ``c`` drawn from
the target chain's stationary law and continuations ``y ~ p(. | c)``:

1. the current drafter and the inference builder (DDTree, budget ``B_train``)
   build ``T(c)`` (no gradient through the discrete builder);
2. the frozen target scores every node under its tree parent: ``a(u)``; the
   exit law gives ``P`` and ``w = P rho`` (``exit_law_from_edges``, detached);
3. ``loss = CE(y) + lambda * sum_{v != root} c(v) (-log q_{depth(v)}(x_v | c))``
   with ``c`` the normalised weight of an :class:`~exitlaw.simulate.exittrain.objectives.Objective`
   (weights token / prefix / exit / exit-depth, normalisations batch / tree / nodes,
   optional edge floor). The table's three rows are the legacy labels
   *token-only* (``token``), *prefix-weighted* (``prefix``, norm ``tree``) and
   *exit-guided* (``exit``, norm ``tree``) at the regime's lambda. Draft-OPD and the
   powered seed sweep live in :mod:`~exitlaw.simulate.exittrain.fast` and
   :mod:`~exitlaw.simulate.exittrain.sweep`.

Matched compute: the three objectives start from one pretrained drafter
(token-only pretraining, the stand-in for a released checkpoint; optionally on
the target at another temperature, which makes the start over- or
under-confident) and see the same contexts, continuations, steps, batch and
optimizer; every objective
builds and scores its trees (token-only ignores them).

Evaluation is exact (no sampling): ``tau = 1 + sum_c pi(c) C_p(T_B(c))``, the
saturated block length of a fixed-tree exact verifier, over every context
``c`` weighted by the stationary law ``pi`` of the T = 1 chain, for budgets
32/64/128 and targets at T = 0 (greedy rows) and T = 1. The oracle row gives
``1 + sum_c pi(c) C*_p(B)``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from functools import lru_cache
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
from tqdm import tqdm

from exitlaw.simulate.builders.trees import ddtree
from exitlaw.simulate.exittrain.objectives import (
    Objective,
    ObjectiveError,
    coefficients,
    prefix_and_exit,
)
from exitlaw.simulate.lab.models import NGramTarget
from exitlaw.simulate.lab.world import SyntheticTarget
from exitlaw.theory import exit_law_from_edges, oracle_tree, stack_trees

OBJECTIVES = ("token-only", "prefix-weighted", "exit-guided")  # the table's row labels
LEGACY = {"token-only": "token", "prefix-weighted": "prefix", "exit-guided": "exit"}


def as_objective(objective: str | Objective, lam: float = 1.0) -> Objective:
    """A legacy row label (``token-only``, ``prefix-weighted``, ``exit-guided``: norm ``tree``), or an Objective."""
    if isinstance(objective, Objective):
        return objective
    if objective not in LEGACY:
        raise ObjectiveError(
            f"unknown objective {objective!r} (labels: {', '.join(OBJECTIVES)}; or pass an Objective)"
        )
    return Objective(LEGACY[objective], "tree", lam)


@dataclass(frozen=True)
class Regime:
    name: str
    vocab: int = 64
    zipf: float = 1.5
    jitter: float = 0.0
    target_seed: int = 0
    horizon: int = 8
    rank: int | None = 4  # None: full table [H, V, V]
    train_budget: int = 64
    batch: int = 32
    pretrain_steps: int = 150
    steps: int = 300
    pretrain_lr: float = 3e-2
    pretrain_temperature: float = (
        1.0  # != 1: the "released" drafter was distilled from a sharper/flatter target
    )
    lr: float = 1e-2
    lam: float = 1.0
    eval_budgets: tuple[int, ...] = (32, 64, 128)

    @property
    def target(self) -> SyntheticTarget:
        """The regime's synthetic target: a bigram (order 2) at temperature 1. Its fields stay flat
        here: a regime is written whole into results that ``paper_repro`` reads."""
        return SyntheticTarget(
            vocab=self.vocab, order=2, zipf=self.zipf, jitter=self.jitter, seed=self.target_seed
        )


REGIMES: dict[str, Regime] = {
    "lowrank": Regime("lowrank"),
    "lowrank-peaked": Regime("lowrank-peaked", zipf=2.2),
    "lowrank-flat": Regime("lowrank-flat", zipf=1.1),
    "lowrank-deep": Regime("lowrank-deep", zipf=2.2, horizon=12),
    "overconfident": Regime("overconfident", pretrain_temperature=0.5),
    "underconfident": Regime("underconfident", pretrain_temperature=2.0),
    "table": Regime("table", rank=None, pretrain_lr=1e-1, lr=3e-2),
}


# ----- drafter --------------------------------------------------------------
def init_params(regime: Regime, key: jax.Array) -> dict[str, jax.Array]:
    V, H = regime.vocab, regime.horizon
    if regime.rank is None:
        return {"table": 0.01 * jax.random.normal(key, (H, V, V))}
    k1, k2 = jax.random.split(key)
    r = regime.rank
    return {
        "emb": jax.random.normal(k1, (V, r)) / np.sqrt(r),
        "w": 0.1 * jax.random.normal(k2, (H, r, V)),
        "b": jnp.zeros((H, V)),
    }


def draft_logprobs(params: dict[str, jax.Array], prev: jax.Array) -> jax.Array:
    """``log q_d(. | c)`` for contexts with last token ``prev`` ``[S]``: ``[S, H, V]``."""
    if "table" in params:
        logits = jnp.transpose(params["table"][:, prev, :], (1, 0, 2))
    else:
        logits = jnp.einsum("sr,hrv->shv", params["emb"][prev], params["w"]) + params["b"][None]
    return jax.nn.log_softmax(logits, axis=-1)


def loss_fn(params, prev, cont, node_depth, node_token, node_weight, lam):
    """``CE(cont) + lam * sum_{trees, v} c(v) (-log q_{depth(v)}(x_v))`` (``c`` already normalised over the batch)."""
    logq = draft_logprobs(params, prev)  # [S, H, V]
    ce = -jnp.take_along_axis(logq, cont[..., None], axis=-1)[..., 0].mean()  # cont: [S, H]
    d = jnp.maximum(node_depth - 1, 0)  # [S, N]
    node_lq = logq[jnp.arange(prev.shape[0])[:, None], d, node_token]  # [S, N]
    tree = -(node_weight * node_lq).sum()
    return ce + lam * tree


# ----- trees and exit laws ----------------------------------------------------
@jax.jit
def _batched_law(batch, edges):
    law = jax.vmap(exit_law_from_edges)(batch, edges)
    return law.prefix, law.w, law.coverage


def _laws(trees, edges_list, n: int):
    """``(PaddedTree batch, P, w, C_p)`` for trees padded to ``n`` nodes (one jit per shape)."""
    batch = stack_trees(trees, n)
    edges = np.zeros((len(trees), n))
    for i, e in enumerate(edges_list):
        edges[i, : e.size] = e
    prefix, w, cov = _batched_law(batch, jnp.asarray(edges))
    return batch, np.asarray(prefix), np.asarray(w), np.asarray(cov)


def _edges(tree, context_token: int, matrix: np.ndarray) -> np.ndarray:
    prev = np.where(tree.parent[1:] == 0, context_token, tree.token[np.maximum(tree.parent[1:], 0)])
    return np.concatenate([[1.0], matrix[prev, tree.token[1:]]])


def tree_weights(trees, contexts, matrix: np.ndarray, objective: str | Objective):
    """Per-node ``(depth, token, c)`` arrays ``[S, N]``: ``c`` the objective's normalised weights (0 at the root).

    ``P`` and ``rho`` come from :func:`~exitlaw.simulate.exittrain.objectives.prefix_and_exit`
    (edges floored at the objective's alpha for ``P`` only).
    """
    obj = as_objective(objective)
    if obj.weight in ("draft-opd", "vat"):
        raise ObjectiveError(
            f"{obj.weight} has no tree weights; it is trained by exitlaw.simulate.exittrain.fast"
        )
    n = max(t.num_nodes for t in trees)
    batch = stack_trees(trees, n)
    edges = np.zeros((len(trees), n))
    for i, (t, c) in enumerate(zip(trees, contexts)):
        edges[i, : t.num_nodes] = _edges(t, c, matrix)
    nonroot = batch.valid & (np.arange(n) > 0)
    log_f = np.where(
        nonroot, np.log(np.maximum(np.where(nonroot, edges, 1.0), obj.edge_floor)), 0.0
    )
    c = _coefficients(
        jnp.asarray(obj.code()),
        jnp.asarray(log_f),
        jnp.asarray(np.where(nonroot, edges, 0.0)),
        jnp.asarray(batch.ancestor),
        jnp.asarray(batch.child),
        jnp.asarray(batch.depth, float),
        jnp.asarray(nonroot),
    )
    return batch.depth, batch.token, np.asarray(c)


@jax.jit
def _coefficients(code, log_f, edges, ancestor, child, depth, mask):
    """``c(v)`` ``[S, N]`` of the objective ``code`` (one compile per padded shape)."""
    prefix, rho = jax.vmap(prefix_and_exit, in_axes=(0, 0, 0, 0, None))(
        log_f, edges, ancestor, child, code[8]
    )
    return coefficients(code, prefix, rho, depth, mask)


def stationary(matrix: np.ndarray, iters: int = 2000) -> np.ndarray:
    pi = np.full(matrix.shape[0], 1.0 / matrix.shape[0])
    for _ in range(iters):
        pi = pi @ matrix
    return pi / pi.sum()


# ----- training ---------------------------------------------------------------
@lru_cache(maxsize=None)
def _optimizer(lr: float):
    """Adam at ``lr`` and its jitted update step (shared by every objective: one compile per lr)."""
    opt = optax.adam(lr)

    @jax.jit
    def step(params, state, prev, cont, depth, token, weight, lam):
        loss, grads = jax.value_and_grad(loss_fn)(params, prev, cont, depth, token, weight, lam)
        upd, state = opt.update(grads, state, params)
        return optax.apply_updates(params, upd), state, loss

    return opt, step


def _train(
    params,
    regime: Regime,
    objective: str | Objective,
    steps: int,
    lr: float,
    matrix,
    pi,
    data_seed: int,
    progress: bool,
    desc: str,
):
    opt, step = _optimizer(lr)
    state = opt.init(params)
    obj = as_objective(objective, regime.lam)
    lam = float(obj.code()[6])

    rng = np.random.default_rng(data_seed)
    cum = np.cumsum(matrix, axis=1)
    it = range(steps)
    if progress:
        it = tqdm(it, desc=desc, leave=False)
    losses = []
    for _ in it:
        ctx = rng.choice(regime.vocab, size=regime.batch, p=pi)
        cont = np.empty((regime.batch, regime.horizon), dtype=np.int64)
        prev = ctx.copy()
        for d in range(regime.horizon):  # y_d ~ p(. | y_{d-1}) by inverse CDF
            u = rng.random(regime.batch)
            prev = np.minimum((cum[prev] < u[:, None]).sum(1), regime.vocab - 1)
            cont[:, d] = prev
        q = np.exp(np.asarray(draft_logprobs(params, jnp.asarray(ctx)), dtype=np.float64))
        trees = [ddtree(q[i], regime.train_budget).tree for i in range(regime.batch)]
        depth, token, s = tree_weights(trees, ctx, matrix, obj)
        params, state, loss = step(
            params,
            state,
            jnp.asarray(ctx),
            jnp.asarray(cont),
            jnp.asarray(depth),
            jnp.asarray(token),
            jnp.asarray(s),
            lam,
        )
        losses.append(float(loss))
    return params, losses


# ----- evaluation ---------------------------------------------------------------
def evaluate(
    params, regime: Regime, matrices: dict[str, np.ndarray], pi: np.ndarray
) -> dict[str, float]:
    """``tau = 1 + sum_c pi(c) C_p(DDTree_B(c))`` for every eval budget and temperature."""
    ctx = np.arange(regime.vocab)
    q = np.exp(np.asarray(draft_logprobs(params, jnp.asarray(ctx)), dtype=np.float64))
    out = {}
    for B in regime.eval_budgets:
        trees = [ddtree(q[c], B).tree for c in ctx]
        for tname, m in matrices.items():
            _, _, _, cov = _laws(trees, [_edges(t, c, m) for t, c in zip(trees, ctx)], B + 1)
            out[f"B={B},{tname}"] = float(1.0 + pi @ cov)
    return out


def evaluate_oracle(
    regime: Regime, targets: dict[str, NGramTarget], pi: np.ndarray
) -> dict[str, float]:
    out = {}
    for B in regime.eval_budgets:
        for tname, tgt in targets.items():
            cov = []
            m = tgt.transition_matrix()
            for c in range(regime.vocab):
                tree = oracle_tree(tgt.prefix_target((c,)), B)
                _, _, _, cv = _laws([tree], [_edges(tree, c, m)], B + 1)
                cov.append(cv[0])
            out[f"B={B},{tname}"] = float(1.0 + pi @ np.array(cov))
    return out


def run_exittrain_mini(
    regime: Regime, *, steps: int | None = None, seed: int = 0, progress: bool = False
) -> dict[str, Any]:
    """Pretrain once (token-only), fine-tune under each objective, evaluate: the ExitTrain table."""
    if steps is not None:
        regime = replace(regime, steps=steps)
    target = regime.target.model()
    greedy = target.with_temperature(0.0)
    m1, m0 = target.transition_matrix(), greedy.transition_matrix()
    pi = stationary(m1)
    matrices = {"T=0": m0, "T=1": m1}
    params0 = init_params(regime, jax.random.PRNGKey(seed))
    m_pre = (
        m1
        if regime.pretrain_temperature == 1.0
        else target.with_temperature(regime.pretrain_temperature).transition_matrix()
    )
    params0, _ = _train(
        params0,
        regime,
        "token-only",
        regime.pretrain_steps,
        regime.pretrain_lr,
        m_pre,
        stationary(m_pre),
        data_seed=10_000 + seed,
        progress=progress,
        desc="pretrain",
    )
    rows = {"pretrained": evaluate(params0, regime, matrices, pi)}
    entropy = {"pretrained": draft_entropy(params0, regime, pi)}
    curves = {}
    for obj in OBJECTIVES:
        params, losses = _train(
            params0,
            regime,
            obj,
            regime.steps,
            regime.lr,
            m1,
            pi,
            data_seed=20_000 + seed,
            progress=progress,
            desc=obj,
        )
        rows[obj] = evaluate(params, regime, matrices, pi)
        entropy[obj] = draft_entropy(params, regime, pi)
        curves[obj] = [float(np.mean(losses[:10])), float(np.mean(losses[-10:]))]
    rows["oracle"] = evaluate_oracle(regime, {"T=0": greedy, "T=1": target}, pi)
    marg = np.eye(regime.vocab)
    ideal = []
    # exact d-step marginals: the CE optimum of a position-wise drafter
    for _ in range(regime.horizon):
        marg = marg @ m1
        ideal.append(float(pi @ -(marg * np.log(np.where(marg > 0, marg, 1.0))).sum(-1)))
    entropy["marginals (CE optimum)"] = float(np.mean(ideal))
    return {
        "regime": {**asdict(regime), "eval_budgets": list(regime.eval_budgets)},
        "seed": seed,
        "table": rows,
        "draft_entropy": entropy,
        "loss_first_last": curves,
    }


def draft_entropy(params, regime: Regime, pi: np.ndarray) -> float:
    """Mean entropy (nats) of ``q_d(. | c)`` over depths, contexts weighted by ``pi``: how sharp the drafter is."""
    logq = draft_logprobs(params, jnp.arange(regime.vocab))  # [V, H, V]
    logq = np.asarray(logq, dtype=np.float64)
    ent = -(np.exp(logq) * logq).sum(-1).mean(-1)
    return float(pi @ ent)


def format_table(result: dict[str, Any]) -> str:
    reg = result["regime"]
    cols = [f"B={b},{t}" for t in ("T=0", "T=1") for b in reg["eval_budgets"]]
    cap = "table" if reg["rank"] is None else f"rank {reg['rank']}"
    lines = [
        f"ExitTrain mini, regime {reg['name']}: V={reg['vocab']} zipf={reg['zipf']} H={reg['horizon']} "
        f"drafter {cap}, train B={reg['train_budget']}, {reg['steps']} fine-tune steps x batch {reg['batch']} "
        f"(pretrain {reg['pretrain_steps']} at T={reg['pretrain_temperature']}), lambda={reg['lam']}, seed {result['seed']}",
        "tau = 1 + E_pi[C_p(DDTree_B)] (exact)",
        f"{'drafter':>22} " + " ".join(f"{c:>11}" for c in cols) + f" {'H(q) nats':>10}",
    ]
    ent = result.get("draft_entropy", {})
    for name, row in result["table"].items():
        h = f"{ent[name]:>10.3f}" if name in ent else f"{'':>10}"
        lines.append(f"{name:>22} " + " ".join(f"{row[c]:>11.4f}" for c in cols) + f" {h}")
    if "marginals (CE optimum)" in ent:
        lines.append(
            f"{'marginals (CE optimum)':>22} "
            + " " * (12 * len(cols) - 1)
            + f" {ent['marginals (CE optimum)']:>10.3f}"
        )
    lines.append(
        "oracle: top-B target prefixes with no horizon limit (at T=0 it is the greedy chain, 1 + B)"
    )
    return "\n".join(lines)
