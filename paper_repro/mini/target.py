"""Mini-scale target: a small Qwen3-architecture causal LM trained from scratch on the stdlib corpus.

Next-token cross-entropy on random windows of the encoded training split (AdamW,
linear warm-up then cosine decay, gradient clipping), then ``save_pretrained``
together with the corpus tokenizer, so the engine loads it like any Hugging Face
checkpoint. Windows are drawn from ``numpy.random.default_rng([seed, step])``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm
from transformers import Qwen3ForCausalLM

from exitlaw.engine.models.config import LMSizes, qwen3_config
from exitlaw.engine.training import config as train_config  # its cosine_factor, read at each step
from exitlaw.paper_repro.mini.config import TargetSpec
from exitlaw.theory.infra.atomic_io import atomic_dir


def build_target(spec: TargetSpec, vocab_size: int, seed: int):
    """A randomly initialised ``Qwen3ForCausalLM`` (untied embeddings: DFlash borrows both)."""
    cfg = qwen3_config(LMSizes(vocab_size=vocab_size, stack=spec.sizes, max_positions=2048))
    torch.manual_seed(seed)
    return Qwen3ForCausalLM(cfg)


def train_target(
    tokens: np.ndarray, vocab_size: int, spec: TargetSpec, seed: int, *, progress: bool = True
):
    """Train the target on ``tokens`` (1-D int array); returns ``(model, log)`` with the loss curve."""
    if tokens.ndim != 1 or tokens.size <= spec.seq_len + 1:
        raise ValueError(
            f"need a 1-D token array longer than seq_len + 1 = {spec.seq_len + 1}, got {tokens.shape}"
        )
    model = build_target(spec, vocab_size, seed).train()
    opt = torch.optim.AdamW(
        model.parameters(), lr=spec.schedule.lr, weight_decay=spec.weight_decay, betas=(0.9, 0.95)
    )

    sched = torch.optim.lr_scheduler.LambdaLR(
        opt,
        lambda step: train_config.cosine_factor(
            step, steps=spec.schedule.steps, warmup_steps=spec.warmup, min_lr_ratio=0.1
        ),
    )
    data = torch.from_numpy(tokens.astype(np.int64))
    log = []
    bar = None
    if progress:
        bar = tqdm(total=spec.schedule.steps, desc="target", unit="step")
    t0 = time.perf_counter()
    for step in range(spec.schedule.steps):
        rng = np.random.default_rng([seed, step])
        starts = rng.integers(0, tokens.size - spec.seq_len - 1, size=spec.schedule.batch)
        batch = torch.stack([data[s : s + spec.seq_len + 1] for s in starts])
        out = model(input_ids=batch[:, :-1])
        loss = torch.nn.functional.cross_entropy(
            out.logits.reshape(-1, vocab_size).float(), batch[:, 1:].reshape(-1)
        )
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), spec.grad_clip)
        opt.step()
        sched.step()
        log.append(
            {
                "step": step + 1,
                "loss": loss.item(),
                "lr": sched.get_last_lr()[0],
                "seconds": time.perf_counter() - t0,
            }
        )
        if bar is not None:
            bar.update(1)
            bar.set_postfix(loss=f"{log[-1]['loss']:.3f}")
    if bar is not None:
        bar.close()
    return model.eval(), log


def heldout_loss(model, tokens: np.ndarray, seq_len: int, windows: int, seed: int) -> float:
    """Mean next-token cross-entropy (nats) on ``windows`` random windows of ``tokens``."""
    rng = np.random.default_rng(seed)
    data = torch.from_numpy(tokens.astype(np.int64))
    starts = rng.integers(0, tokens.size - seq_len - 1, size=windows)
    with torch.no_grad():
        batch = torch.stack([data[s : s + seq_len + 1] for s in starts])
        logits = model(input_ids=batch[:, :-1]).logits.float()
        return float(
            torch.nn.functional.cross_entropy(
                logits.reshape(-1, logits.shape[-1]), batch[:, 1:].reshape(-1)
            )
        )


def save_target(model, tokenizer, out: str | Path, info: dict) -> Path:
    """``save_pretrained`` the model and tokenizer, plus ``mini_target.json`` (spec, seed, losses)."""
    out = Path(out)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    with atomic_dir(
        out
    ) as tmp:  # built aside, renamed into place whole (an interrupted save leaves no target)
        model.save_pretrained(str(tmp))
        tokenizer.save_pretrained(str(tmp))
        (tmp / "mini_target.json").write_text(json.dumps(info, indent=1) + "\n", encoding="utf-8")
    return out
