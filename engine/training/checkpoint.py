"""Checkpoints, exact resume and the process group of the ExitTrain trainer.

A checkpoint ``out/checkpoints/step_000050/`` holds the drafter in the released
DFlash format (float32 safetensors + config.json) and ``trainer.pt`` (optimizer,
scheduler, step). It is written into a temporary folder, closed by a completion
marker and renamed (:func:`exitlaw.theory.infra.atomic_io.atomic_dir`), so a killed save
never looks complete; a leftover of the same name is kept aside, never deleted.
``final/`` is written the same way. On resume the newest checkpoint that verifies
(both files present, the safetensors header consistent with the file size,
``trainer.pt`` a complete archive) is used; a corrupt newer one is reported on
stderr and skipped, so the run falls back to the previous good one, loudly.
Under ``torchrun`` (``WORLD_SIZE > 1``) the process group is gloo on CPU and nccl on
GPU; the drafter is sharded with FSDP2 and checkpoints hold the full (unsharded) state.
"""

from __future__ import annotations

import json
import os
import struct
import sys
import zipfile
from pathlib import Path

import torch
import torch.distributed as dist
from safetensors.torch import load_file, save_file

from exitlaw.engine.models.checkpoint import WEIGHTS
from exitlaw.engine.models.dflash import DFlashDrafter
from exitlaw.theory.infra.atomic_io import atomic_dir, atomic_write_text

CHECKPOINTS = "checkpoints"
TRAINER_STATE = "trainer.pt"


# ----- the process group ---------------------------------------------------------------------
def dist_group():
    """``torch.distributed`` when a process group is running, else ``None``."""
    return dist if dist.is_available() and dist.is_initialized() else None


def init_distributed(device: torch.device) -> tuple[int, int]:
    """Start the process group under torchrun (gloo on CPU, nccl on CUDA); ``(rank, world)``."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return 0, 1
    if not dist.is_initialized():
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    return dist.get_rank(), dist.get_world_size()


def _fsdp():
    """FSDP2's three entry points, named one by one (no reliance on one import loading the others):
    ``(state_dict module, init_device_mesh, fully_shard)``. Loaded on first use: FSDP2 runs only under a
    process group, torch builds without distributed support lack it, and it loads in ~0.6 s."""
    from torch.distributed.checkpoint import state_dict  # lazy: FSDP2, under a process group only
    from torch.distributed.device_mesh import init_device_mesh  # lazy: FSDP2, as above
    from torch.distributed.fsdp import fully_shard  # lazy: FSDP2, as above

    return state_dict, init_device_mesh, fully_shard


def shard_drafter(drafter: DFlashDrafter, device: torch.device) -> DFlashDrafter:
    """FSDP2: shard every draft layer and the root module across the process group."""
    _, init_device_mesh, fully_shard = _fsdp()
    mesh = init_device_mesh(device.type, (dist_group().get_world_size(),))
    for layer in drafter.layers:
        fully_shard(layer, mesh=mesh)
    fully_shard(drafter, mesh=mesh)
    return drafter


def full_state(drafter, optimizer):
    """Full (unsharded) model and optimizer state dicts on the CPU."""
    if dist_group() is None:
        return (
            {k: v.detach().clone() for k, v in drafter.state_dict().items()},
            optimizer.state_dict(),
        )
    sd = _fsdp()[0]
    opts = sd.StateDictOptions(full_state_dict=True, cpu_offload=True)
    return sd.get_model_state_dict(drafter, options=opts), sd.get_optimizer_state_dict(
        drafter, optimizer, options=opts
    )


def load_full_state(drafter, optimizer, model_state, optim_state) -> None:
    """Load full (unsharded) model and optimizer state dicts, into the FSDP shards under a process group."""
    if dist_group() is None:
        drafter.load_state_dict(model_state)
        optimizer.load_state_dict(optim_state)
        return
    sd = _fsdp()[0]
    opts = sd.StateDictOptions(full_state_dict=True)
    sd.set_model_state_dict(drafter, model_state, options=opts)
    sd.set_optimizer_state_dict(drafter, optimizer, optim_state, options=opts)


# ----- checkpoints ------------------------------------------------------------------------
def verify_checkpoint(path: Path) -> str | None:
    """``None`` if the checkpoint folder looks whole, else the reason it does not (cheap: no tensor is read)."""
    weights, state = path / WEIGHTS, path / TRAINER_STATE
    for f in (weights, state, path / "config.json"):
        if not f.is_file():
            return f"{f.name} is missing"
    size = weights.stat().st_size
    try:
        with weights.open("rb") as fh:
            (header_len,) = struct.unpack("<Q", fh.read(8))
            if header_len > size - 8:
                return (
                    f"{WEIGHTS} is truncated (header of {header_len} bytes in a {size}-byte file)"
                )
            header = json.loads(fh.read(header_len))
        end = max(
            (int(v["data_offsets"][1]) for k, v in header.items() if k != "__metadata__"), default=0
        )
        if 8 + header_len + end != size:
            return f"{WEIGHTS} is truncated or padded ({size} bytes, header says {8 + header_len + end})"
    except (struct.error, ValueError, KeyError, TypeError, IndexError) as err:
        return f"{WEIGHTS} is unreadable ({err})"
    if not zipfile.is_zipfile(state):
        return f"{TRAINER_STATE} is not a complete torch archive (truncated?)"
    try:
        json.loads((path / "config.json").read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as err:
        return f"config.json is unreadable ({err})"
    return None


def latest_checkpoint(out: Path, *, log=None) -> Path | None:
    """The highest-step checkpoint under ``out/checkpoints`` that verifies (``None`` if none).

    A newer checkpoint that fails :func:`verify_checkpoint` is reported through ``log``
    (default: stderr) and skipped: the run falls back to the previous good one.
    """
    log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    root = out / CHECKPOINTS
    steps = []
    for p in root.glob("step_*"):
        suffix = p.name[len("step_") :]
        if p.is_dir() and suffix.isdigit():
            steps.append((int(suffix), p))
    for _, p in sorted(steps, reverse=True):
        reason = verify_checkpoint(p)
        if reason is None:
            return p
        log(
            f"WARNING: checkpoint {p} is corrupt or incomplete ({reason}); falling back to the previous one"
        )
    return None


def save_checkpoint(out: Path, step: int, drafter, optimizer, scheduler, rank: int) -> None:
    """Write ``out/checkpoints/step_NNNNNN`` (every rank gathers, rank 0 writes; temporary folder, then rename)."""
    model_state, optim_state = full_state(drafter, optimizer)
    if rank != 0:
        return
    path = out / CHECKPOINTS / f"step_{step:06d}"
    with atomic_dir(
        path
    ) as tmp:  # an existing (incomplete) folder of that name is moved aside, never deleted
        save_weights(drafter, model_state, tmp, atomic=False)
        torch.save(
            {"step": step, "optimizer": optim_state, "scheduler": scheduler.state_dict()},
            tmp / TRAINER_STATE,
        )


def save_weights(drafter, model_state: dict, path: Path, *, atomic: bool = True) -> None:
    """The drafter in the released DFlash format: ``config.json`` + float32 ``model.safetensors``.

    ``atomic`` (the default): built in a temporary folder with a completion marker and renamed
    into place (an existing ``path`` is moved aside); ``False`` writes into ``path`` as it is.
    """
    if atomic:
        with atomic_dir(path) as tmp:
            save_weights(drafter, model_state, tmp, atomic=False)
        return
    path.mkdir(parents=True, exist_ok=True)
    (path / "config.json").write_text(
        json.dumps(drafter.config.to_dict(), indent=2) + "\n", encoding="utf-8"
    )
    save_file(
        {k: v.detach().contiguous().cpu() for k, v in model_state.items()},
        str(path / WEIGHTS),
        metadata={"format": "pt"},
    )


def load_checkpoint(path: Path, drafter, optimizer, scheduler) -> int:
    """Restore drafter, optimizer and scheduler from a checkpoint folder; returns its step."""
    try:
        state = torch.load(path / TRAINER_STATE, map_location="cpu", weights_only=False)
        weights = load_file(str(path / WEIGHTS))
    except (
        Exception
    ) as err:  # torch/safetensors raise many types for a damaged file: name the checkpoint
        raise ValueError(
            f"checkpoint {path} cannot be read ({type(err).__name__}: {err}); move it aside to "
            "resume from the previous one"
        ) from err
    load_full_state(drafter, optimizer, weights, state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    return int(state["step"])


def truncate_metrics(path: Path, step: int, *, log=None) -> None:
    """Keep the metric lines of steps ``<= step`` (a resumed run recomputes the rest identically).

    A last line cut short by a kill is dropped (reported); an unreadable line elsewhere is an
    error naming the file and line. The file is rewritten atomically.
    """
    if not path.is_file():
        return
    log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    lines = [x for x in path.read_text(encoding="utf-8", errors="strict").splitlines() if x.strip()]
    keep = []
    for i, line in enumerate(lines, start=1):
        try:
            rec = json.loads(line)
            if not isinstance(rec, dict):
                raise ValueError("not a JSON object")
        except ValueError as err:
            if i == len(lines):
                log(f"WARNING: {path}:{i} is cut short (an interrupted write); dropped")
                continue
            raise ValueError(f"{path}:{i}: not a metrics record ({err})") from None
        if rec.get("step", 0) <= step:
            keep.append(line)
    atomic_write_text(path, "".join(x + "\n" for x in keep))


__all__ = [
    "CHECKPOINTS",
    "TRAINER_STATE",
    "dist_group",
    "init_distributed",
    "shard_drafter",
    "full_state",
    "load_full_state",
    "latest_checkpoint",
    "save_checkpoint",
    "save_weights",
    "load_checkpoint",
    "verify_checkpoint",
    "truncate_metrics",
]
