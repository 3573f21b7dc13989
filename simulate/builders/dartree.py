"""DARTree: a diffusion draft tree corrected by an autoregressive drafter.

A block-diffusion drafter (DFlash) gives one row ``q_d`` per depth, conditioned on
the context only, so DDTree scores a prefix by the *factorised* product
``prod_d q_d(x_d)``, blind to the tokens drafted before position ``d``. An
autoregressive correction rescores the diffusion candidates with path-conditioned
rows ``q(x_d | c, x_<d)`` and keeps the best of them. The issue names the method
("autoregressive correction of diffusion draft trees"); the Tsubame abstract
names the ingredient ("lightweight conditional corrections allow candidates to be
regenerated cheaply"); no further description was found, so this module
implements that idea as follows (assumptions):

1. *Proposal* (one diffusion call): the DDTree best-first tree at the widened
   budget ``widen * B`` from the position-wise rows (:func:`.builders.ddtree`).
2. *Correction* (one autoregressive call over the candidate tree, with tree
   attention, as EAGLE's drafter scores a tree in one pass): every candidate node
   ``u`` gets the path-conditioned value ``q(x_u | c, path(par u))``.
3. *Selection*: the top ``B`` candidate prefixes by the corrected prefix score
   ``Q(u) = prod q(x_w | c, x_<w)`` under the one best-first rule
   (:func:`exitlaw.theory.top_prefixes`, ``combine = *``, children restricted to
   the candidate tree's). ``Q`` never increases along a path, so the result is
   prefix-closed; within the candidates it maximises ``sum Q`` (OPT-Tree's
   objective, :mod:`.opt_tree`).

Tokens are never replaced (a candidate absent from the proposal is never added),
so the drafter calls per round are two: one diffusion pass and one correction
pass. With ``widen = 1`` DARTree is DDTree's tree (reordered). The recorded
``draft_logprob`` of a node is the corrected (autoregressive) ``log q``.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from exitlaw.simulate.builders.settings import check_fields, check_positive
from exitlaw.simulate.builders.table import BuildFn, sim_builder
from exitlaw.simulate.builders.trees import Built, ddtree
from exitlaw.theory import check_budget, check_rows, top_prefixes


def dartree(
    marginals: np.ndarray,
    drafter,
    context: Sequence[int],
    budget: int,
    *,
    widen: int = 2,
    root_token: int = -1,
) -> Built:
    """Top-``budget`` prefixes of the widened DDTree proposal, rescored by the autoregressive drafter."""
    check_budget(budget)
    if isinstance(widen, bool) or not isinstance(widen, int) or widen < 1:
        raise ValueError(f"widen must be an integer >= 1, got {widen!r}")
    proposal = ddtree(marginals, widen * budget, root_token=root_token).tree
    ctx = tuple(int(t) for t in context)
    kids: dict[tuple[int, ...], list[int]] = {}
    for u in range(1, proposal.num_nodes):
        kids.setdefault(proposal.path(int(proposal.parent[u])), []).append(int(proposal.token[u]))

    def children(prefix: tuple[int, ...]) -> tuple[list[int], list[float]]:
        toks = kids.get(prefix, [])
        if not toks:
            return [], []
        row = np.asarray(drafter.probs(ctx + prefix), dtype=np.float64)
        row = check_rows(row[None, :], name=f"correction row after prefix {prefix}")[0]
        ranked = sorted(toks, key=lambda t: (-row[t], t))  # value descending, then lower token
        return ranked, [float(row[t]) for t in ranked]

    bf = top_prefixes(children, budget, combine=operator.mul, root_score=1.0, root_token=root_token)
    with np.errstate(divide="ignore"):
        lp = np.log(bf.value)
    lp[0] = 0.0
    return Built(bf.tree, lp)


@dataclass(frozen=True)
class DARTreeSettings:
    """DARTree's proposal width: the diffusion proposal holds ``widen * B`` candidates (step 1)."""

    widen: int = 2

    def __post_init__(self) -> None:
        check_fields(self, "dartree setting")
        check_positive(self, "dartree setting")


# a diffusion pass and one correction pass
@sim_builder("dartree", settings=DARTreeSettings, drafter_calls=lambda cfg, s: 2)
def make_dartree(cfg, target, pos, ar, settings: DARTreeSettings) -> BuildFn:
    return lambda c, rng: dartree(
        pos.marginals(c, cfg.horizon), ar, c, cfg.budget, widen=settings.widen
    )


__all__ = ["DARTreeSettings", "dartree"]
