"""OPT-Tree and DARTree: valid prefix-closed trees within budget; OPT-Tree optimal on its objective.

OPT-Tree's objective is ``E_q(T) = sum_{u != root} Q(u)`` under the autoregressive
drafter (:mod:`exitlaw.simulate.builders.opt_tree`, eq. 1): it must match a brute-force
maximum over all prefix-closed trees on a small vocabulary, and be at least the
objective of DDTree, EAGLE-2 and DARTree trees of the same budget. DARTree keeps
only candidates of its widened DDTree proposal and maximises ``E_q`` among them,
so it is at least DDTree's ``E_q`` at the same budget.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exitlaw.simulate.builders.dartree import dartree
from exitlaw.simulate.builders.opt_tree import draft_expected_acceptance, opt_tree
from exitlaw.simulate.builders.trees import ddtree, eagle_dynamic
from exitlaw.simulate.lab.models import AutoregressiveDrafter, NGramTarget, PositionWiseDrafter
from exitlaw.simulate.lab.presets import get_preset
from exitlaw.theory import DraftTree


def _models(vocab: int, seed: int, noise: float):
    target = NGramTarget(vocab, order=2, zipf=1.5, seed=seed)
    kw = dict(noise=noise, seed=seed + 1)
    return target, PositionWiseDrafter(target, **kw), AutoregressiveDrafter(target, **kw)


SEEDS = st.integers(0, 10**4)
NOISE = st.sampled_from([0.0, 0.5, 1.5])  # how far the draft model is from the target


def _prefix_closed(tree: DraftTree) -> bool:
    paths = {tree.path(v) for v in range(tree.num_nodes)}
    return all(p[:-1] in paths for p in paths if p)


@settings(max_examples=15)
@given(seed=SEEDS, budget=st.integers(1, 24), depth=st.integers(1, 6), noise=NOISE)
def test_opt_tree_is_valid_and_beats_other_builders_on_its_objective(seed, budget, depth, noise):
    target, pos, ar = _models(32, seed, noise)
    ctx = (seed % 32, (seed // 32) % 32)
    built = opt_tree(ar, ctx, budget, depth=depth)
    tree = built.tree
    assert tree.budget == budget and tree.max_depth <= depth and _prefix_closed(tree)
    e_opt = draft_expected_acceptance(ar, ctx, tree)
    others = [
        ddtree(pos.marginals(ctx, depth), budget).tree,
        dartree(pos.marginals(ctx, depth), ar, ctx, budget).tree,
    ]
    if depth >= 1 and budget <= 4 ** min(depth, 3):
        others.append(eagle_dynamic(ar, ctx, budget, depth=depth, top_k=4).tree)
    for other in others:
        assert other.budget <= budget and other.max_depth <= depth
        assert e_opt >= draft_expected_acceptance(ar, ctx, other) - 1e-12
    # the node's own log q is recorded
    assert np.allclose(
        np.exp(built.draft_logprob[1:]),
        [
            ar.probs(ctx + tree.path(int(tree.parent[u])))[tree.token[u]]
            for u in range(1, tree.num_nodes)
        ],
    )


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("budget", [1, 3, 5])
def test_opt_tree_matches_brute_force_over_all_prefix_closed_trees(seed, budget):
    vocab, depth = 3, 2
    _, _, ar = _models(vocab, seed, 1.0)
    ctx = (seed,)
    prefixes = [(a,) for a in range(vocab)] + [(a, b) for a in range(vocab) for b in range(vocab)]
    best = 0.0
    for subset in combinations(prefixes, budget):
        s = set(subset)
        if all(p[:-1] in s for p in s if len(p) > 1):
            best = max(
                best, draft_expected_acceptance(ar, ctx, DraftTree.from_paths(sorted(s, key=len)))
            )
    got = draft_expected_acceptance(ar, ctx, opt_tree(ar, ctx, budget, depth=depth).tree)
    assert got == pytest.approx(best, rel=1e-12)


@settings(max_examples=15)
@given(seed=SEEDS, budget=st.integers(1, 20), widen=st.integers(1, 3), noise=NOISE)
def test_dartree_is_a_valid_subtree_of_its_proposal_and_no_worse_than_ddtree(
    seed, budget, widen, noise
):
    target, pos, ar = _models(24, seed, noise)
    ctx = (seed % 24,)
    marg = pos.marginals(ctx, 5)
    tree = dartree(marg, ar, ctx, budget, widen=widen).tree
    proposal = ddtree(marg, widen * budget).tree
    dd = ddtree(marg, budget).tree
    assert tree.budget == min(budget, proposal.budget) and _prefix_closed(tree)
    assert {tree.path(v) for v in range(tree.num_nodes)} <= {
        proposal.path(v) for v in range(proposal.num_nodes)
    }
    assert (
        draft_expected_acceptance(ar, ctx, tree) >= draft_expected_acceptance(ar, ctx, dd) - 1e-12
    )
    if widen == 1:
        assert {tree.path(v) for v in range(tree.num_nodes)} == {
            dd.path(v) for v in range(dd.num_nodes)
        }


def test_builders_reject_bad_arguments():
    _, pos, ar = _models(8, 0, 0.5)
    with pytest.raises(ValueError, match="depth"):
        opt_tree(ar, (1,), 4, depth=0)
    with pytest.raises(ValueError, match="budget"):
        opt_tree(ar, (1,), -1, depth=2)
    with pytest.raises(ValueError, match="widen"):
        dartree(pos.marginals((1,), 3), ar, (1,), 4, widen=0)


def test_field_preset_runs_the_new_builders_beside_ddtree_eagle_and_caddtree(tmp_path):
    from exitlaw.simulate.lab.presets import with_overrides
    from exitlaw.simulate.lab.run import run_simulation

    cfg = with_overrides(get_preset("field"), rounds=6)
    assert {"ddtree", "eagle", "caddtree", "opt-tree", "dartree", "tsubame-univer"} <= set(
        cfg.builders
    )
    res = run_simulation(cfg, tmp_path, progress=False, log=lambda s: None)
    for name in ("opt-tree", "dartree"):
        agg = res["builders"][name]["aggregates"]
        assert agg["mean_budget"] == cfg.budget
        assert agg["mean_allocation_gap"] >= -1e-9  # the oracle is the ceiling of any builder
    assert res["builders"]["opt-tree"]["drafter_calls_per_round"] == cfg.horizon
    assert res["builders"]["dartree"]["drafter_calls_per_round"] == 2
