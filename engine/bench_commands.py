"""``exitlaw bench`` and ``exitlaw tiny-models`` (torch is imported inside the handlers)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def _floats(text: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None


def _ints(text: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None


def _names(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


def register(sub: argparse._SubParsersAction) -> None:
    b = sub.add_parser("bench", help="tau, SR and stage latencies of DFlash chain / DDTree vs autoregressive",
                       description="Decode prompts with the autoregressive baseline, DFlash chain and DDTree "
                                   "(each budget and verifier) on a target + DFlash drafter; print tau, SR, TPOT "
                                   "and per-round stage latencies, and write JSON results.")
    b.add_argument("--target", required=True, help="target checkpoint directory or Hub id")
    b.add_argument("--draft", required=True, help="DFlash drafter checkpoint directory or Hub id")
    b.add_argument("--dataset", default="gsm8k", help="gsm8k | humaneval | math500 | mt-bench | jsonl:FILE")
    b.add_argument("--num-prompts", type=int, default=None, help="use only the first N prompts")
    b.add_argument("--budget", type=_ints, default=[32, 64, 128], help="DDTree budgets, e.g. 32,64,128")
    b.add_argument("--temperature", type=_floats, default=[0.0, 1.0], help="e.g. 0,1")
    b.add_argument("--verifier", type=_names, default=["predraw", "tev"], help="e.g. predraw,tev (also greedy, residual)")
    b.add_argument("--max-new-tokens", type=int, default=256, help="per turn")
    b.add_argument("--max-turns", type=int, default=None,
                   help="keep only the first N user turns of multi-turn sets such as mt-bench (default: all)")
    b.add_argument("--seed", type=int, default=0)
    b.add_argument("--device", default=None, help="cpu | cuda (default: cuda if available)")
    b.add_argument("--dtype", default="auto", choices=["auto", "float32", "bfloat16", "float16"])
    b.add_argument("--warmup", type=int, default=1, help="untimed warm-up generations")
    b.add_argument("--trace-dir", default=None, help="write one tree trace (.jsonl) per configuration here")
    b.add_argument("--out", default=None, help="results JSON path")
    b.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    b.add_argument("--threads", type=int, default=None,
                   help="torch intra-op CPU threads (default: torch's choice; on a small shared CPU, 1 is often fastest)")
    b.add_argument("--no-progress", action="store_true")
    b.set_defaults(func=_bench)

    t = sub.add_parser("tiny-models", help="write a random tiny Qwen3 target + DFlash drafter (real on-disk formats)",
                       description="Writes OUT/target (Qwen3ForCausalLM via save_pretrained, with a small tokenizer "
                                   "and chat template) and OUT/draft (DFlash drafter in the released format).")
    t.add_argument("--out", required=True)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--overwrite", action="store_true")
    t.set_defaults(func=_tiny)


def _bench(args: argparse.Namespace) -> int:
    from .bench import format_bench, run_bench
    from .verifiers import KINDS

    bad = [v for v in args.verifier if v not in KINDS]
    if bad:
        raise ValueError(f"unknown verifier(s) {bad}; choose from {', '.join(KINDS)}")
    if args.out and Path(args.out).exists() and not args.overwrite:
        raise FileExistsError(f"{args.out} exists; pass --overwrite to replace it")
    if args.threads is not None:
        if args.threads < 1:
            raise ValueError(f"--threads must be >= 1, got {args.threads}")
        import torch

        torch.set_num_threads(args.threads)
    result = run_bench(args.target, args.draft, dataset=args.dataset, budgets=args.budget,
                       temperatures=args.temperature, verifiers=args.verifier, max_new_tokens=args.max_new_tokens,
                       num_prompts=args.num_prompts, seed=args.seed, device=args.device, dtype=args.dtype,
                       warmup=args.warmup, trace_dir=args.trace_dir, progress=not args.no_progress,
                       max_turns=args.max_turns)
    if args.threads is not None:
        result.setdefault("config", {})["threads"] = args.threads
    print(format_bench(result))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.out}")
    return 0


def _tiny(args: argparse.Namespace) -> int:
    from .tiny import write_tiny_models

    target, draft = write_tiny_models(args.out, seed=args.seed, overwrite=args.overwrite)
    print(f"target: {target}\ndraft:  {draft}")
    return 0
