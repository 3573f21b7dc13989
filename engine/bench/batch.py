"""Throughput of batched tree decoding against batched autoregressive decoding, in one run.

:func:`run_batch_decode_bench` decodes the same prompts, ``B`` at a time, with
:func:`~exitlaw.engine.decode.batch_generate.generate_ar_batch` and with
:func:`~exitlaw.engine.decode.batch_generate.generate_batch` (each verifier), batch by batch
and alternating methods (so load drifts hit all alike). Every batch holds exactly
``B`` rows: prompts are taken cyclically. Reported per ``(B, verifier)``:

* ``tokens_per_s`` and ``ar_tokens_per_s`` -- generated tokens over the summed
  per-round stage time (prefill excluded), and their ratio ``speedup``;
* ``tau`` -- mean block length per row and round;
* ``stage_ms_per_round`` -- per batched round: draft, build, verify_forward, decide,
  commit, and ``verifier_stage`` = decide + commit (docs/design.md §1.12, Metrics: decision +
  bonus + cache commit, the target forward excluded), i.e. the verifier stage **per
  batch**; ``ar_step_ms`` likewise per batched AR step;
* ``matches_ar`` at T = 0 (every row equal to its AR row).

:func:`run_batch_verifier_bench` times the decision alone on synthetic deep trees
(:func:`~exitlaw.engine.bench.verifiers.make_cases`): one :func:`verify_batch` call on
the padded ``[B, N, V]`` logits against ``B`` single-tree :func:`verify` calls, median
and minimum over repeats, per kind (on a shared CPU the minimum is the cleaner number:
a descheduled call costs tens of ms). Nothing is asserted here; timing is from the outside.

:func:`run_batched_bench` is ``exitlaw bench decoding --batch-size B``: the decode bench at one
batch size for every budget and temperature of a ``bench`` run (``exitlaw bench batch``
is :func:`run_batch_bench`: several batch sizes, one budget, plus the verifier stage).
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any, Sequence

import torch
from transformers import AutoTokenizer

from exitlaw.engine.bench.decoding import _stop_tokens, filter_knobs, sampling_filters
from exitlaw.engine.bench.source import BenchSource
from exitlaw.engine.bench.verifiers import make_cases
from exitlaw.engine.decode.batch_generate import (
    BatchGenerationResult,
    generate_ar_batch,
    generate_batch,
)
from exitlaw.engine.decode.batch_tree import to_batch_tree
from exitlaw.engine.decode.dispatch import verify, verify_batch
from exitlaw.engine.decode.loop import DecodeConfig
from exitlaw.engine.decode.verifiers import VerifierGenerators, engine_names
from exitlaw.engine.decode.work_bounds import check_decode_fits
from exitlaw.engine.models.checkpoint import check_model_paths, load_pair
from exitlaw.engine.models.target import TargetModel
from exitlaw.engine.prompts.encoding import encode_prompt, has_chat_template
from exitlaw.engine.prompts.records import check_prompt_ids, load_prompt_set
from exitlaw.theory.sampling_settings import SamplingSettings


def _batches(prompts: Sequence[Sequence[int]], size: int) -> list[list[list[int]]]:
    """``ceil(len / size)`` batches of exactly ``size`` prompts, taken cyclically."""
    if size < 1:
        raise ValueError(f"batch sizes must be >= 1, got {size}")
    if not prompts:
        raise ValueError("the benchmark needs at least one prompt")
    count = -(-len(prompts) // size)
    return [
        [list(prompts[(i * size + j) % len(prompts)]) for j in range(size)] for i in range(count)
    ]


def _per_round(results: list[BatchGenerationResult]) -> dict[str, float]:
    rounds = sum(r.rounds for r in results)
    totals: dict[str, float] = {}
    for r in results:
        for stage, v in r.stages.items():
            if stage != "prefill":
                totals[stage] = totals.get(stage, 0.0) + v["total_s"]
    return {k: 1000.0 * v / max(rounds, 1) for k, v in sorted(totals.items())}


def _throughput(results: list[BatchGenerationResult]) -> tuple[int, float]:
    return sum(r.decode_tokens for r in results), sum(r.decode_seconds for r in results)


def run_batch_decode_bench(
    target: TargetModel,
    drafter,
    prompts: Sequence[Sequence[int]],
    *,
    batch_sizes: Sequence[int] = (1, 4, 8),
    budget: int = 32,
    verifiers: Sequence[str] = ("tev",),
    temperature: float = 0.0,
    max_new_tokens: int = 64,
    method: str = "ddtree",
    stop_tokens: Sequence[int] = (),
    seed: int = 0,
    warmup: int = 1,
    filters: SamplingSettings | None = None,
) -> list[dict[str, Any]]:
    """One row per ``(batch size, verifier)``: batched tree decoding vs batched AR on the same batches
    (``filters``: the settings' filters at ``temperature`` for both, recorded in every row)."""
    sampling = sampling_filters(filters)
    knobs = filter_knobs(sampling)
    base = dict(
        settings=sampling.at(float(temperature)),
        max_new_tokens=max_new_tokens,
        stop_tokens=tuple(stop_tokens),
        seed=seed,
    )
    cfgs = {v: DecodeConfig(method=method, verifier=v, budget=budget, **base) for v in verifiers}
    ar_cfg = DecodeConfig(method="ar", **base)
    rows = []
    for size in batch_sizes:
        batches = _batches(prompts, size)
        for _ in range(warmup):  # kernels, allocator caches, lazy initialisation
            generate_ar_batch(target, batches[0], DecodeConfig(method="ar", max_new_tokens=4))
            generate_batch(
                target,
                drafter,
                batches[0],
                DecodeConfig(method=method, budget=budget, max_new_tokens=4),
            )
        ar: list[BatchGenerationResult] = []
        tree: dict[str, list[BatchGenerationResult]] = {v: [] for v in verifiers}
        for batch in batches:
            ar.append(generate_ar_batch(target, batch, ar_cfg))
            for v, cfg in cfgs.items():
                tree[v].append(generate_batch(target, drafter, batch, cfg))
        ar_tokens, ar_seconds = _throughput(ar)
        ar_rate = ar_tokens / ar_seconds if ar_seconds > 0 else float("nan")
        ar_step = sum(_per_round(ar).values())
        for v in verifiers:
            tokens, seconds = _throughput(tree[v])
            rate = tokens / seconds if seconds > 0 else float("nan")
            stages = _per_round(tree[v])
            stages["verifier_stage"] = stages.get("decide", 0.0) + stages.get("commit", 0.0)
            blocks = [x for r in tree[v] for row in r.block_lengths for x in row]
            row = {
                "batch_size": size,
                "method": method,
                "verifier": v,
                "budget": budget,
                "temperature": float(temperature),
                **knobs,
                "batches": len(batches),
                "tokens": sum(r.num_tokens for r in tree[v]),
                "decode_tokens": tokens,
                "tokens_per_s": rate,
                "ar_tokens_per_s": ar_rate,
                "speedup": rate / ar_rate,
                "tau": sum(blocks) / max(len(blocks), 1),
                "rounds": sum(r.rounds for r in tree[v]),
                "stage_ms_per_round": stages,
                "ar_step_ms": ar_step,
            }
            if temperature == 0:
                row["matches_ar"] = all(t.tokens == a.tokens for t, a in zip(tree[v], ar))
            rows.append(row)
    return rows


def _times_ms(fn, repeats: int, device: torch.device) -> tuple[float, float]:
    """Median and minimum wall ms of ``fn()`` (the minimum is robust to preemption on a shared CPU)."""
    out = []
    for _ in range(repeats):
        if device.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        if device.type == "cuda":
            torch.cuda.synchronize()
        out.append(1000.0 * (time.perf_counter() - t0))
    return float(statistics.median(out)), float(min(out))


DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def run_batch_verifier_bench(
    batch_sizes: Sequence[int] = (1, 4, 8),
    budget: int = 32,
    vocab: int = 151936,
    *,
    kinds: Sequence[str] = engine_names(batched=True, sequential=False),
    temperature: float = 1.0,
    device: str = "cpu",
    depth: int = 7,
    repeats: int = 10,
    seed: int = 0,
    dtype: str = "float32",
) -> list[dict[str, Any]]:
    """Decision latency per batch: one batched call vs ``B`` single-tree calls, median and min ms per kind."""
    dev = torch.device(device)
    dt = DTYPES.get(dtype)
    if dt is None:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    if min(batch_sizes, default=0) < 1 or budget < 1 or repeats < 1:
        raise ValueError(
            f"batch sizes, budget and repeats must be >= 1, got {list(batch_sizes)}, {budget}, {repeats}"
        )
    rows = []
    for size in batch_sizes:
        cases = make_cases(
            budget, vocab, trees=size, depth=depth, device=dev, dtype=dt, seed=seed + size
        )
        bt = to_batch_tree([c.tree.tree for c in cases], dev)
        logits = torch.full((size, bt.width, vocab), -30.0, device=dev, dtype=dt)
        for b, c in enumerate(cases):
            logits[b, : c.tree.num_nodes] = c.logits
        for kind in kinds:
            t = SamplingSettings(0.0 if kind == "greedy" else temperature)
            gens = VerifierGenerators(seed, dev)
            verify_batch(kind, bt, logits, t, gens)  # warm-up
            batched, batched_min = _times_ms(
                lambda: verify_batch(kind, bt, logits, t, gens), repeats, dev
            )
            looped, looped_min = _times_ms(
                lambda: [verify(kind, c.tree, c.logits, t, gens) for c in cases], repeats, dev
            )
            rows.append(
                {
                    "batch_size": size,
                    "kind": kind,
                    "budget": budget,
                    "vocab": vocab,
                    "temperature": t.temperature,
                    "batched_ms": batched,
                    "looped_ms": looped,
                    "looped_over_batched": looped / batched,
                    "batched_min_ms": batched_min,
                    "looped_min_ms": looped_min,
                    "looped_over_batched_min": looped_min / batched_min,
                }
            )
    return rows


def run_batch_bench(
    source: BenchSource,
    *,
    batch_sizes: Sequence[int],
    budget: int,
    verifiers: Sequence[str],
    temperature: float,
    verifier_repeats: int = 10,
) -> dict[str, Any]:
    """Load the pair, encode first-turn prompts, run both benchmarks; JSON-ready result with its config.

    Prompts are read and encoded as ``exitlaw bench decoding`` does (``prompt_records``, ``prompt_encoding``:
    chat template when the tokenizer has one); multi-turn records contribute their first turn.
    """
    tgt, drafter, prompts, stop, config = _load_inputs(
        source,
        budget=budget,
        rows=max(batch_sizes),
        settings={
            "batch_sizes": list(batch_sizes),
            "budget": budget,
            "verifiers": list(verifiers),
            "temperature": float(temperature),
        },
    )
    decode = run_batch_decode_bench(
        tgt,
        drafter,
        prompts,
        batch_sizes=batch_sizes,
        budget=budget,
        verifiers=verifiers,
        temperature=temperature,
        max_new_tokens=source.max_new_tokens,
        stop_tokens=stop,
        seed=source.seed,
        warmup=source.warmup,
        filters=source.filters,
    )
    batched = engine_names(batched=True, sequential=False)  # one call per batch
    kinds = [k for k in batched if k in verifiers] or ["tev"]
    stage = run_batch_verifier_bench(
        batch_sizes,
        budget,
        tgt.vocab_size,
        kinds=kinds,
        temperature=temperature if temperature > 0 else 1.0,
        device=config["device"],
        depth=drafter.block_size - 1,
        repeats=verifier_repeats,
        seed=source.seed,
    )
    return _batch_bench_result(config, decode, stage)


def _batch_bench_result(
    config: dict[str, Any], decode: list[dict[str, Any]], stage: list[dict[str, Any]]
) -> dict[str, Any]:
    """The JSON-ready result of a batched bench (schema ``exitlaw.batch_bench`` v1): ``config``, the
    decode rows and the verifier-stage rows (empty when the stage did not run)."""
    return {
        "schema": "exitlaw.batch_bench",
        "version": 1,
        "config": config,
        "decode": decode,
        "verifier_stage": stage,
    }


def _load_inputs(source: BenchSource, *, budget: int, rows: int, settings: dict[str, Any]):
    """``(target model, drafter, first-turn prompt ids, stop tokens, config)`` as ``exitlaw bench decoding``
    reads them from ``source``, refused before decoding when the largest round (``budget`` nodes in
    each of ``rows`` rows) cannot fit; ``config`` records the inputs with the run's ``settings``."""
    target, dataset, max_new_tokens = source.target, source.dataset, source.max_new_tokens
    sampling = sampling_filters(source.filters)  # before loading models
    check_model_paths(target, source.draft)  # one line naming the path, before anything is read
    device = source.device or ("cuda" if torch.cuda.is_available() else "cpu")
    records = load_prompt_set(dataset, limit=source.num_prompts)  # fail fast, before loading models
    tgt, drafter = load_pair(
        target,
        source.draft,
        device=device,
        dtype=None if source.dtype == "auto" else getattr(torch, source.dtype),
        masked_attention=source.masked_attention,
    )
    check_prompt_ids(records, tgt.vocab_size, f"the target {target}")  # before any decoding
    tokenizer = AutoTokenizer.from_pretrained(
        str(Path(target)) if Path(target).exists() else target
    )
    chat = has_chat_template(tokenizer)
    # first user turn (or the ids)
    prompts = [encode_prompt(tokenizer, r, chat=chat) for r in records]
    stop = _stop_tokens(tokenizer, tgt)
    _check_fits(
        tgt, prompts, budget=budget, rows=rows, max_new_tokens=max_new_tokens, device=device
    )
    config = {
        "target": str(target),
        "draft": str(source.draft),
        "dataset": dataset,
        **settings,
        "max_new_tokens": max_new_tokens,
        "num_prompts": len(prompts),
        "chat": chat,
        "seed": source.seed,
        "device": device,
        "dtype": str(tgt.dtype),
        "masked_attention": tgt.masked_attention,
        "stop_tokens": list(stop),
        "sampling": sampling.filters(),
    }
    return tgt, drafter, prompts, stop, config


def _check_fits(
    tgt: TargetModel,
    prompts: Sequence[Sequence[int]],
    *,
    budget: int,
    rows: int,
    max_new_tokens: int,
    device: str,
) -> None:
    """Refuse, before decoding, a batched round that cannot fit (:func:`.work_bounds.check_decode_fits`)."""
    check_decode_fits(
        tgt.model.config,
        budget=budget,
        context=max(map(len, prompts)) + max_new_tokens,
        rows=rows,
        element_bytes=tgt.dtype.itemsize,
        device=device,
    )


def run_batched_bench(
    source: BenchSource,
    *,
    batch_size: int,
    budgets: Sequence[int],
    temperatures: Sequence[float],
    verifiers: Sequence[str],
    method: str = "ddtree",
) -> dict[str, Any]:
    """``exitlaw bench decoding --batch-size B``: batched tree decoding vs batched AR, one row per (budget, T, verifier).

    Every ``(budget, T)`` runs :func:`run_batch_decode_bench` at batch size ``B`` (AR and tree
    decoding alternating batch by batch in the same run); ``verifier_stage`` stays empty.
    """
    if int(batch_size) < 1:
        raise ValueError(f"batch size must be a positive integer, got {batch_size!r}")
    if not budgets or min(budgets) < 1:
        raise ValueError(f"budgets must be >= 1, got {list(budgets)}")
    tgt, drafter, prompts, stop, config = _load_inputs(
        source,
        budget=max(budgets),
        rows=int(batch_size),
        settings={
            "batch_sizes": [int(batch_size)],
            "budgets": list(budgets),
            "temperatures": [float(t) for t in temperatures],
            "verifiers": list(verifiers),
            "method": method,
        },
    )
    decode = []
    for budget in budgets:
        for temperature in temperatures:
            decode += run_batch_decode_bench(
                tgt,
                drafter,
                prompts,
                batch_sizes=(int(batch_size),),
                budget=int(budget),
                verifiers=verifiers,
                temperature=temperature,
                max_new_tokens=source.max_new_tokens,
                method=method,
                stop_tokens=stop,
                seed=source.seed,
                warmup=source.warmup,
                filters=source.filters,
            )
    return _batch_bench_result(config, decode, [])


def run_batch_verifier_stage(
    batch: int,
    budgets: Sequence[int],
    vocab: int,
    *,
    kinds: Sequence[str],
    temperature: float = 1.0,
    device: str = "cpu",
    depth: int = 7,
    repeats: int = 10,
    seed: int = 0,
    dtype: str = "float32",
) -> dict[str, Any]:
    """``exitlaw bench verifiers --batch-size B``: :func:`run_batch_verifier_bench` at one batch size
    for every budget; ``{"config", "rows"}``."""
    rows = []
    for budget in budgets:
        rows += run_batch_verifier_bench(
            (batch,),
            int(budget),
            vocab,
            kinds=tuple(kinds),
            temperature=temperature,
            device=device,
            depth=depth,
            repeats=repeats,
            seed=seed,
            dtype=dtype,
        )
    config = {
        "batch": batch,
        "budgets": list(budgets),
        "vocab": vocab,
        "device": device,
        "dtype": dtype,
        "temperature": temperature,
        "depth": depth,
        "repeats": repeats,
        "verifiers": list(kinds),
        "seed": seed,
    }
    return {"config": config, "rows": rows}


def format_batch_verifier_stage(rows: list[dict[str, Any]]) -> str:
    """Table of :func:`run_batch_verifier_bench` rows: one batched call vs ``B`` single-tree calls (ms per batch)."""
    lines = [
        f"{'B':>3} {'budget':>6} {'kind':>8} {'batched ms':>11} {'B x single ms':>14} {'ratio':>6} "
        f"{'min batched':>12} {'min B x single':>15} {'min ratio':>10}"
    ]
    for r in rows:
        lines.append(
            f"{r['batch_size']:>3} {r['budget']:>6} {r['kind']:>8} {r['batched_ms']:>11.3f} "
            f"{r['looped_ms']:>14.3f} {r['looped_over_batched']:>6.2f} {r['batched_min_ms']:>12.3f} "
            f"{r['looped_min_ms']:>15.3f} {r['looped_over_batched_min']:>10.2f}"
        )
    return "\n".join(lines)


def format_batch_bench(result: dict[str, Any]) -> str:
    """Side-by-side table: batched tree vs batched AR tokens/s, tau, verifier stage per batch."""
    lines = [
        f"{'B':>3} {'budget':>6} {'T':>4} {'verifier':>9} {'tau':>5} {'AR tok/s':>10} {'tree tok/s':>11} "
        f"{'speedup':>8} {'fwd ms':>8} {'verifier ms/batch':>18} {'T=0 = AR':>9}"
    ]
    for r in result["decode"]:
        s = r["stage_ms_per_round"]
        match = {True: "yes", False: "NO"}.get(r.get("matches_ar"), "-")
        lines.append(
            f"{r['batch_size']:>3} {r['budget']:>6} {r['temperature']:>4g} {r['verifier']:>9} "
            f"{r['tau']:>5.2f} {r['ar_tokens_per_s']:>10.1f} {r['tokens_per_s']:>11.1f} {r['speedup']:>8.2f} "
            f"{s.get('verify_forward', 0.0):>8.2f} {s['verifier_stage']:>18.3f} {match:>9}"
        )
    if result.get("verifier_stage"):
        lines += ["", format_batch_verifier_stage(result["verifier_stage"])]
    return "\n".join(lines)


__all__ = [
    "run_batch_verifier_stage",
    "run_batch_decode_bench",
    "run_batch_verifier_bench",
    "run_batch_bench",
    "run_batched_bench",
    "format_batch_bench",
    "format_batch_verifier_stage",
]
