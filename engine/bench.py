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

import platform
from dataclasses import asdict
from pathlib import Path
from typing import Any, Sequence

import torch

from .checkpoint import load_pair
from .decode import DecodeConfig, GenerationResult, generate
from .prompt_records import iter_jsonl_objects, user_turns
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


def load_conversations(dataset: str, limit: int | None = None) -> list[list[str]]:
    """User turns of every conversation of a named set or ``jsonl:FILE`` (one turn for single-turn sets).

    JSONL records are read by :func:`.prompt_records.user_turns` (``turns``, ShareGPT
    ``conversations``, OpenAI ``messages``, or a ``prompt`` / ``text`` string).
    """
    if dataset.startswith("jsonl:"):
        out = [user_turns(rec, where) for where, rec in iter_jsonl_objects(dataset[len("jsonl:"):])]
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
            turns = list(text) if isinstance(text, list) else [text]
            out.append([fmt.format(turns[0]), *turns[1:]])  # the set's format applies to the first turn
    else:
        raise ValueError(f"unknown dataset {dataset!r}; choose {', '.join(DATASETS)} or jsonl:FILE")
    if not out:
        raise ValueError(f"dataset {dataset!r} holds no prompts")
    return out[:limit] if limit else out


def load_prompts(dataset: str, limit: int | None = None) -> list[str]:
    """First-turn prompt texts of a named set or ``jsonl:FILE``."""
    return [turns[0] for turns in load_conversations(dataset, limit)]


def encode_prompt(tokenizer, text: str | list[dict]) -> list[int]:
    """Chat template with thinking disabled when the tokenizer has a template, else plain encoding.

    ``text`` is one user message or a whole conversation (``[{"role": ..., "content": ...}]``).
    """
    messages = [{"role": "user", "content": text}] if isinstance(text, str) else text
    if getattr(tokenizer, "chat_template", None):
        ids = tokenizer.apply_chat_template(messages, tokenize=True, add_generation_prompt=True,
                                            enable_thinking=False)
        if isinstance(ids, dict) or hasattr(ids, "input_ids"):
            ids = ids["input_ids"]
        return [int(t) for t in ids]
    if len(messages) > 1:
        raise ValueError("a multi-turn conversation needs a tokenizer with a chat template")
    return [int(t) for t in tokenizer(messages[0]["content"])["input_ids"]]


def run_conversation(tgt, drafter, tokenizer, turns: Sequence[str], cfg: DecodeConfig, *, device: str,
                     trace=None, stop: Sequence[int] = ()) -> list[GenerationResult]:
    """Decode every user turn in order; each answer (this method's own) joins the history of the next."""
    messages, results = [], []
    for turn in turns:
        messages.append({"role": "user", "content": turn})
        res = generate(tgt, drafter, encode_prompt(tokenizer, messages), cfg, timer=StageTimer(device), trace=trace)
        results.append(res)
        answer = [t for t in res.tokens if t not in set(stop)]
        messages.append({"role": "assistant", "content": tokenizer.decode(answer, skip_special_tokens=True)})
    return results


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
              progress: bool = True, max_turns: int | None = None) -> dict[str, Any]:
    """Run the benchmark and return the JSON-ready result (config included).

    Multi-turn sets (MT-Bench) are decoded turn by turn, each method answering with its own
    history; ``max_turns`` keeps only the first turns. Stats pool every turn.
    """
    from tqdm.auto import tqdm
    from transformers import AutoTokenizer

    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    torch_dtype = None if dtype == "auto" else getattr(torch, dtype)
    conversations = load_conversations(dataset, num_prompts)  # fail fast, before loading models
    if max_turns is not None:
        if max_turns < 1:
            raise ValueError(f"max_turns must be >= 1, got {max_turns}")
        conversations = [c[:max_turns] for c in conversations]
    tgt, drafter = load_pair(target, draft, device=device, dtype=torch_dtype)
    tokenizer = AutoTokenizer.from_pretrained(str(Path(target)) if Path(target).exists() else target)
    prompts = [encode_prompt(tokenizer, c[0]) for c in conversations]  # first turns (warm-up)
    stop = _stop_tokens(tokenizer, tgt)
    configs = _configs(verifiers, budgets, drafter.block_size)
    config = {"target": str(target), "draft": str(draft), "dataset": dataset, "budgets": list(budgets),
              "temperatures": list(temperatures), "verifiers": list(verifiers), "max_new_tokens": max_new_tokens,
              "num_prompts": len(prompts), "turns": sum(len(c) for c in conversations), "max_turns": max_turns,
              "seed": seed, "device": device, "dtype": str(tgt.dtype),
              "block_size": drafter.block_size, "stop_tokens": list(stop)}
    for _ in range(warmup):  # compile kernels, fill allocator caches
        generate(tgt, drafter, prompts[0], DecodeConfig(method="ddtree", budget=max(budgets), max_new_tokens=4))
    runs = []
    bar = tqdm(total=len(temperatures) * len(conversations) * (1 + len(configs)), disable=not progress, desc="bench")
    for temp in temperatures:
        base = dict(temperature=float(temp), max_new_tokens=max_new_tokens, stop_tokens=stop, seed=seed)
        ar = []
        for conv in conversations:
            ar += run_conversation(tgt, None, tokenizer, conv, DecodeConfig(method="ar", **base), device=device,
                                   stop=stop)
            bar.update()
        ar_stats = _aggregate(ar)
        runs.append({"method": "ar", "verifier": None, "budget": None, "temperature": float(temp), **ar_stats,
                     "SR": 1.0})
        for method, verifier, budget in configs:
            cfg = DecodeConfig(method=method, verifier=verifier, budget=budget, **base)
            writer = _trace_writer(trace_dir, cfg, config)
            res = []
            try:
                for conv in conversations:
                    res += run_conversation(tgt, drafter, tokenizer, conv, cfg, device=device, trace=writer, stop=stop)
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


__all__ = ["run_bench", "load_conversations", "load_prompts", "encode_prompt", "run_conversation", "format_bench",
           "DATASETS"]
