"""The ExitTrain training loop: AdamW, cosine schedule, clipping, checkpoints, exact resume, FSDP.

Output directory layout (never deleted; a second run into it needs ``resume``):

    config.json                    the TrainConfig and the paths it ran with
    metrics.jsonl                  one line per logged step: loss, ce, tree (the weighted
                                   term, logged for every objective), lambda, mean_w (mean
                                   non-root exit mass 1 - w(root) of the trained trees),
                                   coverage (mean C_p), tree_nodes, tree_depth (mean max
                                   depth), grad_norm, lr, tokens_per_s (supervised draft
                                   positions), target_tokens_per_s
    checkpoints/step_000050/       drafter in the released DFlash format + trainer.pt
                                   (optimizer, scheduler, step)
    final/                         the last drafter, released format

Exact resume: the batch of step ``t`` is drawn from
``numpy.random.default_rng([seed, t, rank])`` (sequences and anchors), so it
depends on nothing but the step; weights (float32 safetensors) and the
optimizer/scheduler state round-trip exactly, so on a CPU a resumed run reaches
bit-for-bit the parameters of an uninterrupted one.

Scale-out: under ``torchrun`` (``WORLD_SIZE > 1``) the process group is gloo on CPU
and nccl on GPU; the drafter is sharded with FSDP (``fully_shard`` per layer and at
the root), the frozen target is replicated on every rank.
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from .checkpoint import WEIGHTS
from .dflash import DFlashDrafter
from .exittrain import NORMALISATIONS, OBJECTIVES, exittrain_loss
from .exittrain_batch import make_batch
from .target import TargetModel
from .train_data import Sequences

CHECKPOINTS = "checkpoints"
TRAINER_STATE = "trainer.pt"


@dataclass(frozen=True)
class TrainConfig:
    """One training run (``exitlaw train`` flags map one to one)."""

    objective: str = "exit"
    lam: float = 1.0
    weight_norm: str = "batch"     # batch | tree: how the tree term's weights are normalised
    budget: int = 64
    steps: int = 100
    batch_size: int = 4            # sequences per step and rank
    anchors_per_seq: int = 8
    lr: float = 1e-4
    min_lr_ratio: float = 0.1      # cosine decays to lr * min_lr_ratio
    warmup_steps: int = 0
    weight_decay: float = 0.01
    grad_clip: float = 1.0
    checkpoint_every: int = 50
    log_every: int = 1
    seed: int = 0
    score_trees: bool = True       # False only for token-only warm-up/distillation (not matched compute)
    target_temperature: float = 1.0
    amp: str = "auto"              # auto | bf16 | off

    def __post_init__(self):
        if self.objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {OBJECTIVES}, got {self.objective!r}")
        if self.weight_norm not in NORMALISATIONS:
            raise ValueError(f"weight_norm must be one of {NORMALISATIONS}, got {self.weight_norm!r}")
        if not self.score_trees and self.objective != "token":
            raise ValueError(f"objective {self.objective!r} needs scored trees (score_trees=True)")
        for name in ("budget", "steps", "batch_size", "anchors_per_seq", "checkpoint_every", "log_every"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.lr <= 0 or not 0 <= self.min_lr_ratio <= 1 or self.grad_clip <= 0 or self.lam < 0:
            raise ValueError("need lr > 0, 0 <= min_lr_ratio <= 1, grad_clip > 0, lam >= 0")
        if self.amp not in ("auto", "bf16", "off"):
            raise ValueError(f"amp must be auto, bf16 or off, got {self.amp!r}")


def cosine_factor(step: int, cfg: TrainConfig) -> float:
    """LR multiplier: linear warm-up, then cosine from 1 to ``min_lr_ratio`` at ``cfg.steps``."""
    if step < cfg.warmup_steps:
        return (step + 1) / cfg.warmup_steps
    span = max(1, cfg.steps - cfg.warmup_steps)
    t = min(1.0, (step - cfg.warmup_steps) / span)
    return cfg.min_lr_ratio + (1 - cfg.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * t))


# ----- distributed helpers ----------------------------------------------------------------
def _dist():
    import torch.distributed as dist

    return dist if dist.is_available() and dist.is_initialized() else None


def init_distributed(device: torch.device) -> tuple[int, int]:
    """Start the process group under torchrun (gloo on CPU, nccl on CUDA); ``(rank, world)``."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return 0, 1
    import torch.distributed as dist

    if not dist.is_initialized():
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    return dist.get_rank(), dist.get_world_size()


def shard_drafter(drafter: DFlashDrafter, device: torch.device) -> DFlashDrafter:
    """FSDP2: shard every draft layer and the root module across the process group."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    dist = _dist()
    mesh = init_device_mesh(device.type, (dist.get_world_size(),))
    for layer in drafter.layers:
        fully_shard(layer, mesh=mesh)
    fully_shard(drafter, mesh=mesh)
    return drafter


def _full_state(drafter, optimizer):
    """Full (unsharded) model and optimizer state dicts on the CPU."""
    if _dist() is None:
        return ({k: v.detach().clone() for k, v in drafter.state_dict().items()}, optimizer.state_dict())
    from torch.distributed.checkpoint.state_dict import (StateDictOptions, get_model_state_dict,
                                                         get_optimizer_state_dict)

    opts = StateDictOptions(full_state_dict=True, cpu_offload=True)
    return get_model_state_dict(drafter, options=opts), get_optimizer_state_dict(drafter, optimizer, options=opts)


def _load_full_state(drafter, optimizer, model_state, optim_state) -> None:
    if _dist() is None:
        drafter.load_state_dict(model_state)
        optimizer.load_state_dict(optim_state)
        return
    from torch.distributed.checkpoint.state_dict import (StateDictOptions, set_model_state_dict,
                                                         set_optimizer_state_dict)

    opts = StateDictOptions(full_state_dict=True)
    set_model_state_dict(drafter, model_state, options=opts)
    set_optimizer_state_dict(drafter, optimizer, optim_state, options=opts)


# ----- checkpoints ------------------------------------------------------------------------
def latest_checkpoint(out: Path) -> Path | None:
    """The highest-step complete checkpoint under ``out/checkpoints`` (``None`` if none)."""
    root = out / CHECKPOINTS
    done = [p for p in root.glob("step_*") if (p / TRAINER_STATE).is_file() and (p / WEIGHTS).is_file()]
    return max(done, key=lambda p: int(p.name.split("_")[1])) if done else None


def _save_checkpoint(out: Path, step: int, drafter, optimizer, scheduler, rank: int) -> None:
    model_state, optim_state = _full_state(drafter, optimizer)
    if rank != 0:
        return
    path = out / CHECKPOINTS / f"step_{step:06d}"
    tmp = out / CHECKPOINTS / f".tmp_step_{step:06d}"
    tmp.mkdir(parents=True, exist_ok=True)
    _save_weights(drafter, model_state, tmp)
    torch.save({"step": step, "optimizer": optim_state, "scheduler": scheduler.state_dict()}, tmp / TRAINER_STATE)
    if path.exists():  # an incomplete leftover of an interrupted save: keep it aside, never delete
        os.replace(path, path.with_name(f"{path.name}.incomplete.{int(time.time())}"))
    os.replace(tmp, path)


def _save_weights(drafter, model_state: dict, path: Path) -> None:
    from safetensors.torch import save_file

    path.mkdir(parents=True, exist_ok=True)
    (path / "config.json").write_text(json.dumps(drafter.config.to_dict(), indent=2) + "\n", encoding="utf-8")
    save_file({k: v.detach().contiguous().cpu() for k, v in model_state.items()}, str(path / WEIGHTS),
              metadata={"format": "pt"})


def _load_checkpoint(path: Path, drafter, optimizer, scheduler) -> int:
    from safetensors.torch import load_file

    state = torch.load(path / TRAINER_STATE, map_location="cpu", weights_only=False)
    _load_full_state(drafter, optimizer, load_file(str(path / WEIGHTS)), state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    return int(state["step"])


def _truncate_metrics(path: Path, step: int) -> None:
    """Keep the metric lines of steps ``<= step`` (a resumed run recomputes the rest identically)."""
    if not path.is_file():
        return
    keep = [line for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip() and json.loads(line).get("step", 0) <= step]
    path.write_text("".join(x + "\n" for x in keep), encoding="utf-8")


# ----- the loop ---------------------------------------------------------------------------
def _autocast(cfg: TrainConfig, device: torch.device):
    use = cfg.amp == "bf16" or (cfg.amp == "auto" and device.type == "cuda" and torch.cuda.is_bf16_supported())
    return torch.autocast(device.type, dtype=torch.bfloat16, enabled=use)


def _step_batch(data: Sequences, cfg: TrainConfig, step: int, rank: int):
    rng = np.random.default_rng([cfg.seed, step, rank])
    idx = rng.choice(len(data), size=min(cfg.batch_size, len(data)), replace=False)
    return [data.item(int(i)) for i in idx], rng


def train(target: TargetModel, drafter: DFlashDrafter, data: Sequences, cfg: TrainConfig, out: str | Path, *,
          resume: bool = False, run_info: dict | None = None, progress: bool = True,
          stop_after: int | None = None) -> Path:
    """Train ``drafter`` against the frozen ``target`` on ``data``; returns ``out/final``.

    ``stop_after`` ends the run early after that many steps (as if interrupted; tests
    use it to check resume). The target's parameters are frozen here.
    """
    out = Path(out)
    if len(data) == 0:
        raise ValueError("no training sequences")
    device = target.device
    rank, world = init_distributed(device)
    config_path, metrics_path = out / "config.json", out / "metrics.jsonl"
    if resume:
        if not config_path.is_file():
            raise FileNotFoundError(f"--resume: {out} holds no training run (no config.json)")
        saved = json.loads(config_path.read_text(encoding="utf-8"))["train"]
        if saved != asdict(cfg):
            diff = sorted(k for k in saved if saved[k] != asdict(cfg).get(k))
            raise ValueError(f"--resume: the configuration differs from the saved run in {diff}")
    elif out.exists() and any(out.iterdir()):
        raise FileExistsError(f"output directory {out} is not empty; pass --resume to continue it "
                              "or choose a new directory (exitlaw never deletes a run)")
    for p in target.model.parameters():
        p.requires_grad_(False)
    drafter.train()
    if world > 1:
        shard_drafter(drafter, device)
    optimizer = torch.optim.AdamW([p for p in drafter.parameters() if p.requires_grad], lr=cfg.lr,
                                  weight_decay=cfg.weight_decay)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: cosine_factor(s, cfg))
    start = 0
    if resume and (ckpt := latest_checkpoint(out)) is not None:
        start = _load_checkpoint(ckpt, drafter, optimizer, scheduler)
    if rank == 0:
        out.mkdir(parents=True, exist_ok=True)
        if not resume:
            config_path.write_text(json.dumps({"train": asdict(cfg), "world_size": world, **(run_info or {})},
                                              indent=1) + "\n", encoding="utf-8")
        _truncate_metrics(metrics_path, start)
    bar = None
    if progress and rank == 0:
        from tqdm import tqdm

        bar = tqdm(total=cfg.steps, initial=start, desc=f"train[{cfg.objective}]", unit="step")
    end = cfg.steps if stop_after is None else min(cfg.steps, start + stop_after)
    for step in range(start, end):
        t0 = time.perf_counter()
        seqs, rng = _step_batch(data, cfg, step, rank)
        with _autocast(cfg, device):
            batch = make_batch(drafter, target, seqs, cfg.anchors_per_seq, cfg.budget, rng,
                               score=cfg.score_trees, temperature=cfg.target_temperature)
            if batch is None:
                raise ValueError(f"step {step}: no sequence has room for an anchor (sequences too short?)")
            if cfg.score_trees:
                terms = exittrain_loss(batch.logits.float(), batch.targets, batch.target_valid, batch.trees,
                                       batch.edge, objective=cfg.objective, lam=cfg.lam,
                                       normalisation=cfg.weight_norm)
                total, ce, tree_term = terms.total, terms.ce, terms.tree
                depth = float(batch.trees.depth.max(-1).values.double().mean())
                extra = [terms.mean_w, terms.coverage, float(terms.nodes), depth]
            else:
                from .exittrain import draft_log_normalisers, gathered_nll

                logits = batch.logits.float()
                steps_idx = torch.arange(logits.shape[1], device=logits.device)[None].expand(logits.shape[0], -1)
                nll = gathered_nll(logits, draft_log_normalisers(logits), steps_idx, batch.targets)
                ce = torch.where(batch.target_valid, nll, torch.zeros_like(nll)).sum() / batch.target_valid.sum().clamp(min=1)
                total, tree_term, extra = ce, torch.zeros(()), [float("nan")] * 4
        optimizer.zero_grad(set_to_none=True)
        total.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(drafter.parameters(), cfg.grad_clip)
        if hasattr(grad_norm, "full_tensor"):
            grad_norm = grad_norm.full_tensor()
        optimizer.step()
        scheduler.step()
        elapsed = time.perf_counter() - t0
        supervised = int(batch.target_valid.sum())
        vals = torch.tensor([total.item(), ce.item(), tree_term.item(), *extra, float(grad_norm),
                             supervised, batch.tokens_seen], dtype=torch.float64)
        if world > 1:
            _dist().all_reduce(vals)
            vals[:8] /= world
        if rank == 0 and ((step + 1) % cfg.log_every == 0 or step + 1 == cfg.steps):
            rec = {"step": step + 1, "objective": cfg.objective, "loss": vals[0].item(), "ce": vals[1].item(),
                   "tree": vals[2].item(), "lambda": 0.0 if cfg.objective == "token" else cfg.lam,
                   "mean_w": vals[3].item(), "coverage": vals[4].item(), "tree_nodes": vals[5].item(),
                   "tree_depth": vals[6].item(), "grad_norm": vals[7].item(), "lr": scheduler.get_last_lr()[0],
                   "tokens_per_s": vals[8].item() / elapsed, "target_tokens_per_s": vals[9].item() / elapsed}
            rec = {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in rec.items()}
            with metrics_path.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(rec) + "\n")
        if (step + 1) % cfg.checkpoint_every == 0 or step + 1 == cfg.steps:
            _save_checkpoint(out, step + 1, drafter, optimizer, scheduler, rank)
        if bar is not None:
            bar.update(1)
            bar.set_postfix(loss=f"{vals[0].item():.3f}", cov=f"{vals[4].item():.2f}")
    if bar is not None:
        bar.close()
    final = out / "final"
    if end == cfg.steps:
        model_state, _ = _full_state(drafter, optimizer)
        if rank == 0:
            _save_weights(drafter, model_state, final)
    if _dist() is not None:
        _dist().barrier()
    return final


__all__ = ["TrainConfig", "train", "cosine_factor", "latest_checkpoint", "init_distributed", "shard_drafter"]
