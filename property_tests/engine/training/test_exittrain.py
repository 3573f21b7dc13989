"""ExitTrain: the device exit law equals exitlaw.theory's, the objective weights are the
stated ones, the tree term needs no per-node distribution, tree scoring is tree
attention over the full context, gradients reach only the drafter, and training
resumes bit for bit."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, note
from hypothesis import strategies as st

from exitlaw.engine.models.target import TargetModel
from exitlaw.engine.models.tiny import build_tiny_drafter, build_tiny_target
from exitlaw.engine.training.batch import (
    build_trees,
    drafter_rows,
    make_batch,
    sample_anchors,
    score_trees,
)
from exitlaw.engine.training.exittrain import (
    OBJECTIVES,
    TreeBatch,
    exittrain_loss,
    objective_weights,
    tree_law,
)
from exitlaw.simulate.strategies import draft_trees, trees_with_rows
from exitlaw.theory import DraftTree, exit_law_from_edges, gather_edge_probs, reference_law
from exitlaw.theory.sampling_settings import SamplingSettings
from helpers.cli_argv import train_argv, write_prompts
from helpers.tiny_specs import SMALL_SPEC as SPEC
from helpers.training_runs import resume_run

TOL = 1e-12


def _tiny_pair(seed: int = 0):
    model = build_tiny_target(SPEC, seed)
    for p in model.parameters():
        p.requires_grad_(False)
    drafter = build_tiny_drafter(SPEC, mask_token_id=SPEC.vocab_size - 1, seed=seed).train()
    return TargetModel(model, SPEC.target_layer_ids), drafter


# ----- the device exit law against theory ------------------------------------------------
@given(st.lists(trees_with_rows(max_nodes=10), min_size=1, max_size=4))
def test_device_exit_law_equals_theory_and_fraction_reference(cases):
    trees = [c[0] for c in cases]
    n = 10  # one padded shape: JAX compiles once
    edge = torch.zeros(len(trees), n, dtype=torch.float64)
    for i, (t, rows, _) in enumerate(cases):
        edge[i, : t.num_nodes] = torch.as_tensor(gather_edge_probs(t, rows))
    law = tree_law(TreeBatch.from_trees(trees, num_nodes=n), edge)
    for i, (tree, rows, exact) in enumerate(cases):
        m = tree.num_nodes
        jax_law = exit_law_from_edges(tree.padded(n), edge[i].numpy())
        ref = reference_law(tree, exact)
        note(f"tree {i}: {tree}")
        np.testing.assert_allclose(law.w[i].numpy(), np.asarray(jax_law.w), atol=TOL)
        np.testing.assert_allclose(law.prefix[i].numpy(), np.asarray(jax_law.prefix), atol=TOL)
        np.testing.assert_allclose(law.rho[i, :m].numpy(), np.asarray(jax_law.rho)[:m], atol=TOL)
        np.testing.assert_allclose(law.w[i, :m].numpy(), [float(x) for x in ref.w], atol=TOL)
        assert abs(float(law.coverage[i]) - float(ref.coverage)) < TOL
        assert float(law.w[i, m:].abs().sum()) == 0.0  # padding carries nothing


@given(draft_trees(max_nodes=10, vocab_size=4))
def test_leaves_including_horizon_leaves_get_w_equal_p(tree):
    edge = torch.as_tensor(np.r_[1.0, np.full(tree.num_nodes - 1, 0.2)])[None]
    law = tree_law(TreeBatch.from_trees([tree]), edge)
    leaves = tree.leaves
    np.testing.assert_allclose(law.w[0, leaves].numpy(), law.prefix[0, leaves].numpy(), atol=TOL)


# ----- objective weights -----------------------------------------------------------------
def _random_batch(seed: int, k: int = 3, budget: int = 7, vocab: int = 5, depth: int = 3):
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(k, depth, vocab, generator=g, dtype=torch.float64).float()
    trees = build_trees(logits, torch.zeros(k, dtype=torch.long), budget)
    n = max(t.num_nodes for t in trees)
    edge = torch.zeros(k, n, dtype=torch.float64)
    for i, t in enumerate(trees):
        rows = torch.softmax(
            torch.randn(t.num_nodes, vocab, generator=g, dtype=torch.float64) * 2, -1
        ).numpy()
        e = gather_edge_probs(t, rows)
        edge[i, : e.size] = torch.as_tensor(e)
    targets = torch.randint(0, vocab, (k, depth), generator=g)
    return logits.requires_grad_(True), targets, TreeBatch.from_trees(trees, num_nodes=n), edge


@given(st.integers(0, 10_000))
def test_prefix_weights_are_p_rescaled_to_the_exit_total_per_tree_with_the_same_denominator(seed):
    _, _, trees, edge = _random_batch(seed)
    law = tree_law(trees, edge)
    we = objective_weights("exit", law, trees)
    wp = objective_weights("prefix", law, trees)
    assert abs(float(we.sum()) - 1.0) < 1e-9 and abs(float(wp.sum()) - 1.0) < 1e-9
    np.testing.assert_allclose(
        we.sum(-1).numpy(), wp.sum(-1).numpy(), atol=1e-12
    )  # per-tree totals match
    nonroot = trees.nonroot
    z = float(torch.where(nonroot, law.w, 0.0).sum())
    np.testing.assert_allclose(we.numpy(), torch.where(nonroot, law.w, 0.0).numpy() / z, atol=1e-12)
    for i in range(trees.valid.shape[0]):  # within a tree, prefix weights are proportional to P
        p = torch.where(nonroot[i], law.prefix[i], 0.0)
        if float(p.sum()) > 0:
            np.testing.assert_allclose(
                wp[i].numpy(), (p / p.sum() * we[i].sum()).numpy(), atol=1e-12
            )
    assert (
        float(we[:, 0].abs().sum()) == 0.0 and float(wp[:, 0].abs().sum()) == 0.0
    )  # never the root


@given(st.integers(0, 10_000))
def test_tree_normalisation_gives_every_tree_equal_total_weight(seed):
    _, _, trees, edge = _random_batch(seed)
    law = tree_law(trees, edge)
    nonroot = trees.nonroot
    w = torch.where(nonroot, law.w, 0.0)
    live = w.sum(-1) > 0
    for objective in ("exit", "prefix", "exit-depth"):
        wt = objective_weights(objective, law, trees, "tree")
        totals = wt.sum(-1).numpy()
        np.testing.assert_allclose(totals[live.numpy()], 1.0 / trees.valid.shape[0], atol=1e-12)
        np.testing.assert_allclose(totals[~live.numpy()], 0.0, atol=0)
        batch = objective_weights(objective, law, trees, "batch")
        for i in np.flatnonzero(
            live.numpy()
        ):  # within a tree the two normalisations are proportional
            np.testing.assert_allclose(
                wt[i].numpy(), (batch[i] / batch[i].sum() * totals[i]).numpy(), atol=1e-12
            )
    with pytest.raises(ValueError, match="normalisation"):
        objective_weights("exit", law, trees, "per-node")


def test_exit_and_prefix_weights_differ_where_exit_mass_is_not_prefix_mass():
    tree = DraftTree.chain([1, 2])  # root -> 1 -> 2
    edge = torch.tensor([[1.0, 0.9, 0.5]], dtype=torch.float64)
    trees = TreeBatch.from_trees([tree])
    law = tree_law(trees, edge)
    # w = [0.1, 0.45, 0.45]; P = [1, 0.9, 0.45]
    np.testing.assert_allclose(
        objective_weights("exit", law, trees)[0].numpy(), [0, 0.5, 0.5], atol=1e-12
    )
    np.testing.assert_allclose(
        objective_weights("prefix", law, trees)[0].numpy(), [0, 2 / 3, 1 / 3], atol=1e-12
    )


@given(st.integers(0, 10_000))
def test_tree_term_from_gathered_logits_equals_full_log_softmax_reference(seed):
    logits, targets, trees, edge = _random_batch(seed)
    valid = torch.ones_like(targets, dtype=torch.bool)
    for objective in ("exit", "prefix"):
        terms = exittrain_loss(logits, targets, valid, trees, edge, objective=objective, lam=0.5)
        law = tree_law(trees, edge)
        wt = objective_weights(objective, law, trees)
        logq = torch.log_softmax(logits.double(), -1)
        ref_tree = 0.0
        for k in range(trees.valid.shape[0]):
            for v in range(trees.valid.shape[1]):
                if trees.nonroot[k, v]:
                    ref_tree -= float(wt[k, v]) * float(
                        logq.detach()[k, trees.depth[k, v] - 1, trees.token[k, v]]
                    )
        ref_ce = -float(logq.detach().gather(2, targets[..., None]).mean())
        assert abs(terms.tree.item() - ref_tree) < 1e-5
        assert abs(terms.ce.item() - ref_ce) < 1e-5
        assert abs(terms.total.item() - (ref_ce + 0.5 * ref_tree)) < 1e-5


def test_token_objective_uses_lambda_zero_and_still_reports_the_tree_term():
    logits, targets, trees, edge = _random_batch(3)
    valid = torch.ones_like(targets, dtype=torch.bool)
    tok = exittrain_loss(logits, targets, valid, trees, edge, objective="token", lam=2.0)
    ex = exittrain_loss(logits, targets, valid, trees, edge, objective="exit", lam=2.0)
    assert tok.lam == 0.0 and tok.total.item() == tok.ce.item()
    assert tok.tree.item() == pytest.approx(ex.tree.item())  # same work, logged, not trained on
    assert ex.lam == 2.0 and ex.total.item() == pytest.approx(ex.ce.item() + 2 * ex.tree.item())


def test_loss_rejects_unknown_objective_and_negative_lambda():
    logits, targets, trees, edge = _random_batch(0)
    valid = torch.ones_like(targets, dtype=torch.bool)
    with pytest.raises(ValueError, match="objective"):
        exittrain_loss(logits, targets, valid, trees, edge, objective="nope", lam=1.0)
    with pytest.raises(ValueError, match="lambda"):
        exittrain_loss(logits, targets, valid, trees, edge, objective="exit", lam=-1.0)


def test_weights_are_detached_from_the_edge_probabilities():
    logits, targets, trees, edge = _random_batch(1)
    edge = edge.clone().requires_grad_(True)
    terms = exittrain_loss(
        logits,
        targets,
        torch.ones_like(targets, dtype=torch.bool),
        trees,
        edge,
        objective="exit",
        lam=1.0,
    )
    terms.total.backward()
    assert edge.grad is None and logits.grad is not None


# ----- batch construction on a tiny real model --------------------------------------------
def test_training_layout_rows_equal_the_inference_drafter_rows():
    target, drafter = _tiny_pair()
    drafter.eval()
    g = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, SPEC.vocab_size - 1, (20,), generator=g)
    cache = target.new_cache()
    step = target.prefill(cache, tokens)
    anchors = torch.tensor([3, 9, 15])
    with torch.no_grad():
        rows = drafter_rows(drafter, target, tokens, step.hidden, anchors)
        for k, a in enumerate(anchors.tolist()):
            ref = drafter.block_logits(
                target.embed_tokens,
                target.lm_head,
                int(tokens[a]),
                step.hidden[:a],
                a,
                drafter.new_cache(),
            )
            torch.testing.assert_close(rows[k], ref, atol=1e-5, rtol=1e-5)


def test_tree_scoring_edges_equal_causal_per_path_probabilities():
    target, drafter = _tiny_pair(1)
    g = torch.Generator().manual_seed(1)
    tokens = torch.randint(0, SPEC.vocab_size - 1, (16,), generator=g)
    cache = target.new_cache()
    step = target.prefill(cache, tokens)
    anchors = torch.tensor([4, 11])
    peaked = (
        torch.randn(2, SPEC.block_size - 1, SPEC.vocab_size, generator=g) * 6
    )  # deep, branching trees
    trees = build_trees(peaked, tokens[anchors], 9)
    edges = score_trees(target, cache, step.logits, anchors, trees)
    assert cache.get_seq_length() == tokens.shape[0]
    for k, tree in enumerate(trees):
        a = int(anchors[k])
        assert tree.max_depth >= 2
        for u in range(1, tree.num_nodes):
            ctx = tokens[: a + 1].tolist() + list(tree.path(int(tree.parent[u])))
            with torch.no_grad():
                logits = target.model(input_ids=torch.tensor([ctx])).logits[0, -1].float()
            ref = float(torch.softmax(logits, -1)[int(tree.token[u])])
            assert abs(edges[k][u] - ref) < 1e-5, (k, u)


def test_anchors_sit_on_generated_tokens():
    rng = np.random.default_rng(0)
    a = sample_anchors(30, 10, 50, rng)
    assert a.min() >= 9 and a.max() <= 28 and np.unique(a).size == a.size == 20
    assert sample_anchors(3, 5, 4, rng).size == 0


def _loss(batch, **kw):
    """``exittrain_loss`` of a made batch at lambda 1."""
    return exittrain_loss(
        batch.logits, batch.targets, batch.target_valid, batch.trees, batch.edge, lam=1.0, **kw
    )


def test_gradient_reaches_only_the_drafter():
    target, drafter = _tiny_pair(2)
    before = {k: v.clone() for k, v in target.model.state_dict().items()}
    g = torch.Generator().manual_seed(2)
    seqs = [(torch.randint(0, SPEC.vocab_size - 1, (18,), generator=g), 6)]
    batch = make_batch(drafter, target, seqs, 3, 8, np.random.default_rng(0))
    terms = _loss(batch, objective="exit")
    terms.total.backward()
    assert all(p.grad is None for p in target.model.parameters())
    grads = [p.grad for p in drafter.parameters()]
    assert all(gr is not None for gr in grads) and sum(float(gr.abs().sum()) for gr in grads) > 0
    for k, v in target.model.state_dict().items():
        assert torch.equal(v, before[k])


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_every_objective_gives_a_finite_loss_with_gradient_on_a_tiny_model(objective):
    target, drafter = _tiny_pair(3)
    g = torch.Generator().manual_seed(3)
    seqs = [(torch.randint(0, SPEC.vocab_size - 1, (18,), generator=g), 6)]
    chain_rng = np.random.default_rng(1) if objective == "draft-opd" else None
    batch = make_batch(drafter, target, seqs, 3, 8, np.random.default_rng(0), chain_rng=chain_rng)
    terms = _loss(batch, objective=objective, opd=batch.opd)
    assert np.isfinite(terms.total.item()) and terms.nodes > 0 and 0 < terms.coverage
    assert 0 <= terms.mean_w <= 1 + 1e-9
    terms.total.backward()
    assert sum(float(p.grad.abs().sum()) for p in drafter.parameters()) > 0


# ----- the training loop: exact resume, never deleting a run, torchrun ---------------------
def _train_fixture():
    from exitlaw.engine.training.data import Sequences, generate_continuations

    target, _ = _tiny_pair(4)
    g = torch.Generator().manual_seed(4)
    prompts = [torch.randint(0, SPEC.vocab_size - 2, (6,), generator=g).tolist() for _ in range(6)]
    conts = generate_continuations(
        target, prompts, max_new_tokens=12, settings=SamplingSettings(1.0), seed=0
    )
    return Sequences(prompts, conts)


def test_resume_reaches_the_uninterrupted_parameters_bit_for_bit(tmp_path):
    from exitlaw.engine.training.loop import TrainConfig, train

    data = _train_fixture()
    cfg = TrainConfig(objective="exit", budget=8, **resume_run(steps=6))
    target, straight = _tiny_pair(5)
    train(target, straight, data, cfg, tmp_path / "straight", progress=False)
    target, first = _tiny_pair(5)
    train(
        target, first, data, cfg, tmp_path / "resumed", progress=False, stop_after=3
    )  # "killed" after step 3
    assert not (tmp_path / "resumed" / "final").exists()
    target, resumed = _tiny_pair(
        5
    )  # a fresh process: weights come only from the checkpoint of step 2
    train(target, resumed, data, cfg, tmp_path / "resumed", progress=False, resume=True)
    for (name, a), b in zip(straight.state_dict().items(), resumed.state_dict().values()):
        assert torch.equal(a, b), name
    strip = lambda p: [
        {k: v for k, v in json.loads(x).items() if "per_s" not in k}  # noqa: E731
        for x in p.read_text().splitlines()
    ]
    assert strip(tmp_path / "straight" / "metrics.jsonl") == strip(
        tmp_path / "resumed" / "metrics.jsonl"
    )


def test_training_refuses_a_nonempty_output_directory_and_a_changed_resume(tmp_path):
    from exitlaw.engine.training.config import DrafterSchedule
    from exitlaw.engine.training.loop import TrainConfig, train

    data = _train_fixture()
    one_step = DrafterSchedule(steps=1, batch=1, lr=1e-4, anchors=2)
    cfg = TrainConfig(objective="prefix", budget=8, schedule=one_step)
    target, drafter = _tiny_pair(6)
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "keep.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="not empty"):
        train(target, drafter, data, cfg, tmp_path / "run", progress=False)
    assert (tmp_path / "run" / "keep.txt").read_text() == "mine"
    train(target, drafter, data, cfg, tmp_path / "ok", progress=False)
    with pytest.raises(ValueError, match="differs"):
        train(
            target,
            drafter,
            data,
            TrainConfig(objective="exit", budget=8, schedule=one_step),
            tmp_path / "ok",
            progress=False,
            resume=True,
        )


@pytest.mark.slow
def test_exitlaw_train_runs_under_torchrun_with_two_gloo_processes(tmp_path):
    import os
    import shutil
    import subprocess
    import sys

    from safetensors.torch import load_file

    torchrun = shutil.which("torchrun") or str(Path(sys.executable).with_name("torchrun"))
    if not Path(torchrun).is_file():
        pytest.skip(
            "torchrun is not installed next to this Python (needed for the 2-process FSDP smoke test)"
        )
    from exitlaw.engine.models.tiny import write_tiny_models

    tdir, ddir = write_tiny_models(tmp_path / "models")
    prompts = write_prompts(tmp_path / "p.jsonl", ["def add(a, b):", "for i in range", "x = 1"])
    run = dict(budget=12, batch_size=1, anchors=3, max_new_tokens=16, steps=3, gen_batch=1)
    flags = dict(checkpoint_every=2, no_progress=True, cache_dir=tmp_path / "cache")
    # --standalone: a free rendezvous port, so two runs on one host never meet on the default one
    torchrun_2 = [torchrun, "--standalone", "--nproc_per_node", "2", "-m", "exitlaw.cli"]
    base = torchrun_2 + train_argv(tdir, ddir, prompts, **run, **flags)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    run = subprocess.run(
        base + ["--out", str(tmp_path / "run")],
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    lines = (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(x)["step"] for x in lines] == [1, 2, 3]
    assert json.loads((tmp_path / "run" / "config.json").read_text())["world_size"] == 2
    # the two ranks shared the continuation batches; the cache equals a one-process generation
    from transformers import AutoTokenizer

    from exitlaw.engine.models.checkpoint import load_target
    from exitlaw.engine.training.data import encode_prompts, generate_continuations, load_prompts

    tok = AutoTokenizer.from_pretrained(str(tdir))
    enc = encode_prompts(tok, load_prompts(str(prompts)))
    alone = generate_continuations(
        load_target(tdir),
        enc,
        max_new_tokens=16,
        settings=SamplingSettings(1.0),
        seed=0,
        batch_size=1,
        stop_tokens=[tok.eos_token_id] if tok.eos_token_id is not None else [],
    )
    cache = next((tmp_path / "cache").glob("continuations-*.jsonl")).read_text().splitlines()[1:]
    assert [json.loads(x)["completion_ids"] for x in cache] == alone
    trained = load_file(str(tmp_path / "run" / "final" / "model.safetensors"))
    start = load_file(str(ddir / "model.safetensors"))
    assert set(trained) == set(start) and any(not torch.equal(trained[k], start[k]) for k in start)
    # --resume under FSDP loads the step-3 checkpoint into the sharded drafter and writes the same final weights
    resumed = subprocess.run(
        base + ["--out", str(tmp_path / "run"), "--resume"],
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
    )
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    again_final = load_file(str(tmp_path / "run" / "final" / "model.safetensors"))
    assert all(torch.equal(again_final[k], trained[k]) for k in trained)
    # a second launch into the same directory refuses instead of overwriting the run
    again = subprocess.run(
        base + ["--out", str(tmp_path / "run")],
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
    )
    assert again.returncode != 0 and "not empty" in again.stderr


# ----- training data ------------------------------------------------------------------------
def test_prompts_load_from_jsonl_in_every_supported_shape_and_bad_lines_are_named(tmp_path):
    from exitlaw.engine.training.data import load_prompts

    good = tmp_path / "p.jsonl"
    good.write_text(
        '{"prompt": "a"}\n\n{"text": "b"}\n{"turns": ["c", "d"]}\n{"prompt_ids": [1, 2]}\n'
    )
    assert load_prompts(f"jsonl:{good}") == ["a", "b", "c", [1, 2]]
    assert load_prompts(str(good), limit=2) == ["a", "b"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "a"}\n{"nothing": 1}\n')
    with pytest.raises(ValueError, match="bad.jsonl:2"):
        load_prompts(str(bad))
    with pytest.raises(FileNotFoundError):
        load_prompts(f"jsonl:{tmp_path / 'missing.jsonl'}")
    with pytest.raises(ValueError, match="must be"):
        load_prompts("prompts.txt")


def test_batched_left_padded_greedy_continuations_equal_one_by_one_greedy_decoding():
    from exitlaw.engine.training.data import generate_continuations

    target, _ = _tiny_pair(7)
    prompts = [[5, 6, 7], [8, 9, 10, 11, 12], [3]]
    batched = generate_continuations(
        target, prompts, max_new_tokens=5, settings=SamplingSettings(0.0), seed=0, batch_size=3
    )
    for p, cont in zip(prompts, batched):
        ids = list(p)
        with torch.no_grad():
            for _ in range(5):
                ids.append(int(target.model(input_ids=torch.tensor([ids])).logits[0, -1].argmax()))
        assert ids[len(p) :] == cont


def test_continuations_are_cached_on_disk_and_reused(tmp_path):
    from exitlaw.engine.training.data import cached_sequences

    target, _ = _tiny_pair(8)
    prompts = [[1, 2, 3], [4, 5]]
    first = cached_sequences(
        target, "fp", prompts, tmp_path, max_new_tokens=4, settings=SamplingSettings(1.0), seed=3
    )
    assert len(list(tmp_path.glob("continuations-*.jsonl"))) == 1

    class NoTarget:  # a second call must not generate again
        def __getattr__(self, name):
            raise AssertionError("the target was used although the continuations are cached")

    again = cached_sequences(
        NoTarget(),
        "fp",
        prompts,
        tmp_path,
        max_new_tokens=4,
        settings=SamplingSettings(1.0),
        seed=3,
    )
    assert again == first
    other = cached_sequences(
        target, "fp", prompts, tmp_path, max_new_tokens=4, settings=SamplingSettings(1.0), seed=4
    )
    assert len(list(tmp_path.glob("continuations-*.jsonl"))) == 2 and other.prompts == first.prompts


def test_generating_one_batch_alone_with_its_index_gives_the_same_draws():
    from exitlaw.engine.training.data import generate_continuations

    target, _ = _tiny_pair(4)
    g = torch.Generator().manual_seed(1)
    prompts = [
        torch.randint(0, SPEC.vocab_size - 2, (4 + i,), generator=g).tolist() for i in range(5)
    ]
    kw = dict(max_new_tokens=6, settings=SamplingSettings(1.0), seed=3, batch_size=2)
    whole = generate_continuations(target, prompts, **kw)
    pieces = [
        c
        for b, lo in enumerate(range(0, 5, 2))
        for c in generate_continuations(target, prompts[lo : lo + 2], first_batch=b, **kw)
    ]
    assert pieces == whole
    shifted = generate_continuations(target, prompts[2:4], **kw)  # without the index: other draws
    assert shifted != whole[2:4]


def test_weight_normalisation_reaches_the_loss_and_the_config_checks_it():
    from exitlaw.engine.training.loop import TrainConfig

    logits, targets, trees, edge = _random_batch(7)
    valid = torch.ones_like(targets, dtype=torch.bool)
    by_batch = exittrain_loss(
        logits, targets, valid, trees, edge, objective="exit", lam=1.0, normalisation="batch"
    )
    by_tree = exittrain_loss(
        logits, targets, valid, trees, edge, objective="exit", lam=1.0, normalisation="tree"
    )
    law = tree_law(trees, edge)
    logq = torch.log_softmax(logits.detach().double(), -1)
    wt = objective_weights("exit", law, trees, "tree")
    ref = sum(
        float(wt[k, v]) * -float(logq[k, int(trees.depth[k, v]) - 1, int(trees.token[k, v])])
        for k in range(wt.shape[0])
        for v in range(wt.shape[1])
        if bool(trees.nonroot[k, v])
    )
    assert abs(float(by_tree.tree.detach()) - ref) < 1e-4
    assert (
        abs(float(by_tree.tree.detach()) - float(by_batch.tree.detach())) > 1e-6
    )  # the normalisations differ
    with pytest.raises(ValueError, match="normalisation"):
        TrainConfig(weight_norm="per-node")
