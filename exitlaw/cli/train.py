"""``exitlaw train``: ExitTrain on a target + DFlash drafter pair (runs unchanged under torchrun)."""

from __future__ import annotations

import argparse
import json

from exitlaw.engine.training.config import PRESETS, DrafterSchedule
from exitlaw.engine.training.objectives import NORMALISATIONS, OBJECTIVES  # torch-free modules

from . import library as lib
from .args import (
    add_sampling_args,
    device_args,
    finite_float,
    max_new_tokens_arg,
    model_pair_args,
    no_progress_arg,
    nonneg_float,
    nonneg_int,
    num_prompts_arg,
    out_args,
    positive_int,
    positive_temperature,
    prompt_set_arg,
    sampling_settings_from,
    seed_arg,
    show_progress,
    temperature_value,
)
from .grammar import Command, move_aside, opt, out_dir

_NO_FLOOR = object()  # --edge-floor none: a preset's floor turned off


def _edge_floor(text: str):
    if text.strip().lower() == "none":
        return _NO_FLOOR
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a number in (0, 1) or 'none', got {text!r}"
        ) from None


# flag -> TrainConfig field, always passed (the flag's default is the run's)
_CONFIG = {
    **{f: f for f in ("min_lr_ratio", "weight_decay", "grad_clip")},
    **{f: f for f in ("checkpoint_every", "log_every", "seed", "amp", "prefix_window")},
    "warmup": "warmup_steps",
}
# flag -> DrafterSchedule field (TrainConfig.schedule), always passed
_SCHEDULE = {"steps": "steps", "batch_size": "batch", "lr": "lr", "anchors": "anchors"}
# flags a --preset sets: passed only when given (None: the preset's value)
_PRESET_FIELDS = ("objective", "lam", "weight_norm", "edge_floor", "budget")
# flag -> TrainingRunSpec field
_SPEC = {
    **{f: f for f in ("target", "draft", "out", "prompts", "resume", "chat", "max_new_tokens")},
    **{f: f for f in ("gen_batch", "continuations_server", "server_model", "cache_dir")},
    **{f: f for f in ("device", "dtype")},
    "num_prompts": "prompt_limit",
}


def _fields(args: argparse.Namespace, table: dict[str, str]) -> dict:
    return {field: getattr(args, flag) for flag, field in table.items()}


def _train(args: argparse.Namespace) -> int:
    out = out_dir(args)
    if args.overwrite:
        if args.resume:
            raise ValueError("--overwrite starts again; it does not go with --resume")
        move_aside(out)
    given = {f: getattr(args, f) for f in _PRESET_FIELDS if getattr(args, f) is not None}
    overrides = {f: (None if v is _NO_FLOOR else v) for f, v in given.items()}
    scoring = sampling_settings_from(args, args.scoring_temperature)
    schedule = DrafterSchedule(**_fields(args, _SCHEDULE))
    cfg = lib.preset_config(
        args.preset, scoring=scoring, schedule=schedule, **_fields(args, _CONFIG), **overrides
    )
    spec = lib.TrainingRunSpec(
        config=cfg,
        generation=sampling_settings_from(args, args.gen_temperature),
        progress=show_progress(args),
        run_info={"preset": args.preset},
        **_fields(args, _SPEC),
    )
    result = lib.run_training(spec)
    if result["rank"] == 0:
        print(json.dumps({"final_drafter": result["final_drafter"], "last": result["last"]}))
    return 0


def _train_sampling_args(p: argparse.ArgumentParser) -> None:
    add_sampling_args(
        p,
        "the target continuations (at --gen-temperature) and the scoring law (at "
        "--scoring-temperature): the setting the drafter is trained for",
    )


TRAIN = Command(
    "train",
    _train,
    help="ExitTrain: train a DFlash drafter on a target",
    description="ExitTrain with the exit, exit-depth, prefix, token, draft-opd or vat objective. Continuations of the prompts are sampled from the frozen target (cached on disk); each "
    "step builds the inference DDTree at every anchor, scores it with the target under tree "
    "attention and minimises CE + lambda * sum_v w~(v) (-log q_depth(v)(x_v)). Under "
    "`torchrun --nproc_per_node N` the drafter is sharded with FSDP (gloo on CPU).",
    pieces=(
        model_pair_args(draft_help="DFlash drafter checkpoint to start from (released format)"),
        prompt_set_arg(required=True),
        out_args(
            "the training run (new or empty unless --resume; --overwrite moves a former run aside)",
            required=True,
        ),
        opt(
            "--resume",
            action="store_true",
            help="continue the run in --out from its latest checkpoint",
        ),
        opt(
            "--preset",
            choices=tuple(PRESETS),
            default=None,
            help="a named reading of ExitTrain: 'paper' (exit weight, batch normalisation, lambda 1, no "
            "edge floor, budget 64) or 'authors-code' (the authors' public code: prefix weight as "
            "their configs ship, nodes normalisation, lambda 0.1, edge floor 1e-4, budget 32); the "
            "flags below override it (default: the paper's reading)",
        ),
        opt(
            "--objective",
            choices=OBJECTIVES,
            default=None,
            help="token (lambda 0), prefix (P), exit (w = P rho, the paper), exit-depth (w * depth, the "
            "authors' code), draft-opd (on-policy position-wise distillation baseline), vat "
            "(verification-aware training: CE reweighted at simulated first-rejection positions; "
            "batch normalisation)",
        ),
        opt(
            "--lam",
            type=finite_float,
            default=None,
            help="weight of the tree term (forced to 0 for token)",
        ),
        opt(
            "--weight-norm",
            choices=NORMALISATIONS,
            default=None,
            help="batch: weights sum to one over the batch; tree: every tree counts equally; nodes: "
            "summed and divided by the number of tree nodes (the authors' code)",
        ),
        opt(
            "--edge-floor",
            type=_edge_floor,
            default=None,
            metavar="ALPHA",
            help="build P from edge probabilities floored at ALPHA, rho from the raw ones clipped to "
            "[0, 1] (the authors' code uses 1e-4); 'none' turns a preset's floor off",
        ),
        opt(
            "--budget",
            type=positive_int,
            default=None,
            help="DDTree budget of the trained trees (default 64)",
        ),
        opt(
            "--scoring-temperature",
            type=positive_temperature,
            default=1.0,
            metavar="T_S",
            help="temperature of the target law the node weights come from (P, w, rho; default 1)",
        ),
        opt(
            "--prefix-window",
            type=positive_int,
            default=None,
            metavar="N",
            help="score each tree over only the last N context tokens, as the authors' code does (64); "
            "default: the whole context",
        ),
        opt("--steps", type=positive_int, default=100),
        opt("--batch-size", type=positive_int, default=4, help="sequences per step and rank"),
        opt("--anchors", type=positive_int, default=8, help="anchors per sequence"),
        opt("--lr", type=nonneg_float, default=1e-4),
        opt("--min-lr-ratio", type=nonneg_float, default=0.1),
        opt("--warmup", type=nonneg_int, default=0),
        opt("--weight-decay", type=nonneg_float, default=0.01),
        opt("--grad-clip", type=nonneg_float, default=1.0),
        opt("--checkpoint-every", type=positive_int, default=50),
        opt("--log-every", type=positive_int, default=1),
        seed_arg(0),
        opt(
            "--amp",
            choices=("auto", "bf16", "off"),
            default="auto",
            help="bf16 autocast (auto: on CUDA devices that support it)",
        ),
        num_prompts_arg(),
        opt(
            "--chat", action="store_true", help="wrap string prompts in the target's chat template"
        ),
        max_new_tokens_arg(256, "length of the target continuations"),
        opt(
            "--gen-temperature",
            type=temperature_value,
            default=1.0,
            help="temperature of the target continuations",
        ),
        _train_sampling_args,
        opt("--gen-batch", type=positive_int, default=16),
        opt(
            "--continuations-server",
            default=None,
            metavar="URL",
            help="take target continuations from an OpenAI-compatible server (e.g. vLLM serving the "
            "target) at URL instead of decoding locally",
        ),
        opt(
            "--server-model", default=None, help="model name the server expects (default: --target)"
        ),
        opt(
            "--cache-dir", default=None, help="continuation cache (default: OUT/../.exitlaw-cache)"
        ),
        device_args(
            dtypes=("float32", "bfloat16", "float16"),
            dtype_default="float32",
            help="cpu, cuda, cuda:1 ... (default: cuda:LOCAL_RANK if available)",
        ),
        no_progress_arg,
    ),
)

COMMANDS = (TRAIN,)
BENCH = ()
