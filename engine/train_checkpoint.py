"""Checkpoints, exact resume and the process group of the ExitTrain trainer.

A checkpoint ``out/checkpoints/step_000050/`` holds the drafter in the released
DFlash format (float32 safetensors + config.json) and ``trainer.pt`` (optimizer,
scheduler, step). It is written into a temporary folder and renamed, so a killed
save never looks complete; a leftover of the same name is kept aside, never deleted.
Under ``torchrun`` (``WORLD_SIZE > 1``) the process group is gloo on CPU and nccl on
GPU; the drafter is sharded with FSDP2 and checkpoints hold the full (unsharded) state.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import torch

from .checkpoint import WEIGHTS
from .dflash import DFlashDrafter

CHECKPOINTS = "checkpoints"
TRAINER_STATE = "trainer.pt"


# ----- the process group ---------------------------------------------------------------------
def dist_group():
    """``torch.distributed`` when a process group is running, else ``None``."""
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

    dist = dist_group()
    mesh = init_device_mesh(device.type, (dist.get_world_size(),))
    for layer in drafter.layers:
        fully_shard(layer, mesh=mesh)
    fully_shard(drafter, mesh=mesh)
    return drafter


def full_state(drafter, optimizer):
    """Full (unsharded) model and optimizer state dicts on the CPU."""
    if dist_group() is None:
        return ({k: v.detach().clone() for k, v in drafter.state_dict().items()}, optimizer.state_dict())
    from torch.distributed.checkpoint.state_dict import (StateDictOptions, get_model_state_dict,
                                                         get_optimizer_state_dict)

    opts = StateDictOptions(full_state_dict=True, cpu_offload=True)
    return get_model_state_dict(drafter, options=opts), get_optimizer_state_dict(drafter, optimizer, options=opts)


def load_full_state(drafter, optimizer, model_state, optim_state) -> None:
    """Load full (unsharded) model and optimizer state dicts, into the FSDP shards under a process group."""
    if dist_group() is None:
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


def save_checkpoint(out: Path, step: int, drafter, optimizer, scheduler, rank: int) -> None:
    """Write ``out/checkpoints/step_NNNNNN`` (every rank gathers, rank 0 writes; temporary folder, then rename)."""
    model_state, optim_state = full_state(drafter, optimizer)
    if rank != 0:
        return
    path = out / CHECKPOINTS / f"step_{step:06d}"
    tmp = out / CHECKPOINTS / f".tmp_step_{step:06d}"
    tmp.mkdir(parents=True, exist_ok=True)
    save_weights(drafter, model_state, tmp)
    torch.save({"step": step, "optimizer": optim_state, "scheduler": scheduler.state_dict()}, tmp / TRAINER_STATE)
    if path.exists():  # an incomplete leftover of an interrupted save: keep it aside, never delete
        os.replace(path, path.with_name(f"{path.name}.incomplete.{int(time.time())}"))
    os.replace(tmp, path)


def save_weights(drafter, model_state: dict, path: Path) -> None:
    """The drafter in the released DFlash format: ``config.json`` + float32 ``model.safetensors``."""
    from safetensors.torch import save_file

    path.mkdir(parents=True, exist_ok=True)
    (path / "config.json").write_text(json.dumps(drafter.config.to_dict(), indent=2) + "\n", encoding="utf-8")
    save_file({k: v.detach().contiguous().cpu() for k, v in model_state.items()}, str(path / WEIGHTS),
              metadata={"format": "pt"})


def load_checkpoint(path: Path, drafter, optimizer, scheduler) -> int:
    """Restore drafter, optimizer and scheduler from a checkpoint folder; returns its step."""
    from safetensors.torch import load_file

    state = torch.load(path / TRAINER_STATE, map_location="cpu", weights_only=False)
    load_full_state(drafter, optimizer, load_file(str(path / WEIGHTS)), state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    return int(state["step"])


def truncate_metrics(path: Path, step: int) -> None:
    """Keep the metric lines of steps ``<= step`` (a resumed run recomputes the rest identically)."""
    if not path.is_file():
        return
    keep = [line for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip() and json.loads(line).get("step", 0) <= step]
    path.write_text("".join(x + "\n" for x in keep), encoding="utf-8")


__all__ = ["CHECKPOINTS", "TRAINER_STATE", "dist_group", "init_distributed", "shard_drafter", "full_state",
           "load_full_state", "latest_checkpoint", "save_checkpoint", "save_weights", "load_checkpoint",
           "truncate_metrics"]
