"""Draft-OPD (on-policy position-wise distillation): the term equals its formula on hand
numbers, chains are sampled from the drafter's own rows, and the target rows of a
sampled chain are the target's causal next-token rows along the chain's path."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from exitlaw.engine.models.target import TargetModel
from exitlaw.engine.models.tiny import build_tiny_drafter, build_tiny_target
from exitlaw.engine.training.batch import make_batch
from exitlaw.engine.training.draft_opd import OPDChains, draft_opd_term, sample_chains
from exitlaw.engine.training.exittrain import TreeBatch, draft_log_normalisers, exittrain_loss
from exitlaw.engine.training.objectives import ObjectiveError
from exitlaw.theory import DraftTree
from exitlaw.theory.sampling_settings import SamplingSettings
from helpers.tiny_specs import SMALL_SPEC


def _hand_chains() -> OPDChains:
    # anchor 1: p_root = [.8, .2], chain x1 = 0 (a1 = .8), p_1 = [.5, .5], x2 = 1 (a2 = .5)
    # anchor 2: p_root = [.1, .9], x1 = 0 (a1 = .1), p_1 = [.25, .75], x2 = 1 (a2 = .75)
    chains = TreeBatch.from_trees([DraftTree.chain([0, 1]), DraftTree.chain([0, 1])])
    edge = torch.tensor([[1.0, 0.8, 0.5], [1.0, 0.1, 0.75]], dtype=torch.float64)
    rows = torch.tensor(
        [[[0.8, 0.2], [0.5, 0.5], [0.5, 0.5]], [[0.1, 0.9], [0.25, 0.75], [0.5, 0.5]]]
    ).log()
    return OPDChains(chains, edge, rows)


def test_opd_term_is_the_visit_weighted_forward_kl_on_hand_numbers():
    logits = torch.zeros(2, 2, 2, requires_grad=True)  # q_d uniform over 2 tokens at both positions
    term = draft_opd_term(logits, draft_log_normalisers(logits), _hand_chains())
    kl1 = 0.8 * math.log(0.8 / 0.5) + 0.2 * math.log(0.2 / 0.5)  # KL([.8, .2] || [.5, .5])
    kl2 = 0.0  # KL([.5, .5] || [.5, .5])
    kl1b = 0.1 * math.log(0.1 / 0.5) + 0.9 * math.log(0.9 / 0.5)
    kl2b = 0.25 * math.log(0.25 / 0.5) + 0.75 * math.log(0.75 / 0.5)
    # visit weights P(par(v)): anchor 1 [1, .8], anchor 2 [1, .1]; mean weighted by them
    expected = (1 * kl1 + 0.8 * kl2 + 1 * kl1b + 0.1 * kl2b) / (1 + 0.8 + 1 + 0.1)
    assert term.item() == pytest.approx(expected, rel=1e-6)
    term.backward()
    assert logits.grad is not None and float(logits.grad.abs().sum()) > 0


def test_opd_term_replaces_the_tree_term_and_needs_its_chains():
    logits = torch.zeros(2, 2, 2)
    opd = _hand_chains()
    targets = torch.zeros(2, 2, dtype=torch.long)
    valid = torch.ones(2, 2, dtype=torch.bool)
    terms = exittrain_loss(
        logits, targets, valid, opd.chains, opd.edge, objective="draft-opd", lam=0.5, opd=opd
    )
    direct = draft_opd_term(logits, draft_log_normalisers(logits), opd)
    assert terms.tree.item() == pytest.approx(direct.item())
    assert terms.total.item() == pytest.approx(math.log(2) + 0.5 * direct.item(), rel=1e-6)
    with pytest.raises(ObjectiveError, match="chains"):
        exittrain_loss(logits, targets, valid, opd.chains, opd.edge, objective="draft-opd", lam=0.5)


def test_chains_are_sampled_from_the_drafters_rows():
    # position 1: q = (.3, .7); position 2: almost surely token 2
    logits = torch.tensor([[[math.log(0.3), math.log(0.7), -50.0], [-50.0, -50.0, 0.0]]]).expand(
        4000, 2, 3
    )
    chains = sample_chains(logits, torch.zeros(4000, dtype=torch.long), np.random.default_rng(0))
    first = np.array([int(c.token[1]) for c in chains])
    n = first.size
    assert abs((first == 0).mean() - 0.3) < 5 * math.sqrt(
        0.21 / n
    )  # 5 sigma: false-failure rate < 1e-6
    assert all(int(c.token[2]) == 2 and c.num_nodes == 3 for c in chains)
    again = sample_chains(logits, torch.zeros(4000, dtype=torch.long), np.random.default_rng(0))
    assert [list(c.token) for c in again] == [
        list(c.token) for c in chains
    ]  # one generator, one draw


def test_sampled_chain_rows_are_the_targets_causal_rows_along_the_path():
    spec = SMALL_SPEC
    model = build_tiny_target(spec, 11)
    target = TargetModel(model, spec.target_layer_ids)
    drafter = build_tiny_drafter(spec, mask_token_id=spec.vocab_size - 1, seed=11)
    g = torch.Generator().manual_seed(11)
    tokens = torch.randint(0, spec.vocab_size - 1, (16,), generator=g)
    batch = make_batch(
        drafter,
        target,
        [(tokens, 5)],
        2,
        6,
        np.random.default_rng(0),
        settings=SamplingSettings(0.7),
        chain_rng=np.random.default_rng(1),
    )
    anchors = np.sort(np.random.default_rng(0).choice(np.arange(4, 15), size=2, replace=False))
    opd = batch.opd
    assert opd.chains.valid.shape == (2, spec.block_size) and batch.trees.valid.shape[0] == 2
    for k, a in enumerate(anchors.tolist()):
        path = [int(opd.chains.token[k, v]) for v in range(1, spec.block_size)]
        for v in range(
            spec.block_size - 1
        ):  # row of chain node v; the last node's row is never used
            with torch.no_grad():
                logits = (
                    model(input_ids=torch.tensor([tokens[: a + 1].tolist() + path[:v]]))
                    .logits[0, -1]
                    .float()
                )
            ref = torch.log_softmax(logits / 0.7, -1)
            torch.testing.assert_close(opd.target_logp[k, v], ref, atol=1e-5, rtol=1e-5)
            # the edge into chain node v + 1 is p_v(x_{v+1})
            assert float(opd.edge[k, v + 1]) == pytest.approx(float(ref[path[v]].exp()), abs=1e-5)
    with pytest.raises(ValueError, match="score"):
        make_batch(
            drafter,
            target,
            [(tokens, 5)],
            2,
            6,
            np.random.default_rng(0),
            score=False,
            chain_rng=np.random.default_rng(1),
        )
