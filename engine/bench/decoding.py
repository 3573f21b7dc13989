"""``exitlaw bench decoding``: tau, speedup and stage latencies of real tree speculative decoding.

For every temperature, each prompt is decoded by the autoregressive baseline
(same target, same runtime) and by DFlash chain and DDTree (each budget) with
each verifier. Reported per configuration (docs/design.md §1.12, "Metrics"):

* ``tau``  -- mean output-block length per round (bonus included);
* ``tpot_ms`` -- decode seconds per generated token (prefill excluded);
* ``SR``   -- ``tpot(AR) / tpot(config)``, the AR baseline measured in this run;
* ``stage_ms`` -- mean milliseconds per round of draft / build / verify_forward /
  decide / commit, and ``verifier_stage_ms = decide + commit`` (the verifier
  stage: decision + bonus + cache commit, excluding the target forward);
* ``matches_ar`` (T = 0 only) -- whether every prompt's tokens equal the baseline's;
* ``t0_divergences`` (T = 0 only) -- each differing (prompt, turn) with its first difference and
  greedy's log-probability lead there: a near-tie or an error (:mod:`~exitlaw.engine.bench.exactness`).

Prompts: read by :func:`.prompt_records.load_prompt_set` (the paper's sets in the
wording DFlash's public benchmark uses, ``NAME=FILE.jsonl`` local copies, ``jsonl:FILE``,
``hf:NAME``) and encoded by :func:`.prompt_encoding.encode_prompt` through the
tokenizer's chat template (thinking disabled) when it has one. Conversations are
decoded turn by turn.

Results (``schema`` ``exitlaw.bench``, version 2) also store ``prompts`` (what was asked)
and, per run, ``outputs``: per prompt and turn the generated token ids and their
decoded text (:func:`outputs_of`); :mod:`.bench_compare` compares two results files.
"""

from __future__ import annotations

import platform
from contextlib import nullcontext
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Sequence

import torch
import transformers
from tqdm.auto import tqdm

from exitlaw.engine.bench.exactness import divergence
from exitlaw.engine.bench.exactness import summary as divergence_summary
from exitlaw.engine.bench.source import BenchSource
from exitlaw.engine.decode.loop import DecodeConfig, GenerationResult, generate
from exitlaw.engine.decode.timing import StageTimer
from exitlaw.engine.decode.work_bounds import check_decode_fits
from exitlaw.engine.models.checkpoint import check_model_paths, load_pair
from exitlaw.engine.prompts.encoding import encode_prompt, has_chat_template
from exitlaw.engine.prompts.records import DATASETS, Prompt, check_prompt_ids, load_prompt_set
from exitlaw.theory import TraceWriter
from exitlaw.theory.sampling_settings import FILTERS, SamplingSettings, check_settings

STAGES = ("draft", "build", "verify_forward", "decide", "commit")


def run_conversation(
    tgt,
    drafter,
    tokenizer,
    prompt: Prompt | Sequence[str],
    cfg: DecodeConfig,
    *,
    device: str,
    chat: bool | None = None,
    trace=None,
    stop: Sequence[int] = (),
    contexts: list[list[int]] | None = None,
) -> list[GenerationResult]:
    """Decode every user turn in order; each answer (this method's own) joins the history of the next.

    ``prompt``: a :class:`.Prompt` or its user turns. A token-id prompt is one turn. ``chat``:
    encode through the chat template (default: when the tokenizer has one). ``contexts`` (a list)
    receives each turn's encoded context, in order.
    """
    if chat is None:
        chat = has_chat_template(tokenizer)
    if isinstance(prompt, Prompt) and prompt.ids is not None:
        if contexts is not None:
            contexts.append(list(prompt.ids))
        return [
            generate(tgt, drafter, list(prompt.ids), cfg, timer=StageTimer(device), trace=trace)
        ]
    turns = prompt.turns if isinstance(prompt, Prompt) else list(prompt)
    messages, results = [], []
    for turn in turns:
        messages.append({"role": "user", "content": turn})
        ids = encode_prompt(tokenizer, messages, chat=chat)
        if contexts is not None:
            contexts.append(list(ids))
        res = generate(tgt, drafter, ids, cfg, timer=StageTimer(device), trace=trace)
        results.append(res)
        answer = [t for t in res.tokens if t not in set(stop)]
        messages.append(
            {"role": "assistant", "content": tokenizer.decode(answer, skip_special_tokens=True)}
        )
    return results


def outputs_of(per_prompt: Sequence[Sequence[GenerationResult]], tokenizer) -> list[dict[str, Any]]:
    """One record per prompt and turn: generated ``tokens``, their decoded ``text`` (special tokens kept),
    and the per-turn counts that per-prompt statistics need (``rounds``, ``block_tokens`` = sum of
    block lengths, ``decode_s``)."""
    out = []
    for i, results in enumerate(per_prompt):
        for t, r in enumerate(results):
            out.append(
                {
                    "prompt": i,
                    "turn": t,
                    "tokens": list(map(int, r.tokens)),
                    "text": tokenizer.decode(r.tokens, skip_special_tokens=False),
                    "rounds": len(r.block_lengths),
                    "block_tokens": int(sum(r.block_lengths)),
                    "decode_s": float(r.decode_seconds),
                }
            )
    return out


def _configs(
    verifiers: Sequence[str], budgets: Sequence[int], block: int
) -> list[tuple[str, str, int]]:
    out = [("chain", v, block - 1) for v in verifiers]
    out += [("ddtree", v, b) for v in verifiers for b in budgets]
    return out


def _aggregate(results: list[GenerationResult]) -> dict[str, Any]:
    rounds = sum(len(r.block_lengths) for r in results)
    tokens = sum(len(r.tokens) for r in results)
    # TPOT leaves out each prefill's first token
    decode_tokens = sum(r.decode_tokens for r in results)
    decode = sum(r.decode_seconds for r in results)
    stage_ms = {}
    for s in {k for r in results for k in r.stages} - {"prefill"}:
        stage_ms[s] = (
            1000.0 * sum(r.stages.get(s, {}).get("total_s", 0.0) for r in results) / max(rounds, 1)
        )
    return {
        "tau": sum(sum(r.block_lengths) for r in results) / max(rounds, 1),
        "rounds": rounds,
        "tokens": tokens,
        "decode_s": decode,
        "tpot_ms": 1000.0 * decode / max(decode_tokens, 1),
        "stage_ms": stage_ms,
    }


def _decode_set(
    tgt,
    drafter,
    tokenizer,
    prompts: Sequence[Prompt],
    cfg: DecodeConfig,
    *,
    device: str,
    chat: bool,
    stop: Sequence[int],
    trace_dir: str | None,
    config: dict,
    bar,
    contexts: list[list[int]] | None = None,
) -> list[list[GenerationResult]]:
    """Every prompt decoded with one method; one list of per-turn results per prompt (``contexts``: see
    :func:`run_conversation`)."""
    writer = _trace_writer(trace_dir, cfg, config) if cfg.method != "ar" else None
    per_prompt = []
    # an exception (Ctrl-C included) discards the unfinished trace: nothing incomplete appears under its name
    with writer if writer is not None else nullcontext():
        for prompt in prompts:
            per_prompt.append(
                run_conversation(
                    tgt,
                    drafter if cfg.method != "ar" else None,
                    tokenizer,
                    prompt,
                    cfg,
                    device=device,
                    chat=chat,
                    trace=writer,
                    stop=stop,
                    contexts=contexts,
                )
            )
            bar.update()
    return per_prompt


def t0_divergences(
    tgt,
    results: Sequence[Sequence[GenerationResult]],
    ar: Sequence[Sequence[GenerationResult]],
    ar_contexts: Sequence[Sequence[int]],
) -> list[dict[str, Any]]:
    """Each (prompt, turn) whose T = 0 tokens differ from greedy AR's, with its first difference
    (:func:`~exitlaw.engine.bench.exactness.divergence`: near-tie, error or length). A turn after one
    that differed had another history than AR's, so it is only marked ``after an earlier turn``."""
    rows, flat = [], 0
    for p, (conv, ar_conv) in enumerate(zip(results, ar)):
        earlier = False
        for t, (r, a) in enumerate(zip(conv, ar_conv)):
            ctx = ar_contexts[flat]
            flat += 1
            if r.tokens == a.tokens:
                continue
            if earlier:
                rows.append({"prompt": p, "turn": t, "kind": "after an earlier turn"})
                continue
            earlier = True
            rows.append({"prompt": p, "turn": t, **divergence(tgt, ctx, r.tokens, a.tokens)})
    return rows


def sampling_filters(filters) -> SamplingSettings:
    """The filters of a bench (a :class:`~exitlaw.theory.SamplingSettings`, whose temperature each
    bench temperature replaces, or ``None``: off), checked before any model is loaded."""
    if filters is None:
        return SamplingSettings(1.0)
    return check_settings(filters)


def filter_knobs(settings: SamplingSettings) -> dict[str, Any]:
    """The filter values a bench row records (``order`` is in the result's ``config.sampling``)."""
    return {f: getattr(settings, f) for f in FILTERS}


def run_bench(
    source: BenchSource,
    *,
    budgets: Sequence[int],
    temperatures: Sequence[float],
    verifiers: Sequence[str],
    trace_dir: str | None = None,
    progress: bool = True,
    max_turns: int | None = None,
) -> dict[str, Any]:
    """Run the benchmark and return the JSON-ready result (config, prompts, runs with their outputs).

    ``source.filters`` (a :class:`~exitlaw.theory.SamplingSettings`; its temperature is replaced by each of
    ``temperatures``) apply to every run, AR included; the result records them (``config.sampling``
    and each run).

    Multi-turn sets (MT-Bench) are decoded turn by turn, each method answering with its own
    history; ``max_turns`` keeps only the first turns. Stats pool every turn. Every run keeps
    its ``outputs`` (:func:`outputs_of`); ``prompts`` lists what was asked, in order.
    """
    b = _load_bench(source, max_turns, max(budgets))
    configs = _configs(verifiers, budgets, b.drafter.block_size)
    config = _bench_config(source, b, budgets, temperatures, verifiers, max_turns)
    first = encode_prompt(b.tokenizer, b.prompts[0], chat=b.chat)  # the warm-up prompt
    _warm_up(b.tgt, b.drafter, first, source.warmup, max(budgets))
    bar = tqdm(
        total=len(temperatures) * len(b.prompts) * (1 + len(configs)),
        disable=not progress,
        desc="bench",
    )
    kw = dict(
        device=b.device, chat=b.chat, stop=b.stop, trace_dir=trace_dir, config=config, bar=bar
    )
    runs = []
    for temp in temperatures:
        base = dict(
            settings=b.sampling.at(float(temp)),
            max_new_tokens=source.max_new_tokens,
            stop_tokens=b.stop,
            seed=source.seed,
        )
        knobs = {"temperature": float(temp), **filter_knobs(b.sampling)}
        runs += _temperature_runs(b, configs, base, knobs, kw)
    bar.close()
    return {
        "schema": "exitlaw.bench",
        "version": 2,
        "config": config,
        "environment": _environment(b.device),
        "prompts": [p.to_json() for p in b.prompts],
        "runs": runs,
    }


@dataclass
class _Bench:
    """What one bench decodes with: the checked filters, the prompts, the loaded pair and tokenizer."""

    sampling: SamplingSettings
    prompts: list[Prompt]
    tgt: Any
    drafter: Any
    tokenizer: Any
    device: str
    chat: bool
    stop: tuple[int, ...]


def _load_bench(source: BenchSource, max_turns: int | None, budget: int) -> _Bench:
    """Check the inputs, load the prompts and the models, and refuse a round of ``budget`` nodes that
    cannot fit, all before any decoding; each check runs as early as what it reads allows."""
    # one line naming the path, before anything is read
    check_model_paths(source.target, source.draft)
    device = source.device or ("cuda" if torch.cuda.is_available() else "cpu")
    torch_dtype = None if source.dtype == "auto" else getattr(torch, source.dtype)
    if max_turns is not None and max_turns < 1:
        raise ValueError(f"max_turns must be >= 1, got {max_turns}")
    sampling = sampling_filters(source.filters)
    prompts = _bench_prompts(source, max_turns)  # fail fast, before loading models
    tgt, drafter = load_pair(
        source.target,
        source.draft,
        device=device,
        dtype=torch_dtype,
        masked_attention=source.masked_attention,
    )
    check_prompt_ids(prompts, tgt.vocab_size, f"the target {source.target}")
    tokenizer = _tokenizer(source.target)
    chat = has_chat_template(tokenizer)
    # a round that cannot fit is refused with its estimate
    _check_longest_fits(tgt, tokenizer, prompts, source.max_new_tokens, budget, chat, device)
    stop = _stop_tokens(tokenizer, tgt)
    return _Bench(sampling, prompts, tgt, drafter, tokenizer, device, chat, stop)


def _bench_config(
    source: BenchSource, b: _Bench, budgets, temperatures, verifiers, max_turns
) -> dict[str, Any]:
    """The result's ``config``: what was run, on what, with which models and filters."""
    return {
        "target": str(source.target),
        "draft": str(source.draft),
        "dataset": source.dataset,
        "budgets": list(budgets),
        "temperatures": list(temperatures),
        "verifiers": list(verifiers),
        "max_new_tokens": source.max_new_tokens,
        "num_prompts": len(b.prompts),
        "turns": sum(max(1, len(p.turns)) for p in b.prompts),
        "max_turns": max_turns,
        "seed": source.seed,
        "device": b.device,
        "dtype": str(b.tgt.dtype),
        "masked_attention": b.tgt.masked_attention,
        "chat_template": b.chat,
        "block_size": b.drafter.block_size,
        "stop_tokens": list(b.stop),
        "sampling": b.sampling.filters(),
    }


def _bench_prompts(source: BenchSource, max_turns: int | None) -> list[Prompt]:
    """The bench's prompt set, each conversation cut to its first ``max_turns`` user turns."""
    prompts = load_prompt_set(source.dataset, limit=source.num_prompts)
    if max_turns is None:
        return prompts
    return [p if p.ids is not None else replace(p, turns=p.turns[:max_turns]) for p in prompts]


def _tokenizer(target: str):
    """The target's tokenizer, from its local directory when one exists, else from the Hub name."""
    return transformers.AutoTokenizer.from_pretrained(
        str(Path(target)) if Path(target).exists() else target
    )


def _check_longest_fits(
    tgt, tokenizer, prompts: Sequence[Prompt], max_new_tokens: int, budget: int, chat: bool, device
) -> None:
    """Refuse, with its estimate, a round of ``budget`` nodes that cannot fit at the longest context
    (the longest encoded prompt plus ``max_new_tokens`` per turn)."""
    longest = max(
        len(encode_prompt(tokenizer, p, chat=chat)) + max(1, len(p.turns)) * max_new_tokens
        for p in prompts
    )
    check_decode_fits(
        tgt.model.config,
        budget=budget,
        context=longest,
        element_bytes=tgt.dtype.itemsize,
        device=device,
    )


def _warm_up(tgt, drafter, ids: list[int], times: int, budget: int) -> None:
    """Compile kernels and fill allocator caches: ``times`` short DDTree decodes of ``ids``."""
    for _ in range(times):
        generate(tgt, drafter, ids, DecodeConfig(method="ddtree", budget=budget, max_new_tokens=4))


def _temperature_runs(
    b: _Bench, configs, base: dict, knobs: dict, kw: dict
) -> list[dict[str, Any]]:
    """The runs at one temperature: greedy-or-sampled AR first (the SR baseline), then every
    (method, verifier, budget) of ``configs``; ``base``: the DecodeConfig fields they share, ``knobs``:
    the temperature and filter values each row records."""
    tgt, drafter, tokenizer, prompts = b.tgt, b.drafter, b.tokenizer, b.prompts
    ar_contexts: list[list[int]] = []
    ar_cfg = DecodeConfig(method="ar", **base)
    ar = _decode_set(tgt, drafter, tokenizer, prompts, ar_cfg, contexts=ar_contexts, **kw)
    ar_flat = [r for conv in ar for r in conv]
    ar_stats = _aggregate(ar_flat)
    runs = [
        {
            "method": "ar",
            "verifier": None,
            "budget": None,
            **knobs,
            **ar_stats,
            "SR": 1.0,
            "outputs": outputs_of(ar, tokenizer),
        }
    ]
    for method, verifier, budget in configs:
        cfg = DecodeConfig(method=method, verifier=verifier, budget=budget, **base)
        res = _decode_set(tgt, drafter, tokenizer, prompts, cfg, **kw)
        flat = [r for conv in res for r in conv]
        stats = _aggregate(flat)
        stage_ms = stats["stage_ms"]
        stage_ms["verifier_stage"] = stage_ms.get("decide", 0.0) + stage_ms.get("commit", 0.0)
        run = {
            "method": method,
            "verifier": verifier,
            "budget": budget,
            **knobs,
            **stats,
            "SR": ar_stats["tpot_ms"] / stats["tpot_ms"] if stats["tpot_ms"] > 0 else float("nan"),
        }
        if knobs["temperature"] == 0:
            run["matches_ar"] = all(r.tokens == a.tokens for r, a in zip(flat, ar_flat))
            run["t0_divergences"] = t0_divergences(tgt, res, ar, ar_contexts)
        run["outputs"] = outputs_of(res, tokenizer)
        runs.append(run)
    return runs


def _environment(device: str) -> dict[str, str]:
    """The software and hardware a result was measured on."""
    env = {
        "torch": torch.__version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "transformers": transformers.__version__,
    }
    if device.startswith("cuda"):
        env["gpu"] = torch.cuda.get_device_name(0)
    return env


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
    name = f"{cfg.method}_{cfg.verifier}_B{cfg.budget}_T{cfg.temperature:g}.jsonl"
    meta = {**config, "decode": decode_record(cfg)}
    return TraceWriter(Path(trace_dir) / name, meta)


def decode_record(cfg: DecodeConfig) -> dict[str, Any]:
    """JSON record of a decode config, its settings spelled out flat (the trace header's format)."""
    settings = cfg.settings.as_dict()
    return {
        "method": cfg.method,
        "verifier": cfg.verifier,
        "budget": cfg.budget,
        "temperature": settings.pop("temperature"),
        "max_new_tokens": cfg.max_new_tokens,
        "stop_tokens": list(cfg.stop_tokens),
        "seed": cfg.seed,
        **settings,
    }


def format_bench(result: dict[str, Any]) -> str:
    """A fixed-width table of the runs."""
    head = (
        f"{'method':<7} {'verifier':<8} {'B':>4} {'T':>4} {'tau':>6} {'SR':>6} {'TPOT ms':>8} "
        + " ".join(f"{s[:9]:>9}" for s in (*STAGES, "verifier_stage"))
        + "  (stage ms per round)"
    )
    lines = [head]
    for r in result["runs"]:
        st = r["stage_ms"]
        cells = " ".join(f"{st.get(s, float('nan')):>9.3f}" for s in (*STAGES, "verifier_stage"))
        if r["method"] == "ar":
            cells = f"target_forward {st.get('target_forward', 0):.3f}  sample {st.get('sample', 0):.3f}"
        extra = (
            ""
            if "matches_ar" not in r
            else (
                "  T=0 tokens == AR"
                if r["matches_ar"]
                else f"  T=0 MISMATCH vs AR ({divergence_summary(r.get('t0_divergences', []))})"
            )
        )
        lines.append(
            f"{r['method']:<7} {str(r['verifier'] or '-'):<8} {str(r['budget'] or '-'):>4} "
            f"{r['temperature']:>4g} {r['tau']:>6.3f} {r['SR']:>6.3f} {r['tpot_ms']:>8.3f} {cells}{extra}"
        )
    return "\n".join(lines)


__all__ = ["run_bench", "run_conversation", "outputs_of", "format_bench", "DATASETS", "STAGES"]
