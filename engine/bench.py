"""``exitlaw bench``: tau, speedup and stage latencies of real tree speculative decoding.

For every temperature, each prompt is decoded by the autoregressive baseline
(same target, same runtime) and by DFlash chain and DDTree (each budget) with
each verifier. Reported per configuration (DESIGN.md section 1, "Metrics"):

* ``tau``  -- mean output-block length per round (bonus included);
* ``tpot_ms`` -- decode seconds per generated token (prefill excluded);
* ``SR``   -- ``tpot(AR) / tpot(config)``, the AR baseline measured in this run;
* ``stage_ms`` -- mean milliseconds per round of draft / build / verify_forward /
  decide / commit, and ``verifier_stage_ms = decide + commit`` (the verifier
  stage: decision + bonus + cache commit, excluding the target forward);
* ``matches_ar`` (T = 0 only) -- whether every prompt's tokens equal the baseline's.

Prompts: the paper's formats (the same wording DFlash's public benchmark uses)
through the tokenizer's chat template with thinking disabled; only a
conversation's first turn is used. Named sets load through ``datasets``;
``jsonl:FILE`` reads lines ``{"turns": [...]}``, ``{"prompt": ...}`` or ``{"text": ...}``.
"""

from __future__ import annotations

import json
import platform
from dataclasses import asdict
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch

from .checkpoint import load_pair
from .decode import DecodeConfig, GenerationResult, generate
from .timing import StageTimer

_STEP = "\nPlease reason step by step, and put your final answer within \\boxed{{}}."
DATASETS: dict[str, tuple[tuple, dict, str, str]] = {
    # name: (load_dataset args, kwargs, field, format)
    "gsm8k": (("openai/gsm8k", "main"), {"split": "test"}, "question", "{}" + _STEP),
    "math500": (("HuggingFaceH4/MATH-500",), {"split": "test"}, "problem", "{}" + _STEP),
    "humaneval": (("openai/openai_humaneval",), {"split": "test"}, "prompt",
                  "Write a solution to the following problem and make sure that it passes the tests:\n```python\n{}\n```"),
    "mt-bench": (("HuggingFaceH4/mt_bench_prompts",), {"split": "train"}, "prompt", "{}"),
}
STAGES = ("draft", "build", "verify_forward", "decide", "commit")


def load_prompts(dataset: str, limit: int | None = None) -> list[str]:
    """First-turn prompt texts of a named set or ``jsonl:FILE``."""
    if dataset.startswith("jsonl:"):
        path = Path(dataset[len("jsonl:"):])
        if not path.is_file():
            raise FileNotFoundError(f"prompt file {str(path)!r} does not exist")
        out = []
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as err:
                raise ValueError(f"{path}:{i}: not valid JSON ({err.msg})") from None
            text = rec.get("turns", [None])[0] if isinstance(rec.get("turns"), list) else rec.get("prompt", rec.get("text"))
            if not isinstance(text, str):
                raise ValueError(f"{path}:{i}: expected a 'turns' list, a 'prompt' or a 'text' string")
            out.append(text)
    elif dataset in DATASETS:
        args, kwargs, fld, fmt = DATASETS[dataset]
        try:
            from datasets import load_dataset
        except ImportError:
            raise ValueError(f"dataset {dataset!r} needs the `datasets` package (pip install datasets); "
                             "or pass --dataset jsonl:FILE") from None
        try:
            rows = load_dataset(*args, **kwargs)
        except Exception as err:  # offline / hub errors come in many types; name the set and the way out
            raise ValueError(f"could not load dataset {dataset!r} ({type(err).__name__}: {err}); "
                             "offline? pass --dataset jsonl:FILE") from err
        out = []
        for row in rows:
            text = row[fld]
            out.append(fmt.format(text[0] if isinstance(text, list) else text))
    else:
        raise ValueError(f"unknown dataset {dataset!r}; choose {', '.join(DATASETS)} or jsonl:FILE")
    if not out:
        raise ValueError(f"dataset {dataset!r} holds no prompts")
    return out[:limit] if limit else out


def encode_prompt(tokenizer, text: str) -> list[int]:
    """Chat template with thinking disabled when the tokenizer has a template, else plain encoding."""
    if getattr(tokenizer, "chat_template", None):
        ids = tokenizer.apply_chat_template([{"role": "user", "content": text}], tokenize=True,
                                            add_generation_prompt=True, enable_thinking=False)
        if isinstance(ids, dict) or hasattr(ids, "input_ids"):
            ids = ids["input_ids"]
        return [int(t) for t in ids]
    return [int(t) for t in tokenizer(text)["input_ids"]]


def _configs(verifiers: Sequence[str], budgets: Sequence[int], block: int) -> list[tuple[str, str, int]]:
    out = [("chain", v, block - 1) for v in verifiers]
    out += [("ddtree", v, b) for v in verifiers for b in budgets]
    return out


def _aggregate(results: list[GenerationResult]) -> dict[str, Any]:
    rounds = sum(len(r.block_lengths) for r in results)
    tokens = sum(len(r.tokens) for r in results)
    decode = sum(r.decode_seconds for r in results)
    stage_ms = {}
    for s in {k for r in results for k in r.stages} - {"prefill"}:
        stage_ms[s] = 1000.0 * sum(r.stages.get(s, {}).get("total_s", 0.0) for r in results) / max(rounds, 1)
    return {"tau": sum(sum(r.block_lengths) for r in results) / max(rounds, 1), "rounds": rounds,
            "tokens": tokens, "decode_s": decode, "tpot_ms": 1000.0 * decode / max(tokens, 1), "stage_ms": stage_ms}


def run_bench(target: str, draft: str, *, dataset: str, budgets: Sequence[int], temperatures: Sequence[float],
              verifiers: Sequence[str], max_new_tokens: int, num_prompts: int | None = None, seed: int = 0,
              device: str | None = None, dtype: str = "auto", warmup: int = 1, trace_dir: str | None = None,
              progress: bool = True) -> dict[str, Any]:
    """Run the benchmark and return the JSON-ready result (config included)."""
    from tqdm.auto import tqdm
    from transformers import AutoTokenizer

    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    torch_dtype = None if dtype == "auto" else getattr(torch, dtype)
    texts = load_prompts(dataset, num_prompts)  # fail fast, before loading models
    tgt, drafter = load_pair(target, draft, device=device, dtype=torch_dtype)
    tokenizer = AutoTokenizer.from_pretrained(str(Path(target)) if Path(target).exists() else target)
    prompts = [encode_prompt(tokenizer, t) for t in texts]
    stop = _stop_tokens(tokenizer, tgt)
    configs = _configs(verifiers, budgets, drafter.block_size)
    config = {"target": str(target), "draft": str(draft), "dataset": dataset, "budgets": list(budgets),
              "temperatures": list(temperatures), "verifiers": list(verifiers), "max_new_tokens": max_new_tokens,
              "num_prompts": len(prompts), "seed": seed, "device": device, "dtype": str(tgt.dtype),
              "block_size": drafter.block_size, "stop_tokens": list(stop)}
    for _ in range(warmup):  # compile kernels, fill allocator caches
        generate(tgt, drafter, prompts[0], DecodeConfig(method="ddtree", budget=max(budgets), max_new_tokens=4))
    runs = []
    bar = tqdm(total=len(temperatures) * len(prompts) * (1 + len(configs)), disable=not progress, desc="bench")
    for temp in temperatures:
        base = dict(temperature=float(temp), max_new_tokens=max_new_tokens, stop_tokens=stop, seed=seed)
        ar = []
        for p in prompts:
            ar.append(generate(tgt, None, p, DecodeConfig(method="ar", **base), timer=StageTimer(device)))
            bar.update()
        ar_stats = _aggregate(ar)
        runs.append({"method": "ar", "verifier": None, "budget": None, "temperature": float(temp), **ar_stats,
                     "SR": 1.0})
        for method, verifier, budget in configs:
            cfg = DecodeConfig(method=method, verifier=verifier, budget=budget, **base)
            writer = _trace_writer(trace_dir, cfg, config)
            res = []
            try:
                for p in prompts:
                    res.append(generate(tgt, drafter, p, cfg, timer=StageTimer(device), trace=writer))
                    bar.update()
            finally:
                if writer is not None:
                    writer.close()
            stats = _aggregate(res)
            stats["stage_ms"]["verifier_stage"] = stats["stage_ms"].get("decide", 0.0) + stats["stage_ms"].get("commit", 0.0)
            run = {"method": method, "verifier": verifier, "budget": budget, "temperature": float(temp), **stats,
                   "SR": ar_stats["tpot_ms"] / stats["tpot_ms"] if stats["tpot_ms"] > 0 else float("nan")}
            if temp == 0:
                run["matches_ar"] = all(r.tokens == a.tokens for r, a in zip(res, ar))
            runs.append(run)
    bar.close()
    env = {"torch": torch.__version__, "python": platform.python_version(), "machine": platform.machine()}
    import transformers

    env["transformers"] = transformers.__version__
    if device.startswith("cuda"):
        env["gpu"] = torch.cuda.get_device_name(0)
    return {"schema": "exitlaw.bench", "version": 1, "config": config, "environment": env, "runs": runs}


def _stop_tokens(tokenizer, tgt) -> tuple[int, ...]:
    ids = set()
    if tokenizer.eos_token_id is not None:
        ids.add(int(tokenizer.eos_token_id))
    gen_eos = getattr(tgt.model.generation_config, "eos_token_id", None)
    if gen_eos is not None:
        ids.update(int(t) for t in (gen_eos if isinstance(gen_eos, (list, tuple)) else [gen_eos]))
    return tuple(sorted(ids))


def _trace_writer(trace_dir: str | None, cfg: DecodeConfig, config: dict):
    if trace_dir is None:
        return None
    from exitlaw.theory import TraceWriter

    name = f"{cfg.method}_{cfg.verifier}_B{cfg.budget}_T{cfg.temperature:g}.jsonl"
    meta = {**config, "decode": {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(cfg).items()}}
    return TraceWriter(Path(trace_dir) / name, meta)


def format_bench(result: dict[str, Any]) -> str:
    """A fixed-width table of the runs."""
    head = f"{'method':<7} {'verifier':<8} {'B':>4} {'T':>4} {'tau':>6} {'SR':>6} {'TPOT ms':>8} " + \
           " ".join(f"{s[:9]:>9}" for s in (*STAGES, "verifier_stage")) + "  (stage ms per round)"
    lines = [head]
    for r in result["runs"]:
        st = r["stage_ms"]
        cells = " ".join(f"{st.get(s, float('nan')):>9.3f}" for s in (*STAGES, "verifier_stage"))
        if r["method"] == "ar":
            cells = f"target_forward {st.get('target_forward', 0):.3f}  sample {st.get('sample', 0):.3f}"
        extra = "" if "matches_ar" not in r else ("  T=0 tokens == AR" if r["matches_ar"] else "  T=0 MISMATCH vs AR")
        lines.append(f"{r['method']:<7} {str(r['verifier'] or '-'):<8} {str(r['budget'] or '-'):>4} "
                     f"{r['temperature']:>4g} {r['tau']:>6.3f} {r['SR']:>6.3f} {r['tpot_ms']:>8.3f} {cells}{extra}")
    return "\n".join(lines)


__all__ = ["run_bench", "load_prompts", "encode_prompt", "format_bench", "DATASETS"]
