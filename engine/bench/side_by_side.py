"""exitlaw's decode engine against DDTree's own engine on the same weights, in one run (``exitlaw bench ddtree``).

Single sequence, whole ``generate`` calls timed from the outside (wall clock around each call,
prefill included, on both sides). Per configuration (AR, DFlash chain, DDTree at each budget; T = 0,
then T = 1) each prompt is decoded by both engines in every repetition, the two calls back to back
in an order that alternates with ``(repetition + prompt)`` (fixed in advance), so load drifts hit
both alike. Reported:

* T = 0 -- ``tokens_per_s`` (and ``cpu_tokens_per_s``, over process CPU seconds: steadier on a busy machine) of each engine per repetition (tokens over summed call seconds), the
  per-repetition ratio ``r_j = exitlaw / DDTree`` (median and min over repetitions) and a paired 95 %
  interval for the ratio: ``exp(mean log r +- t_{0.975, R-1} sd(log r) / sqrt R)`` (its centre is the
  geometric mean of ``r_j``); ``exact``: every prompt's tokens equal the greedy AR tokens of both
  engines, and the two AR outputs agree.
* T = 1 -- per-round latency (call seconds over rounds) of each engine with its ratio and interval
  as above, and ``tau`` (tokens per round) apart: tokens/s there mixes speed with the luck of the streams.
* per-stage milliseconds per round of both engines (exitlaw's :class:`StageTimer` stages; DDTree's own
  ``stage_times``, which leave out the first round's draft).

The reference is DDTree imported from a local clone (:mod:`.ddtree_reference`, with its stated CPU
shims); :func:`run_side_by_side` takes any object with the same ``generate`` (tests use a fake).
"""

from __future__ import annotations

import math
import os
import platform
import statistics
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
import torch
import transformers

from exitlaw.engine.bench.compare import t_quantile
from exitlaw.engine.decode.loop import DecodeConfig, generate
from exitlaw.engine.decode.timing import StageTimer
from exitlaw.theory.sampling_settings import SamplingSettings


@dataclass(frozen=True)
class SideBySideConfig:
    budgets: tuple[int, ...] = (32, 64)
    max_new_tokens: int = 64
    repeats: int = 5
    hot_budget: int = 64  # the T = 1 comparison's budget
    t1_verifiers: tuple[str, ...] = ("tev", "predraw")
    temperatures: tuple[float, ...] = (0.0, 1.0)
    seed: int = 0

    def __post_init__(self):
        if self.repeats < 2:
            raise ValueError(
                f"repeats must be >= 2 (the paired interval needs two), got {self.repeats}"
            )
        if not self.budgets or any(b < 1 for b in self.budgets):
            raise ValueError(f"budgets must be >= 1, got {self.budgets}")
        if self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {self.max_new_tokens}")
        bad = [t for t in self.temperatures if t not in (0.0, 1.0)]
        if bad:
            raise ValueError(f"temperatures must be 0 and/or 1, got {bad}")


@dataclass
class Call:
    """One timed generate call of either engine."""

    tokens: list[int]
    seconds: float
    rounds: int
    stages_s: dict[str, float] = field(default_factory=dict)  # stage -> seconds in this call
    cpu_seconds: float = (
        0.0  # process CPU time of the call (less sensitive than wall time to a busy machine)
    )


def paired_ratio(ours: Sequence[float], theirs: Sequence[float]) -> dict[str, float]:
    """Per-repetition ratios ``r_j = ours_j / theirs_j``: median, min, max, and the paired 95 % interval
    ``exp(m +- t s / sqrt R)`` of ``m = mean log r`` (``s`` its standard deviation, Student t with ``R - 1``
    degrees of freedom); ``centre = exp(m)``."""
    a, b = np.asarray(ours, dtype=float), np.asarray(theirs, dtype=float)
    if a.shape != b.shape or a.ndim != 1 or a.size < 2:
        raise ValueError(
            f"paired_ratio needs two equal-length sequences of >= 2 values, got {a.shape}, {b.shape}"
        )
    if not (np.all(a > 0) and np.all(b > 0) and np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ValueError("paired_ratio needs positive finite values")
    logs = np.log(a / b)
    m, s = float(logs.mean()), float(logs.std(ddof=1))
    half = t_quantile(0.975, a.size - 1) * s / math.sqrt(a.size)
    r = np.exp(logs)
    return {
        "median": float(np.median(r)),
        "min": float(r.min()),
        "max": float(r.max()),
        "centre": math.exp(m),
        "lo": math.exp(m - half),
        "hi": math.exp(m + half),
        "repeats": int(a.size),
    }


def _ours(target, drafter, prompt, cfg: DecodeConfig) -> Call:
    timer = StageTimer(target.device)
    c0, t0 = time.process_time(), time.perf_counter()
    res = generate(target, drafter, prompt, cfg, timer=timer)
    secs, cpu = time.perf_counter() - t0, time.process_time() - c0
    stages = {k: v["total_s"] for k, v in res.stages.items()}
    return Call(list(res.tokens), secs, len(res.block_lengths), stages, cpu)


def _theirs(
    ref, prompt, method: str, budget: int, max_new: int, temperature: float, seed: int
) -> Call:
    torch.manual_seed(seed)  # DDTree samples from the global stream
    c0, t0 = time.process_time(), time.perf_counter()
    out = ref.generate(
        list(prompt), method=method, budget=budget, max_new_tokens=max_new, temperature=temperature
    )
    secs, cpu = time.perf_counter() - t0, time.process_time() - c0
    toks = [int(t) for t in out.output_ids[0, out.num_input_tokens :].tolist()]
    return Call(
        toks, secs, int(out.decode_rounds), {k: float(v) for k, v in out.stage_times.items()}, cpu
    )


def _configs(cfg: SideBySideConfig) -> list[dict[str, Any]]:
    """The comparisons, in run order: ``{name, temperature, method, budget, ours: [verifier...]}``."""
    out = []
    if 0.0 in cfg.temperatures:
        out.append(dict(name="ar", temperature=0.0, method="ar", budget=1, ours=["greedy"]))
        out.append(dict(name="chain", temperature=0.0, method="chain", budget=1, ours=["greedy"]))
        out += [
            dict(name=f"ddtree B={b}", temperature=0.0, method="ddtree", budget=b, ours=["greedy"])
            for b in cfg.budgets
        ]
    if 1.0 in cfg.temperatures:
        out.append(
            dict(
                name=f"ddtree B={cfg.hot_budget}",
                temperature=1.0,
                method="ddtree",
                budget=cfg.hot_budget,
                ours=list(cfg.t1_verifiers),
            )
        )
    return out


def _per_round_stages(calls: list[Call]) -> dict[str, float]:
    rounds = sum(c.rounds for c in calls)
    total: dict[str, float] = {}
    for c in calls:
        for k, v in c.stages_s.items():
            total[k] = total.get(k, 0.0) + v
    return {k: 1000.0 * v / max(rounds, 1) for k, v in sorted(total.items())}


def run_side_by_side(
    target,
    drafter,
    ref,
    prompts: Sequence[Sequence[int]],
    cfg: SideBySideConfig = SideBySideConfig(),
    *,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run every comparison of ``cfg`` on ``prompts``; ``ref.generate(prompt, method=, budget=, max_new_tokens=,
    temperature=)`` is the reference engine (DDTree's output: ``output_ids``, ``num_input_tokens``,
    ``decode_rounds``, ``stage_times``)."""
    if not prompts or any(len(p) < 2 for p in prompts):
        raise ValueError("the benchmark needs at least one prompt, each of >= 2 tokens")
    prompts = [list(map(int, p)) for p in prompts]
    say = progress or (lambda _msg: None)
    results = []
    ar_tokens: dict[str, list[list[int]]] = {}
    for spec in _configs(cfg):
        t = spec["temperature"]
        engines = [
            f"exitlaw {v}" if spec["method"] != "ar" else "exitlaw" for v in spec["ours"]
        ] + ["ddtree"]

        def call(engine: str, i: int, rep: int) -> Call:
            seed = cfg.seed + 1000 * rep + i
            if engine == "ddtree":
                return _theirs(
                    ref, prompts[i], spec["method"], spec["budget"], cfg.max_new_tokens, t, seed
                )
            verifier = engine.split(" ")[1] if " " in engine else "greedy"
            dc = DecodeConfig(
                method=spec["method"],
                verifier=verifier,
                budget=spec["budget"],
                settings=SamplingSettings(t),
                max_new_tokens=cfg.max_new_tokens,
                seed=seed,
            )
            return _ours(target, drafter, prompts[i], dc)

        for e in engines:  # warm-up, untimed
            call(e, 0, 0)
        calls: dict[str, list[list[Call]]] = {e: [] for e in engines}  # engine -> rep -> prompt
        for rep in range(cfg.repeats):
            row: dict[str, list[Call]] = {e: [] for e in engines}
            for i in range(len(prompts)):
                order = engines if (rep + i) % 2 == 0 else engines[::-1]
                for e in order:
                    row[e].append(call(e, i, rep))
            for e in engines:
                calls[e].append(row[e])
            say(f"{spec['name']} T={t:g}: repetition {rep + 1}/{cfg.repeats} done")
        results.append(_summarise(spec, engines, calls, ar_tokens))
    return {
        "schema": "exitlaw.bench_ddtree",
        "version": 1,
        "config": asdict(cfg),
        "prompts": len(prompts),
        "results": results,
    }


def _summarise(spec, engines, calls, ar_tokens) -> dict[str, Any]:
    t = spec["temperature"]
    out: dict[str, Any] = {
        "name": spec["name"],
        "temperature": t,
        "method": spec["method"],
        "budget": spec["budget"],
        "engines": {},
    }
    for e in engines:
        reps = calls[e]
        tps = [sum(len(c.tokens) for c in r) / sum(c.seconds for c in r) for r in reps]
        cpu_tps = [sum(len(c.tokens) for c in r) / sum(c.cpu_seconds for c in r) for r in reps]
        per_round = [1000.0 * sum(c.seconds for c in r) / sum(c.rounds for c in r) for r in reps]
        cpu_round = [
            1000.0 * sum(c.cpu_seconds for c in r) / sum(c.rounds for c in r) for r in reps
        ]
        flat = [c for r in reps for c in r]
        out["engines"][e] = {
            "tokens_per_s": tps,
            "round_ms": per_round,
            "cpu_tokens_per_s": cpu_tps,
            "cpu_round_ms": cpu_round,
            "tau": sum(len(c.tokens) for c in flat) / max(sum(c.rounds for c in flat), 1),
            "stage_ms_per_round": _per_round_stages(flat),
        }
    ref = "ddtree"
    for e in engines:
        if e == ref:
            continue
        ours, theirs = out["engines"][e], out["engines"][ref]
        if t == 0:
            ours["ratio_tokens_per_s"] = paired_ratio(ours["tokens_per_s"], theirs["tokens_per_s"])
            ours["ratio_cpu_tokens_per_s"] = paired_ratio(
                ours["cpu_tokens_per_s"], theirs["cpu_tokens_per_s"]
            )
        else:  # latency: DDTree / exitlaw, so > 1 means exitlaw is faster, as for tokens/s
            ours["ratio_round_speed"] = paired_ratio(theirs["round_ms"], ours["round_ms"])
            ours["ratio_cpu_round_speed"] = paired_ratio(
                theirs["cpu_round_ms"], ours["cpu_round_ms"]
            )
    if t == 0:
        first = {e: [c.tokens for c in calls[e][0]] for e in engines}
        if spec["method"] == "ar":
            ar_tokens["exitlaw"], ar_tokens["ddtree"] = first["exitlaw"], first["ddtree"]
            out["exact"] = {"ar_outputs_agree": first["exitlaw"] == first["ddtree"]}
        elif ar_tokens:
            out["exact"] = {
                e: first[e] == ar_tokens["ddtree" if e == "ddtree" else "exitlaw"] for e in engines
            }
        same_every_rep = all(
            [c.tokens for c in calls[e][j]] == first[e]
            for e in engines
            for j in range(len(calls[e]))
        )
        out.setdefault("exact", {})["deterministic_over_repetitions"] = same_every_rep
    return out


def machine_info() -> dict[str, Any]:
    """What the numbers were measured on (CPU model, cores, threads, load averages, versions)."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    info = {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "platform": platform.platform(),
    }
    info["transformers"] = transformers.__version__
    if hasattr(os, "getloadavg"):
        info["load_average"] = list(os.getloadavg())
    return info


def _ratio_text(r: dict[str, float]) -> str:
    return f"{r['median']:.3f} [{r['min']:.3f}]  centre {r['centre']:.3f} (95% {r['lo']:.3f}-{r['hi']:.3f})"


def format_side_by_side(res: dict[str, Any]) -> str:
    """The printed table: ratios (median [min], paired interval), tokens/s, tau, per-stage ms per round."""
    lines = [
        f"exitlaw vs DDTree, {res['prompts']} prompts x {res['config']['max_new_tokens']} tokens, "
        f"{res['config']['repeats']} interleaved repetitions"
    ]
    for r in res["results"]:
        lines.append(f"\n== {r['name']}, T = {r['temperature']:g}")
        for e, s in r["engines"].items():
            med_tps = statistics.median(s["tokens_per_s"])
            med_ms = statistics.median(s["round_ms"])
            line = f"  {e:18s} tokens/s {med_tps:8.1f}  round {med_ms:7.2f} ms  tau {s['tau']:.3f}"
            if "ratio_tokens_per_s" in s:
                line += "\n    tokens/s exitlaw/DDTree (wall): " + _ratio_text(
                    s["ratio_tokens_per_s"]
                )
                line += "\n    tokens/s exitlaw/DDTree (CPU):  " + _ratio_text(
                    s["ratio_cpu_tokens_per_s"]
                )
            if "ratio_round_speed" in s:
                line += "\n    round speed DDTree ms / exitlaw ms (wall): " + _ratio_text(
                    s["ratio_round_speed"]
                )
                line += "\n    round speed DDTree ms / exitlaw ms (CPU):  " + _ratio_text(
                    s["ratio_cpu_round_speed"]
                )
            lines.append(line)
            stages = "  ".join(f"{k} {v:.2f}" for k, v in s["stage_ms_per_round"].items())
            lines.append(f"    stages (ms/round): {stages}")
        if "exact" in r:
            lines.append(f"  exact at T = 0: {r['exact']}")
    return "\n".join(lines)


__all__ = [
    "SideBySideConfig",
    "Call",
    "paired_ratio",
    "run_side_by_side",
    "format_side_by_side",
    "machine_info",
]
