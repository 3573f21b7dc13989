"""Properties that kill realistic one-line bugs the other tests let through (each test is named
after the property it pins; ``property_tests/self_mutation.py`` plants the bugs and checks these fail).

* exit law independent of padding: any padded size (not only powers of two) and deep chains;
* exact path sets on constructed ties: the oracle and DDTree break score ties toward the shallower
  prefix (docs/design.md §1.5, "Oracle tree");
* draws at injected boundary uniforms never land on a zero weight;
* the drafter's context equals a causal prefill of the committed tokens (commit keeps the hidden
  states of the accepted path, not of nodes ``0..k-1``);
* the streamed trace summary equals the exact law round by round, for mixed sizes and chunkings.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from exitlaw.theory import (
    DraftTree,
    SamplingSettings,
    exit_law_from_edges,
    oracle_tree,
    reference_law_from_edges,
)
from exitlaw.theory.trace.stream import edge_law_batch


def _random_edges(tree: DraftTree, rng) -> np.ndarray:
    raw = rng.uniform(0.05, 1.0, tree.num_nodes)
    mass = np.zeros(tree.num_nodes)
    np.add.at(mass, tree.parent[1:], raw[1:])
    edge = raw / np.maximum(1.0, 1.25 * mass[np.maximum(tree.parent, 0)])
    edge[0] = 1.0
    return edge


def _random_tree(rng, nodes: int, deep: bool) -> DraftTree:
    if deep:
        return DraftTree.chain(list(rng.integers(0, 5, nodes - 1)))
    parent = [-1] + [int(rng.integers(0, u)) for u in range(1, nodes)]
    return DraftTree(parent=parent, token=[0] + list(range(1, nodes)))


@given(
    nodes=st.integers(2, 40),
    extra=st.integers(0, 23),
    deep=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_exit_law_is_independent_of_padding(nodes, extra, deep, seed):
    rng = np.random.default_rng(seed)
    tree = _random_tree(rng, nodes, deep)
    edge = _random_edges(tree, rng)
    ref = reference_law_from_edges(tree, edge)
    size = nodes + extra  # any size: 12, 13, 20, ... not only powers of two
    padded = np.concatenate([edge, np.zeros(extra)])
    law = exit_law_from_edges(tree.padded(size), padded)
    np.testing.assert_allclose(
        np.asarray(law.w)[:nodes], [float(x) for x in ref.w], rtol=1e-9, atol=1e-12
    )
    assert float(law.coverage) == pytest.approx(float(ref.coverage), rel=1e-12)
    assert np.all(np.asarray(law.w)[nodes:] == 0)


def test_twelve_node_chain_padded_to_twelve_has_the_exact_coverage():
    tree = DraftTree.chain(list(range(1, 12)))
    edge = np.array([1.0] + [0.9] * 11)
    exact = sum(0.9**d for d in range(1, 12))
    assert float(exit_law_from_edges(tree.padded(12), edge).coverage) == pytest.approx(
        exact, rel=1e-12
    )


@pytest.mark.parametrize("width", [16, 32])
def test_streamed_law_kernel_reaches_the_root_of_the_deepest_chain(width):
    nodes = width  # a chain as deep as its bucket allows
    parent = np.zeros((1, width), dtype=np.int64)
    parent[0, 1:nodes] = np.arange(nodes - 1)
    valid = np.zeros((1, width), dtype=bool)
    valid[0, :nodes] = True
    edge = np.zeros((1, width))
    edge[0, :nodes] = 0.9
    cov, depth, w = edge_law_batch(parent, valid, edge)
    assert cov[0] == pytest.approx(sum(0.9**d for d in range(1, nodes)), rel=1e-12)
    assert depth[0, nodes - 1] == nodes - 1 and w.sum() == pytest.approx(1.0, rel=1e-12)


# ----- ties between depths ------------------------------------------------------------------
def test_oracle_exact_path_set_breaks_ties_toward_the_shallower_prefix():
    # p(.|root) = [0.5, 0.5]; p(.|0) = [1, 0]: P((0, 0)) = 0.5 ties P((1,)) = 0.5 at depths 2 and 1
    def target(prefix):
        return np.array([1.0, 0.0]) if prefix[:1] == (0,) else np.array([0.5, 0.5])

    paths = {oracle_tree(target, 2).path(v) for v in range(1, 3)}
    assert paths == {(0,), (1,)}
    paths3 = {oracle_tree(target, 3).path(v) for v in range(1, 4)}
    assert paths3 == {(0,), (1,), (0, 0)}


def test_ddtree_exact_path_set_breaks_ties_toward_the_shallower_prefix():
    from exitlaw.engine.builders.single import build_ddtree
    from exitlaw.simulate.builders.trees import ddtree

    # q_1 = [0.5, 0.5, 0], q_2 = [1, 0, 0]: score((0, 0)) = log 0.5 = score((1,))
    marginals = np.array([[0.5, 0.5, 0.0], [1.0, 0.0, 0.0]])
    tree = ddtree(marginals, 2).tree
    assert {tree.path(v) for v in range(1, tree.num_nodes)} == {(0,), (1,)}
    import torch

    etree, _ = build_ddtree(torch.tensor(np.log(np.where(marginals > 0, marginals, 1e-300))), 2, 7)
    assert {etree.path(v) for v in range(1, etree.num_nodes)} == {(0,), (1,)}


# ----- inverse-CDF draws at step boundaries ---------------------------------------------------
class _FixedUniform:
    """A generator stand-in whose ``random()`` returns the injected uniforms in turn."""

    def __init__(self, values):
        self.values = list(values)

    def random(self):
        return self.values.pop(0)


@pytest.mark.parametrize(
    "weights",
    [[0.0, 0.5, 0.5], [0.5, 0.0, 0.5], [0.25, 0.25, 0.0, 0.5], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]],
)
def test_draws_at_injected_boundary_uniforms_never_land_on_zero_weight(weights):
    from exitlaw.simulate.randomness import GeneratorRandomness

    w = np.array(weights)
    cdf = np.cumsum(w)
    boundaries = [0.0] + [float(c) / cdf[-1] for c in cdf[:-1]] + [np.nextafter(1.0, 0.0)]
    rand = GeneratorRandomness(np.random.default_rng(0))
    for u in boundaries:
        rand._streams["bonus"] = _FixedUniform([u])
        i = rand.categorical(w, stream="bonus")
        assert w[i] > 0, (weights, u, i)


def test_engine_draws_at_injected_boundary_uniforms_never_land_on_zero_weight(monkeypatch):
    import torch

    from exitlaw.engine.decode.verifiers import draws as ev

    for weights in ([0.0, 0.5, 0.5], [0.5, 0.0, 0.5], [0.0, 0.0, 1.0], [0.25, 0.25, 0.0, 0.5]):
        w = torch.tensor(weights, dtype=torch.float64)
        c = torch.cumsum(w, 0)
        for u in [0.0] + [float(x) for x in c[:-1] / c[-1]]:
            monkeypatch.setattr(
                torch, "rand", lambda *a, _u=u, **k: torch.full((1,), _u, dtype=torch.float64)
            )
            i = int(ev._draw(w, torch.Generator()))
            monkeypatch.undo()
            assert weights[i] > 0, (weights, u, i)


# ----- the drafter's context after a commit --------------------------------------------------
def test_drafter_context_equals_a_causal_prefill_of_the_committed_tokens(pair):
    import torch

    from exitlaw.engine.builders.single import build_ddtree
    from exitlaw.engine.decode.device_tree import to_device_tree
    from exitlaw.engine.decode.loop import (
        commit_stage,
        draft_stage,
        prefill_stage,
        verify_forward_stage,
    )
    from exitlaw.engine.decode.verifiers import VerifyResult

    target, drafter = pair
    prompt = [3, 17, 5, 9, 11]
    state = prefill_stage(target, drafter, prompt, SamplingSettings(0.0), torch.Generator())
    root = state.root  # the prefill's (greedy) first token, at len(prompt)
    rows = draft_stage(state, target, drafter)
    tree, logq = build_ddtree(rows, 12, state.root)
    # an accepted path whose node ids are not 0..k-1: the deepest node with a non-contiguous path
    cands = [
        v
        for v in range(1, tree.num_nodes)
        if list(tree.path_nodes(v)) != list(range(len(tree.path_nodes(v))))
    ]
    assert cands, "the tree needs a branch for this test"
    exit_node = max(cands, key=lambda v: (tree.depth[v], v))
    path = list(tree.path_nodes(exit_node))
    dtree = to_device_tree(tree, target.device, logq)
    step = verify_forward_stage(state, target, dtree)
    start = state.start
    commit_stage(state, target, dtree, step, VerifyResult(exit_node, 0, path))
    committed = [int(t) for t in tree.token[path[1:]]]
    cache = target.new_cache()
    full = torch.tensor(prompt + [root] + committed, dtype=torch.long)
    causal = target.prefill(cache, full, all_logits=False).hidden  # [S, L*H]
    np.testing.assert_allclose(
        state.pending_hidden.float().numpy(),
        causal[start : start + len(path)].float().numpy(),
        rtol=1e-4,
        atol=1e-4,
    )


def test_the_self_mutation_table_matches_the_code():
    """Every planted bug of ``self_mutation.py`` still applies to exactly one place, with its tests present."""
    from helpers import self_mutation

    assert self_mutation.check_table() == []
    assert len(self_mutation.MUTANTS) >= 10
