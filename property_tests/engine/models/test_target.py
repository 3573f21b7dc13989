"""Target tree attention: tree-verify rows equal causal per-path rows; KV commit equals recomputation."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from exitlaw.engine.models.checkpoint import load_target
from exitlaw.engine.models.target import (
    TargetModel,
    check_transformers_version,
    tree_attention_mask,
)
from exitlaw.engine.models.tiny import TinySpec
from exitlaw.theory import DraftTree

SPEC = TinySpec()


TINY_SEED = 3  # the shared ``tiny`` fixture (conftest.py) uses this seed


@pytest.fixture(scope="module", params=["sdpa", "eager"])
def target(request, tiny) -> TargetModel:
    return load_target(tiny[0], layer_ids=SPEC.target_layer_ids, attn_implementation=request.param)


def random_tree(rng: np.random.Generator, n: int, vocab: int) -> DraftTree:
    """Random topological tree; tokens repeat across branches but never among siblings."""
    parent, token = [-1], [int(rng.integers(vocab))]
    used: dict[int, set[int]] = {}
    for i in range(1, n):
        p = int(rng.integers(i))
        tok = int(rng.integers(vocab))
        while tok in used.setdefault(p, set()):
            tok = int(rng.integers(vocab))
        used[p].add(tok)
        parent.append(p)
        token.append(tok)
    return DraftTree(parent=np.array(parent), token=np.array(token))


def causal_logits(target: TargetModel, tokens: list[int]) -> torch.Tensor:
    with torch.no_grad():
        return target.model(input_ids=torch.tensor([tokens])).logits[0].float()


def tree_tensors(tree: DraftTree):
    return tuple(
        torch.from_numpy(np.array(a)) for a in (tree.token, tree.depth, tree.ancestor_matrix)
    )


def _context_tree_and_cache(target, rng, n: int, ctx: int):
    """A random ``ctx``-token context, a random ``n``-node tree rooted at its last token, and a
    cache holding the context before that token."""
    context = rng.integers(SPEC.vocab_size, size=ctx).tolist()
    tree = random_tree(rng, n, SPEC.vocab_size)
    tree = DraftTree(parent=tree.parent, token=np.array([context[-1], *tree.token[1:]]))
    cache = target.new_cache()
    target.prefill(cache, torch.tensor(context[:-1], dtype=torch.long))
    return context, tree, cache


@given(seed=st.integers(0, 2**31), n=st.integers(1, 24), ctx=st.integers(1, 12))
@settings(max_examples=10)
def test_tree_verify_logits_equal_causal_per_path_logits(target, seed, n, ctx):
    context, tree, cache = _context_tree_and_cache(target, np.random.default_rng(seed), n, ctx)
    step = target.verify_tree(cache, *tree_tensors(tree))
    assert step.logits.shape == (n, SPEC.vocab_size)
    assert step.hidden.shape == (n, len(SPEC.target_layer_ids) * SPEC.target.hidden_size)
    for v in range(n):
        ref = causal_logits(target, context + list(tree.path(v)))[-1]
        torch.testing.assert_close(step.logits[v], ref, atol=2e-4, rtol=1e-4)


@given(seed=st.integers(0, 2**31), n=st.integers(1, 20), ctx=st.integers(1, 10))
@settings(max_examples=10)
def test_kv_commit_then_continuing_equals_recomputing_from_scratch(target, seed, n, ctx):
    rng = np.random.default_rng(seed)
    context, tree, cache = _context_tree_and_cache(target, rng, n, ctx)
    exit_node = int(rng.integers(n))
    start = cache.get_seq_length()
    target.verify_tree(cache, *tree_tensors(tree))
    path = tree.path_nodes(exit_node)
    target.commit(cache, start, list(path))
    committed = context + list(tree.path(exit_node))
    assert cache.get_seq_length() == len(committed)
    fresh = target.new_cache()
    target.prefill(fresh, torch.tensor(committed, dtype=torch.long))
    for mine, ref in zip(cache.layers, fresh.layers):
        torch.testing.assert_close(mine.keys, ref.keys, atol=2e-5, rtol=1e-4)
        torch.testing.assert_close(mine.values, ref.values, atol=2e-5, rtol=1e-4)
    bonus = int(rng.integers(SPEC.vocab_size))
    nxt = target.decode(cache, bonus)
    torch.testing.assert_close(
        nxt, causal_logits(target, committed + [bonus])[-1], atol=2e-4, rtol=1e-4
    )


def test_tree_mask_is_float_additive_with_full_context():
    tree = DraftTree(parent=np.array([-1, 0, 0, 1]), token=np.array([3, 4, 5, 6]))
    mask = tree_attention_mask(torch.from_numpy(np.array(tree.ancestor_matrix)), 5, torch.float32)
    assert mask.dtype == torch.float32 and mask.shape == (1, 1, 4, 9)
    assert (mask[0, 0, :, :5] == 0).all()
    visible = mask[0, 0, :, 5:] == 0
    assert torch.equal(visible, torch.from_numpy(np.array(tree.ancestor_matrix)))
    assert (mask[0, 0, :, 5:][~visible] == torch.finfo(torch.float32).min).all()


def test_commit_rejects_a_path_not_starting_at_the_root(target):
    cache = target.new_cache()
    target.prefill(cache, torch.tensor([1, 2, 3]))
    with pytest.raises(ValueError, match="root"):
        target.commit(cache, 3, [1, 2])


@pytest.mark.parametrize(
    "version,ok",
    [
        ("5.24.0", True),
        ("5.25.0", True),
        ("5.23.0", False),
        ("5.17.0", False),
        ("4.57.1", False),
        ("6.0.0", False),
    ],
)
def test_transformers_version_range_is_pinned(version, ok):
    if ok:
        check_transformers_version(version)
    else:
        with pytest.raises(RuntimeError, match="transformers"):
            check_transformers_version(version)
