"""One ExitTrain run end to end: what ``exitlaw train`` and the mini pipeline both call.

:func:`run_training` takes a :class:`TrainingRunSpec` and does, in order:

1. device choice (``spec.device``, else ``cuda:LOCAL_RANK`` when CUDA is there, else CPU);
2. loading the target + DFlash drafter pair (released formats);
3. the process group under ``torchrun`` (the ranks share the continuation generation);
4. training sequences: prompts read and encoded with the target's tokenizer, target
   continuations generated locally or by an OpenAI-compatible server and cached on
   disk (:func:`~exitlaw.engine.training.data.cached_sequences`) -- or the ``data`` the
   caller already has;
5. the run info written beside the config, then :func:`~exitlaw.engine.training.loop.train`;
6. the result (final drafter path, last metrics line, rank) and the process-group teardown.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import torch
from transformers import AutoTokenizer

from exitlaw.engine.decode.work_bounds import check_decode_fits
from exitlaw.engine.models.checkpoint import (
    check_model_paths,
    checkpoint_fingerprint,
    load_pair,
    resolve_checkpoint,
)
from exitlaw.engine.training.checkpoint import dist_group, init_distributed
from exitlaw.engine.training.config import TrainConfig
from exitlaw.engine.training.continuation_server import server_continuations
from exitlaw.engine.training.data import (
    Sequences,
    cached_sequences,
    encode_prompts,
    load_prompts,
    target_fingerprint,
)
from exitlaw.engine.training.loop import train
from exitlaw.theory.sampling_settings import SamplingSettings, check_settings

DTYPES = ("float32", "bfloat16", "float16")


@dataclass(frozen=True)
class TrainingRunSpec:
    """Everything one training run needs besides its :class:`TrainConfig` (``exitlaw train`` flags)."""

    target: str  # target checkpoint directory or Hub id (with its tokenizer)
    draft: str  # DFlash drafter to start from (released format)
    out: str  # output directory (new or empty unless resume)
    config: TrainConfig = field(default_factory=TrainConfig)
    prompts: str | None = (
        None  # jsonl:FILE, FILE.jsonl or hf:NAME[:SPLIT]; None: data given to run_training
    )
    resume: bool = False
    prompt_limit: int | None = None
    chat: bool = False  # wrap string prompts in the target's chat template
    max_new_tokens: int = 256  # length of the target continuations
    # temperature and filters of the continuations
    generation: SamplingSettings = SamplingSettings(1.0)
    gen_batch: int = 16
    continuations_server: str | None = None  # OpenAI-compatible server URL serving the target
    server_model: str | None = None  # model name the server expects (default: target)
    cache_dir: str | None = None  # continuation cache (default: OUT/../.exitlaw-cache)
    device: str | None = None
    dtype: str = "float32"
    progress: bool = True
    run_info: dict = field(default_factory=dict)  # extra entries for config.json

    def __post_init__(self):
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {DTYPES}, got {self.dtype!r}")
        for name in ("max_new_tokens", "gen_batch"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        check_settings(self.generation)
        if self.prompt_limit is not None and (
            isinstance(self.prompt_limit, bool)
            or not isinstance(self.prompt_limit, int)
            or self.prompt_limit < 1
        ):
            raise ValueError(
                f"prompt_limit must be an integer >= 1 (or None: all prompts), got {self.prompt_limit!r}"
            )


# settings that change what is trained; a resumed run must match the saved run in every one
RESUME_SETTINGS = (
    "target_fingerprint",
    "draft_fingerprint",
    "prompts",
    "prompt_limit",
    "chat",
    "max_new_tokens",
    "gen_temperature",
    "continuations_server",
    "server_model",
    "dtype",
)


def run_settings(spec: TrainingRunSpec) -> dict:
    """What a run trains on, besides its :class:`TrainConfig`: checkpoint identities, data and generation."""
    return {
        "target_fingerprint": checkpoint_fingerprint(spec.target),
        "draft_fingerprint": checkpoint_fingerprint(spec.draft),
        "prompts": spec.prompts,
        "prompt_limit": spec.prompt_limit,
        "chat": spec.chat,
        "max_new_tokens": spec.max_new_tokens,
        "gen_temperature": spec.generation.temperature,
        "continuations_server": spec.continuations_server,
        "server_model": spec.server_model,
        "dtype": spec.dtype,
        **_filter_record(spec),
    }


def _filter_record(spec: TrainingRunSpec) -> dict:
    """``gen_filters`` when a continuation filter is on (absent otherwise, so runs saved before it resume)."""
    s = spec.generation
    return {"gen_filters": s.filters()} if s.filtered else {}


def data_fingerprint(data: Sequences) -> str:
    """Hash of the training sequences (every prompt and continuation token, in order)."""
    h = hashlib.sha256()
    for p, c in zip(data.prompts, data.continuations):
        h.update(json.dumps([list(map(int, p)), list(map(int, c))]).encode())
    return h.hexdigest()[:20]


def saved_run(out: str | Path) -> dict:
    """``out/config.json`` of a training run (named errors when absent or unreadable)."""
    path = Path(out) / "config.json"
    if not path.is_file():
        raise FileNotFoundError(f"--resume: {out} holds no training run (no config.json)")
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ValueError(
            f"--resume: {path} is not valid JSON ({err}); the run cannot be checked"
        ) from None
    if not isinstance(saved, dict) or not isinstance(saved.get("train"), dict):
        raise ValueError(f"--resume: {path} holds no 'train' configuration")
    return saved


def check_resume(out: str | Path, settings: dict, config: TrainConfig | None = None) -> None:
    """Refuse to resume when a setting differs from the saved run, naming each: ``key: saved X, now Y``.

    A setting the saved run does not record cannot be verified, and is refused too.
    """
    saved = saved_run(out)
    diffs = [
        f"{key}: saved {saved[key]!r}, now not set"
        for key in ("gen_filters",)
        if key in saved and key not in settings
    ]
    for key, now in settings.items():
        if key not in saved:
            diffs.append(f"{key}: not recorded in the saved run (now {now!r})")
        elif saved[key] != now:
            diffs.append(f"{key}: saved {saved[key]!r}, now {now!r}")
    if config is not None:
        old = TrainConfig.from_saved(saved["train"]).to_saved()
        diffs += [
            f"train.{k}: saved {old[k]!r}, now {v!r}"
            for k, v in config.to_saved().items()
            if old.get(k) != v
        ]
    if diffs:
        raise ValueError(
            f"--resume: {out} was trained with different settings; " + "; ".join(diffs)
        )


def choose_device(requested: str | None) -> torch.device:
    """``requested``, else ``cuda:LOCAL_RANK`` when CUDA is available, else the CPU (made current on CUDA)."""
    local = int(os.environ.get("LOCAL_RANK", "0"))
    try:
        device = torch.device(
            requested or (f"cuda:{local}" if torch.cuda.is_available() else "cpu")
        )
    except RuntimeError as err:
        raise ValueError(f"device {requested!r} is not a torch device ({err})") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {requested!r}: this torch build or machine has no CUDA device")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    return device


def training_sequences(spec: TrainingRunSpec, target) -> Sequences:
    """Prompts of ``spec.prompts`` plus cached target continuations (generated locally or by the server)."""
    if spec.prompts is None:
        raise ValueError("the run names no prompts (spec.prompts) and was given no training data")
    tpath = resolve_checkpoint(spec.target)
    tokenizer = AutoTokenizer.from_pretrained(str(tpath))
    prompts = encode_prompts(
        tokenizer, load_prompts(spec.prompts, limit=spec.prompt_limit), chat=spec.chat
    )
    stops = [t for t in (tokenizer.eos_token_id,) if t is not None]
    cache_dir = (
        Path(spec.cache_dir)
        if spec.cache_dir
        else Path(spec.out).resolve().parent / ".exitlaw-cache"
    )
    generate = source = None
    if spec.continuations_server:
        model = spec.server_model or str(spec.target)
        generate = partial(
            server_continuations,
            spec.continuations_server,
            tokenizer=tokenizer,
            model=model,
            max_new_tokens=spec.max_new_tokens,
            settings=spec.generation,
            seed=spec.config.seed,
            stop_tokens=stops,
        )
        source = f"server:{spec.continuations_server}:{model}"
    return cached_sequences(
        target,
        target_fingerprint(tpath),
        prompts,
        cache_dir,
        max_new_tokens=spec.max_new_tokens,
        settings=spec.generation,
        seed=spec.config.seed,
        batch_size=spec.gen_batch,
        stop_tokens=stops,
        generate=generate,
        source=source,
    )


def _check_tree_forward_fits(spec: TrainingRunSpec, target, device, context: int) -> None:
    """Every anchor's tree of a sequence is scored in one target forward: refuse one that cannot fit."""
    cfg = spec.config
    check_decode_fits(
        target.model.config,
        budget=cfg.schedule.anchors * (cfg.budget + 1) - 1,
        context=context,
        element_bytes=target.dtype.itemsize,
        device=device,
        what=f"one training forward ({cfg.schedule.anchors} anchors x {cfg.budget + 1} tree nodes)",
        advice="lower --budget or --anchors, or use shorter sequences",
    )


def run_training(spec: TrainingRunSpec, data: Sequences | None = None) -> dict:
    """Run one training (module docstring); returns ``final_drafter``, ``last`` (the last metrics
    line, ``{}`` if none), ``rank`` and ``world_size``. ``data``: training sequences the caller
    already holds (then ``spec.prompts`` and the generation options are not used)."""
    out = Path(spec.out)
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"--out {out} is a file, not a directory")
    device = choose_device(spec.device)
    check_model_paths(spec.target, spec.draft)  # one line naming the path, before any load
    settings = run_settings(spec)
    if spec.resume:  # before any model is loaded or data generated
        check_resume(spec.out, settings, spec.config)
    target, drafter = load_pair(
        spec.target, spec.draft, device=device, dtype=getattr(torch, spec.dtype)
    )
    rank, world = init_distributed(device)
    try:
        # the trees alone, before any continuation is generated
        _check_tree_forward_fits(spec, target, device, 0)
        if data is None:
            data = training_sequences(spec, target)
        data_settings = {"data_fingerprint": data_fingerprint(data), "sequences": len(data)}
        if spec.resume:
            check_resume(spec.out, data_settings)
        if data:
            _check_tree_forward_fits(
                spec,
                target,
                device,
                max(len(p) + len(c) for p, c in zip(data.prompts, data.continuations)),
            )
        info = {
            "target": str(spec.target),
            "draft": str(spec.draft),
            **settings,
            **data_settings,
            "device": str(device),
            **spec.run_info,
        }
        final = train(
            target,
            drafter,
            data,
            spec.config,
            spec.out,
            resume=spec.resume,
            run_info=info,
            progress=spec.progress,
        )
        metrics = Path(spec.out) / "metrics.jsonl"
        lines = metrics.read_text(encoding="utf-8").splitlines() if metrics.is_file() else []
        return {
            "final_drafter": str(final),
            "last": json.loads(lines[-1]) if lines else {},
            "rank": rank,
            "world_size": world,
        }
    finally:
        if dist_group() is not None:
            dist_group().destroy_process_group()


__all__ = [
    "DTYPES",
    "RESUME_SETTINGS",
    "TrainingRunSpec",
    "check_resume",
    "choose_device",
    "data_fingerprint",
    "run_settings",
    "run_training",
    "saved_run",
    "training_sequences",
]
