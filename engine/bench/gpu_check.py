"""GPU check: latencies of the real engine on a random-weight Qwen3-4B-shaped pair (no downloads).

``exitlaw gpu-check`` builds a Qwen3ForCausalLM with the
Qwen3-4B config (36 layers, hidden 2560, V = 151936) and a DFlash drafter shaped
like ``z-lab/Qwen3-4B-DFlash-b16`` (5 layers, block 16, target layers
1/9/17/25/33), random weights in bf16, prefills a context, and prints medians of

* ``draft``: one DFlash block forward;
* ``verify_forward``: one tree-attention target forward over ``B + 1`` nodes;
* ``verifier stage``: decision + bonus + KV commit (target forward excluded), for
  predraw and TEV on the same trees and logits, and their ratio;

at B = 32, 64, 128 and T = 1, for trees built by DDTree from the drafter's rows
(``drafter``) and from peaked synthetic rows that give deep trees (``deep``).
``--tiny`` swaps in the tiny test sizes so the script is smoke-tested on a CPU.
"""

from __future__ import annotations

import math
import time

import torch
from transformers import Qwen3ForCausalLM

from exitlaw.engine.builders.single import build_ddtree
from exitlaw.engine.decode.device_tree import to_device_tree
from exitlaw.engine.decode.dispatch import verify
from exitlaw.engine.decode.timing import median_ms
from exitlaw.engine.decode.verifiers import VerifierGenerators
from exitlaw.engine.models.config import QWEN3_4B, qwen3_config
from exitlaw.engine.models.dflash import DFlashConfig, DFlashDrafter
from exitlaw.engine.models.target import TargetModel
from exitlaw.engine.models.tiny import TinySpec
from exitlaw.theory import SamplingSettings

DFLASH_4B = dict(
    num_hidden_layers=5, block_size=16, target_layer_ids=(1, 9, 17, 25, 33), mask_token_id=151669
)
_TINY = TinySpec()
DFLASH_TINY = dict(
    num_hidden_layers=_TINY.draft_layers,
    block_size=_TINY.block_size,
    target_layer_ids=_TINY.target_layer_ids,
    mask_token_id=5,
)


def build_pair(
    tiny: bool, device: str, dtype: torch.dtype, seed: int = 0
) -> tuple[TargetModel, DFlashDrafter]:
    """Random-weight target (Qwen3-4B config, or tiny) and a matching DFlash drafter."""
    sizes, dcfg = (
        (_TINY.lm_sizes().but(init_std=0.02), DFLASH_TINY) if tiny else (QWEN3_4B, DFLASH_4B)
    )
    cfg = qwen3_config(sizes)
    torch.manual_seed(seed)
    old = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device(device):
            model = Qwen3ForCausalLM(cfg)
            drafter = DFlashDrafter(
                DFlashConfig(
                    hidden_size=cfg.hidden_size,
                    intermediate_size=cfg.intermediate_size,
                    num_attention_heads=cfg.num_attention_heads,
                    num_key_value_heads=cfg.num_key_value_heads,
                    head_dim=cfg.head_dim,
                    vocab_size=cfg.vocab_size,
                    num_target_layers=cfg.num_hidden_layers,
                    rope_theta=sizes.rope_theta,
                    **dcfg,
                )
            )
    finally:
        torch.set_default_dtype(old)
    with torch.no_grad():
        for name, p in drafter.named_parameters():
            if not name.endswith("norm.weight"):
                p.normal_(0.0, 0.02)
    return TargetModel(model.eval(), dcfg["target_layer_ids"]), drafter.eval()


def deep_rows(depth: int, vocab: int, device: str, gen: torch.Generator) -> torch.Tensor:
    """Peaked draft rows (one dominant token per depth, mass about 0.9 at any vocabulary size) so
    DDTree grows deep trees with many internal nodes. The boost ``log(9 V) + 1/2`` puts ``e^b`` at 9
    times the other tokens' expected total ``V e^{1/2}`` (standard normal logits); a fixed boost of
    9 gave mass 0.9 at V = 320 but 0.03 at V = 151936 (flat trees, depth 2, on the H200 run)."""
    z = torch.randn(depth, vocab, generator=gen, device=device)
    z[
        torch.arange(depth, device=device),
        torch.randint(vocab, (depth,), generator=gen, device=device),
    ] += math.log(9 * vocab) + 0.5
    return torch.log_softmax(z, -1)


def _tree_row(
    target, cache, start, root, src, b, shape, draft_ms, gens, *, reps, device, temperature
) -> dict:
    """One tree built by DDTree from ``src`` at budget ``b``: its verify forward under the engine's
    kernels and torch's choice (timed, and compared), then predraw's and TEV's verifier stage
    (decision + bonus + KV commit) on the same logits."""
    tree, logq = build_ddtree(src, b, root)
    dt = to_device_tree(tree, device, logq)
    n = tree.num_nodes

    def forward():
        return target.verify_tree(cache, dt.token, dt.depth, dt.ancestor)

    def reset():
        if cache.get_seq_length() > start:
            cache.crop(start - cache.get_seq_length())

    fwd_ms = median_ms(forward, reps, device, setup=reset)  # the engine's masked kernels
    target.masked_attention = "auto"  # torch's own kernel choice, for comparison
    auto_ms = median_ms(forward, reps, device, setup=reset)
    reset()
    auto_logits = forward().logits
    target.masked_attention = "math"
    reset()
    logits = forward().logits
    row = {
        "shape": shape,
        "budget": b,
        "nodes": n,
        "internal": int(tree.internal.size),
        "max_depth": tree.max_depth,
        "draft_ms": draft_ms,
        "verify_forward_ms": fwd_ms,
        "verify_forward_auto_ms": auto_ms,
        # the same forward under torch's kernel choice: largest logit difference and the
        # tree rows whose greedy token differs (0 when both kernels agree)
        "auto_max_abs_logit_diff": float((auto_logits - logits).abs().max()),
        "auto_argmax_rows_differ": int((auto_logits.argmax(-1) != logits.argmax(-1)).sum()),
    }
    for kind in ("predraw", "tev"):

        def stage():
            res = verify(kind, dt, logits, SamplingSettings(temperature), gens)
            target.commit(cache, start, res.path_nodes)

        def refill():
            reset()
            _stand_in_tree_entries(cache, start, n)

        row[f"{kind}_stage_ms"] = median_ms(stage, reps, device, setup=refill)
    reset()
    row["tev_over_predraw"] = row["tev_stage_ms"] / row["predraw_stage_ms"]
    return row


def _stand_in_tree_entries(cache, start: int, n: int) -> None:
    """Append ``n`` stand-in tree entries to every layer of ``cache`` (copies of the ``n`` entries
    before ``start``): the shapes a verify forward leaves, no forward needed."""
    for layer in cache.layers:
        layer.keys = torch.cat([layer.keys, layer.keys[..., start - n : start, :]], dim=-2)
        layer.values = torch.cat([layer.values, layer.values[..., start - n : start, :]], dim=-2)


def run_check(
    *,
    tiny: bool,
    device: str,
    budgets=(32, 64, 128),
    context: int = 512,
    reps: int = 20,
    temperature: float = 1.0,
    seed: int = 0,
) -> dict:
    if context <= max(budgets) + 1:
        raise ValueError(
            f"context ({context}) must exceed the largest tree (B + 1 = {max(budgets) + 1} nodes)"
        )
    dtype = torch.float32 if device == "cpu" else torch.bfloat16
    t0 = time.perf_counter()
    target, drafter = build_pair(tiny, device, dtype, seed)
    build_s = time.perf_counter() - t0
    gen = torch.Generator(device=device).manual_seed(seed)
    vocab = target.vocab_size
    prompt = torch.randint(vocab, (context,), generator=gen, device=device)
    cache = target.new_cache()
    pre = target.prefill(cache, prompt[:-1], all_logits=False)
    start, root = context - 1, int(prompt[-1])
    hidden = pre.hidden
    result = {
        "config": {
            "tiny": tiny,
            "device": device,
            "dtype": str(dtype),
            "context": context,
            "reps": reps,
            "temperature": temperature,
            "vocab": vocab,
            "build_s": build_s,
        },
        "rows": [],
    }

    def draft_once():
        drafter.draft_logprobs(
            target.embed_tokens, target.lm_head, root, hidden, start, drafter.new_cache()
        )

    draft_ms = median_ms(draft_once, reps, device)
    rows = drafter.draft_logprobs(
        target.embed_tokens, target.lm_head, root, hidden, start, drafter.new_cache()
    )
    gens = VerifierGenerators(seed, device)
    opts = dict(reps=reps, device=device, temperature=temperature)
    for shape in ("drafter", "deep"):
        src = rows if shape == "drafter" else deep_rows(rows.shape[0], vocab, device, gen)
        for b in budgets:
            row = _tree_row(target, cache, start, root, src, b, shape, draft_ms, gens, **opts)
            result["rows"].append(row)
    return result


def format_check(res: dict) -> str:
    c = res["config"]
    lines = [
        "verify fwd: the engine's masked-attention kernels (math on CUDA); fwd auto: torch's choice; "
        "auto d / auto rows: its largest logit difference and the tree rows whose greedy token differs",
        f"exitlaw gpu_check: device={c['device']} dtype={c['dtype']} V={c['vocab']} context={c['context']} "
        f"T={c['temperature']} reps={c['reps']} (model build {c['build_s']:.1f} s)",
        f"{'trees':<8} {'B':>4} {'N':>4} {'K':>4} {'depth':>5} {'draft ms':>9} {'verify fwd':>10} "
        f"{'fwd auto':>9} {'auto d':>8} {'auto rows':>9} "
        f"{'predraw':>9} {'TEV':>9} {'TEV/predraw':>11}   (verifier stage = decide + bonus + commit)",
    ]
    for r in res["rows"]:
        lines.append(
            f"{r['shape']:<8} {r['budget']:>4} {r['nodes']:>4} {r['internal']:>4} {r['max_depth']:>5} "
            f"{r['draft_ms']:>9.3f} {r['verify_forward_ms']:>10.3f} {r['verify_forward_auto_ms']:>9.3f} "
            f"{r['auto_max_abs_logit_diff']:>8.2g} {r['auto_argmax_rows_differ']:>9d} "
            f"{r['predraw_stage_ms']:>9.3f} "
            f"{r['tev_stage_ms']:>9.3f} {r['tev_over_predraw']:>11.3f}"
        )
    return "\n".join(lines)
