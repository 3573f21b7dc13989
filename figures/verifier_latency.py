"""Figure: verifier-stage latency against the budget, predraw vs TEV (the paper's Table 3 analogue).

The verifier stage -- the paper's interval: decision + bonus + KV-cache commit, the
target's tree forward excluded -- is timed on the same realised trees for every
verifier in the same run. Two sources, normalised to rows ``{shape, budget,
internal, ms: {verifier: median ms}, reduction_pct, samples_ms}`` (``samples_ms``:
the paired per-call times, when the source has them):

* ``exitlaw bench verifiers`` (:func:`exitlaw.engine.bench.verifiers.run_verifier_bench`,
  the default: DDTree trees from draft rows that resemble the target, V = 151936,
  the commit a real ``TargetModel.commit`` on a Qwen3-4B-shaped cache; predraw is exitlaw's fast
  predraw (one inverse-CDF draw per row, as the engine runs it) and ``predraw_multinomial`` DDTree's
  float32 ``softmax`` + ``multinomial`` path; ``floor`` is TEV's floor, a strict subset of TEV's
  work, drawn at its fastest call and labelled as TEV's: residual may beat it, TEV may not);
* ``exitlaw gpu-check --out DIR`` (random Qwen3-4B-shaped pair,
  stage includes the KV-cache commit; rows per tree shape).

Either JSON can be passed as ``source``. ``reduction_pct = 100 (1 - TEV / predraw)`` against the
fast predraw, ``reduction_vs_multinomial_pct`` against DDTree's multinomial path. The data carry
``title`` (scale and setting), ``symbols`` and ``notes`` (docs/design.md §1.11, §1.12).
Paper (Table 3, Qwen3-4B on a GPU): 12.9/15.2/24.3 % at T = 0.6 and
12.0/14.0/17.1 % at T = 1 for B = 32/64/128.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from exitlaw.engine.bench.verifiers import KVShape, run_verifier_bench
from exitlaw.engine.decode.verifiers import engine_names

from .style import COLORS, headline, new_figure, read_data, require, save

NAME = "verifier_latency"
PAPER_REDUCTION = {
    "T=0.6": {32: 12.9, 64: 15.2, 128: 24.3},
    "T=1.0": {32: 12.0, 64: 14.0, 128: 17.1},
}
STAGES = engine_names(sampling=True)  # the bench-verifiers stages
MULTINOMIAL = "predraw_multinomial"
ORDER = (MULTINOMIAL, *STAGES, "floor")
BAR_COLORS = {**{k: COLORS[k] for k in STAGES}, MULTINOMIAL: "#9ecae1", "floor": "#7f7f7f"}
LABELS = {
    MULTINOMIAL: "predraw, DDTree's path (float32 multinomial)",
    "predraw": "predraw, exitlaw's (1 inverse-CDF draw per row)",
    "tev": "TEV",
    "floor": "TEV's floor (a subset of TEV's work; fastest call)",
}
FLOOR_OF = {"floor": "tev"}  # a labelled floor -> the verifier it is the floor of
NOTES = (
    "Why TEV saves far more here than the paper's 12-17 %: on a CPU every predraw reads all N rows of "
    "V logits (DDTree's multinomial also draws V random numbers per row), TEV reads only the K internal "
    "rows; on a GPU reading a row costs little, so the CPU saving does not carry over.",
)


def _k_text(internal) -> str:
    if isinstance(internal, (list, tuple)):
        return (
            f"{min(internal)}-{max(internal)}"
            if min(internal) != max(internal)
            else str(internal[0])
        )
    return "?" if internal is None else str(internal)


def normalise(result: dict) -> dict:
    """Rows from a bench-verifiers (``median_ms``) or gpu_check (``predraw_stage_ms``) result."""
    require(result, ("rows",), NAME)
    rows = []
    for r in result["rows"]:
        if "budget" not in r:
            raise ValueError(
                f"figure {NAME!r}: a latency row lacks 'budget' (got keys {sorted(r)})"
            )
        samples = None
        if "median_ms" in r:
            commit = bool(result.get("config", {}).get("commit"))
            ms = {k: float(v) for k, v in r["median_ms"].items()}
            shape = f"bench-verifiers trees (stage {'incl.' if commit else 'excl.'} KV commit)"
            samples = r.get("samples_ms")
        elif "predraw_stage_ms" in r and "tev_stage_ms" in r:
            ms = {"predraw": float(r["predraw_stage_ms"]), "tev": float(r["tev_stage_ms"])}
            shape = f"gpu_check {r.get('shape', '')} trees (stage incl. KV commit)"
        else:
            raise ValueError(
                f"figure {NAME!r}: a latency row has neither 'median_ms' nor "
                f"'predraw_stage_ms'/'tev_stage_ms' (got keys {sorted(r)})"
            )
        if "predraw" not in ms or "tev" not in ms:
            raise ValueError(
                f"figure {NAME!r}: a latency row lacks predraw or tev timings (got {sorted(ms)})"
            )
        if samples and "floor" in samples and samples["floor"]:
            ms["floor"] = float(min(samples["floor"]))  # a floor: its fastest call
        row = {
            "shape": shape,
            "budget": int(r["budget"]),
            "internal": _k_text(r.get("internal")),
            "ms": ms,
            "reduction_pct": 100.0 * (1.0 - ms["tev"] / ms["predraw"])
            if ms["predraw"] > 0
            else float("nan"),
        }
        if ms.get(MULTINOMIAL, 0) > 0:
            row["reduction_vs_multinomial_pct"] = 100.0 * (1.0 - ms["tev"] / ms[MULTINOMIAL])
        if samples is not None:
            # paired per-call times
            row["samples_ms"] = {k: [float(x) for x in v] for k, v in samples.items()}
        if r.get("ops"):
            row["ops"] = r["ops"]  # per-decision op counts (bench verifiers)
        rows.append(row)
    config = dict(result.get("config", {}))
    if any("gpu_check" in r["shape"] for r in rows):
        config.setdefault("commit", True)  # gpu_check's stage is decide + bonus + KV commit
    dev = str(config.get("device", "?"))
    where = "CPU" if dev.startswith("cpu") else f"GPU ({dev})" if dev.startswith("cuda") else dev
    trees = (
        "synthetic trees (DDTree-built from target-like draft rows)"
        if any("bench-verifiers" in r["shape"] for r in rows)
        else "synthetic trees (random Qwen3-4B-shaped pair)"
    )
    paper = "/".join(f"-{v:.1f}" for v in PAPER_REDUCTION["T=1.0"].values())
    return {
        "figure": NAME,
        "config": config,
        "rows": rows,
        "floors": {k: v for k, v in FLOOR_OF.items() if all(k in r["ms"] for r in rows)},
        "title": (
            f"Verifier stage on {where}, {trees}, V = {config.get('vocab', '?')}, "
            f"T = {config.get('temperature', '?')}: not the paper's GPU setting\n"
            f"paper (Qwen3-4B, GPU, T = 1): TEV {paper}% vs predraw at B = 32/64/128"
        ),
        "symbols": {
            "B": "tree budget (non-root nodes)",
            "K": "internal nodes (rows TEV reads)",
            "N": "B + 1 tree nodes (rows a predraw reads)",
            "V": "vocabulary size",
            "T": "sampling temperature",
            "label over TEV": "TEV's time vs exitlaw's predraw / vs DDTree's multinomial predraw",
        },
        "notes": list(NOTES),
    }


def compute(
    *,
    seed: int = 0,
    quick: bool = False,
    source: str | Path | None = None,
    vocab: int | None = None,
    repeats: int | None = None,
    trees: int | None = None,
) -> dict:
    if source is not None:
        return normalise(read_data(source)) | {"source": str(source)}
    vocab = vocab or (32000 if quick else 151936)
    # one intra-op thread: on a small shared CPU, multi-threaded small ops measure contention, not the verifier
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        kv = KVShape(layers=4, kv_heads=2, head_dim=64, context=64) if quick else KVShape()
        res = run_verifier_bench(
            (32, 64, 128),
            vocab,
            device="cpu",
            trees=trees or (1 if quick else 2),
            repeats=repeats or (3 if quick else 5),
            seed=seed,
            kv=kv,
        )
    finally:
        torch.set_num_threads(threads)
    res.setdefault("config", {})["threads"] = 1
    res.pop("text", None)
    return normalise(res) | {
        "source": f"exitlaw.engine.bench.verifiers.run_verifier_bench(vocab={vocab}, device='cpu')"
    }


def draw(data: dict, out_dir: str | Path, *, overwrite: bool = False) -> list[Path]:
    require(data, ("rows", "title"), NAME)
    shapes = sorted({r["shape"] for r in data["rows"]})
    fig, axes = new_figure(len(shapes), width=7.5, height=4.2)
    for ax, shape in zip(axes, shapes):
        rows = sorted((r for r in data["rows"] if r["shape"] == shape), key=lambda r: r["budget"])
        kinds = [k for k in ORDER if all(k in r["ms"] for r in rows)]
        idx = np.arange(len(rows))
        width = 0.8 / len(kinds)
        for j, k in enumerate(kinds):
            vals = np.array([r["ms"][k] for r in rows])
            x = idx + (j - (len(kinds) - 1) / 2) * width
            ax.bar(x, vals, width=width, color=BAR_COLORS[k], label=LABELS.get(k, k))
            # whiskers: interquartile range over calls
            if k != "floor" and all(k in r.get("samples_ms", {}) for r in rows):
                q1, q3 = (
                    np.array([np.percentile(r["samples_ms"][k], q) for r in rows]) for q in (25, 75)
                )
                ax.errorbar(
                    x,
                    vals,
                    yerr=np.vstack([np.maximum(vals - q1, 0), np.maximum(q3 - vals, 0)]),
                    fmt="none",
                    ecolor="black",
                    elinewidth=0.8,
                    capsize=1.5,
                )
            if k == "tev":
                for i, r in enumerate(rows):
                    top = max(
                        vals[i],
                        float(np.percentile(r["samples_ms"]["tev"], 75))
                        if "samples_ms" in r
                        else 0.0,
                    )
                    multi = r.get("reduction_vs_multinomial_pct")
                    ax.annotate(
                        f"{-r['reduction_pct']:+.0f}%"
                        + ("" if multi is None else f"\n{-multi:+.0f}%"),
                        (x[i], top),
                        xytext=(0, 2),
                        textcoords="offset points",
                        ha="center",
                        fontsize=7,
                    )
        ax.set_xticks(idx, [f"B = {r['budget']}\n(K = {r['internal']})" for r in rows])
        ax.set_ylim(bottom=0)
        ax.set_ylabel("verifier-stage latency (ms, median; axis from 0)")
        ax.set_xlabel("tree budget (K = internal nodes)")
        whiskers = (
            "\nwhiskers: interquartile range over calls"
            if all("samples_ms" in r for r in rows)
            else ""
        )
        ax.set_title(
            f"{shape}; label over TEV: time vs exitlaw's predraw\n(second line: vs DDTree's "
            f"multinomial predraw){whiskers}",
            fontsize=8,
        )
        lo, hi = ax.get_ylim()
        ax.set_ylim(0, hi * 1.35)
        ax.legend(loc="upper left", frameon=False, ncol=2, fontsize=6.5)
    headline(fig, data)
    return save(fig, out_dir, NAME, overwrite=overwrite)
