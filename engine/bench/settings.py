"""``exitlaw bench verifiers --sampling-sweep``: the verifier stage's cost under each sampling setting,
as a ratio to temperature-only, in the same run on the same trees.

The trees and target rows are :func:`~exitlaw.engine.bench.verifiers.make_cases`' (DDTree trees
from draft rows resembling the target). For every verifier kind and every setting (temperature
only, then each of ``settings``) one :func:`~exitlaw.engine.decode.dispatch.verify` call is timed
from the outside -- the processing step (:func:`~exitlaw.engine.decode.sampling_settings.filter_logits`)
plus the decision and the bonus; the KV-cache commit is left out, being the same under every
setting (it would only dilute the ratios). All calls of a tree alternate call by call
(:func:`~exitlaw.engine.decode.timing.interleaved_ms`), so load drifts on a shared machine hit
every setting alike. Each row keeps the medians, minima and ``ratio`` = median under the setting
/ median temperature-only (same kind, same budget). Nothing is asserted here.
"""

from __future__ import annotations

import statistics
from typing import Any, Sequence

import torch

from exitlaw.engine.bench.verifiers import BENCH_KINDS, make_cases
from exitlaw.engine.decode.dispatch import verify
from exitlaw.engine.decode.timing import interleaved_ms
from exitlaw.engine.decode.verifiers import VerifierGenerators
from exitlaw.theory.sampling_settings import SamplingSettings

DEFAULT_SWEEP = (
    {"top_k": 50},
    {"top_p": 0.9},
    {"min_p": 0.05},
    {"top_k": 50, "top_p": 0.9, "min_p": 0.05},
)


def _label(filters: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in filters.items()) or "temperature only"


def run_settings_bench(
    budgets: Sequence[int] = (32, 64),
    vocab: int = 151936,
    *,
    sweep: Sequence[dict] = DEFAULT_SWEEP,
    temperature: float = 1.0,
    kinds=BENCH_KINDS,
    device: str = "cpu",
    trees: int = 2,
    repeats: int = 7,
    depth: int = 15,
    dtype: str = "float32",
    seed: int = 0,
) -> dict[str, Any]:
    """Median ms of each (kind, setting) and its ratio to temperature-only; see the module docstring."""
    if temperature <= 0:
        raise ValueError(
            f"the sweep needs a temperature > 0 (filters do nothing at T = 0), got {temperature}"
        )
    bad = [k for k in kinds if k not in BENCH_KINDS]
    if bad:
        raise ValueError(
            f"unknown verifier(s) {bad} for the bench; choose from {', '.join(BENCH_KINDS)}"
        )
    if trees < 1 or repeats < 1:
        raise ValueError(f"trees and repeats must be >= 1, got trees={trees}, repeats={repeats}")
    dt = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}.get(dtype)
    if dt is None:
        raise ValueError(f"dtype must be float32, bfloat16 or float16, got {dtype!r}")
    dev = torch.device(device)
    settings = {"temperature only": SamplingSettings(temperature)}
    for f in sweep:
        settings[_label(f)] = SamplingSettings(temperature, **f)  # named errors for bad filters
    rows = []
    for b in budgets:
        cases = make_cases(
            int(b), int(vocab), trees=trees, depth=depth, device=dev, dtype=dt, seed=seed + int(b)
        )
        gens = VerifierGenerators(seed, dev)
        ms: dict[tuple[str, str], list[float]] = {(k, s): [] for k in kinds for s in settings}
        for case in cases:
            fns = {
                (k, s): (lambda k=k, st=st: verify(k, case.tree, case.logits, st, gens))
                for k in kinds
                for s, st in settings.items()
            }
            for key, v in interleaved_ms(fns, dev, repeats).items():
                ms[key] += v
        for k in kinds:
            base = statistics.median(ms[(k, "temperature only")])
            for s in settings:
                med = statistics.median(ms[(k, s)])
                rows.append(
                    {
                        "budget": int(b),
                        "kind": k,
                        "setting": s,
                        "median_ms": med,
                        "min_ms": min(ms[(k, s)]),
                        "ratio": med / base,
                        "nodes": [c.tree.num_nodes for c in cases],
                    }
                )
    config = {
        "budgets": list(map(int, budgets)),
        "vocab": int(vocab),
        "temperature": temperature,
        "settings": {s: st.as_dict() for s, st in settings.items()},
        "kinds": list(kinds),
        "device": str(dev),
        "dtype": dtype,
        "trees": trees,
        "repeats": repeats,
        "depth": depth,
        "seed": seed,
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "stage": "processing + decision + bonus (no commit)",
    }
    return {"config": config, "rows": rows, "text": format_settings_bench(rows, config)}


def format_settings_bench(rows: list[dict[str, Any]], config: dict[str, Any]) -> str:
    head = (
        f"verifier stage under sampling settings ({config['stage']}), median ms and ratio to temperature only; "
        f"V={config['vocab']}, {config['dtype']}, T={config['temperature']}, {config['device']}, "
        f"{config['threads']} threads, {config['trees']} trees x {config['repeats']} repeats"
    )
    lines = [
        head,
        f"{'B':>4} {'kind':>9} {'setting':<36} {'median ms':>10} {'min ms':>9} {'ratio':>7}",
    ]
    for r in rows:
        lines.append(
            f"{r['budget']:>4} {r['kind']:>9} {r['setting']:<36} {r['median_ms']:>10.3f} "
            f"{r['min_ms']:>9.3f} {r['ratio']:>7.2f}"
        )
    return "\n".join(lines)


__all__ = ["run_settings_bench", "format_settings_bench", "DEFAULT_SWEEP"]
