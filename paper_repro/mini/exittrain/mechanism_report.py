"""The mechanism test's report (:mod:`.mechanism`): plain findings read off its contrasts, and
``mechanism.md``, every number of which is quoted from ``mechanism.json``."""

from __future__ import annotations

import json
from pathlib import Path

from exitlaw.paper_repro.mini.exittrain.mechanism_design import (
    CONTRASTS,
    DIRECTIONS,
    DRAFTERS,
    JSON_NAME,
    MD_NAME,
    TEMPERATURES,
)
from exitlaw.theory.infra.atomic_io import atomic_write_json, atomic_write_text


def _ci(r: dict, digits: int = 3) -> str:
    return f"{r['mean']:+.{digits}f} [{r['lo']:+.{digits}f}, {r['hi']:+.{digits}f}]"


def _side(r: dict) -> str:
    return "above 0" if r["lo"] > 0 else "below 0" if r["hi"] < 0 else "contains 0"


def _sides(rows: list[dict]) -> str:
    groups = {
        side: [f"{r['eta']:g}" for r in rows if _side(r) == side]
        for side in ("above 0", "below 0", "contains 0")
    }
    return "; ".join(f"{side} at eta {', '.join(v)}" for side, v in groups.items() if v)


def findings(result: dict) -> list[str]:
    """Plain sentences read off the numbers (nothing else): for each drafter and temperature, the change of
    ``C_p`` each direction's step makes against ``theta0``, and the exit step's ``C_p`` minus each rival's
    at every step length, with the interval and the side of 0 it lies on."""
    level = f"{result['config']['level']:.0%}"
    lines = []
    for name in DRAFTERS:
        for t in TEMPERATURES:
            key = f"cp_T{t:g}"
            own = [s for s in result["steps"] if s["drafter"] == name]
            if not own:
                continue
            moved = "; ".join(
                f"{d}: {_sides([{**s[key], 'eta': s['eta']} for s in own if s['direction'] == d])}"
                for d in DIRECTIONS
            )
            lines.append(
                f"from the {name} drafter, C_p at T = {t:g}, step minus theta0 ({level} interval): {moved}"
            )
            for _, b in CONTRASTS:
                rows = [
                    c
                    for c in result["contrasts"]
                    if c["drafter"] == name and c["temperature"] == t and c["b"] == b
                ]
                values = ", ".join(f"eta {c['eta']:g} {_ci(c)}" for c in rows)
                lines.append(
                    f"from the {name} drafter, C_p at T = {t:g}, exit step minus {b} step: {values}; "
                    f"{level} interval {_sides(rows)}"
                )
    return lines


def render_markdown(result: dict) -> str:
    """``mechanism.md``: the steps table, the contrasts table and the findings, all read from ``result``."""
    cfg = result["config"]
    level = f"{cfg['level']:.0%}"
    lines = [
        "# Mechanism test: one matched-norm step along each gradient",
        "",
        f"Change against theta0 (mean over {len(result['anchors'])} held-out anchors, "
        f"{level} t-interval over prompt means); step length eta x {cfg['step_scale']:g} x ||theta0||; "
        f"trees: DDTree, budget {cfg['budget']}; C_p under the target at T = 0 (greedy path depth) and T = 1. "
        f"Directions from one fixed set of {cfg['grad_batches']} training batches of {cfg['batch_size']} "
        f"sequences x {cfg['anchors_per_seq']} anchors: the intervals cover the held-out anchors, not the "
        "choice of those batches. dCE (gradient batches) is the change of CE on those same batches.",
        "",
        "| drafter | eta | theta0 C_p T=0 | theta0 C_p T=1 | theta0 CE (held-out) "
        "| theta0 CE (gradient batches) |",
        "|---|---|---|---|---|---|",
    ]
    for name, r in result["theta0"].items():
        lines.append(
            f"| {name} | 0 | {r['cp_T0']:.3f} | {r['cp_T1']:.3f} | {r['ce']:.3f} "
            f"| {r['ce_batches']:.3f} |"
        )
    lines += [
        "",
        "| drafter | direction | eta | step length | dCE (gradient batches) | dCE (held-out) "
        "| dC_p T=0 | dC_p T=1 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for s in result["steps"]:
        lines.append(
            f"| {s['drafter']} | {s['direction']} | {s['eta']:g} | {s['length']:.4f} "
            f"| {s['ce_batches']:+.4f} | {_ci(s['ce'])} "
            f"| {_ci(s['cp_T0'])} | {_ci(s['cp_T1'])} |"
        )
    lines += [
        "",
        "Exit step against each rival step of the same length (same anchors):",
        "",
        "| drafter | eta | T | C_p(exit) - C_p(rival) | rival |",
        "|---|---|---|---|---|",
    ]
    for c in result["contrasts"]:
        lines.append(
            f"| {c['drafter']} | {c['eta']:g} | {c['temperature']:g} | {_ci(c)} | {c['b']} |"
        )
    cos = result["cosines"]
    lines += [
        "",
        "Cosines between directions: "
        + "; ".join(
            f"{name}: " + ", ".join(f"{k} {v:.3f}" for k, v in c.items()) for name, c in cos.items()
        ),
        "",
        "## What it shows",
        "",
        *[f"* {line}" for line in result["findings"]],
        "",
        f"Cost: {result['cost']['seconds']['total']:.0f} s wall, {result['cost']['cpu_seconds']:.0f} s CPU, "
        f"{result['cost']['torch_threads']} torch thread(s).",
        "",
    ]
    return "\n".join(lines)


def write_report(out) -> dict:
    """Recompute the findings and ``mechanism.md`` of the ``mechanism.json`` in ``out`` (both are functions
    of its numbers alone); returns the result."""
    out = Path(out)
    result = json.loads((out / JSON_NAME).read_text(encoding="utf-8"))
    result["findings"] = findings(result)
    atomic_write_json(out / JSON_NAME, result, indent=1)
    atomic_write_text(out / MD_NAME, render_markdown(result))
    return result


__all__ = ["findings", "render_markdown", "write_report"]
