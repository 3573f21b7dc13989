"""The lean target forward against its twin over every configuration its guard accepts, not one default.

:func:`~exitlaw.engine.models.lean_forward.lean_support` accepts a model by its family, its attention
implementation, its rotary embedding type, its norms and its projections; any configuration it accepts
takes the lean path in decoding. Each axis the guard lets through is enumerated here (rotary types
default, linear, YaRN, Llama-3 and proportional; q/k/v biases; tied embeddings; grouped-query ratios;
the dtypes a CPU runs) and the lean forward is compared bit for bit with the transformers forward on a
prefill onto a cache and a tree forward. A coverage test then asks the guard about every rotary type
transformers knows: one it accepts without a twin case here fails.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch
from transformers import (
    LlamaConfig,
    LlamaForCausalLM,
    Qwen2Config,
    Qwen2ForCausalLM,
    Qwen3Config,
    Qwen3ForCausalLM,
)
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

from exitlaw.engine.models.lean_forward import LeanForward, lean_support
from exitlaw.engine.models.target import TargetModel, tree_attention_mask
from exitlaw.theory import DraftTree
from helpers.hf_forward import transformers_forward

VOCAB, HIDDEN, LAYERS, HEAD_DIM, MAX_POS = 64, 32, 2, 8, 256
LAYER_IDS = (0, LAYERS - 1)  # the last layer's hidden is normed: both rules are checked

# rope_parameters per rotary type (beyond rope_theta); every type here has a twin case below
ROPE = {
    "default": {},
    "linear": {"factor": 2.0},
    "yarn": {"factor": 4.0, "original_max_position_embeddings": MAX_POS // 4},
    "llama3": {
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": MAX_POS // 8,
    },
    "proportional": {"partial_rotary_factor": 0.5},
}
# rotary types whose frequencies change with the sequence length: the guard must refuse them
REFUSED_ROPE = {
    "dynamic": {"factor": 2.0},
    "longrope": {
        "short_factor": [1.0] * (HEAD_DIM // 2),
        "long_factor": [2.0] * (HEAD_DIM // 2),
        "original_max_position_embeddings": MAX_POS // 2,
    },
}
CLASSES = {
    "qwen3": (Qwen3Config, Qwen3ForCausalLM),
    "qwen2": (Qwen2Config, Qwen2ForCausalLM),
    "llama": (LlamaConfig, LlamaForCausalLM),
}


@dataclass(frozen=True)
class Case:
    family: str
    rope: str = "default"
    heads: int = 4
    kv_heads: int = 2
    bias: bool = False  # q/k/v biases (Qwen2 always has them; Llama's attention_bias)
    tied: bool = False
    dtype: torch.dtype = torch.float32

    @property
    def id(self) -> str:
        dt = str(self.dtype).removeprefix("torch.")
        return (
            f"{self.family}-{self.rope}-h{self.heads}kv{self.kv_heads}"
            f"{'-bias' if self.bias else ''}{'-tied' if self.tied else ''}-{dt}"
        )


def build(case: Case, rope: dict | None = None, seed: int = 0):
    """A random tiny model of ``case`` in eval mode, biases (where present) drawn non-zero."""
    config_cls, model_cls = CLASSES[case.family]
    params = {
        "rope_type": case.rope,
        "rope_theta": 10000.0,
        **(ROPE[case.rope] if rope is None else rope),
    }
    kw = {"attention_bias": case.bias} if case.family == "llama" else {}
    cfg = config_cls(
        vocab_size=VOCAB,
        hidden_size=HIDDEN,
        intermediate_size=2 * HIDDEN,
        num_hidden_layers=LAYERS,
        num_attention_heads=case.heads,
        num_key_value_heads=case.kv_heads,
        head_dim=HEAD_DIM,
        max_position_embeddings=MAX_POS,
        tie_word_embeddings=case.tied,
        rope_parameters=params,
        **kw,
    )
    cfg._attn_implementation = "sdpa"
    torch.manual_seed(seed)
    model = model_cls(cfg).eval()
    with torch.no_grad():
        for layer in model.model.layers:
            for proj in (layer.self_attn.q_proj, layer.self_attn.k_proj, layer.self_attn.v_proj):
                if proj.bias is not None:
                    proj.bias.normal_(0, 0.3)
    return model.to(case.dtype)


def _hf(model, ids, pos, mask, cache):
    return transformers_forward(model, ids, pos, mask, cache, LAYER_IDS)


def _cache(model, prefix: list[int]):
    cache = TargetModel(model, lean=False).new_cache()
    with torch.no_grad():
        model(input_ids=torch.tensor([prefix]), cache=cache, use_cache=True)
    return cache


def assert_twins(model, prefix, ids, pos, mask):
    """One forward through each path on equal caches: logits, hidden states and the appended K/V equal
    bit for bit (the lean path with and without the fused float32 CPU norm)."""
    want_cache = _cache(model, prefix)
    with torch.inference_mode():
        want_logits, want_hidden = _hf(model, ids, pos, mask, want_cache)
    for fused in (True, False):
        cache = _cache(model, prefix)
        with torch.inference_mode():
            logits, hidden = LeanForward(model, fused_norm=fused)(
                ids, pos, mask, cache, LAYER_IDS, 0
            )
        assert torch.equal(logits, want_logits)
        assert all(torch.equal(hidden[i], want_hidden[i]) for i in LAYER_IDS)
        for a, b in zip(want_cache.layers, cache.layers, strict=True):
            assert torch.equal(a.keys, b.keys) and torch.equal(a.values, b.values)


def cases() -> list[Case]:
    """Every family x rotary type, then each other axis varied alone around a default case."""
    out = [Case(f, rope) for f in CLASSES for rope in ROPE]
    out += [Case(f, heads=h, kv_heads=kv) for f in CLASSES for h, kv in ((4, 4), (4, 1), (8, 2))]
    out += [Case("llama", bias=True), Case("qwen2", bias=True, rope="yarn")]
    out += [Case(f, tied=True) for f in CLASSES]
    out += [Case(f, dtype=dt) for f in CLASSES for dt in (torch.bfloat16, torch.float16)]
    return out


CASES = cases()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_every_accepted_configuration_has_a_bit_identical_lean_forward(case):
    model = build(case)
    assert lean_support(model) is None, lean_support(model)
    g = torch.Generator().manual_seed(7)
    prefix = torch.randint(0, VOCAB, (9,), generator=g).tolist()
    # a chain onto the cache (positions past the cached prefix: the rotary tables at an offset)
    new = torch.randint(0, VOCAB, (1, 5), generator=g)
    assert_twins(model, prefix, new, torch.arange(9, 14)[None], None)
    # a branching tree (positions by depth, the float additive tree mask)
    tree = DraftTree(parent=[-1, 0, 0, 1, 1, 2, 3], token=list(range(7)))
    anc = torch.tensor(tree.ancestor_matrix, dtype=torch.bool)
    mask = tree_attention_mask(anc, len(prefix), case.dtype)
    ids = torch.randint(0, VOCAB, (1, 7), generator=g)
    assert_twins(model, prefix, ids, (len(prefix) + torch.tensor(tree.depth))[None], mask)


@pytest.mark.parametrize("rope", sorted(REFUSED_ROPE))
def test_rotary_types_that_move_with_the_length_keep_the_transformers_forward(rope):
    model = build(Case("llama", rope=rope), rope=REFUSED_ROPE[rope])
    assert model.model.rotary_emb.rope_type == rope
    reason = lean_support(model)
    assert reason is not None and rope in reason


def test_every_rotary_type_the_guard_accepts_has_a_twin_case():
    """Coverage: each rotary type transformers knows is either refused by the guard or twin-tested above
    (a new type the guard lets through without a case here fails)."""
    known = {"default", *ROPE_INIT_FUNCTIONS}
    model = build(Case("llama"))
    untested = []
    for rope in sorted(known):
        model.model.rotary_emb.rope_type = rope
        if lean_support(model) is None and rope not in {c.rope for c in CASES}:
            untested.append(rope)
    assert not untested, f"accepted by lean_support without a twin case: {untested}"
    # and every case axis value the table names is one transformers knows (no stale entries)
    assert set(ROPE) <= known and set(REFUSED_ROPE) <= known
