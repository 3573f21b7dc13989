"""One simulation run: every builder of a :class:`SimConfig` against one target and verifier.

:func:`run_simulation` writes ``OUT/results.json`` (schema ``exitlaw.simulate-results``)
and one tree trace per builder (``OUT/trace_<builder>.jsonl``, readable by
``exitlaw law``), and reports one table row per builder through ``log``.
Existing outputs are never replaced without ``overwrite``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Callable

from .presets import SimConfig

RESULTS_SCHEMA = "exitlaw.simulate-results"
LATENCY_MODEL = ("round = C_draft + C_verify(n); C_verify(n) = base + linear*(n+1) + quadratic*(n+1)^2 + "
                 "tile_cost*ceil((n+1)/tile); autoregressive token = C_verify(0)")


def output_paths(cfg: SimConfig, out: Path) -> list[Path]:
    """The files a run of ``cfg`` writes into ``out``."""
    return [out / "results.json"] + [out / f"trace_{b}.jsonl" for b in cfg.builders]


def table_header(cfg: SimConfig) -> str:
    return (f"simulate {cfg.name}: V={cfg.vocab} order={cfg.order} zipf={cfg.zipf} T={cfg.temperature} "
            f"B={cfg.budget} H={cfg.horizon} verifier={cfg.verifier} rounds={cfg.rounds}\n"
            f"{'builder':>11} {'B':>6} {'tau':>7} {'+-se':>6} {'1+C_p':>7} {'1+C*_p':>7} {'gap':>6} "
            f"{'z':>6} {'speedup':>7} {'sec':>5}")


def table_row(name: str, aggregates: dict, seconds: float, oracle: bool) -> str:
    a = aggregates
    oc = f"{1 + a['mean_oracle_coverage']:>7.3f} {a['mean_allocation_gap']:>6.3f}" if oracle else f"{'-':>7} {'-':>6}"
    return (f"{name:>11} {a['mean_budget']:>6.1f} {a['tau']:>7.3f} {a['tau_stderr']:>6.3f} {a['mean_ceiling']:>7.3f} "
            f"{oc} {a['tau_minus_ceiling_z']:>6.2f} {a['speedup']:>7.3f} {seconds:>5.1f}")


def run_simulation(cfg: SimConfig, out: str | Path, *, overwrite: bool = False, progress: bool = True,
                   log: Callable[[str], None] = print) -> dict:
    """Run every builder of ``cfg``; write results and traces into ``out``; return the results dict."""
    from exitlaw.theory import TraceWriter

    from .decoding import simulate_decoding
    from .presets import sampled_verifier_fn, verifier_fn

    out = Path(out)
    existing = [str(t) for t in output_paths(cfg, out) if t.exists()]
    if existing and not overwrite:
        raise FileExistsError(f"{', '.join(existing)} already exist; pass --overwrite to replace them")
    verifier = verifier_fn(cfg.verifier)
    target = cfg.target()
    pos, ar = cfg.drafters(target)
    latency = cfg.latency_model()
    out.mkdir(parents=True, exist_ok=True)
    results = {"schema": RESULTS_SCHEMA, "version": 1, "config": cfg.to_dict(), "latency_model": LATENCY_MODEL,
               "builders": {}}
    log(table_header(cfg))
    for name in cfg.builders:
        t0 = time.perf_counter()
        meta = {"source": "exitlaw simulate", "builder": name, "config": cfg.to_dict()}
        with TraceWriter(out / f"trace_{name}.jsonl", meta, overwrite=overwrite) as tw:
            res = simulate_decoding(target, cfg.make_builder(name, target, pos, ar), verifier,
                                    rounds=cfg.rounds, seed=cfg.seed, prompt_length=cfg.prompt_length,
                                    oracle=cfg.oracle, latency=latency, trace=tw, store_rows=cfg.store_rows,
                                    progress=progress, desc=name, sampled_verifier=sampled_verifier_fn(name))
        secs = time.perf_counter() - t0
        results["builders"][name] = {**res.to_json(), "seconds": secs, "trace": str(out / f"trace_{name}.jsonl")}
        log(table_row(name, res.aggregates, secs, cfg.oracle))
    (out / "results.json").write_text(json.dumps(results, indent=1), encoding="utf-8")
    log("\nz = mean(L - (1 + C_p)) / s.e.: |z| < 3.3 is expected from an exact saturating verifier (alpha = 0.001)")
    if "tsubame-rrs" in cfg.builders:
        log("tsubame-rrs is verified by recursive rejection on its sampled tree: exact only averaged over drafts, "
            "so its tau is not bounded by 1 + C_p of the realised trees")
    log(f"wrote {out / 'results.json'} and {len(cfg.builders)} traces; read one with: "
        f"exitlaw law {out / ('trace_' + cfg.builders[0] + '.jsonl')}")
    return results
