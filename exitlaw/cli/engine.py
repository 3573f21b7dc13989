"""The real engine: ``bench``, ``tiny-models``, ``bench-verifiers`` and ``gpu-check``
(torch is imported inside the handlers; nothing here imports JAX)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from exitlaw.theory.registry import ENGINE, ENGINE_BATCHED, verifier_names

from .args import (
    add_sampling_flags,
    add_threads,
    float_list,
    int_list,
    name_list,
    nonneg_int,
    positive_int,
    sampling_filters,
    set_torch_threads,
)


def register(sub: argparse._SubParsersAction) -> None:
    b = sub.add_parser(
        "bench",
        help="tau, SR and stage latencies of DFlash chain / DDTree vs autoregressive",
        description="Decode prompts with the autoregressive baseline, DFlash chain and DDTree "
        "(each budget and verifier) on a target + DFlash drafter; print tau, SR, TPOT "
        "and per-round stage latencies, and write JSON results.",
    )
    b.add_argument(
        "--target", help="target checkpoint directory or Hub id (required unless --compare)"
    )
    b.add_argument(
        "--draft", help="DFlash drafter checkpoint directory or Hub id (required unless --compare)"
    )
    b.add_argument(
        "--dataset",
        default="gsm8k",
        help="gsm8k | humaneval | math500 | mt-bench (NAME=FILE.jsonl: a local copy of the set's rows) "
        "| jsonl:FILE | FILE.jsonl | hf:NAME[:SPLIT]",
    )
    b.add_argument(
        "--num-prompts", type=positive_int, default=None, help="use only the first N prompts"
    )
    b.add_argument(
        "--budget", type=int_list, default=[32, 64, 128], help="DDTree budgets, e.g. 32,64,128"
    )
    b.add_argument("--temperature", type=float_list, default=[0.0, 1.0], help="e.g. 0,1")
    b.add_argument(
        "--verifier",
        type=name_list,
        choices=verifier_names(implemented=ENGINE).checked_by_the_command(),
        metavar="VERIFIER",
        default=["predraw", "tev"],
        help="e.g. predraw,tev (also greedy, residual)",
    )
    b.add_argument("--max-new-tokens", type=positive_int, default=256, help="per turn")
    b.add_argument(
        "--max-turns",
        type=int,
        default=None,
        help="keep only the first N user turns of multi-turn sets such as mt-bench (default: all)",
    )
    b.add_argument("--seed", type=int, default=0)
    b.add_argument("--device", default=None, help="cpu | cuda (default: cuda if available)")
    b.add_argument("--dtype", default="auto", choices=["auto", "float32", "bfloat16", "float16"])
    b.add_argument("--warmup", type=nonneg_int, default=1, help="untimed warm-up generations")
    b.add_argument(
        "--batch-size",
        type=positive_int,
        default=1,
        metavar="B",
        help="B > 1: decode the prompts B at a time (first user turns, taken cyclically so every batch "
        "is full) with batched DDTree decoding and batched autoregressive decoding in the same run, "
        "alternating batch by batch, and print tokens/s side by side per budget, temperature and "
        "verifier (no traces; --trace-dir, --max-turns and --compare do not apply). "
        "B = 1 (default): the per-prompt bench",
    )
    add_sampling_flags(b, "the target (every method, AR included, at every --temperature)")
    b.add_argument(
        "--trace-dir", default=None, help="write one tree trace (.jsonl) per configuration here"
    )
    b.add_argument("--out", default=None, help="results JSON path")
    b.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    add_threads(b)
    b.add_argument("--no-progress", action="store_true")
    b.add_argument(
        "--compare",
        nargs=2,
        metavar=("A.json", "B.json"),
        default=None,
        help="decode nothing: compare two results files (tau/SR deltas B - A with 95%% intervals, "
        "paired by prompt when they share prompts; whether T = 0 outputs match); --out keeps it",
    )
    b.set_defaults(func=_bench)

    t = sub.add_parser(
        "tiny-models",
        help="write a random tiny Qwen3 target + DFlash drafter (real on-disk formats)",
        description="Writes OUT/target (Qwen3ForCausalLM via save_pretrained, with a small tokenizer "
        "and chat template) and OUT/draft (DFlash drafter in the released format).",
    )
    t.add_argument("--out", required=True)
    from exitlaw.engine.models.config import (
        FAMILIES,
    )  # no torch: configs are built inside functions

    t.add_argument(
        "--family",
        default="qwen3",
        choices=FAMILIES,
        help="target architecture, with that family's tokenizer conventions and chat template",
    )
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--overwrite", action="store_true")
    t.set_defaults(func=_tiny)

    v = sub.add_parser(
        "bench-verifiers",
        help="verifier-stage latency: predraw vs residual vs TEV vs the floor, same trees",
        description="Builds DDTree trees from draft rows that resemble the target (deep, many internal nodes) "
        "and times one verifier call per round (decision + bonus + commit indices; the target "
        "forward is excluded) for predraw, residual and TEV on the same trees, next to the floor: "
        "a logsumexp over the K internal rows plus one float64 categorical draw from one row. "
        "Medians over trees and repeats; stages alternate call by call.",
    )
    v.add_argument(
        "--budget",
        type=int_list,
        default=[32, 64, 128],
        help="comma-separated budgets B (default 32,64,128)",
    )
    v.add_argument(
        "--vocab", type=int, default=151936, help="vocabulary size V (default 151936, Qwen3)"
    )
    v.add_argument("--device", default="cpu", help="torch device: cpu or cuda (default cpu)")
    v.add_argument(
        "--dtype", default="float32", choices=["float32", "bfloat16", "float16"], help="logit dtype"
    )
    v.add_argument("--temperature", type=float, default=1.0)
    v.add_argument(
        "--trees",
        type=int,
        default=None,
        help="realised trees per budget (default 3; not with --batch)",
    )
    v.add_argument(
        "--repeats", type=int, default=15, help="timed calls per tree and verifier (default 15)"
    )
    v.add_argument(
        "--depth", type=int, default=15, help="draft horizon H (default 15, DFlash block 16)"
    )
    v.add_argument(
        "--verifiers",
        type=name_list,
        choices=verifier_names(implemented=ENGINE).checked_by_the_command(),
        metavar="VERIFIERS",
        default=["predraw", "residual", "tev"],
        help="comma-separated subset of predraw,residual,tev",
    )
    v.add_argument(
        "--batch",
        type=positive_int,
        default=1,
        metavar="B",
        help="B > 1: time the verifier stage per batch of B trees: one batched call on the padded "
        "[B, N, V] logits against B single-tree calls, per budget and verifier (median and min ms). "
        "B = 1 (default): the per-tree stage bench against the floor",
    )
    add_threads(v)
    v.add_argument("--seed", type=int, default=0)
    v.add_argument(
        "--sampling-sweep",
        action="store_true",
        help="time each verifier under top-k 50, top-p 0.9, min-p 0.05 and all three at --temperature, "
        "as ratios to temperature only in the same run (processing + decision + bonus)",
    )
    v.add_argument("--json", action="store_true", help="print the results (and config) as JSON")
    v.set_defaults(func=_verifier_bench)

    g = sub.add_parser(
        "gpu-check",
        help="latencies of the real engine on a random-weight Qwen3-4B-shaped pair",
        description="Draft forward, tree-attention verify forward and the verifier stage (decision "
        "+ bonus + KV commit) of predraw and TEV at each budget, on random weights in "
        "bf16 (no downloads). --tiny swaps in tiny sizes for a CPU smoke test.",
    )
    g.add_argument("--tiny", action="store_true", help="tiny sizes (CPU smoke test)")
    g.add_argument("--device", default=None, help="default: cuda if available, else cpu")
    g.add_argument("--budget", type=int_list, default=[32, 64, 128])
    g.add_argument("--context", type=int, default=512)
    g.add_argument("--reps", type=int, default=20)
    g.add_argument("--temperature", type=float, default=1.0)
    g.add_argument("--out", default=None, help="write the results (JSON) here")
    g.add_argument(
        "--json",
        nargs="?",
        const=True,
        default=False,
        help="print the results as JSON (the former `--json FILE` still writes FILE, as --out does)",
    )
    g.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    g.set_defaults(func=_gpu_check)

    bb = sub.add_parser(
        "bench-batch",
        help="batched tree decoding vs batched autoregressive decoding: tokens/s per batch size",
        description="Decodes the prompts B at a time (cyclically, every batch full) with batched autoregressive "
        "decoding and with batched DDTree decoding (one padded tree-attention forward per round), "
        "alternating batch by batch; prints tokens/s side by side, tau and the verifier stage "
        "(decision + bonus + KV commit) per batched round, then the decision latency of one "
        "batched verifier call against B single-tree calls on synthetic deep trees.",
    )
    bb.add_argument("--target", required=True, help="target checkpoint directory or Hub id")
    bb.add_argument("--draft", required=True, help="DFlash drafter checkpoint directory or Hub id")
    bb.add_argument(
        "--dataset", default="gsm8k", help="gsm8k | humaneval | math500 | mt-bench | jsonl:FILE"
    )
    bb.add_argument("--num-prompts", type=int, default=None, help="use only the first N prompts")
    bb.add_argument(
        "--batch-size",
        type=int_list,
        default=[1, 4, 8],
        help="comma-separated batch sizes (default 1,4,8)",
    )
    bb.add_argument(
        "--budget", type=int, default=32, help="DDTree budget per sequence (default 32)"
    )
    bb.add_argument(
        "--verifier",
        type=name_list,
        choices=verifier_names(implemented=ENGINE_BATCHED).checked_by_the_command(),
        metavar="VERIFIER",
        default=["tev"],
        help="e.g. tev,predraw (also greedy, residual)",
    )
    bb.add_argument("--temperature", type=float, default=0.0)
    bb.add_argument("--max-new-tokens", type=int, default=64)
    add_sampling_flags(bb, "the target (tree decoding and AR)")
    bb.add_argument("--seed", type=int, default=0)
    bb.add_argument("--device", default=None, help="cpu | cuda (default: cuda if available)")
    bb.add_argument("--dtype", default="auto", choices=["auto", "float32", "bfloat16", "float16"])
    bb.add_argument(
        "--warmup", type=int, default=1, help="untimed warm-up generations per batch size"
    )
    bb.add_argument(
        "--verifier-repeats", type=int, default=10, help="timed calls per batched-verifier row"
    )
    bb.add_argument("--out", default=None, help="results JSON path")
    bb.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    add_threads(bb)
    bb.set_defaults(func=_batch_bench)


def _refuse_existing(path: str | None, overwrite: bool) -> None:
    if path and Path(path).exists() and not overwrite:
        raise FileExistsError(f"{path} exists; pass --overwrite to replace it")


def _write_json(path: str, data: dict) -> None:
    """Results through a temporary name and a rename: a cut run leaves the old file or none, never half."""
    from exitlaw.theory.atomic_io import atomic_write_json

    atomic_write_json(path, data, indent=1)
    print(f"wrote {path}")


def _check_device(device: str | None) -> None:
    if device and device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise ValueError(
                f"--device {device} requested but this torch build sees no CUDA device"
            )


def _bench(args: argparse.Namespace) -> int:
    if args.batch_size > 1:
        clash = [
            flag
            for flag, on in (
                ("--compare", args.compare),
                ("--trace-dir", args.trace_dir),
                ("--max-turns", args.max_turns is not None),
            )
            if on
        ]
        if clash:
            raise ValueError(
                f"--batch-size {args.batch_size} (batched decoding) does not take {', '.join(clash)}"
            )
        return _bench_batched(args)
    if args.compare:
        return _bench_compare(args)
    from exitlaw.engine.bench.decoding import format_bench, run_bench

    _bench_preflight(args, " (unless --compare A.json B.json)")
    result = run_bench(
        args.target,
        args.draft,
        dataset=args.dataset,
        budgets=args.budget,
        temperatures=args.temperature,
        verifiers=args.verifier,
        max_new_tokens=args.max_new_tokens,
        num_prompts=args.num_prompts,
        seed=args.seed,
        device=args.device,
        dtype=args.dtype,
        warmup=args.warmup,
        trace_dir=args.trace_dir,
        progress=not args.no_progress,
        max_turns=args.max_turns,
        filters=sampling_filters(args),
    )
    if args.threads is not None:
        result.setdefault("config", {})["threads"] = args.threads
    print(format_bench(result))
    if args.out:
        _write_json(args.out, result)
    return 0


def _bench_preflight(args: argparse.Namespace, hint: str = "") -> None:
    """Checks shared by the bench commands, before any model is loaded or file written."""
    from exitlaw.engine.decode.verifiers import KINDS

    if not args.target or not args.draft:
        raise ValueError(f"--target and --draft are required{hint}")
    bad = [v for v in args.verifier if v not in KINDS]
    if bad:
        raise ValueError(f"unknown verifier(s) {bad}; choose from {', '.join(KINDS)}")
    _refuse_existing(args.out, args.overwrite)
    _check_device(args.device)
    set_torch_threads(args.threads)


def _bench_batched(args: argparse.Namespace) -> int:
    from exitlaw.engine.bench.batch import format_batch_bench, run_batched_bench

    if min(args.budget) < 1:
        raise ValueError(f"--budget values must be >= 1, got {args.budget}")
    _bench_preflight(args)
    result = run_batched_bench(
        args.target,
        args.draft,
        dataset=args.dataset,
        batch_size=args.batch_size,
        budgets=args.budget,
        temperatures=args.temperature,
        verifiers=args.verifier,
        max_new_tokens=args.max_new_tokens,
        num_prompts=args.num_prompts,
        seed=args.seed,
        device=args.device,
        dtype=args.dtype,
        warmup=args.warmup,
        filters=sampling_filters(args),
    )
    if args.threads is not None:
        result["config"]["threads"] = args.threads
    print(format_batch_bench(result))
    if args.out:
        _write_json(args.out, result)
    return 0


def _bench_compare(args: argparse.Namespace) -> int:
    from exitlaw.engine.bench.compare import compare_files, format_comparison

    _refuse_existing(args.out, args.overwrite)
    cmp = compare_files(*args.compare)
    print(format_comparison(cmp))
    if args.out:
        _write_json(args.out, cmp)
    return 0


def _tiny(args: argparse.Namespace) -> int:
    from exitlaw.engine.models.tiny import write_tiny_models

    if Path(args.out).exists() and not Path(args.out).is_dir():
        raise ValueError(
            f"--out {args.out} is an existing file; tiny-models writes a directory (target/ and draft/)"
        )
    target, draft = write_tiny_models(
        args.out, seed=args.seed, overwrite=args.overwrite, family=args.family
    )
    print(f"target: {target}\ndraft:  {draft}")
    return 0


def _verifier_bench(args: argparse.Namespace) -> int:
    import torch

    from exitlaw.engine.bench.verifiers import run_verifier_bench

    if args.vocab < 2:
        raise ValueError(f"--vocab must be >= 2, got {args.vocab}")
    if args.batch > 1:
        if args.trees is not None:
            raise ValueError(
                f"--trees does not apply with --batch {args.batch} (every batch holds B trees)"
            )
        if args.sampling_sweep:
            raise ValueError(
                f"--sampling-sweep times single trees; it does not take --batch {args.batch}"
            )
        return _verifier_bench_batched(args)
    if args.sampling_sweep:
        return _settings_bench(args)
    trees = 3 if args.trees is None else args.trees
    if trees < 1 or args.repeats < 1:
        raise ValueError("--trees and --repeats must be >= 1")
    _check_device(args.device)
    before = torch.get_num_threads()
    try:
        set_torch_threads(args.threads)
        res = run_verifier_bench(
            args.budget,
            args.vocab,
            device=args.device,
            trees=trees,
            repeats=args.repeats,
            depth=args.depth,
            temperature=args.temperature,
            dtype=args.dtype,
            kinds=tuple(args.verifiers),
            seed=args.seed,
        )
    finally:
        torch.set_num_threads(before)
    print(
        json.dumps({k: v for k, v in res.items() if k != "text"}, indent=1)
        if args.json
        else res["text"]
    )
    return 0


def _settings_bench(args: argparse.Namespace) -> int:
    import torch

    from exitlaw.engine.bench.settings import run_settings_bench

    _check_device(args.device)
    before = torch.get_num_threads()
    try:
        set_torch_threads(args.threads)
        res = run_settings_bench(
            args.budget,
            args.vocab,
            temperature=args.temperature,
            kinds=tuple(args.verifiers),
            device=args.device,
            trees=2 if args.trees is None else args.trees,
            repeats=args.repeats,
            depth=args.depth,
            dtype=args.dtype,
            seed=args.seed,
        )
    finally:
        torch.set_num_threads(before)
    print(
        json.dumps({k: v for k, v in res.items() if k != "text"}, indent=1)
        if args.json
        else res["text"]
    )
    return 0


def _verifier_bench_batched(args: argparse.Namespace) -> int:
    import torch

    from exitlaw.engine.bench.batch import format_batch_verifier_stage, run_batch_verifier_bench
    from exitlaw.engine.decode.verifiers import KINDS

    bad = [v for v in args.verifiers if v not in KINDS]
    if bad:
        raise ValueError(f"unknown verifier(s) {bad}; choose from {', '.join(KINDS)}")
    if args.repeats < 1 or min(args.budget) < 1:
        raise ValueError("--repeats and --budget values must be >= 1")
    _check_device(args.device)
    before = torch.get_num_threads()
    try:
        set_torch_threads(args.threads)
        rows = []
        for budget in args.budget:
            rows += run_batch_verifier_bench(
                (args.batch,),
                int(budget),
                args.vocab,
                kinds=tuple(args.verifiers),
                temperature=args.temperature,
                device=args.device,
                depth=args.depth,
                repeats=args.repeats,
                seed=args.seed,
                dtype=args.dtype,
            )
    finally:
        torch.set_num_threads(before)
    config = {
        "batch": args.batch,
        "budgets": list(args.budget),
        "vocab": args.vocab,
        "device": args.device,
        "dtype": args.dtype,
        "temperature": args.temperature,
        "depth": args.depth,
        "repeats": args.repeats,
        "verifiers": list(args.verifiers),
        "seed": args.seed,
    }
    print(
        json.dumps({"config": config, "rows": rows}, indent=1)
        if args.json
        else format_batch_verifier_stage(rows)
    )
    return 0


def _batch_bench(args: argparse.Namespace) -> int:
    from exitlaw.engine.bench.batch import format_batch_bench, run_batch_bench
    from exitlaw.engine.decode.verifiers import KINDS

    bad = [v for v in args.verifier if v not in KINDS]
    if bad:
        raise ValueError(f"unknown verifier(s) {bad}; choose from {', '.join(KINDS)}")
    if (
        min(args.batch_size) < 1
        or args.budget < 1
        or args.max_new_tokens < 1
        or args.verifier_repeats < 1
    ):
        raise ValueError(
            "--batch-size, --budget, --max-new-tokens and --verifier-repeats must be >= 1"
        )
    _refuse_existing(args.out, args.overwrite)
    _check_device(args.device)
    set_torch_threads(args.threads)
    result = run_batch_bench(
        args.target,
        args.draft,
        dataset=args.dataset,
        batch_sizes=args.batch_size,
        budget=args.budget,
        verifiers=args.verifier,
        temperature=args.temperature,
        max_new_tokens=args.max_new_tokens,
        num_prompts=args.num_prompts,
        seed=args.seed,
        device=args.device,
        dtype=args.dtype,
        warmup=args.warmup,
        verifier_repeats=args.verifier_repeats,
        filters=sampling_filters(args),
    )
    print(format_batch_bench(result))
    if args.out:
        _write_json(args.out, result)
    return 0


def _gpu_check(args: argparse.Namespace) -> int:
    import torch

    from exitlaw.engine.bench.gpu_check import format_check, run_check

    if isinstance(args.json, str):
        print(
            "exitlaw: note: `gpu-check --json FILE` is now `gpu-check --out FILE`", file=sys.stderr
        )
        args.out, args.json = args.json, False
    _refuse_existing(args.out, args.overwrite)
    _check_device(args.device)
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cpu" and not args.tiny:
        print(
            "note: no GPU; the Qwen3-4B-sized check on a CPU is very slow (use --tiny for a smoke test)",
            file=sys.stderr,
        )
    res = run_check(
        tiny=args.tiny,
        device=device,
        budgets=tuple(args.budget),
        context=args.context,
        reps=args.reps,
        temperature=args.temperature,
    )
    print(json.dumps(res, indent=2) if args.json else format_check(res))
    if args.out:
        _write_json(args.out, res)
    return 0
