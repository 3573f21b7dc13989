"""``exitlaw train``: ExitTrain on a target + DFlash drafter pair (runs unchanged under torchrun)."""

from __future__ import annotations

import argparse
import json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "train", help="ExitTrain: train a DFlash drafter with exit-guided, prefix-weighted or token-only loss",
        description="Continuations of the prompts are sampled from the frozen target (cached on disk); each "
                    "step builds the inference DDTree at every anchor, scores it with the target under tree "
                    "attention and minimises CE + lambda * sum_v w~(v) (-log q_depth(v)(x_v)). Under "
                    "`torchrun --nproc_per_node N` the drafter is sharded with FSDP (gloo on CPU).")
    p.add_argument("--target", required=True, help="target checkpoint directory or Hub id (with its tokenizer)")
    p.add_argument("--draft", required=True, help="DFlash drafter checkpoint to start from (released format)")
    p.add_argument("--prompts", required=True, help="jsonl:FILE, FILE.jsonl or hf:NAME[:SPLIT]")
    p.add_argument("--out", required=True, help="output directory (must be new or empty unless --resume)")
    p.add_argument("--resume", action="store_true", help="continue the run in --out from its latest checkpoint")
    p.add_argument("--objective", choices=("exit", "prefix", "token"), default="exit")
    p.add_argument("--lam", type=float, default=1.0, help="weight of the tree term (forced to 0 for token)")
    p.add_argument("--weight-norm", choices=("batch", "tree"), default="batch",
                   help="normalise the tree term's weights over the batch (a tree counts by its non-root exit "
                        "mass; default) or per tree (every tree counts equally)")
    p.add_argument("--budget", type=int, default=64, help="DDTree budget of the trained trees")
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--batch-size", type=int, default=4, help="sequences per step and rank")
    p.add_argument("--anchors", type=int, default=8, help="anchors per sequence")
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--min-lr-ratio", type=float, default=0.1)
    p.add_argument("--warmup", type=int, default=0)
    p.add_argument("--weight-decay", type=float, default=0.01)
    p.add_argument("--grad-clip", type=float, default=1.0)
    p.add_argument("--checkpoint-every", type=int, default=50)
    p.add_argument("--log-every", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--amp", choices=("auto", "bf16", "off"), default="auto",
                   help="bf16 autocast (auto: on CUDA devices that support it)")
    p.add_argument("--prompt-limit", type=int, default=None)
    p.add_argument("--chat", action="store_true", help="wrap string prompts in the target's chat template")
    p.add_argument("--max-new-tokens", type=int, default=256, help="length of the target continuations")
    p.add_argument("--gen-temperature", type=float, default=1.0, help="temperature of the target continuations")
    p.add_argument("--gen-batch", type=int, default=16)
    p.add_argument("--continuations-server", default=None, metavar="URL",
                   help="take target continuations from an OpenAI-compatible server (e.g. vLLM serving the "
                        "target) at URL instead of decoding locally")
    p.add_argument("--server-model", default=None, help="model name the server expects (default: --target)")
    p.add_argument("--cache-dir", default=None, help="continuation cache (default: OUT/../.exitlaw-cache)")
    p.add_argument("--device", default=None, help="cpu, cuda, cuda:1 ... (default: cuda:LOCAL_RANK if available)")
    p.add_argument("--dtype", choices=("float32", "bfloat16", "float16"), default="float32")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=_train)


def _train(args: argparse.Namespace) -> int:
    import os
    from pathlib import Path

    import torch

    from exitlaw.engine.checkpoint import load_pair, resolve_checkpoint
    from exitlaw.engine.train_data import cached_sequences, encode_prompts, load_prompts, target_fingerprint
    from exitlaw.engine.train_loop import TrainConfig, train

    cfg = TrainConfig(objective=args.objective, lam=args.lam, weight_norm=args.weight_norm, budget=args.budget, steps=args.steps,
                      batch_size=args.batch_size, anchors_per_seq=args.anchors, lr=args.lr,
                      min_lr_ratio=args.min_lr_ratio, warmup_steps=args.warmup, weight_decay=args.weight_decay,
                      grad_clip=args.grad_clip, checkpoint_every=args.checkpoint_every, log_every=args.log_every,
                      seed=args.seed, amp=args.amp)
    local = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device(args.device or (f"cuda:{local}" if torch.cuda.is_available() else "cpu"))
    if device.type == "cuda":
        torch.cuda.set_device(device)
    target, drafter = load_pair(args.target, args.draft, device=device, dtype=getattr(torch, args.dtype))
    from exitlaw.engine.train_loop import init_distributed

    init_distributed(device)  # under torchrun: the ranks share the continuation generation below
    from transformers import AutoTokenizer

    tpath = resolve_checkpoint(args.target)
    tokenizer = AutoTokenizer.from_pretrained(str(tpath))
    prompts = encode_prompts(tokenizer, load_prompts(args.prompts, limit=args.prompt_limit), chat=args.chat)
    stops = [t for t in (tokenizer.eos_token_id,) if t is not None]
    cache_dir = Path(args.cache_dir) if args.cache_dir else Path(args.out).resolve().parent / ".exitlaw-cache"
    generate = source = None
    if args.continuations_server:
        from functools import partial

        from exitlaw.engine.continuation_server import server_continuations

        model = args.server_model or str(args.target)
        generate = partial(server_continuations, args.continuations_server, tokenizer=tokenizer, model=model,
                           max_new_tokens=args.max_new_tokens, temperature=args.gen_temperature, seed=args.seed,
                           stop_tokens=stops)
        source = f"server:{args.continuations_server}:{model}"
    data = cached_sequences(target, target_fingerprint(tpath), prompts, cache_dir,
                            max_new_tokens=args.max_new_tokens, temperature=args.gen_temperature,
                            seed=args.seed, batch_size=args.gen_batch, stop_tokens=stops,
                            generate=generate, source=source)
    info = {"target": str(args.target), "draft": str(args.draft), "prompts": args.prompts,
            "max_new_tokens": args.max_new_tokens, "gen_temperature": args.gen_temperature,
            "continuations_server": args.continuations_server,
            "sequences": len(data), "device": str(device), "dtype": args.dtype}
    final = train(target, drafter, data, cfg, args.out, resume=args.resume, run_info=info,
                  progress=not args.no_progress)
    if int(os.environ.get("RANK", "0")) == 0:
        metrics = Path(args.out) / "metrics.jsonl"
        last = metrics.read_text(encoding="utf-8").splitlines()[-1] if metrics.is_file() else "{}"
        print(json.dumps({"final_drafter": str(final), "last": json.loads(last)}))
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()
    return 0
