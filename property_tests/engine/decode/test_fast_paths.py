"""Every decode fast path agrees with its exact twin (issue 25): factorised best-first vs the general
rule, host-walk decisions vs the device ``_follow``, walk-only and shape-cached device trees vs full
ones, the vectorised child-token table vs the node loop, the batch's padded fields vs the tree-by-tree loop, the reused tree-mask buffer vs a fresh mask, the cache commit vs fancy indexing, the fused
drafter attention vs the unfused one, SDPA ``enable_gqa`` vs repeated K/V; and decoding runs its
forwards in inference mode while the training-side forwards keep autograd."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import DynamicCache

from exitlaw.engine.builders.single import build_ddtree, factorised_best_first
from exitlaw.engine.decode.batch_tree import padded_fields, padded_fields_loop
from exitlaw.engine.decode.device_tree import to_device_tree
from exitlaw.engine.decode.dispatch import verify
from exitlaw.engine.decode.loop import DecodeConfig, generate, tree_parts
from exitlaw.engine.decode.verifiers import verify_greedy, verify_greedy_walk
from exitlaw.engine.decode.verifiers.greedy import _greedy_reference
from exitlaw.engine.decode.verifiers.walk import _follow, _walk
from exitlaw.engine.models.dflash import DFlashAttention, attend_grouped, attend_repeated
from exitlaw.engine.models.target import TargetModel, TreeMaskBuffer, tree_attention_mask
from exitlaw.simulate.strategies import draft_trees
from exitlaw.theory import DraftTree
from exitlaw.theory.sampling_settings import SamplingSettings

TINY_SEED = 1


def _rows(rng, depth, vocab, kind):
    x = rng.normal(size=(depth, vocab)) * rng.choice([0.5, 3.0, 10.0])
    if kind == "ties":
        x = np.round(x)
    elif kind == "inf":
        x[:, rng.integers(0, vocab, size=max(1, vocab // 2))] = -np.inf
    return torch.log_softmax(torch.tensor(x), -1)


@settings(deadline=None)
@given(
    seed=st.integers(0, 2**31),
    depth=st.integers(1, 7),
    vocab=st.integers(2, 40),
    budget=st.integers(0, 70),
    kind=st.sampled_from(["plain", "ties", "inf"]),
)
def test_factorised_builder_equals_the_general_best_first_rule(seed, depth, vocab, budget, kind):
    rows = _rows(np.random.default_rng(seed), depth, vocab, kind)
    fast_tree, fast_val = build_ddtree(rows, budget, 5)
    ref_tree, ref_val = build_ddtree(rows, budget, 5, fast=False)
    assert np.array_equal(fast_tree.parent, ref_tree.parent)
    assert np.array_equal(fast_tree.token, ref_tree.token)
    assert np.array_equal(fast_val, ref_val)


def test_factorised_builder_is_the_one_called_and_matches_on_strict_rows():
    # strictly descending rows take the fast path directly (no fallback): compare it alone
    rng = np.random.default_rng(3)
    rows = _rows(rng, 6, 30, "plain")
    vals, idxs = torch.topk(rows, 30)
    tree, val = factorised_best_first(vals.double().numpy(), idxs.numpy(), 40, 9)
    ref_tree, ref_val = build_ddtree(rows, 40, 9, fast=False)
    assert np.array_equal(tree.parent, ref_tree.parent) and np.array_equal(
        tree.token, ref_tree.token
    )
    assert np.array_equal(val, ref_val) and tree.num_nodes == 41


def _random_tree(rng, n, vocab):
    parent = [-1] + [int(rng.integers(0, i)) for i in range(1, n)]
    token = [3]
    used: dict[int, set] = {}
    for i in range(1, n):
        free = [t for t in range(vocab) if t not in used.setdefault(parent[i], set())]
        t = int(rng.choice(free)) if free else None
        if (
            t is None
        ):  # no free token under this parent: hang the node under the root's chain instead
            return _random_tree(rng, n, vocab)
        used[parent[i]].add(t)
        token.append(t)
    return DraftTree(parent=np.array(parent), token=np.array(token))


@settings(deadline=None)
@given(seed=st.integers(0, 2**31), n=st.integers(1, 30))
def test_host_walk_decisions_equal_the_device_follow(seed, n):
    rng = np.random.default_rng(seed)
    vocab = 6  # small: argmax tokens often match children, so paths are long
    tree = _random_tree(rng, n, vocab)
    dt_all = to_device_tree(tree)
    dt_walk = to_device_tree(tree, parts="walk")
    logits = torch.tensor(rng.normal(size=(n, vocab)), dtype=torch.float32)
    # bias some rows towards a child's token so walks go deep
    for v in range(n):
        kids = tree.children[v]
        if kids.size and rng.random() < 0.8:
            logits[v, int(tree.token[kids[0]])] += 5.0
    want = verify_greedy(dt_all, logits)
    assert verify_greedy_walk(dt_walk, logits) == want == _greedy_reference(dt_all, logits)
    assert verify("greedy", dt_walk, logits, SamplingSettings(0.0), None) == want
    draw = torch.tensor(rng.integers(0, vocab, size=n))
    assert _walk(tree, draw.tolist()) == int(_follow(dt_all, draw))


@settings(deadline=None)
@given(seed=st.integers(0, 2**31), n=st.integers(1, 25))
def test_walk_only_and_shape_cached_device_trees_equal_the_full_one(seed, n):
    rng = np.random.default_rng(seed)
    tree = _random_tree(rng, n, 8)
    logq = rng.normal(size=n)
    full = to_device_tree(tree, "cpu", logq)
    walk = to_device_tree(tree, "cpu", logq, parts="walk")
    for name in ("parent", "token", "depth", "ancestor", "draft_logprob"):
        assert torch.equal(getattr(walk, name), getattr(full, name)), name
    assert walk.child is None and walk.edge_ancestor is None  # no TEV matrices built
    for _ in range(2):  # first call fills the shape cache, the second reads it
        walk_cached = to_device_tree(tree, "cpu", logq, parts="walk", cache_shapes=True)
        for name in ("parent", "token", "depth", "ancestor", "draft_logprob"):
            assert torch.equal(getattr(walk_cached, name), getattr(full, name)), name
        cached = to_device_tree(tree, "cpu", logq, cache_shapes=True)
        for name in (
            "parent",
            "token",
            "depth",
            "ancestor",
            "child",
            "internal",
            "parent_slot",
            "child_tokens",
            "has_child",
            "edge_ancestor",
            "draft_logprob",
        ):
            assert torch.equal(getattr(cached, name), getattr(full, name)), name


def test_tree_parts_builds_the_TEV_matrices_only_for_TEV_above_zero_temperature():
    assert tree_parts(DecodeConfig(verifier="tev", settings=SamplingSettings(1.0))) == "all"
    for cfg in (
        DecodeConfig(verifier="tev", settings=SamplingSettings(0.0)),
        DecodeConfig(verifier="greedy"),
        DecodeConfig(verifier="predraw", settings=SamplingSettings(1.0)),
        DecodeConfig(verifier="residual", settings=SamplingSettings(1.0)),
    ):
        assert tree_parts(cfg) == "walk", cfg
    with pytest.raises(ValueError, match="unknown parts"):
        to_device_tree(DraftTree.chain([1, 2]), parts="some")


def test_reused_mask_buffer_equals_a_fresh_tree_mask_round_after_round():
    rng = np.random.default_rng(0)
    buf = TreeMaskBuffer()
    for _ in range(40):  # growing and shrinking trees and contexts, as rounds do
        tree = _random_tree(rng, int(rng.integers(1, 30)), 40)
        anc = torch.tensor(tree.ancestor_matrix)
        ctx = int(rng.integers(0, 300))
        assert torch.equal(
            buf.write(anc, ctx, torch.float32), tree_attention_mask(anc, ctx, torch.float32)
        )
    with pytest.raises(ValueError, match="bool"):
        buf.write(anc.float(), 3, torch.float32)


def _commit_twin(cache, start, path):
    """The fancy-indexing commit (the former implementation)."""
    idx = torch.as_tensor(path)
    for layer in cache.layers:
        src = start + idx
        layer.keys[..., start : start + len(path), :] = layer.keys[..., src, :]
        layer.values[..., start : start + len(path), :] = layer.values[..., src, :]
        drop = layer.keys.shape[-2] - (start + len(path))
        if drop:
            layer.crop(-drop)


def _filled_cache(seed, length):
    g = torch.Generator().manual_seed(seed)
    cache = DynamicCache()
    for layer in range(2):
        cache.update(
            torch.randn(1, 2, length, 4, generator=g),
            torch.randn(1, 2, length, 4, generator=g),
            layer,
        )
    return cache


@pytest.mark.parametrize("path", [[0], [0, 1, 2], [0, 2, 5], [0, 3, 4, 9], [0, 1, 7]])
def test_commit_equals_the_fancy_indexing_twin(path):
    a, b = _filled_cache(1, 15), _filled_cache(1, 15)
    TargetModel.commit(a, 5, path)
    _commit_twin(b, 5, path)
    for la, lb in zip(a.layers, b.layers):
        assert la.keys.shape[-2] == 5 + len(path)
        assert torch.equal(la.keys, lb.keys) and torch.equal(la.values, lb.values)
    with pytest.raises(ValueError, match="root node 0"):
        TargetModel.commit(_filled_cache(1, 15), 5, [1, 2])
    with pytest.raises(ValueError, match="beyond"):
        TargetModel.commit(_filled_cache(1, 15), 5, [0, 12])


def test_grouped_attention_equals_repeated_key_values():
    g = torch.Generator().manual_seed(0)
    q, k, v = (
        torch.randn(3, 6, 9, 8, generator=g),
        torch.randn(3, 2, 20, 8, generator=g),
        torch.randn(3, 2, 20, 8, generator=g),
    )
    assert torch.equal(attend_grouped(q, k, v, None, 0.3), attend_repeated(q, k, v, None, 0.3))
    # the batched draft's padding mask: row 1 hides its stale columns 5..11
    mask = torch.zeros(3, 1, 9, 20)
    mask[1, :, :, 5:12] = float("-inf")
    got = attend_grouped(q, k, v, mask, 0.3)
    assert torch.equal(got, attend_repeated(q, k, v, mask, 0.3))
    assert not torch.equal(got, attend_grouped(q, k, v, None, 0.3))  # the mask is read


def test_fused_drafter_attention_is_bit_identical_to_the_unfused_twin(pair):
    target, drafter = pair
    g = torch.Generator().manual_seed(0)
    width = len(drafter.config.target_layer_ids) * drafter.config.hidden_size
    feeds = [torch.randn(c, width, generator=g) for c in (7, 1, 4)]

    def run():
        cache, start, rows = drafter.new_cache(), 0, []
        for h in feeds:  # a growing draft cache, as in decoding
            start += h.shape[0]
            rows.append(
                drafter.draft_logprobs(target.embed_tokens, target.lm_head, 11, h, start, cache)
            )
        return rows

    fused = run()
    try:
        DFlashAttention.fused = False
        unfused = run()
    finally:
        DFlashAttention.fused = True
    assert all(torch.equal(a, b) for a, b in zip(fused, unfused))


def test_decode_forwards_run_in_inference_mode_and_training_forwards_keep_autograd(pair):
    target, drafter = pair
    seen = []
    hook = target.model.register_forward_hook(
        lambda *_: seen.append(torch.is_inference_mode_enabled())
    )
    try:
        generate(
            target,
            drafter,
            [5, 9, 13, 2],
            DecodeConfig(method="ddtree", verifier="greedy", budget=6, max_new_tokens=4),
        )
        generate(target, None, [5, 9, 13, 2], DecodeConfig(method="ar", max_new_tokens=2))
    finally:
        hook.remove()
    assert seen and all(seen)
    # the forwards training uses (prefill + the drafter, the tree forward) stay usable by autograd
    cache = target.new_cache()
    step = target.prefill(cache, torch.tensor([5, 9, 13, 2]))
    assert not step.hidden.is_inference()
    out = drafter(
        target.embed_tokens(torch.tensor([[2] * drafter.block_size])),
        step.hidden[None],
        torch.arange(4)[None],
        torch.arange(4, 4 + drafter.block_size)[None],
    )
    out.sum().backward()
    assert drafter.fc.weight.grad is not None
    tree = DraftTree.chain([3, 4])
    dt = to_device_tree(tree, parts="walk")
    with torch.enable_grad():
        tf = target.tree_forward(cache, dt.token, dt.depth, dt.ancestor)
    assert not tf.logits.is_inference()


def test_path_forward_equals_the_tree_mask_forward_on_a_chain(pair):
    target, _ = pair
    dt = to_device_tree(DraftTree.chain([3, 4, 8, 1], root_token=7), parts="walk")
    steps = []
    for path in (True, False):
        cache = target.new_cache()
        target.prefill(cache, torch.tensor([5, 9, 13, 2]))
        steps.append(
            (
                target.verify_tree(cache, dt.token, dt.depth, dt.ancestor, path=path),
                cache.layers[0].keys.clone(),
            )
        )
    (a, ka), (b, kb) = steps
    torch.testing.assert_close(a.logits, b.logits, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(a.hidden, b.hidden, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(ka, kb, rtol=1e-6, atol=1e-6)
    assert torch.equal(a.logits.argmax(-1), b.logits.argmax(-1))


def test_decode_and_verify_tree_keep_no_grad_outside_inference_mode(pair):
    target, _ = pair
    cache = target.new_cache()
    target.prefill(cache, torch.tensor([5, 9, 13, 2]))
    with torch.enable_grad():
        assert not target.decode(cache, 7).requires_grad
        dt = to_device_tree(DraftTree.chain([3, 4]), parts="walk")
        assert not target.verify_tree(cache, dt.token, dt.depth, dt.ancestor).logits.requires_grad


@settings(max_examples=200, deadline=None)
@given(parents=st.lists(st.integers(0, 10**6), max_size=40), seed=st.integers(0, 2**16))
def test_vectorised_child_token_table_equals_the_node_loop(parents, seed):
    """Children grouped per parent in node order, padded with the first child token, leaves at 0."""
    from exitlaw.engine.decode.device_tree import _child_token_table, _child_token_table_loop

    parent = [-1] + [p % (i + 1) for i, p in enumerate(parents)]
    tokens = np.random.default_rng(seed).permutation(1000)[: len(parent)].tolist()
    tree = DraftTree(parent=parent, token=tokens)
    fast, loop = _child_token_table(tree), _child_token_table_loop(tree)
    assert fast.shape == loop.shape and (fast == loop).all()


@settings(deadline=None, max_examples=150)
@given(
    trees=st.lists(
        draft_trees(max_nodes=20, max_depth=8, max_branching=4, vocab_size=9),
        min_size=1,
        max_size=6,
    ),
    root_minus_one=st.lists(st.booleans(), min_size=6, max_size=6),
)
def test_padded_batch_fields_equal_their_tree_by_tree_twin(trees, root_minus_one):
    """``padded_fields`` (all rows at once, pointer jumping and a sorted child table) gives every array
    ``padded_fields_loop`` builds from each tree's own ancestor matrix, depths and children, also for
    root-only rows and root token -1 (clamped at 0)."""
    trees = [
        DraftTree(parent=t.parent, token=np.r_[-1, t.token[1:]]) if flip else t
        for t, flip in zip(trees, root_minus_one)
    ]
    fast, loop = padded_fields(trees), padded_fields_loop(trees)
    assert fast.keys() == loop.keys()
    for name in fast:
        assert fast[name].dtype == loop[name].dtype, name
        assert np.array_equal(fast[name], loop[name]), name
