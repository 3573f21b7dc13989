"""TEV as the paper describes it (issue 48): one fixed-shape, level-parallel decision per tree.

On the verifier bench's DDTree trees (V = 4,096, float32, T = 1, B = 32/64/128) a decision dispatches at
most 25 launching and 36 top-level ops, reads the host once (exit and bonus only), copies nothing to the
device, and runs one op/shape sequence for every tree of a budget; the decision compiles to one graph
with no break, equal to eager; the graph runner keeps one slot per shape; its draws hold at the values
their random sources can return at a boundary.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from exitlaw.engine.bench.op_counts import count_ops
from exitlaw.engine.bench.verifiers import make_cases
from exitlaw.engine.decode.device_tree import to_device_tree
from exitlaw.engine.decode.verifiers import VerifierGenerators, tev
from exitlaw.theory import DistributionError, DraftTree

BUDGETS = (32, 64, 128)
BELOW_ONE = float(np.nextafter(1.0, 0.0))
MAX_LAUNCHING, MAX_TOP_LEVEL = 25, 36  # the bound per decision


def _cases(budget: int, trees: int = 3):
    return make_cases(
        budget,
        4096,
        trees=trees,
        depth=15,
        device=torch.device("cpu"),
        dtype=torch.float32,
        seed=budget,
    )


@pytest.mark.parametrize("budget", BUDGETS)
def test_a_decision_is_one_fixed_shape_sequence_with_one_host_read_and_no_copy_in(budget):
    gens = VerifierGenerators(budget)
    cases = _cases(budget)
    tev.verify_tev(cases[0].tree, cases[0].logits, 1.0, gens)  # makes the per-process 0-d constants
    counts = [count_ops(lambda c=c: tev.verify_tev(c.tree, c.logits, 1.0, gens)) for c in cases]
    assert len({c.internal for c in cases}) > 1  # the trees differ in K: shapes must not
    for c in counts:
        assert c.launching <= MAX_LAUNCHING and c.top_level <= MAX_TOP_LEVEL, c.row()
        assert c.host_reads == 1 and c.host_to_device == 0, c.row()
    assert len({c.sequence for c in counts}) == 1  # one op/shape sequence per budget


def test_the_op_counter_sees_a_data_dependent_shape_and_a_copy_in():
    """Negative control: a decision that sizes a tensor by K, or copies a host list to the device, is
    counted as such (so the bounds above can fail)."""
    cases = _cases(32)

    def k_shaped(c):
        rows = c.logits.index_select(0, c.tree.internal)  # [K, V]: K differs between trees
        return torch.tensor([0]), rows.softmax(-1).sum().tolist()

    counts = [count_ops(lambda c=c: k_shaped(c)) for c in cases]
    assert len({c.sequence for c in counts}) > 1
    assert all(c.host_to_device == 1 and c.host_reads == 1 for c in counts)


def test_the_decision_returns_only_exit_and_bonus_per_row():
    case = _cases(32, trees=1)[0]
    plan = tev.tev_plan(case.tree)
    noise = tev.draw_noise(plan, VerifierGenerators(0), "cpu")
    out = tev.tev_decide(case.logits.unsqueeze(0), plan, 1.0, *noise)
    assert out.shape == (1, 2) and out.dtype == torch.long


def test_the_decision_compiles_to_one_graph_and_never_recompiles_within_a_budget():
    from torch._dynamo.testing import CompileCounter

    torch._dynamo.reset()
    counter = CompileCounter()
    decide = torch.compile(tev.tev_decide, backend=counter, fullgraph=True, dynamic=False)
    gens = VerifierGenerators(1)
    for c in _cases(64):
        plan = tev.tev_plan(c.tree)
        noise = tev.draw_noise(plan, gens, "cpu")
        got = decide(c.logits.unsqueeze(0), plan, 1.0, *noise)
        assert torch.equal(got, tev.tev_decide(c.logits.unsqueeze(0), plan, 1.0, *noise))
    assert counter.frame_count == 1  # one graph for every tree of the budget, no graph break


# inductor's CPU backend imports torch.utils.mkldnn, whose torch.jit.script_method warns on import
@pytest.mark.filterwarnings("ignore:`torch.jit.script_method` is deprecated:DeprecationWarning")
def test_the_inductor_compiled_decision_equals_the_eager_one():
    torch._dynamo.reset()
    decide = tev.compiled_decide()
    gens = VerifierGenerators(2)
    for c in _cases(32):
        plan = tev.tev_plan(c.tree)
        for _ in range(3):
            noise = tev.draw_noise(plan, gens, "cpu")
            want = tev.tev_decide(c.logits.unsqueeze(0), plan, 1.0, *noise)
            got = decide(c.logits.unsqueeze(0), plan, 1.0, *noise)
            assert torch.equal(got, want), (got.tolist(), want.tolist())


def test_verify_tev_runs_the_decider_set_for_the_device_and_restores_eager():
    calls = []

    def spy(*args, **kwargs):
        calls.append(1)
        return tev.tev_decide(*args, **kwargs)

    case = _cases(32, trees=1)[0]
    tev.use_decider("cpu", spy)
    try:
        a = tev.verify_tev(case.tree, case.logits, 1.0, VerifierGenerators(5))
    finally:
        tev.use_decider("cpu", None)
    b = tev.verify_tev(case.tree, case.logits, 1.0, VerifierGenerators(5))
    assert calls == [1] and a == b


def test_the_graph_runner_keeps_one_slot_per_shape_and_equals_eager():
    graphs = tev.TevGraphs()
    gens = VerifierGenerators(3)
    pointers = None
    for budget in (32, 64):
        for c in _cases(budget):
            plan = tev.tev_plan(c.tree)
            noise = tev.draw_noise(plan, gens, "cpu")
            want = tev.tev_decide(c.logits.unsqueeze(0), plan, 1.0, *noise)
            assert torch.equal(graphs(c.logits.unsqueeze(0), plan, 1.0, *noise), want)
        if pointers is not None:
            assert graphs.static_pointers()[: len(pointers)] == pointers  # buffers never move
        pointers = graphs.static_pointers()
    assert graphs.captures == 2  # one per budget, whatever the trees' K


# ----------------------------------------------------------------- draws at boundary values
TREE = DraftTree(parent=[-1, 0, 0, 1], token=[5, 1, 2, 3])  # root's children: tokens 1, 2
LOGITS = torch.tensor(
    [
        [0.0, 0.3, -0.2, 0.1, float("-inf"), 0.7],  # root: token 4 has probability 0
        [0.2, -1.0, float("-inf"), 0.4, 0.0, 0.1],
        [float("-inf"), 0.0, 0.5, float("-inf"), 0.2, 0.0],  # a leaf
        [0.1, 0.1, 0.1, 0.1, float("-inf"), 0.1],  # a leaf
    ]
)


def _uniforms(c: np.ndarray) -> list[float]:
    """0, the largest double below 1, every cumulative step and a midpoint: the values a ``[0, 1)``
    source can return at a boundary (a step at 1 itself is not one of them)."""
    return [u for u in [0.0, BELOW_ONE, 0.5, *c[:-1].tolist()] if u < 1.0]


def _forced(node: int) -> torch.Tensor:
    """Exit noise that makes ``node`` win the race whenever its weight is positive."""
    noise = torch.full((1, TREE.num_nodes), 1e300, dtype=torch.float64)
    noise[0, node] = 1.0
    return noise


def _residual(node: int) -> np.ndarray:
    p = torch.softmax(LOGITS[node].double(), -1).numpy()
    p[TREE.token[TREE.children[node]]] = 0.0
    return p


@pytest.mark.parametrize("node", range(TREE.num_nodes))
def test_the_bonus_at_boundary_uniforms_is_the_reference_inverse_cdf_and_never_a_zero_weight(node):
    dt = to_device_tree(TREE)
    plan = tev.tev_plan(dt)
    flat = LOGITS.reshape(-1, LOGITS.shape[-1])
    factors = tev.row_reductions(flat, plan, 1.0)
    p = _residual(node)
    c = np.cumsum(p) / p.sum()
    for u in _uniforms(c):
        exit_node, y = tev.tev_finish(
            flat, plan, 1.0, factors, _forced(node), torch.tensor([[u]], dtype=torch.float64)
        )[0].tolist()
        assert exit_node == node
        assert p[y] > 0, (node, u, y)
        # the entry whose interval [c_(i-1), c_i) holds u; on a step, float64 rounding may pick either
        near = {int(np.searchsorted(c, u + d, side="right")) for d in (-1e-12, 0.0, 1e-12)}
        assert y in near, (node, u, y, near)


def test_an_exponential_of_zero_at_a_zero_weight_node_neither_wins_nor_reads_as_invalid(
    monkeypatch,
):
    """Node 1's edge has probability 0 (its token is -inf in the root row): with every exponential 0,
    the race must still pick a positive-weight node and raise nothing."""
    logits = LOGITS.clone()
    logits[0, 1] = float("-inf")
    dt = to_device_tree(TREE)
    monkeypatch.setattr(torch.Tensor, "exponential_", lambda self, *a, **k: self.zero_())
    got = tev.verify_tev(dt, logits, 1.0, VerifierGenerators(0))
    monkeypatch.undo()
    w = tev._tev_exit_law(dt, logits, 1.0)
    assert float(w[1]) == 0.0 and float(w[got.exit_node]) > 0


def test_the_reference_twin_s_inverse_cdf_at_boundary_uniforms_never_lands_on_a_zero_weight():
    for weights in ([0.0, 0.5, 0.5], [0.25, 0.25, 0.0, 0.5], [0.5, 0.5, 0.0]):
        w = torch.tensor(weights, dtype=torch.float64)
        for u in _uniforms(np.cumsum(weights) / np.sum(weights)):
            assert weights[tev._draw_with_uniform(w, u)] > 0, (weights, u)


def test_nan_logits_in_a_row_tev_reads_are_a_named_error_on_both_paths():
    dt = to_device_tree(TREE)
    for row in (0, 2):  # an internal row, and a leaf row (read only as the exit's bonus row)
        logits = LOGITS.clone()
        logits[row, 0] = float("nan")
        with pytest.raises(DistributionError, match="NaN"):
            for seed in range(40):  # until the leaf is the exit
                tev.verify_tev(dt, logits, 1.0, VerifierGenerators(seed))


def test_the_bench_s_tev_decision_flag_sets_the_decider_and_refuses_a_graph_off_cuda():
    import argparse

    from exitlaw.cli.engine import _use_tev_decision

    with pytest.raises(ValueError, match="needs --device cuda"):
        _use_tev_decision(argparse.Namespace(tev_decision="graph", device="cpu"))
    try:
        _use_tev_decision(argparse.Namespace(tev_decision="compiled", device="cpu"))
        assert "cpu" in tev._DECIDERS  # verify_tev now runs the compiled decision on the CPU
    finally:
        tev.use_decider("cpu", None)
    _use_tev_decision(argparse.Namespace(tev_decision="eager", device="cpu"))
    assert "cpu" not in tev._DECIDERS


def test_the_read_refuses_a_flagged_exit_or_a_bonus_outside_the_vocabulary_each_alone():
    dt = to_device_tree(TREE)
    plan = tev.tev_plan(dt)
    vocab = LOGITS.shape[-1]
    assert tev.read_decision(torch.tensor([[1, 2]]), plan, [TREE], vocab)[0].path_nodes == [0, 1]
    for bad in ([tev.INVALID, 2], [1, vocab], [1, -1]):
        with pytest.raises(DistributionError, match="NaN"):
            tev.read_decision(torch.tensor([bad]), plan, [TREE], vocab)


def test_a_tiny_temperature_keeps_close_logits_apart():
    """At T = 1e-4 two logits 1e-3 apart near 1000 differ by ~10 after scaling: the row's maximum is
    subtracted before 1 / T (float32 spacing near 2e7 is 2, so adding it instead, or scaling first,
    moves the small probability by a quarter)."""
    tree = DraftTree(parent=[-1, 0], token=[0, 1])
    logits = torch.full((2, 4), -1e4)
    logits[0, 0], logits[0, 1] = 1000.0, 999.999
    logits[1, 2] = 0.0
    t = 1e-4
    w = tev._tev_exit_law(to_device_tree(tree), logits, t)
    z = logits[0].double() / t
    p = torch.softmax(z - z.max(), -1)
    torch.testing.assert_close(
        w, torch.tensor([p[0] + p[2] + p[3], p[1]]).double(), rtol=1e-3, atol=0
    )
