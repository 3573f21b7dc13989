"""The real engine: ``bench decoding``, ``bench verifiers``, ``bench batch``, ``tiny-models`` and
``gpu-check`` (torch loads with the handlers' library calls, :mod:`.library`; nothing here loads JAX)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from exitlaw.engine.models.config import FAMILIES  # torch-free: configs are built inside functions

from . import library as lib
from .args import (
    add_sampling_args,
    add_threads,
    check_device,
    cuda_available,
    device_args,
    int_list,
    masked_attention_arg,
    max_new_tokens_arg,
    model_pair_args,
    name_list,
    no_progress_arg,
    nonneg_int,
    num_prompts_arg,
    out_args,
    positive_int,
    prompt_set_arg,
    result_out_args,
    sampling_settings_from,
    seed_arg,
    set_torch_threads,
    show_progress,
    temperature_list,
    temperature_value,
    torch_threads,
    vocab_size,
)
from .grammar import Command, emit, opt, out_dir, pick, result_path
from .offered import engine_verifier_names


def _check_kinds(verifiers) -> None:
    kinds = lib.engine_names()
    bad = [v for v in verifiers if v not in kinds]
    if bad:
        raise ValueError(f"unknown verifier(s) {bad}; choose from {', '.join(kinds)}")


def _preflight(args: argparse.Namespace, hint: str = "") -> Path | None:
    """Checks shared by the decoding benches, before any model is loaded or file written (the
    verifiers, the device; the runs check the model paths first); applies ``--threads``; the
    results path in ``--out``."""
    if not args.target or not args.draft:
        raise ValueError(f"--target and --draft are required{hint}")
    _check_kinds(args.verifier)
    path = result_path(args)
    check_device(args.device)
    set_torch_threads(args.threads)
    return path


def _bench_source(args: argparse.Namespace):
    """What ``bench decoding`` (single and batched) and ``bench batch`` read and run alike, as one
    :class:`~exitlaw.engine.bench.source.BenchSource`."""
    names = (
        "target",
        "draft",
        "max_new_tokens",
        "num_prompts",
        "seed",
        "device",
        "dtype",
        "masked_attention",
        "warmup",
    )
    return lib.BenchSource(
        **pick(args, *names, dataset="prompts"), filters=sampling_settings_from(args)
    )


TEV_DECISIONS = ("eager", "compiled", "graph")


def _use_tev_decision(args: argparse.Namespace) -> None:
    """``--tev-decision``: make the engine's TEV run its decision compiled or graphed on the device."""
    if args.tev_decision == "eager":
        return
    if args.tev_decision == "graph" and not str(args.device).startswith("cuda"):
        raise ValueError("--tev-decision graph needs --device cuda (CUDA graphs)")
    kind = "cuda" if str(args.device).startswith("cuda") else "cpu"
    decide = lib.TevGraphs() if args.tev_decision == "graph" else lib.compiled_decide()
    lib.use_decider(kind, decide)


def _bench(args: argparse.Namespace) -> int:
    _check_decoding_flags(args)
    if args.compare:
        return _bench_compare(args)
    path = _preflight(args, " (unless --compare A.json B.json)")
    _use_tev_decision(args)
    common = dict(budgets=args.budget, temperatures=args.temperature, verifiers=args.verifier)
    if args.batch_size > 1:
        result = lib.run_batched_bench(_bench_source(args), batch_size=args.batch_size, **common)
        text = lib.format_batch_bench(result)
    else:
        result = lib.run_decoding_bench(
            _bench_source(args),
            trace_dir=args.trace_dir,
            progress=show_progress(args),
            max_turns=args.max_turns,
            **common,
        )
        text = lib.format_decoding_bench(result)
    if args.threads is not None:
        result.setdefault("config", {})["threads"] = args.threads
    result.setdefault("config", {})["tev_decision"] = args.tev_decision
    emit(args, result, text, path)
    return 0


def _check_decoding_flags(args: argparse.Namespace) -> None:
    """``bench decoding``: the flags batched decoding (``--batch-size`` > 1) does not take."""
    given = (
        ("--compare", args.compare),
        ("--trace-dir", args.trace_dir),
        ("--max-turns", args.max_turns is not None),
    )
    clash = [flag for flag, on in given if on]
    if args.batch_size > 1 and clash:
        raise ValueError(
            f"--batch-size {args.batch_size} (batched decoding) does not take {', '.join(clash)}"
        )


def _bench_compare(args: argparse.Namespace) -> int:
    path = result_path(args)
    cmp = lib.compare_files(*args.compare)
    emit(args, cmp, lib.format_comparison(cmp), path)
    return 0


def _tiny(args: argparse.Namespace) -> int:
    out_dir(args)  # an existing file is refused: --out names a folder (target/ and draft/)
    target, draft = lib.write_tiny_models(
        args.out, seed=args.seed, overwrite=args.overwrite, family=args.family
    )
    print(f"target: {target}\ndraft:  {draft}")
    return 0


def _verifier_bench(args: argparse.Namespace) -> int:
    if args.batch_size > 1 and args.trees is not None:
        raise ValueError(
            f"--trees does not apply with --batch-size {args.batch_size} (every batch holds B trees)"
        )
    if args.batch_size > 1 and args.sampling_sweep:
        raise ValueError(
            f"--sampling-sweep times single trees; it does not take --batch-size {args.batch_size}"
        )
    if (args.compiled or args.no_commit) and (args.batch_size > 1 or args.sampling_sweep):
        raise ValueError("--compiled and --no-commit apply to the single-tree stage bench only")
    _check_kinds(args.verifier)
    path = result_path(args)
    check_device(args.device)
    common = dict(temperature=args.temperature, device=args.device, depth=args.depth)
    common.update(repeats=args.repeats, dtype=args.dtype, seed=args.seed)
    with torch_threads(args.threads):
        if args.batch_size > 1:
            res = lib.run_batch_verifier_stage(
                args.batch_size, args.budget, args.vocab, kinds=args.verifier, **common
            )
            emit(args, res, lib.format_batch_verifier_stage(res["rows"]), path)
            return 0
        trees = args.trees or (2 if args.sampling_sweep else 3)
        if args.sampling_sweep:
            res = lib.run_settings_bench(
                args.budget, args.vocab, kinds=tuple(args.verifier), trees=trees, **common
            )
        else:
            res = lib.run_verifier_stage_bench(
                args.budget,
                args.vocab,
                kinds=tuple(args.verifier),
                trees=trees,
                compiled=args.compiled,
                commit=not args.no_commit,
                **common,
            )
    emit(args, {k: v for k, v in res.items() if k != "text"}, res["text"], path)
    return 0


def _batch_bench(args: argparse.Namespace) -> int:
    path = _preflight(args)
    given = pick(args, "budget", "temperature", "verifier_repeats", batch_sizes="batch_size")
    result = lib.run_batch_bench(_bench_source(args), verifiers=args.verifier, **given)
    emit(args, result, lib.format_batch_bench(result), path)
    return 0


def _gpu_check(args: argparse.Namespace) -> int:
    path = result_path(args)
    check_device(args.device)
    device = args.device or ("cuda" if cuda_available() else "cpu")
    if device == "cpu" and not args.tiny:
        print(
            "note: no GPU; the Qwen3-4B-sized check on a CPU is very slow (use --tiny for a smoke test)",
            file=sys.stderr,
        )
    given = pick(args, "tiny", "context", "temperature", budgets="budget", reps="repeats")
    res = lib.run_gpu_check(device=device, **given)
    emit(args, res, lib.format_gpu_check(res), path)
    return 0


def _verifiers_arg(batched: bool, default: list[str]):
    """``--verifier A,B``: engine verifiers, those with a batched form if ``batched`` (each name
    checked by the command, :func:`_check_kinds`)."""
    names = engine_verifier_names(batched=batched).checked_by_the_command()
    return opt(
        "--verifier",
        type=name_list,
        choices=names,
        metavar="VERIFIERS",
        default=default,
        help=f"comma-separated, of {','.join(names)} (default {','.join(default)})",
    )


def _decoding_sampling_args(b: argparse.ArgumentParser) -> None:
    add_sampling_args(b, "the target (every method, AR included, at every --temperature)")


def _batch_sampling_args(bb: argparse.ArgumentParser) -> None:
    add_sampling_args(bb, "the target (tree decoding and AR)")


BENCH_DECODING = Command(
    "decoding",
    _bench,
    help="tau, SR and stage latencies of DFlash chain / DDTree vs autoregressive decoding",
    description="Decode prompts with the autoregressive baseline, DFlash chain and DDTree "
    "(each budget and verifier) on a target + DFlash drafter; print tau, SR, TPOT "
    "and per-round stage latencies, and write JSON results.",
    pieces=(
        model_pair_args(required=False),  # not with --compare
        prompt_set_arg(default="gsm8k"),
        num_prompts_arg(),
        opt(
            "--budget", type=int_list, default=[32, 64, 128], help="DDTree budgets, e.g. 32,64,128"
        ),
        opt("--temperature", type=temperature_list, default=[0.0, 1.0], help="e.g. 0,1"),
        _verifiers_arg(False, ["predraw", "tev"]),
        max_new_tokens_arg(256, "tokens decoded per turn"),
        opt(
            "--max-turns",
            type=positive_int,
            default=None,
            help="keep only the first N user turns of multi-turn sets such as mt-bench (default: all)",
        ),
        seed_arg(0),
        device_args(),
        masked_attention_arg,
        opt(
            "--tev-decision",
            choices=TEV_DECISIONS,
            default="eager",
            help="how TEV's fixed-shape decision runs: eager (default), compiled (torch.compile, one "
            "graph per budget) or graph (replayed as one CUDA graph per budget; CUDA only)",
        ),
        opt("--warmup", type=nonneg_int, default=1, help="untimed warm-up generations"),
        opt(
            "--batch-size",
            type=positive_int,
            default=1,
            metavar="B",
            help="B > 1: decode the prompts B at a time (first user turns, taken cyclically so every "
            "batch is full) with batched DDTree decoding and batched autoregressive decoding in the "
            "same run, alternating batch by batch, and print tokens/s side by side per budget, "
            "temperature and verifier (no traces; --trace-dir, --max-turns and --compare do not "
            "apply). B = 1 (default): the per-prompt bench",
        ),
        _decoding_sampling_args,
        opt(
            "--trace-dir", default=None, help="write one tree trace (.jsonl) per configuration here"
        ),
        result_out_args,
        add_threads,
        no_progress_arg,
        opt(
            "--compare",
            nargs=2,
            metavar=("A.json", "B.json"),
            default=None,
            help="decode nothing: compare two results files (tau/SR deltas B - A with 95%% "
            "intervals, paired by prompt when they share prompts; whether T = 0 outputs match)",
        ),
    ),
)


def _family_arg(t: argparse.ArgumentParser) -> None:
    t.add_argument(
        "--family",
        default="qwen3",
        choices=FAMILIES,
        help="target architecture, with that family's tokenizer conventions and chat template",
    )


TINY_MODELS = Command(
    "tiny-models",
    _tiny,
    help="write a random tiny target + DFlash drafter pair",
    description="Writes OUT/target (Qwen3ForCausalLM via save_pretrained, with a small tokenizer "
    "and chat template) and OUT/draft (DFlash drafter in the released format).",
    pieces=(out_args("target/ and draft/", required=True), _family_arg, seed_arg(0)),
)

BENCH_VERIFIERS = Command(
    "verifiers",
    _verifier_bench,
    help="verifier-stage latency: predraw vs residual vs TEV vs the floor, same trees",
    description="Builds DDTree trees from draft rows that resemble the target (deep, many internal "
    "nodes) and times one verifier call per round (decision + bonus + commit indices; the target "
    "forward is excluded) for predraw, residual and TEV on the same trees, next to the floor: "
    "a logsumexp over the K internal rows plus one float64 categorical draw from one row. "
    "Medians over trees and repeats; stages alternate call by call.",
    pieces=(
        opt(
            "--budget",
            type=int_list,
            default=[32, 64, 128],
            help="comma-separated budgets B (default 32,64,128)",
        ),
        opt(
            "--vocab",
            type=vocab_size,
            default=151936,
            help="vocabulary size V (default 151936, Qwen3)",
        ),
        device_args(
            default="cpu", dtypes=("float32", "bfloat16", "float16"), dtype_default="float32"
        ),
        opt("--temperature", type=temperature_value, default=1.0),
        opt(
            "--trees",
            type=positive_int,
            default=None,
            help="realised trees per budget (default 3; not with --batch-size)",
        ),
        opt(
            "--repeats",
            type=positive_int,
            default=15,
            help="timed calls per tree and verifier (default 15)",
        ),
        opt(
            "--depth",
            type=positive_int,
            default=15,
            help="draft horizon H (default 15, DFlash block 16)",
        ),
        _verifiers_arg(False, ["predraw", "residual", "tev"]),
        opt(
            "--batch-size",
            type=positive_int,
            default=1,
            metavar="B",
            help="B > 1: time the verifier stage per batch of B trees: one batched call on the padded "
            "[B, N, V] logits against B single-tree calls, per budget and verifier (median and min "
            "ms). B = 1 (default): the per-tree stage bench against the floor",
        ),
        add_threads,
        seed_arg(0),
        opt(
            "--sampling-sweep",
            action="store_true",
            help="time each verifier under top-k 50, top-p 0.9, min-p 0.05 and all three at "
            "--temperature, as ratios to temperature only in the same run (processing + decision + bonus)",
        ),
        opt(
            "--no-commit",
            action="store_true",
            help="time the decision alone (no KV-cache commit: the commit is shared by every verifier "
            "and noisy on a loaded machine)",
        ),
        opt(
            "--compiled",
            action="store_true",
            help="also time TEV's decision under torch.compile (fullgraph; compiles once per budget) "
            "and, on CUDA, replayed as a CUDA graph per budget",
        ),
        result_out_args,
    ),
)

GPU_CHECK = Command(
    "gpu-check",
    _gpu_check,
    help="engine latencies on a random Qwen3-4B-shaped pair",
    description="Draft forward, tree-attention verify forward and the verifier stage (decision "
    "+ bonus + KV commit) of predraw and TEV at each budget, on random weights in "
    "bf16 (no downloads). --tiny swaps in tiny sizes for a CPU smoke test.",
    pieces=(
        opt("--tiny", action="store_true", help="tiny sizes (CPU smoke test)"),
        opt("--device", default=None, help="default: cuda if available, else cpu"),
        opt("--budget", type=int_list, default=[32, 64, 128]),
        opt("--context", type=positive_int, default=512),
        opt(
            "--repeats",
            type=positive_int,
            default=20,
            help="timed repetitions per cell (default 20)",
        ),
        opt("--temperature", type=temperature_value, default=1.0),
        result_out_args,
    ),
)

BENCH_BATCH = Command(
    "batch",
    _batch_bench,
    help="batched tree decoding vs batched autoregressive decoding: tokens/s per batch size",
    description="Decodes the prompts B at a time (cyclically, every batch full) with batched "
    "autoregressive decoding and with batched DDTree decoding (one padded tree-attention forward "
    "per round), alternating batch by batch; prints tokens/s side by side, tau and the verifier "
    "stage (decision + bonus + KV commit) per batched round, then the decision latency of one "
    "batched verifier call against B single-tree calls on synthetic deep trees.",
    pieces=(
        model_pair_args(),
        prompt_set_arg(default="gsm8k"),
        num_prompts_arg(),
        opt(
            "--batch-size",
            type=int_list,
            default=[1, 4, 8],
            help="comma-separated batch sizes (default 1,4,8)",
        ),
        opt(
            "--budget",
            type=positive_int,
            default=32,
            help="DDTree budget per sequence (default 32)",
        ),
        _verifiers_arg(True, ["tev"]),
        opt("--temperature", type=temperature_value, default=0.0),
        max_new_tokens_arg(64),
        _batch_sampling_args,
        seed_arg(0),
        device_args(),
        masked_attention_arg,
        opt(
            "--warmup",
            type=nonneg_int,
            default=1,
            help="untimed warm-up generations per batch size",
        ),
        opt(
            "--verifier-repeats",
            type=positive_int,
            default=10,
            help="timed calls per batched-verifier row",
        ),
        result_out_args,
        add_threads,
    ),
)

COMMANDS = (TINY_MODELS, GPU_CHECK)
BENCH = (BENCH_DECODING, BENCH_VERIFIERS, BENCH_BATCH)
