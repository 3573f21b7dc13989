"""The attention kernels of the target's masked forwards (``TargetModel.masked_attention``).

On CUDA every forward with a custom mask (tree verification, padded batches, ExitTrain's tree scoring
and continuation sampling, the drafter's batched draft and training forward) runs SDPA's math kernel
unless ``masked_attention="auto"``; unmasked
forwards keep torch's choice. This machine has no GPU, so the tests let the policy apply to the CPU
(``_MATH_MASKED_DEVICES``) and record, at every SDPA call, which kernels torch may pick.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from exitlaw.engine.decode.batch_generate import generate_batch
from exitlaw.engine.decode.loop import DecodeConfig
from exitlaw.engine.models import target as target_mod
from exitlaw.engine.models.checkpoint import load_pair, load_target
from exitlaw.engine.models.target import MASKED_ATTENTION, TargetModel, batch_attention_mask
from exitlaw.engine.models.tiny import TinySpec
from exitlaw.engine.training.batch import (
    drafter_rows,
    tree_logit_tables,
    windowed_tree_logit_tables,
)
from exitlaw.engine.training.data import generate_continuations
from exitlaw.theory import DraftTree
from exitlaw.theory.sampling_settings import SamplingSettings

SPEC = TinySpec()
TINY_SEED = 3


@pytest.fixture
def calls(monkeypatch):
    """Every SDPA call as ``(masked, efficient kernels allowed)``; the policy applies on the CPU."""
    seen: list[tuple[bool, bool]] = []
    original = torch.nn.functional.scaled_dot_product_attention

    def recording(*args, **kwargs):
        mask = kwargs.get("attn_mask", args[3] if len(args) > 3 else None)
        allowed = (
            torch.backends.cuda.mem_efficient_sdp_enabled()
            or torch.backends.cuda.flash_sdp_enabled()
            or torch.backends.cuda.cudnn_sdp_enabled()
        )
        seen.append((mask is not None, allowed))
        return original(*args, **kwargs)

    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", recording)
    monkeypatch.setattr(target_mod, "_MATH_MASKED_DEVICES", frozenset({"cpu"}))
    return seen


def _target(tiny, masked_attention: str, lean: bool = True) -> TargetModel:
    tgt = load_target(tiny[0], layer_ids=SPEC.target_layer_ids, masked_attention=masked_attention)
    return (
        tgt
        if lean
        else TargetModel(tgt.model, tgt.layer_ids, lean=False, masked_attention=masked_attention)
    )


def _tree(vocab: int, root: int) -> DraftTree:
    rng = np.random.default_rng(5)
    token = [root] + [int(x) for x in rng.choice(vocab, size=6, replace=False)]
    return DraftTree(parent=[-1, 0, 0, 1, 1, 3, 2], token=token)


def _decode_and_verify(tgt: TargetModel) -> None:
    """An unmasked prefill and decode step, then one tree forward (masked)."""
    cache = tgt.new_cache()
    prompt = torch.arange(5) % tgt.vocab_size
    tgt.prefill(cache, prompt)
    tgt.decode(cache, 3)
    tree = _tree(tgt.vocab_size, 3)
    tgt.verify_tree(
        cache,
        torch.as_tensor(np.array(tree.token)),
        torch.as_tensor(np.array(tree.depth)),
        torch.as_tensor(np.array(tree.ancestor_matrix)),
    )


@pytest.mark.parametrize("lean", [True, False])
def test_tree_forwards_run_the_math_kernel_alone_and_plain_forwards_keep_torchs_choice(
    tiny, calls, lean
):
    _decode_and_verify(_target(tiny, "math", lean))
    masked = [allowed for is_masked, allowed in calls if is_masked]
    plain = [allowed for is_masked, allowed in calls if not is_masked]
    assert masked and plain
    assert not any(masked), "a tree forward could pick an efficient kernel"
    assert all(plain), "an unmasked forward lost torch's kernel choice"
    assert torch.backends.cuda.mem_efficient_sdp_enabled()  # restored after each forward


def test_auto_keeps_torchs_choice_for_masked_forwards_too(tiny, calls):
    _decode_and_verify(_target(tiny, "auto"))
    assert any(m for m, _ in calls) and all(allowed for _, allowed in calls)


def test_batched_rows_run_the_math_kernel(tiny, calls):
    tgt = _target(tiny, "math")
    visible = torch.tril(torch.ones(2, 4, 4, dtype=torch.bool))
    mask = batch_attention_mask(visible, [0, 0], 0, tgt.dtype)
    ids = torch.tensor([[1, 2, 3, 4], [5, 6, 7, 8]])
    tgt.forward_rows(tgt.new_cache(), ids, torch.arange(4).repeat(2, 1), mask)
    assert calls and not any(allowed for _, allowed in calls)


def test_exittrain_tree_scoring_and_padded_sampling_run_the_math_kernel(tiny, calls):
    tgt = _target(tiny, "math")
    tokens = torch.randint(0, tgt.vocab_size, (12,), generator=torch.Generator().manual_seed(1))
    anchors = torch.tensor([4, 9])
    trees = [_tree(tgt.vocab_size, int(tokens[a])) for a in anchors]
    cache = tgt.new_cache()
    step = tgt.prefill(cache, tokens)
    calls.clear()  # the prefill is unmasked
    tree_logit_tables(tgt, cache, step.logits, anchors, trees)
    windowed_tree_logit_tables(tgt, tokens, anchors, trees, window=3)
    generate_continuations(
        tgt, [[1, 2, 3], [4, 5]], max_new_tokens=2, settings=SamplingSettings(0.0), seed=0
    )
    assert len(calls) > 3 and not any(allowed for _, allowed in calls)


def test_batched_decoding_runs_every_masked_forward_drafter_included_on_the_math_kernel(
    tiny, calls
):
    tgt, drafter = load_pair(*tiny)
    cfg = DecodeConfig(method="ddtree", verifier="tev", budget=6, max_new_tokens=5)
    generate_batch(tgt, drafter, [[1, 2, 3], [4, 5, 6, 7, 8]], cfg)
    masked = [allowed for is_masked, allowed in calls if is_masked]
    assert len(masked) > 8 and not any(masked)


def test_exittrain_drafter_rows_run_the_math_kernel(tiny, calls):
    tgt, drafter = load_pair(*tiny)
    tokens = torch.randint(0, tgt.vocab_size, (12,), generator=torch.Generator().manual_seed(2))
    hidden = tgt.prefill(tgt.new_cache(), tokens).hidden
    calls.clear()
    drafter_rows(drafter, tgt, tokens, hidden, torch.tensor([3, 7]))
    assert calls and not any(allowed for _, allowed in calls)


def test_the_default_is_math_on_cuda_and_a_bad_setting_is_refused(tiny):
    assert MASKED_ATTENTION == ("math", "auto")
    assert target_mod._MATH_MASKED_DEVICES == frozenset({"cuda"})
    tgt = load_target(tiny[0], layer_ids=SPEC.target_layer_ids)
    assert tgt.masked_attention == "math"
    with pytest.raises(ValueError, match="masked_attention must be one of"):
        TargetModel(tgt.model, tgt.layer_ids, masked_attention="flash")
