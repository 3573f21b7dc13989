"""The residual-mass rule (:mod:`exitlaw.theory.law`) in the engine's TEV, single-tree and batched: an
internal node's exit probability is its row's mass off the child tokens summed directly from the same
exponentials as the normaliser, never ``1 - m``. Children covering the root's row up to 1e-12 or 1e-16
leave that exit weight (to float32 relative precision); an exact cover (the residual logits ``-inf``)
leaves exactly 0, so such a node is never the exit and its empty residual row is never drawn from."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from exitlaw.engine.decode.batch_tree import to_batch_tree
from exitlaw.engine.decode.device_tree import to_device_tree
from exitlaw.engine.decode.dispatch import verify, verify_batch
from exitlaw.engine.decode.verifiers import VerifierGenerators
from exitlaw.engine.decode.verifiers.tev import _tev_exit_law, batch_exit_law
from exitlaw.theory import DraftTree, reference_law
from exitlaw.theory.sampling_settings import SamplingSettings

TREE = DraftTree(parent=[-1, 0, 0, 1], token=[9, 0, 1, 2])  # the root's children: tokens 0 and 1
ROOT_ONLY = DraftTree(parent=[-1], token=[4])
LOG_ZERO = -1e300  # the mutant's finite stand-in for log 0


def logits_with_residual(r: float) -> torch.Tensor:
    """float32 logits whose root row puts mass ``r`` on token 2, the one token that is not a child."""
    rows = np.array([[0.3, 0.7 - r, r], [0.2, 0.3, 0.5], [0.1, 0.1, 0.8], [0.6, 0.2, 0.2]])
    with np.errstate(divide="ignore"):
        return torch.tensor(np.log(rows), dtype=torch.float32)


def expected_root_weight(logits: torch.Tensor) -> float:
    return float(torch.softmax(logits[0].double(), -1)[2])


def exit_law_one_minus_m(dt, logits, temperature):
    """Mutant: the former ``rho = max(1 - C @ a, 0)`` from float32 normalisers (cancels at a tiny residual)."""
    lse = torch.logsumexp(logits.float() / temperature, -1).double()
    log_a = logits[dt.parent[1:], dt.token[1:]].double() / temperature - lse[dt.parent[1:]]
    prefix = (dt.edge_ancestor @ log_a.clamp(min=LOG_ZERO)).exp()
    return prefix * (1.0 - dt.child[:, 1:].double() @ log_a.exp()).clamp(min=0.0)


def batched(dt, logits, temperature):
    """Row 1 of a batch holding a root-only tree, this tree and the tree again at T = 1 (padding exercised)."""
    bt = to_batch_tree([ROOT_ONLY, dt.tree, dt.tree], "cpu")
    stacked = torch.zeros(3, bt.width, logits.shape[1])
    stacked[1, : logits.shape[0]] = logits
    stacked[2, : logits.shape[0]] = logits
    return batch_exit_law(bt, stacked, temperature)[1, : dt.num_nodes]


def assert_root_weight_follows_the_rule(law) -> None:
    dt = to_device_tree(TREE)
    for r in (1e-12, 1e-16):
        logits = logits_with_residual(r)
        w = law(dt, logits, 1.0)
        np.testing.assert_allclose(
            float(w[0]), expected_root_weight(logits), rtol=1e-5, err_msg=f"r={r}"
        )
        np.testing.assert_allclose(float(w.sum()), 1.0, atol=1e-6)
    w = law(dt, logits_with_residual(0.0), 1.0)  # the residual logit is -inf: an exact cover
    assert float(w[0]) == 0.0
    assert bool((w >= 0).all())


@pytest.mark.parametrize("law", [_tev_exit_law, batched], ids=["single", "batched"])
def test_engine_tev_exit_weight_keeps_tiny_residuals_and_is_zero_for_an_exact_cover(law):
    assert_root_weight_follows_the_rule(law)


def test_the_one_minus_m_exit_law_fails_the_rule():
    with pytest.raises(AssertionError):
        assert_root_weight_follows_the_rule(exit_law_one_minus_m)


def test_a_node_its_children_cover_exactly_is_never_the_exit_and_raises_nothing():
    logits = logits_with_residual(0.0)
    dt = to_device_tree(TREE)
    gens = VerifierGenerators(3)
    exits = {verify("tev", dt, logits, SamplingSettings(1.0), gens).exit_node for _ in range(400)}
    assert 0 not in exits and exits
    bt = to_batch_tree([TREE] * 64, "cpu")
    rows = verify_batch(
        "tev", bt, logits.expand(64, -1, -1).contiguous(), SamplingSettings(1.0), gens
    )
    assert all(res.exit_node != 0 for res in rows)


def test_the_single_and_batched_exit_laws_equal_the_reference_law_at_every_temperature():
    torch.manual_seed(0)
    trees = [TREE, ROOT_ONLY, DraftTree(parent=[-1, 0, 1], token=[1, 2, 0])]
    bt = to_batch_tree(trees, "cpu")
    logits = torch.randn(3, bt.width, 3) * 4
    for t in (1.0, 0.5, 0.6, 1.7):
        w = batch_exit_law(bt, logits, t)
        for b, tree in enumerate(trees):
            rows = torch.softmax(logits[b, : tree.num_nodes].double() / t, -1).tolist()
            want = torch.tensor(reference_law(tree, rows, one=1.0).w, dtype=torch.float64)
            single = _tev_exit_law(to_device_tree(tree), logits[b, : tree.num_nodes], t)
            torch.testing.assert_close(single, want, rtol=1e-5, atol=1e-12)
            torch.testing.assert_close(w[b, : tree.num_nodes], single, rtol=1e-6, atol=1e-12)
