"""The mechanism test (issue 34, item 2; :mod:`exitlaw.paper_repro.mini.exittrain.mechanism`): steps of one length along
every direction, a zero step changes nothing, every drafter is evaluated on the same anchors, ``C_p`` at
``T = 0`` is the greedy path depth, the prompt-clustered interval by hand, clear errors on bad input, and
the shipped run's table quotes its JSON."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from exitlaw.paper_repro.mini.exittrain.mechanism import (
    MechanismConfig,
    MechanismError,
    MechanismInputs,
    cluster_interval,
    evaluate,
    greedy_edges,
    regime_inputs,
    run_mechanism,
    stepped,
)
from exitlaw.paper_repro.mini.exittrain.mechanism_design import (
    CONTRASTS,
    DIRECTIONS,
    DRAFTERS,
    JSON_NAME,
    MD_NAME,
)
from exitlaw.paper_repro.mini.exittrain.mechanism_report import findings, render_markdown
from exitlaw.theory.sampling_settings import SamplingSettings

ROOT = Path(__file__).resolve().parents[3]
SHIPPED = ROOT / "paper_repro" / "results" / "mechanism"
SMALL = MechanismConfig.from_json(
    dict(
        ft_tokens=16,
        heldout_tokens=12,
        anchors_per_prompt=3,
        budget=8,
        tune_steps=2,
        tune_warmup=0,
        batch_size=2,
        anchors_per_seq=2,
        grad_batches=2,
        etas=(0.0, 0.5, 1.0),
        step_scale=1e-2,
    )
)


def _prompts(count: int, seed: int) -> list[list[int]]:
    rng = np.random.default_rng(seed)
    return [[int(t) for t in rng.integers(10, 300, size=12)] for _ in range(count)]


@pytest.fixture(scope="module")
def run(tiny, tmp_path_factory):
    """The whole mechanism run on the tiny pair, every evaluation's anchors recorded."""
    seen = []

    def recording(target, drafter, heldout, cfg):
        seen.append((id(heldout), heldout.anchors))
        return evaluate(target, drafter, heldout, cfg)

    inputs = MechanismInputs(tiny[0], tiny[1], _prompts(16, 1), _prompts(4, 2))
    out = tmp_path_factory.mktemp("mechanism")
    result = run_mechanism(out, inputs, SMALL, progress=False, evaluate_fn=recording)
    return result, seen, out


def test_every_direction_steps_the_same_length(run):
    result, _, _ = run
    for name in DRAFTERS:
        norm = result["theta0"][name]["param_norm"]
        for eta in SMALL.etas:
            rows = [s for s in result["steps"] if s["drafter"] == name and s["eta"] == eta]
            assert sorted(s["direction"] for s in rows) == sorted(DIRECTIONS)
            want = eta * SMALL.step_scale * norm
            for s in rows:
                assert s["length"] == pytest.approx(want, rel=1e-12)
                assert s["measured_length"] == pytest.approx(want, rel=1e-4, abs=1e-9)


def test_stepped_moves_by_the_length_whatever_the_direction_norm(pair):
    import torch

    _, drafter = pair
    params = [p for p in drafter.parameters() if p.requires_grad]
    gen = torch.Generator().manual_seed(0)
    small = [1e-3 * torch.randn(p.shape, generator=gen, dtype=torch.float64) for p in params]
    big = [1e3 * torch.randn(p.shape, generator=gen, dtype=torch.float64) for p in params]
    from exitlaw.paper_repro.mini.exittrain.mechanism import distance

    for direction in (small, big):
        assert distance(stepped(drafter, direction, 0.3), drafter) == pytest.approx(0.3, rel=1e-4)
    same = stepped(drafter, big, 0.0)
    assert all(
        torch.equal(a, b) for a, b in zip(same.state_dict().values(), drafter.state_dict().values())
    )


def test_a_zero_step_changes_nothing(run):
    result, _, _ = run
    zero = [s for s in result["steps"] if s["eta"] == 0.0]
    assert len(zero) == len(DRAFTERS) * len(DIRECTIONS)
    for s in zero:
        assert s["measured_length"] == 0.0
        for key in ("cp_T0", "cp_T1", "ce"):
            assert (s[key]["mean"], s[key]["lo"], s[key]["hi"]) == (0.0, 0.0, 0.0), (s, key)
    for c in (c for c in result["contrasts"] if c["eta"] == 0.0):
        assert (c["mean"], c["lo"], c["hi"]) == (0.0, 0.0, 0.0)


def test_every_drafter_is_evaluated_on_the_same_anchors(run):
    result, seen, _ = run
    # theta0 and every (direction, eta) step, for both drafters
    assert len(seen) == len(DRAFTERS) * (1 + len(DIRECTIONS) * len(SMALL.etas))
    assert len({ident for ident, _ in seen}) == 1
    assert all(anchors == seen[0][1] for _, anchors in seen)
    assert [tuple(a) for a in result["anchors"]] == seen[0][1]
    assert len(result["anchors"]) == 4 * SMALL.anchors_per_prompt


def test_the_run_records_every_contrast_and_its_findings(run):
    result, _, out = run
    keys = {(c["drafter"], c["eta"], c["temperature"], c["a"], c["b"]) for c in result["contrasts"]}
    assert (
        len(keys)
        == len(result["contrasts"])
        == len(DRAFTERS) * len(SMALL.etas) * 2 * len(CONTRASTS)
    )
    assert json.loads((out / JSON_NAME).read_text())["findings"] == findings(result)
    assert (out / MD_NAME).read_text() == render_markdown(json.loads((out / JSON_NAME).read_text()))


def test_greedy_coverage_is_the_depth_of_the_targets_greedy_path():
    import torch

    from exitlaw.engine.training.law import TreeBatch, tree_law
    from exitlaw.theory import DraftTree

    # root -> 1 (tok 5) -> 3 (tok 7) ; root -> 2 (tok 6); 1 -> 4 (tok 8)
    tree = DraftTree(parent=np.array([-1, 0, 0, 1, 1]), token=np.array([0, 5, 6, 7, 8]))
    table = torch.zeros(5, 10)
    table[0, 5] = 3.0  # root's argmax: 5 (node 1)
    table[1, 8] = 2.0  # node 1's argmax: 8 (node 4)
    table[4, 2] = 1.0  # node 4's argmax: 2, not in the tree: the path stops at depth 2
    edges = greedy_edges(tree, table)
    assert edges.tolist() == [1.0, 1.0, 0.0, 0.0, 1.0]
    law = tree_law(TreeBatch.from_trees([tree]), torch.as_tensor(edges[None]))
    assert float(law.coverage[0]) == 2.0


def test_greedy_coverage_of_the_run_is_an_integer_depth(run, pair):
    from exitlaw.paper_repro.mini.exittrain.mechanism import make_heldout

    target, drafter = pair
    heldout = make_heldout(target, _prompts(3, 5), SMALL, drafter.block_size - 1)
    first = evaluate(target, drafter, heldout, SMALL)
    again = evaluate(target, drafter, heldout, SMALL)
    assert np.array_equal(first.cp0, again.cp0) and np.array_equal(first.cp1, again.cp1)
    assert np.array_equal(first.cp0, np.round(first.cp0))
    assert (first.cp0 >= 0).all() and (first.cp0 <= drafter.block_size - 1).all()


def test_the_cluster_interval_is_the_t_interval_over_prompt_means():
    from scipy import stats

    values = [1.0, 3.0, 2.0, 2.0, 4.0, 8.0, 0.0, 1.0]
    clusters = [0, 0, 1, 1, 2, 2, 3, 3]
    means = np.array([2.0, 2.0, 6.0, 0.5])  # by hand
    se = means.std(ddof=1) / math.sqrt(4)
    half = stats.t.ppf(0.975, 3) * se
    got = cluster_interval(values, clusters)
    assert got["mean"] == pytest.approx(2.625)
    assert got["se"] == pytest.approx(se) and got["df"] == 3 and got["prompts"] == 4
    assert (got["lo"], got["hi"]) == pytest.approx((2.625 - half, 2.625 + half))
    # prompts of unequal size: the mean of prompt means, not of anchors
    assert cluster_interval([1.0, 1.0, 1.0, 5.0], [0, 0, 0, 1])["mean"] == pytest.approx(3.0)
    with pytest.raises(MechanismError, match=">= 2 prompts"):
        cluster_interval([1.0, 2.0], [0, 0])


def test_bad_input_is_refused_with_a_clear_error(tmp_path, pair):
    with pytest.raises(MechanismError, match="eta must be finite and >= 0"):
        MechanismConfig(etas=(0.5, -0.25))
    with pytest.raises(MechanismError, match="step length must be finite and >= 0"):
        stepped(pair[1], [p.detach() for p in pair[1].parameters()], -1.0)
    with pytest.raises(MechanismError, match="does not exist"):
        regime_inputs(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(MechanismError, match="no target at base/target"):
        regime_inputs(tmp_path / "empty")
    with pytest.raises(MechanismError, match="holds no checkpoint"):
        MechanismInputs(tmp_path, tmp_path, [[1]], [[1], [2]])


def test_the_command_line_refuses_a_missing_regime_folder_in_one_line(tmp_path, capsys):
    from exitlaw.cli import main

    code = main(
        ["repro", "mechanism", "--out", str(tmp_path / "o"), "--regime", str(tmp_path / "x")]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert err[0].startswith("exitlaw repro mechanism: error:") and "does not exist" in err[0]


def test_the_command_line_refuses_to_overwrite_a_former_run(tmp_path, capsys):
    from exitlaw.cli import main

    (tmp_path / JSON_NAME).write_text("{}")
    code = main(["repro", "mechanism", "--out", str(tmp_path), "--regime", str(tmp_path / "x")])
    assert code == 2 and "--overwrite" in capsys.readouterr().err


def test_the_shipped_run_is_internally_consistent():
    result = json.loads((SHIPPED / JSON_NAME).read_text(encoding="utf-8"))
    assert (SHIPPED / MD_NAME).read_text(encoding="utf-8") == render_markdown(result)
    assert result["findings"] == findings(result)
    cfg = MechanismConfig.from_json(result["config"])
    assert cfg.to_json() == result["config"]
    assert len(result["anchors"]) >= 300
    step = {(s["drafter"], s["direction"], s["eta"]): s for s in result["steps"]}
    for (name, _, eta), s in step.items():
        assert s["measured_length"] == pytest.approx(
            eta * cfg.step_scale * result["theta0"][name]["param_norm"], rel=1e-4
        )
    # a contrast's mean is the difference of its two steps' mean changes (same anchors)
    for c in result["contrasts"]:
        key = f"cp_T{c['temperature']:g}"
        a, b = step[(c["drafter"], c["a"], c["eta"])], step[(c["drafter"], c["b"], c["eta"])]
        assert c["mean"] == pytest.approx(a[key]["mean"] - b[key]["mean"], abs=1e-9)
        assert c["lo"] <= c["mean"] <= c["hi"]


def test_the_directions_are_the_gradients_of_their_terms_on_the_trainers_batches(pair):
    """``exit``, ``prefix`` and ``ce`` are the gradients of those terms on the batch the trainer draws at
    step 0 (recomputed here from the loss), the exit and prefix ones differ, and ``random`` is seeded."""
    import torch

    from exitlaw.engine.training.batch import make_batch
    from exitlaw.engine.training.data import Sequences, generate_continuations
    from exitlaw.engine.training.exittrain import exittrain_loss
    from exitlaw.engine.training.loop import step_sequences
    from exitlaw.paper_repro.mini.exittrain.mechanism import _grad_config, directions, flat_norm

    target, drafter = pair
    prompts = _prompts(6, 3)
    conts = generate_continuations(
        target, prompts, max_new_tokens=16, settings=SamplingSettings(0.0), seed=0
    )
    data = Sequences(prompts, conts)
    # budget 16: at budget 8 the tiny pair's trees give exit and prefix weights that coincide
    cfg = MechanismConfig.from_json(
        dict(grad_batches=1, batch_size=2, anchors_per_seq=2, budget=16)
    )
    got = directions(target, drafter, data, cfg)
    seqs, rng = step_sequences(data, _grad_config(cfg), 0, 0)
    batch = make_batch(
        drafter, target, seqs, 2, 16, rng, score=True, settings=SamplingSettings(1.0)
    )
    params = [p for p in drafter.parameters() if p.requires_grad]
    for objective in ("prefix", "exit"):
        terms = exittrain_loss(
            batch.logits.float(),
            batch.targets,
            batch.target_valid,
            batch.trees,
            batch.edge,
            objective=objective,
            lam=1.0,
        )
        for name, loss in (("ce", terms.ce), (objective, terms.tree)):
            want = torch.autograd.grad(loss, params, retain_graph=True)
            for g, w in zip(got[name], want):
                assert torch.allclose(g, w.double(), rtol=1e-5, atol=1e-8), name
    apart = flat_norm([a - b for a, b in zip(got["exit"], got["prefix"])])
    assert apart > 1e-6 * flat_norm(got["exit"])  # the two terms' gradients are not one
    again = directions(target, drafter, data, cfg)["random"]
    assert all(torch.equal(a, b) for a, b in zip(got["random"], again))
