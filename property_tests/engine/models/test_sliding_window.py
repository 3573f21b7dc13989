"""The engine on a sliding-window target (a tiny random Gemma-4 text model, window W = 5, contexts longer
than W): tree rows, KV commit, T = 0 decoding (single and batched) and ExitTrain's tree scoring equal the
model's own causal forward with its native rolling sliding-window cache and its own masks."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import AutoModelForCausalLM, DynamicCache

from exitlaw.engine.decode.batch_generate import generate_batch
from exitlaw.engine.decode.loop import DecodeConfig, generate
from exitlaw.engine.models.attention_window import (
    in_window,
    layer_masks,
    layer_windows,
    to_additive,
)
from exitlaw.engine.models.config import causal_lm_config
from exitlaw.engine.models.target import TargetModel, batch_attention_mask, tree_attention_mask
from exitlaw.engine.models.tiny import build_tiny_drafter
from exitlaw.theory import DraftTree
from exitlaw.theory.sampling_settings import SamplingSettings
from helpers.tiny_specs import SMALL_SPEC

WINDOW = 5
SPEC = replace(
    SMALL_SPEC,
    vocab_size=96,
    target=SMALL_SPEC.target.but(num_layers=4),
    block_size=6,
    target_layer_ids=(0, 2),
)
TOL = dict(atol=1e-4, rtol=1e-4)  # float32; the measured differences are ~1e-5 (MAX_DIFF)
MAX_DIFF: dict[
    str, float
] = {}  # largest |engine - native| logit difference per check (printed with -s)


def gemma(seed: int = 0, attn: str = "eager"):
    """The tiny Gemma-4 text model (float32) with window ``WINDOW``."""
    cfg = causal_lm_config("gemma4", SPEC.lm_sizes(), sliding_window=WINDOW)
    cfg._attn_implementation = attn
    torch.manual_seed(seed)
    return AutoModelForCausalLM.from_config(cfg).eval()


@pytest.fixture(scope="module", params=["eager", "sdpa"])
def target(request) -> TargetModel:
    return TargetModel(gemma(attn=request.param), SPEC.target_layer_ids)


def native_logits(model, tokens: list[int]) -> torch.Tensor:
    """``[S, V]`` from the model's own forward: its rolling sliding-window cache, its own masks."""
    cache = DynamicCache(config=model.config)
    assert any(cache.is_sliding)
    with torch.no_grad():
        return (
            model(input_ids=torch.tensor([tokens]), cache=cache, use_cache=True).logits[0].float()
        )


def native_greedy(model, prompt: list[int], n: int) -> list[int]:
    """Greedy decoding token by token through the model's native sliding-window cache."""
    cache = DynamicCache(config=model.config)
    out = []
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([prompt]), cache=cache, use_cache=True).logits[0, -1]
        for _ in range(n):
            out.append(int(logits.argmax()))
            logits = model(input_ids=torch.tensor([[out[-1]]]), cache=cache, use_cache=True).logits[
                0, -1
            ]
    assert (
        max(layer.keys.shape[-2] for layer in cache.layers if layer.is_sliding) < len(prompt) + n
    )  # it rolled
    return out


def record(name: str, a: torch.Tensor, b: torch.Tensor) -> None:
    MAX_DIFF[name] = max(MAX_DIFF.get(name, 0.0), float((a - b).abs().max()))
    torch.testing.assert_close(a, b, **TOL)


def random_tree(rng: np.random.Generator, n: int, root: int) -> DraftTree:
    parent, token, used = [-1], [root], {}
    for i in range(1, n):
        p = i - 1 if rng.random() < 0.5 else int(rng.integers(i))  # deep and bushy
        tok = int(rng.integers(SPEC.vocab_size))
        while tok in used.setdefault(p, set()):
            tok = int(rng.integers(SPEC.vocab_size))
        used[p].add(tok)
        parent.append(p)
        token.append(tok)
    return DraftTree(parent=np.array(parent), token=np.array(token))


def tree_tensors(tree: DraftTree):
    return tuple(
        torch.from_numpy(np.array(a)) for a in (tree.token, tree.depth, tree.ancestor_matrix)
    )


# ----- the window rule and the masks ------------------------------------------------------------------
def test_the_window_rule_is_transformers_and_the_masks_apply_it_per_layer_type():
    from transformers.masking_utils import sliding_window_overlay

    rule = sliding_window_overlay(WINDOW)
    q, k = torch.arange(12)[None], torch.arange(12)[None]
    want = torch.tensor([[rule(0, 0, i, j) for j in range(12)] for i in range(12)])
    assert torch.equal(in_window(q, k, WINDOW)[0], want)
    windows = layer_windows(gemma().config)
    assert windows == {"sliding_attention": WINDOW, "full_attention": None}
    tree = DraftTree(parent=np.array([-1, 0, 1, 2, 0]), token=np.array([1, 2, 3, 4, 5]))
    anc = torch.from_numpy(np.array(tree.ancestor_matrix))
    masks = tree_attention_mask(
        anc, 7, torch.float32, depth=torch.from_numpy(np.array(tree.depth)), windows=windows
    )
    full, slid = (masks[t][0, 0] == 0 for t in ("full_attention", "sliding_attention"))
    assert torch.equal(full, torch.cat([torch.ones(5, 7, dtype=torch.bool), anc], 1))
    pos = 7 + torch.tensor(tree.depth)  # node positions 7, 8, 9, 10, 8
    key = torch.cat([torch.arange(7), pos])
    assert torch.equal(slid, full & (key[None] > pos[:, None] - WINDOW))
    assert slid[3, :7].tolist() == [False] * 6 + [True] and slid[3, 7:].all() == bool(anc[3].all())
    assert not isinstance(
        tree_attention_mask(anc, 7, torch.float32), dict
    )  # full-attention targets: one mask
    vis = torch.ones(2, 2, 2, dtype=torch.bool).tril()
    rows = batch_attention_mask(
        vis, [3, 6], 6, torch.float32, query_pos=torch.tensor([[3, 4], [6, 7]]), windows=windows
    )
    ok = rows["sliding_attention"][:, 0] == 0
    assert ok[0, 1].tolist() == [
        True,
        True,
        True,
        False,
        False,
        False,
        True,
        True,
    ]  # row 0: pos 4 sees 0..4
    assert ok[1, 1].tolist() == [
        False,
        False,
        False,
        True,
        True,
        True,
        True,
        True,
    ]  # row 1: pos 7 sees 3..7
    with pytest.raises(ValueError, match="query_pos"):
        batch_attention_mask(vis, [3, 6], 6, torch.float32, windows=windows)
    with pytest.raises(ValueError, match="depth"):
        tree_attention_mask(anc, 7, torch.float32, windows=windows)
    with pytest.raises(ValueError, match="query_pos"):
        layer_masks(vis, torch.float32, windows)


def test_unsupported_layer_types_and_windows_are_named():
    from types import SimpleNamespace as NS

    with pytest.raises(ValueError, match="chunked_attention"):
        layer_windows(NS(layer_types=["full_attention", "chunked_attention"], sliding_window=None))
    with pytest.raises(ValueError, match="sliding_window >= 1"):
        layer_windows(NS(layer_types=["sliding_attention", "full_attention"], sliding_window=None))
    assert layer_windows(NS(sliding_window=None)) == {
        "full_attention": None
    }  # no layer_types: one full type


def test_the_window_changes_the_logits_so_these_checks_can_fail():
    model = gemma()
    tokens = np.random.default_rng(0).integers(SPEC.vocab_size, size=4 * WINDOW).tolist()
    causal = to_additive(
        torch.ones(1, len(tokens), len(tokens), dtype=torch.bool).tril(), torch.float32
    )
    with torch.no_grad():  # the same weights with the window dropped from the sliding layers' mask
        unwindowed = model(
            input_ids=torch.tensor([tokens]),
            attention_mask={"full_attention": causal, "sliding_attention": causal},
        ).logits[0]
    slid = native_logits(model, tokens)
    torch.testing.assert_close(
        slid[:WINDOW], unwindowed[:WINDOW], **TOL
    )  # inside the window: identical
    assert float((slid[2 * WINDOW :] - unwindowed[2 * WINDOW :]).abs().max()) > 1e-2


def test_a_rolling_sliding_window_cache_is_refused_by_commit(target):
    cache = DynamicCache(config=target.model.config)
    target.prefill(cache, torch.arange(4))
    with pytest.raises(ValueError, match="cannot be compacted.*new_cache"):
        target.commit(cache, 3, [0])


# ----- tree forward and commit ---------------------------------------------------------------------------
@given(seed=st.integers(0, 2**31), n=st.integers(1, 16), ctx=st.integers(1, 4 * WINDOW))
@settings(max_examples=8)
def test_tree_rows_equal_native_causal_logits_of_each_root_to_node_path(target, seed, n, ctx):
    rng = np.random.default_rng(seed)
    context = rng.integers(SPEC.vocab_size, size=ctx).tolist()
    tree = random_tree(rng, n, context[-1])
    cache = target.new_cache()
    target.prefill(cache, torch.tensor(context[:-1]))
    step = target.verify_tree(cache, *tree_tensors(tree))
    assert cache.get_seq_length() == ctx - 1 + n
    for v in range(n):
        record(
            "tree rows",
            step.logits[v],
            native_logits(target.model, context + list(tree.path(v)))[-1],
        )


@given(seed=st.integers(0, 2**31), n=st.integers(2, 14), ctx=st.integers(WINDOW, 3 * WINDOW))
@settings(max_examples=6)
def test_after_commits_the_next_rounds_rows_equal_a_native_recomputation(target, seed, n, ctx):
    rng = np.random.default_rng(seed)
    committed = rng.integers(SPEC.vocab_size, size=ctx).tolist()
    cache = target.new_cache()
    target.prefill(cache, torch.tensor(committed[:-1]))
    for _ in range(
        3
    ):  # three rounds: each commits a path, the next tree is checked against a fresh native forward
        tree = random_tree(rng, n, committed[-1])
        start = cache.get_seq_length()
        step = target.verify_tree(cache, *tree_tensors(tree))
        ref = native_logits(target.model, committed + list(tree.path(n - 1)))
        for j, v in enumerate(tree.path_nodes(n - 1)):
            record("rows after commit", step.logits[v], ref[len(committed) - 1 + j])
        exit_node = int(rng.integers(n))
        target.commit(cache, start, list(tree.path_nodes(exit_node)))
        committed += list(tree.path(exit_node)) + [int(rng.integers(SPEC.vocab_size))]
        assert cache.get_seq_length() == len(committed) - 1
    record(
        "decode after commit",
        target.decode(cache, committed[-1]),
        native_logits(target.model, committed)[-1],
    )


# ----- T = 0 decoding ------------------------------------------------------------------------------------
class Teacher:
    """Drafts that favour each row's known greedy continuation (noisy: trees branch, paths vary); single
    (``draft_logprobs``, a DFlash-shaped call) and batched (``draft_logprobs_batch``)."""

    block_size = SPEC.block_size

    def __init__(self, sequences: list[list[int]], seed: int):
        self.sequences, self.gen = sequences, torch.Generator().manual_seed(seed)

    def rows(self, b: int, start: int) -> torch.Tensor:
        rows = torch.randn(self.block_size - 1, SPEC.vocab_size, generator=self.gen)
        seq = self.sequences[b]
        for d in range(1, self.block_size):
            if start + d < len(seq):
                rows[d - 1, seq[start + d]] += 3.0
        return torch.log_softmax(rows, -1)

    def new_cache(self):
        return None

    def draft_logprobs(self, embed, lm_head, root, hidden, start, cache):
        return self.rows(0, start)

    def draft_logprobs_batch(self, roots, starts):
        return torch.stack([self.rows(b, s) for b, s in enumerate(starts)])


PROMPTS = [[3, 17, 40, 8, 61, 2, 90, 33, 5], [12], [7, 7, 50, 1, 64, 22], [88, 4]]
NEW = 3 * WINDOW + 1  # > 2 W generated tokens, so every row's window slides well past its prompt


@pytest.fixture(scope="module")
def greedy(target):
    return [native_greedy(target.model, p, NEW) for p in PROMPTS]


def test_T0_single_sequence_decoding_equals_native_greedy(target, greedy):
    drafter = build_tiny_drafter(
        SPEC, mask_token_id=SPEC.vocab_size - 1, seed=0
    )  # the real DFlash path
    for b, prompt in enumerate(PROMPTS):
        cfg = DecodeConfig(method="ddtree", verifier="tev", budget=10, max_new_tokens=NEW)
        assert generate(target, drafter, prompt, cfg).tokens == greedy[b]
        assert (
            generate(target, None, prompt, DecodeConfig(method="ar", max_new_tokens=NEW)).tokens
            == greedy[b]
        )
        teacher = Teacher([prompt + greedy[b]], seed=b)  # long accepted paths through the window
        out = generate(target, teacher, prompt, cfg)
        assert out.tokens == greedy[b] and max(out.block_lengths) >= 3, out.block_lengths


def test_T0_batched_decoding_equals_native_greedy(target, greedy):
    teacher = Teacher([p + g for p, g in zip(PROMPTS, greedy)], seed=2)
    for cfg in (
        DecodeConfig(method="ddtree", verifier="tev", budget=10, max_new_tokens=NEW),
        DecodeConfig(method="chain", verifier="predraw", max_new_tokens=NEW),
        DecodeConfig(method="ar", max_new_tokens=NEW),
    ):
        out = generate_batch(target, teacher, PROMPTS, cfg)
        assert out.tokens == greedy, cfg.method
        if cfg.method != "ar":
            assert len({x for r in out.block_lengths for x in r}) > 2, out.block_lengths


# ----- ExitTrain ---------------------------------------------------------------------------------------------
def test_exittrain_tree_scoring_equals_native_per_path_logits(target):
    from exitlaw.engine.training.batch import build_trees, tree_logit_tables

    g = torch.Generator().manual_seed(5)
    tokens = torch.randint(0, SPEC.vocab_size, (4 * WINDOW,), generator=g)
    cache = target.new_cache()
    step = target.prefill(cache, tokens)
    anchors = torch.tensor([3, 2 * WINDOW, 4 * WINDOW - 2])
    trees = build_trees(
        torch.randn(3, SPEC.block_size - 1, SPEC.vocab_size, generator=g) * 6, tokens[anchors], 9
    )
    tables = tree_logit_tables(target, cache, step.logits, anchors, trees)
    assert cache.get_seq_length() == tokens.shape[0]
    for k, tree in enumerate(trees):
        a = int(anchors[k])
        assert tree.max_depth >= 2
        for v in range(tree.num_nodes):
            ref = native_logits(target.model, tokens[: a + 1].tolist() + list(tree.path(v)))[-1]
            record("exittrain tree rows", tables[k][v], ref)


def test_an_exittrain_step_runs_through_the_training_loop(target, tmp_path):
    from exitlaw.engine.training.config import DrafterSchedule
    from exitlaw.engine.training.data import Sequences, generate_continuations
    from exitlaw.engine.training.loop import TrainConfig, train

    prompts = [p for p in PROMPTS if len(p) > 1]
    conts = generate_continuations(
        target, prompts, max_new_tokens=2 * WINDOW, settings=SamplingSettings(0.0), seed=0
    )
    greedy = [native_greedy(target.model, p, 2 * WINDOW) for p in prompts]
    assert (
        conts == greedy
    )  # the continuation generator (left-padded, HF masks on the engine's cache) is native
    drafter = build_tiny_drafter(SPEC, mask_token_id=SPEC.vocab_size - 1, seed=0).train()
    before = [p.detach().clone() for p in drafter.parameters()]
    cfg = TrainConfig(
        objective="exit",
        budget=8,
        schedule=DrafterSchedule(steps=2, batch=2, lr=1e-2, anchors=3),
        warmup_steps=0,
    )
    train(target, drafter, Sequences(prompts, conts), cfg, tmp_path / "run", progress=False)
    assert (tmp_path / "run" / "final").is_dir()
    assert any(not torch.equal(a, b) for a, b in zip(before, drafter.parameters()))


def teardown_module():
    print("max |engine - native| logit differences:", {k: f"{v:.2e}" for k, v in MAX_DIFF.items()})
