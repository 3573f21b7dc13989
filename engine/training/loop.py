"""The ExitTrain training loop: AdamW, cosine schedule, clipping, checkpoints, exact resume, FSDP.

Stages, each a function: :func:`setup_training` (output folder, optimizer, scheduler,
resume), :func:`train_step` (one batch; returns :class:`StepMetrics`), :func:`metrics_record`
(the named metrics line), :func:`~exitlaw.engine.training.checkpoint.save_checkpoint`;
:func:`train` runs them.

Output directory layout (never deleted; a second run into it needs ``resume``):

    config.json                    the TrainConfig and the paths it ran with
    metrics.jsonl                  one line per logged step, keys :data:`METRIC_KEYS`:
                                   loss, ce, tree (the weighted term, logged for every
                                   objective), lambda, mean_w (mean non-root exit mass of the
                                   trained trees), coverage (mean C_p), tree_nodes, tree_depth
                                   (mean max depth), grad_norm, lr, tokens_per_s (supervised
                                   draft positions), target_tokens_per_s
    checkpoints/step_000050/       drafter in the released DFlash format + trainer.pt
                                   (optimizer, scheduler, step)
    final/                         the last drafter, released format

Exact resume: the batch of step ``t`` is drawn from
``numpy.random.default_rng([seed, t, rank])`` (sequences and anchors; draft-opd's
chains from ``[seed, t, rank, 1]``), so it depends on nothing but the step; weights
(float32 safetensors) and the optimizer/scheduler state round-trip exactly, so on a
CPU a resumed run reaches bit-for-bit the parameters of an uninterrupted one.

Scale-out: under ``torchrun`` (``WORLD_SIZE > 1``) the drafter is sharded with FSDP
(``fully_shard`` per layer and at the root), the frozen target is replicated on every rank.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import astuple, dataclass, fields
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from exitlaw.engine.models.dflash import DFlashDrafter
from exitlaw.engine.models.target import TargetModel
from exitlaw.engine.training.batch import make_batch
from exitlaw.engine.training.checkpoint import (
    dist_group,
    full_state,
    init_distributed,
    latest_checkpoint,
    load_checkpoint,
    save_checkpoint,
    save_weights,
    shard_drafter,
    truncate_metrics,
)
from exitlaw.engine.training.config import TrainConfig, cosine_factor
from exitlaw.engine.training.data import Sequences
from exitlaw.engine.training.exittrain import batch_loss
from exitlaw.theory.infra.atomic_io import atomic_write_text

METRIC_KEYS = (
    "step",
    "objective",
    "loss",
    "ce",
    "tree",
    "lambda",
    "mean_w",
    "coverage",
    "tree_nodes",
    "tree_depth",
    "grad_norm",
    "lr",
    "tokens_per_s",
    "target_tokens_per_s",
)


@dataclass
class TrainState:
    """What the loop carries between steps."""

    drafter: DFlashDrafter
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    start: int  # first step to run (the resumed checkpoint's step, else 0)
    rank: int
    world: int
    out: Path

    @property
    def metrics_path(self) -> Path:
        return self.out / "metrics.jsonl"


@dataclass(frozen=True)
class StepMetrics:
    """One step's numbers (tree fields NaN when trees are not scored); averaged over ranks except the counts."""

    loss: float
    ce: float
    tree: float
    mean_w: float
    coverage: float
    tree_nodes: float
    tree_depth: float
    grad_norm: float
    supervised: float  # valid (anchor, depth) positions of the step (summed over ranks)
    target_tokens: float  # sequence tokens the target processed (summed over ranks)

    SUMMED = ("supervised", "target_tokens")

    def all_reduce(self, world: int) -> "StepMetrics":
        """Means over ranks (sums for :attr:`SUMMED`); the identity on one process."""
        if world <= 1:
            return self
        vals = torch.tensor(astuple(self), dtype=torch.float64)
        dist_group().all_reduce(vals)
        names = [f.name for f in fields(self)]
        return StepMetrics(
            **{n: float(v) if n in self.SUMMED else float(v) / world for n, v in zip(names, vals)}
        )


def setup_training(
    target: TargetModel,
    drafter: DFlashDrafter,
    data: Sequences,
    cfg: TrainConfig,
    out: Path,
    *,
    resume: bool,
    run_info: dict | None,
) -> TrainState:
    """Check the output folder, freeze the target, shard the drafter, build AdamW + the cosine schedule,
    load the latest checkpoint on ``resume``, write ``config.json`` (new runs) and trim ``metrics.jsonl``."""
    if len(data) == 0:
        raise ValueError("no training sequences")
    device = target.device
    rank, world = init_distributed(device)
    config_path = out / "config.json"
    if resume:
        if not config_path.is_file():
            raise FileNotFoundError(f"--resume: {out} holds no training run (no config.json)")
        saved = TrainConfig.from_saved(
            json.loads(config_path.read_text(encoding="utf-8"))["train"]
        ).to_saved()
        now = cfg.to_saved()
        if saved != now:
            diff = sorted(k for k in saved if saved[k] != now.get(k))
            raise ValueError(f"--resume: the configuration differs from the saved run in {diff}")
    elif out.exists() and any(out.iterdir()):
        raise FileExistsError(
            f"output directory {out} is not empty; pass --resume to continue it "
            "or choose a new directory (exitlaw never deletes a run)"
        )
    for p in target.model.parameters():
        p.requires_grad_(False)
    drafter.train()
    if world > 1:
        shard_drafter(drafter, device)
    optimizer = torch.optim.AdamW(
        [p for p in drafter.parameters() if p.requires_grad],
        lr=cfg.schedule.lr,
        weight_decay=cfg.weight_decay,
    )
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer,
        lambda s: cosine_factor(
            s,
            steps=cfg.schedule.steps,
            warmup_steps=cfg.warmup_steps,
            min_lr_ratio=cfg.min_lr_ratio,
        ),
    )
    start = 0
    if resume and (ckpt := latest_checkpoint(out)) is not None:
        start = load_checkpoint(ckpt, drafter, optimizer, scheduler)
    state = TrainState(drafter, optimizer, scheduler, start, rank, world, out)
    if rank == 0:
        out.mkdir(parents=True, exist_ok=True)
        if not resume:
            atomic_write_text(
                config_path,
                json.dumps(
                    {"train": cfg.to_saved(), "world_size": world, **(run_info or {})}, indent=1
                )
                + "\n",
            )
        truncate_metrics(state.metrics_path, start)
    return state


def _autocast(cfg: TrainConfig, device: torch.device):
    use = cfg.amp == "bf16" or (
        cfg.amp == "auto" and device.type == "cuda" and torch.cuda.is_bf16_supported()
    )
    return torch.autocast(device.type, dtype=torch.bfloat16, enabled=use)


def step_sequences(data: Sequences, cfg: TrainConfig, step: int, rank: int):
    """The sequences of step ``step`` on ``rank`` and the generator of its anchors (depends on nothing else)."""
    rng = np.random.default_rng([cfg.seed, step, rank])
    idx = rng.choice(len(data), size=min(cfg.schedule.batch, len(data)), replace=False)
    return [data.item(int(i)) for i in idx], rng


def train_step(
    state: TrainState, target: TargetModel, data: Sequences, cfg: TrainConfig, step: int
) -> StepMetrics:
    """One optimizer step on the batch of ``step`` (CE + lambda * weighted term, clipped AdamW, schedule)."""
    seqs, rng = step_sequences(data, cfg, step, state.rank)
    chain_rng = (
        np.random.default_rng([cfg.seed, step, state.rank, 1])
        if cfg.objective == "draft-opd"
        else None
    )
    with _autocast(cfg, target.device):
        batch = make_batch(
            state.drafter,
            target,
            seqs,
            cfg.schedule.anchors,
            cfg.budget,
            rng,
            score=cfg.score_trees,
            settings=cfg.scoring,
            chain_rng=chain_rng,
            prefix_window=cfg.prefix_window,
        )
        if batch is None:
            raise ValueError(
                f"step {step}: no sequence has room for an anchor (sequences too short?)"
            )
        terms = batch_loss(
            batch,
            objective=cfg.objective,
            lam=cfg.lam,
            normalisation=cfg.weight_norm,
            edge_floor=cfg.edge_floor,
        )
    state.optimizer.zero_grad(set_to_none=True)
    terms.total.backward()
    grad_norm = torch.nn.utils.clip_grad_norm_(state.drafter.parameters(), cfg.grad_clip)
    if hasattr(grad_norm, "full_tensor"):
        grad_norm = grad_norm.full_tensor()
    state.optimizer.step()
    state.scheduler.step()
    nan = float("nan")
    opt = lambda x: nan if x is None else float(x)  # noqa: E731
    return StepMetrics(
        loss=terms.total.item(),
        ce=terms.ce.item(),
        tree=terms.tree.item(),
        mean_w=opt(terms.mean_w),
        coverage=opt(terms.coverage),
        tree_nodes=opt(terms.nodes),
        tree_depth=opt(terms.depth),
        grad_norm=float(grad_norm),
        supervised=float(batch.target_valid.sum()),
        target_tokens=float(batch.tokens_seen),
    ).all_reduce(state.world)


def metrics_record(cfg: TrainConfig, step: int, m: StepMetrics, lr: float, elapsed: float) -> dict:
    """The ``metrics.jsonl`` line of a finished step (keys :data:`METRIC_KEYS`; NaN written as null)."""
    rec = {
        "step": step,
        "objective": cfg.objective,
        "loss": m.loss,
        "ce": m.ce,
        "tree": m.tree,
        "lambda": 0.0 if cfg.objective == "token" else cfg.lam,
        "mean_w": m.mean_w,
        "coverage": m.coverage,
        "tree_nodes": m.tree_nodes,
        "tree_depth": m.tree_depth,
        "grad_norm": m.grad_norm,
        "lr": lr,
        "tokens_per_s": m.supervised / elapsed,
        "target_tokens_per_s": m.target_tokens / elapsed,
    }
    return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in rec.items()}


def train(
    target: TargetModel,
    drafter: DFlashDrafter,
    data: Sequences,
    cfg: TrainConfig,
    out: str | Path,
    *,
    resume: bool = False,
    run_info: dict | None = None,
    progress: bool = True,
    stop_after: int | None = None,
) -> Path:
    """Train ``drafter`` against the frozen ``target`` on ``data``; returns ``out/final``.

    ``stop_after`` ends the run early after that many steps (as if interrupted; tests
    use it to check resume). The target's parameters are frozen here.
    """
    out = Path(out)
    state = setup_training(target, drafter, data, cfg, out, resume=resume, run_info=run_info)
    bar = None
    if progress and state.rank == 0:
        bar = tqdm(
            total=cfg.schedule.steps,
            initial=state.start,
            desc=f"train[{cfg.objective}]",
            unit="step",
        )
    end = (
        cfg.schedule.steps
        if stop_after is None
        else min(cfg.schedule.steps, state.start + stop_after)
    )
    for step in range(state.start, end):
        t0 = time.perf_counter()
        m = train_step(state, target, data, cfg, step)
        elapsed = time.perf_counter() - t0
        done = step + 1
        if state.rank == 0 and (done % cfg.log_every == 0 or done == cfg.schedule.steps):
            rec = metrics_record(cfg, done, m, state.scheduler.get_last_lr()[0], elapsed)
            with state.metrics_path.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(rec) + "\n")
        if done % cfg.checkpoint_every == 0 or done == cfg.schedule.steps:
            save_checkpoint(out, done, state.drafter, state.optimizer, state.scheduler, state.rank)
        if bar is not None:
            bar.update(1)
            # coverage exists only when trees are scored (distillation builds none)
            shown = {"loss": f"{m.loss:.3f}"}
            if cfg.score_trees:
                shown["cov"] = f"{m.coverage:.2f}"
            bar.set_postfix(**shown)
    if bar is not None:
        bar.close()
    final = out / "final"
    if end == cfg.schedule.steps:
        model_state, _ = full_state(state.drafter, state.optimizer)
        if state.rank == 0:
            save_weights(state.drafter, model_state, final)
    if dist_group() is not None:
        dist_group().barrier()
    return final


__all__ = [
    "METRIC_KEYS",
    "TrainConfig",
    "TrainState",
    "StepMetrics",
    "setup_training",
    "step_sequences",
    "train_step",
    "metrics_record",
    "train",
    "cosine_factor",
    "latest_checkpoint",
    "init_distributed",
    "shard_drafter",
]
