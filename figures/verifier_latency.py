"""Figure: verifier-stage latency against the budget, predraw vs TEV (the paper's Table 3 analogue).

The verifier stage is decision + bonus + KV commit, the target forward
excluded, timed on the same realised trees for both verifiers. Data come from
:func:`exitlaw.engine.gpu_check.run_check` (rows with ``budget``, ``shape``,
``predraw_stage_ms``, ``tev_stage_ms``): by default its CPU smoke size (tiny
random Qwen3-shaped pair, ``V = 320``), or any JSON it wrote with ``--json``
(e.g. the Qwen3-4B-shaped run on a GPU) passed as ``source``.
Paper (Table 3, Qwen3-4B, T = 0.6 / 1.0): TEV is 12.9/12.0 %, 15.2/14.0 % and
24.3/17.1 % faster at B = 32, 64, 128.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .style import COLORS, new_figure, read_data, require, save

NAME = "verifier_latency"
PAPER_REDUCTION = {"T=0.6": {32: 12.9, 64: 15.2, 128: 24.3}, "T=1.0": {32: 12.0, 64: 14.0, 128: 17.1}}


def normalise(result: dict) -> dict:
    """Rows ``{shape, budget, predraw_ms, tev_ms, reduction_pct}`` from a gpu_check-style result."""
    require(result, ("rows",), NAME)
    rows = []
    for r in result["rows"]:
        for key in ("budget", "predraw_stage_ms", "tev_stage_ms"):
            if key not in r:
                raise ValueError(f"figure {NAME!r}: a latency row lacks {key!r} (got keys {sorted(r)})")
        p, t = float(r["predraw_stage_ms"]), float(r["tev_stage_ms"])
        rows.append({"shape": r.get("shape", "trees"), "budget": int(r["budget"]), "nodes": r.get("nodes"),
                     "internal": r.get("internal"), "predraw_ms": p, "tev_ms": t,
                     "reduction_pct": 100.0 * (1.0 - t / p) if p > 0 else float("nan")})
    return {"figure": NAME, "config": result.get("config", {}), "rows": rows}


def compute(*, seed: int = 0, quick: bool = False, source: str | Path | None = None, reps: int | None = None) -> dict:
    if source is not None:
        return normalise(read_data(source)) | {"source": str(source)}
    from exitlaw.engine.gpu_check import run_check

    res = run_check(tiny=True, device="cpu", reps=reps or (5 if quick else 15), context=160, seed=seed)
    return normalise(res) | {"source": "exitlaw.engine.gpu_check.run_check(tiny=True, device='cpu')"}


def draw(data: dict, out_dir: str | Path, *, overwrite: bool = False) -> list[Path]:
    require(data, ("rows",), NAME)
    shapes = sorted({r["shape"] for r in data["rows"]})
    fig, axes = new_figure(len(shapes), width=4.2, height=3.5)
    cfg = data.get("config", {})
    for ax, shape in zip(axes, shapes):
        rows = sorted((r for r in data["rows"] if r["shape"] == shape), key=lambda r: r["budget"])
        idx = np.arange(len(rows))
        p = np.array([r["predraw_ms"] for r in rows])
        t = np.array([r["tev_ms"] for r in rows])
        ax.bar(idx - 0.2, p, width=0.4, color=COLORS["predraw"], label="predraw (DDTree)")
        ax.bar(idx + 0.2, t, width=0.4, color=COLORS["tev"], label="TEV")
        for i, r in enumerate(rows):
            ax.annotate(f"{-r['reduction_pct']:+.0f}% time", (i + 0.2, t[i]), xytext=(0, 2), textcoords="offset points",
                        ha="center", fontsize=7)
        ax.set_xticks(idx, [f"B = {r['budget']}" + (f"\n(K = {r['internal']})" if r.get("internal") is not None else "")
                            for r in rows])
        ax.set_yscale("log")
        ax.set_ylabel("verifier-stage latency (ms, median)")
        ax.set_xlabel("tree budget (K = internal nodes)")
        ax.set_title(f"{shape} trees: decide + bonus + commit\n{cfg.get('device', '?')}, V = {cfg.get('vocab', '?')}, "
                     f"T = {cfg.get('temperature', '?')}; label: TEV time change vs predraw", fontsize=8)
        lo, hi = ax.get_ylim()
        ax.set_ylim(lo, hi * 3)
        ax.legend(loc="upper left", frameon=False)
    paper = ", ".join(f"B={b}: {v:.1f}%" for b, v in PAPER_REDUCTION["T=1.0"].items())
    fig.suptitle(f"Verifier-stage latency (Table 3 analogue). Paper, Qwen3-4B on GPU, T = 1: TEV saves {paper}",
                 fontsize=8.5)
    return save(fig, out_dir, NAME, overwrite=overwrite)
