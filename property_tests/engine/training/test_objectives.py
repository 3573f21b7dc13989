"""ExitTrain objectives against their formulas on hand-computed trees: every weight
(token, prefix, exit, exit-depth, draft-opd's reach weights), every normalisation
(batch, tree, nodes) on a batch that holds a dead tree, the authors' edge floor, the
tree term and the two named presets. Every expected number below is worked out by hand
in the comments, not computed by the code under test."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from exitlaw.engine.training.config import PRESETS, TrainConfig, cosine_factor, preset_config
from exitlaw.engine.training.exittrain import (
    TreeBatch,
    exittrain_loss,
    objective_weights,
    raw_weights,
    tree_law,
)
from exitlaw.engine.training.objectives import ObjectiveError, check_objective
from exitlaw.theory import DistributionError, DraftTree

# Tree A: root -> 1 -> 2, root -> 3; edges a1 = .5, a2 = .4, a3 = .3
#   P = [1, .5, .2, .3]; rho = [1 - .8, 1 - .4, 1, 1] = [.2, .6, 1, 1]; w = [.2, .3, .2, .3]
#   exit total W_A = .8; sum P = 1.0; w * depth = [0, .3, .4, .3] (sum 1.0)
# Tree B: chain root -> 1 -> 2; edges .9, .5
#   P = [1, .9, .45]; rho = [.1, .5, 1]; w = [.1, .45, .45]; W_B = .9; sum P = 1.35; w * depth = [0, .45, .9]
# Tree C (dead): root -> 1 with a1 = 0: P1 = 0, every non-root weight is 0
TREE_A = DraftTree(parent=np.array([-1, 0, 1, 0]), token=np.array([0, 1, 2, 3]))
TREE_B = DraftTree.chain([1, 2])
TREE_C = DraftTree.chain([1])
EDGE = torch.tensor(
    [[1.0, 0.5, 0.4, 0.3], [1.0, 0.9, 0.5, 0.0], [1.0, 0.0, 0.0, 0.0]], dtype=torch.float64
)
N_NODES = 6  # real non-root nodes: 3 + 2 + 1


@pytest.fixture(scope="module")
def batch():
    trees = TreeBatch.from_trees([TREE_A, TREE_B, TREE_C], num_nodes=4)
    return trees, tree_law(trees, EDGE)


def test_exit_law_of_the_hand_trees(batch):
    trees, law = batch
    np.testing.assert_allclose(
        law.prefix.numpy(), [[1, 0.5, 0.2, 0.3], [1, 0.9, 0.45, 0], [1, 0, 0, 0]], atol=1e-12
    )
    np.testing.assert_allclose(
        law.w[:, 1:].numpy(), [[0.3, 0.2, 0.3], [0.45, 0.45, 0], [0, 0, 0]], atol=1e-12
    )
    np.testing.assert_allclose(law.coverage.numpy(), [1.0, 1.35, 0.0], atol=1e-12)


# expected weights wt[k, 1:] per (objective, normalisation), by hand from the comments above
HAND = {
    # batch: s / sum s (exit: sum w = .8 + .9 = 1.7; exit-depth: 1.0 + 1.35 = 2.35)
    ("exit", "batch"): [[0.3 / 1.7, 0.2 / 1.7, 0.3 / 1.7], [0.45 / 1.7, 0.45 / 1.7, 0], [0, 0, 0]],
    ("token", "batch"): [[0.3 / 1.7, 0.2 / 1.7, 0.3 / 1.7], [0.45 / 1.7, 0.45 / 1.7, 0], [0, 0, 0]],
    ("exit-depth", "batch"): [
        [0.3 / 2.35, 0.4 / 2.35, 0.3 / 2.35],
        [0.45 / 2.35, 0.9 / 2.35, 0],
        [0, 0, 0],
    ],
    # prefix/batch, the paper's control: P * (W_k / sum_k P) / Z, Z = 1.7
    #   A: [.5, .2, .3] * .8 / 1.0 = [.4, .16, .24];  B: [.9, .45] * .9 / 1.35 = [.6, .3]
    ("prefix", "batch"): [
        [0.4 / 1.7, 0.16 / 1.7, 0.24 / 1.7],
        [0.6 / 1.7, 0.3 / 1.7, 0],
        [0, 0, 0],
    ],
    # tree: s / S_k / K with K = 3 trees (the dead tree gets nothing but counts in K)
    ("exit", "tree"): [[0.375 / 3, 0.25 / 3, 0.375 / 3], [0.5 / 3, 0.5 / 3, 0], [0, 0, 0]],
    ("prefix", "tree"): [[0.5 / 3, 0.2 / 3, 0.3 / 3], [(2 / 3) / 3, (1 / 3) / 3, 0], [0, 0, 0]],
    ("exit-depth", "tree"): [[0.3 / 3, 0.4 / 3, 0.3 / 3], [(1 / 3) / 3, (2 / 3) / 3, 0], [0, 0, 0]],
    # nodes: s / M with M = 6 real non-root nodes (the dead tree's node counts)
    ("exit", "nodes"): [[0.3 / 6, 0.2 / 6, 0.3 / 6], [0.45 / 6, 0.45 / 6, 0], [0, 0, 0]],
    ("prefix", "nodes"): [[0.5 / 6, 0.2 / 6, 0.3 / 6], [0.9 / 6, 0.45 / 6, 0], [0, 0, 0]],
    ("exit-depth", "nodes"): [[0.3 / 6, 0.4 / 6, 0.3 / 6], [0.45 / 6, 0.9 / 6, 0], [0, 0, 0]],
}


@pytest.mark.parametrize("objective,normalisation", sorted(HAND))
def test_weights_equal_the_hand_computed_formula_with_a_dead_tree_in_the_batch(
    batch, objective, normalisation
):
    trees, law = batch
    wt = objective_weights(objective, law, trees, normalisation)
    np.testing.assert_allclose(wt[:, 1:].numpy(), HAND[(objective, normalisation)], atol=1e-12)
    assert float(wt[:, 0].abs().sum()) == 0.0  # never the root
    assert float(wt[2].abs().sum()) == 0.0  # the dead tree carries nothing


def test_draft_opd_reach_weights_are_the_parents_prefix_probability(batch):
    trees, law = batch
    # s(v) = P(par(v)): A: [P0, P1, P0] = [1, .5, 1]; B: [1, .9]; C: [1]
    np.testing.assert_allclose(
        raw_weights("draft-opd", law, trees)[:, 1:].numpy(),
        [[1, 0.5, 1], [1, 0.9, 0], [1, 0, 0]],
        atol=1e-12,
    )


def test_a_batch_of_dead_trees_gets_zero_weights_under_every_normalisation():
    trees = TreeBatch.from_trees([TREE_C, TREE_C])
    law = tree_law(trees, torch.tensor([[1.0, 0.0], [1.0, 0.0]], dtype=torch.float64))
    for objective in ("exit", "prefix", "exit-depth"):
        for normalisation in ("batch", "tree", "nodes"):
            wt = objective_weights(objective, law, trees, normalisation)
            assert float(wt.abs().sum()) == 0.0 and torch.isfinite(wt).all(), (
                objective,
                normalisation,
            )


def test_edge_floor_floors_p_and_clips_rho_from_the_raw_child_mass():
    # root -> 1 -> 2, root -> 3; raw edges a1 = .7, a2 = 1e-6, a3 = .3 + 4e-6 (root child mass 1 + 4e-6:
    # above one, within the row tolerance, as float32 scoring can give)
    tree = DraftTree(parent=np.array([-1, 0, 1, 0]), token=np.array([0, 1, 2, 3]))
    trees = TreeBatch.from_trees([tree])
    edge = torch.tensor([[1.0, 0.7, 1e-6, 0.3 + 4e-6]], dtype=torch.float64)
    floored = tree_law(trees, edge, edge_floor=1e-4)
    # P from max(a, 1e-4): [1, .7, .7e-4, a3]; rho = max(1 - raw child mass, 0): [0 (from -4e-6), 1 - 1e-6, 1, 1]
    np.testing.assert_allclose(floored.prefix.numpy(), [[1, 0.7, 0.7e-4, 0.3 + 4e-6]], rtol=1e-12)
    np.testing.assert_allclose(floored.rho.numpy(), [[0, 1 - 1e-6, 1, 1]], rtol=1e-12)
    np.testing.assert_allclose(
        floored.w.numpy(), [[0, 0.7 * (1 - 1e-6), 0.7e-4, 0.3 + 4e-6]], rtol=1e-12
    )
    raw = tree_law(
        trees, edge
    )  # the paper's reading: raw edges; rho never negative (residual-mass rule, part 2)
    np.testing.assert_allclose(raw.prefix.numpy(), [[1, 0.7, 0.7e-6, 0.3 + 4e-6]], rtol=1e-12)
    assert float(raw.rho[0, 0]) == 0.0
    for bad in (0.0, 1.0, -1e-4, float("nan")):
        with pytest.raises(ObjectiveError, match="floor"):
            tree_law(trees, edge, edge_floor=bad)
    with pytest.raises(DistributionError, match="node 0 carry edge mass"):
        tree_law(trees, torch.tensor([[1.0, 0.7, 1e-6, 0.35]], dtype=torch.float64))


def test_tree_term_and_total_equal_the_hand_formula_for_uniform_drafter_rows(batch):
    trees, _ = batch
    # uniform drafter rows over V = 4: every -log q = log 4, so the tree term is (sum of weights) * log 4
    logits = torch.zeros(3, 2, 4, requires_grad=True)
    targets = torch.zeros(3, 2, dtype=torch.long)
    valid = torch.ones(3, 2, dtype=torch.bool)
    nodes = exittrain_loss(
        logits, targets, valid, trees, EDGE, objective="exit", lam=0.1, normalisation="nodes"
    )
    # nodes: (.8 + .9 + 0) / 6 * log 4; total = CE + .1 * tree with CE = log 4
    assert nodes.tree.item() == pytest.approx(1.7 / 6 * math.log(4), rel=1e-6)
    assert nodes.total.item() == pytest.approx(math.log(4) * (1 + 0.1 * 1.7 / 6), rel=1e-6)
    depth = exittrain_loss(
        logits, targets, valid, trees, EDGE, objective="exit-depth", lam=0.1, normalisation="nodes"
    )
    assert depth.tree.item() == pytest.approx(2.35 / 6 * math.log(4), rel=1e-6)
    for normalisation in ("batch", "tree"):  # these sum to one over the batch: tree term = log 4
        t = exittrain_loss(
            logits,
            targets,
            valid,
            trees,
            EDGE,
            objective="prefix",
            lam=1.0,
            normalisation=normalisation,
        )
        assert t.tree.item() == pytest.approx(
            math.log(4) * (1.0 if normalisation == "batch" else 2 / 3), rel=1e-6
        )
    token = exittrain_loss(logits, targets, valid, trees, EDGE, objective="token", lam=5.0)
    assert token.lam == 0.0 and token.total.item() == pytest.approx(math.log(4), rel=1e-6)


def test_options_that_are_not_defined_raise_named_errors():
    with pytest.raises(ObjectiveError, match="objective"):
        check_objective("exit-guided")
    with pytest.raises(ObjectiveError, match="normalisation"):
        check_objective("exit", "per-node")
    with pytest.raises(ObjectiveError, match="draft-opd"):
        check_objective("draft-opd", "nodes")
    with pytest.raises(ValueError, match="scored trees"):
        TrainConfig(objective="exit-depth", score_trees=False)


def test_presets_name_the_papers_and_the_authors_code_readings_and_flags_override_them():
    paper = preset_config("paper")
    assert (paper.objective, paper.weight_norm, paper.lam, paper.edge_floor, paper.budget) == (
        "exit",
        "batch",
        1.0,
        None,
        64,
    )
    code = preset_config("authors-code")
    assert (code.objective, code.weight_norm, code.lam, code.edge_floor, code.budget) == (
        "prefix",
        "nodes",
        0.1,
        1e-4,
        32,
    )
    assert preset_config("authors-code", objective="exit-depth", lam=0.2).objective == "exit-depth"
    assert preset_config("authors-code", objective="exit-depth", lam=0.2).lam == 0.2
    assert preset_config("authors-code", objective="exit-depth").edge_floor == 1e-4
    assert preset_config(None) == TrainConfig() and set(PRESETS) == {"paper", "authors-code"}
    with pytest.raises(ValueError, match="preset"):
        preset_config("sequoia")


def test_cosine_schedule_hand_values():
    kw = dict(steps=10, warmup_steps=2, min_lr_ratio=0.1)
    # warm-up (s + 1) / 2; then .1 + .9 (1 + cos(pi (s - 2) / 8)) / 2
    assert [cosine_factor(s, **kw) for s in (0, 1)] == [0.5, 1.0]
    assert cosine_factor(2, **kw) == pytest.approx(1.0)
    assert cosine_factor(6, **kw) == pytest.approx(0.1 + 0.9 * 0.5)  # halfway: cos(pi / 2) = 0
    assert cosine_factor(10, **kw) == pytest.approx(0.1) and cosine_factor(
        50, **kw
    ) == pytest.approx(0.1)


def test_the_mini_target_uses_the_engines_schedule(monkeypatch):
    """A changed engine schedule changes the mini target's learning rates (one schedule, not two)."""
    from exitlaw.engine.training import config as train_config
    from exitlaw.paper_repro.mini.target import TargetSpec, train_target

    sizes = dict(hidden_size=16, intermediate_size=32, num_layers=1, num_heads=2, num_kv_heads=1)
    spec = TargetSpec.from_json(
        dict(**sizes, head_dim=8, steps=3, batch_size=1, seq_len=8, warmup=1)
    )
    tokens = np.arange(40) % 11
    calls = []

    def spy(step, **kw):
        calls.append((step, kw))
        return 0.5

    monkeypatch.setattr(train_config, "cosine_factor", spy)
    _, log = train_target(tokens, 11, spec, seed=0, progress=False)
    assert calls and calls[0][1] == {"steps": 3, "warmup_steps": 1, "min_lr_ratio": 0.1}
    assert all(rec["lr"] == pytest.approx(spec.schedule.lr * 0.5) for rec in log)
