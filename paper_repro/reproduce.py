"""``exitlaw repro all``: checks, the mini-scale run, every figure and the claims ledger.

Stages, each cached under ``OUT`` (a rerun skips what is finished; nothing is
overwritten without ``overwrite=True``):

1. ``checks/``: the conformance kit on exitlaw's own predraw, residual and TEV
   (``exitlaw check``; 1e-6 false-failure rate per verifier);
2. ``mini/``: ``exitlaw repro mini --preset smoke`` (from the shipped base pair: three training
   objectives, tau and CPU speedup at B = 32/64/128, T = 0/1; ``--from-scratch`` trains the target
   and drafter too, preset ``full``);
3. ``figures/``: every figure of :mod:`exitlaw.figures`, drawing from ``mini/``;
4. ``ledger.md`` / ``ledger.json``: one row per claim of the paper (the kit's reports are one claim's input).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Callable

from exitlaw.figures.registry import FIGURES
from exitlaw.paper_repro.figure_inputs import make_figure
from exitlaw.paper_repro.ledger_inputs import make_ledger
from exitlaw.paper_repro.mini.pipeline import config_for, run_mini
from exitlaw.simulate.kit.conformance import load_verifier, run_kit
from exitlaw.simulate.verifiers.table import implemented
from exitlaw.theory.infra.atomic_io import atomic_write_text
from exitlaw.theory.registry import FIXED_TREE, PROCEDURE

# the saturating verifiers that sample at T > 0 (predraw, residual, tev): the kit checks each
VERIFIERS = implemented(PROCEDURE, kind=FIXED_TREE, sampling=True)


def run_checks(out_dir: Path, *, seed: int, log: Callable[[str], None]) -> dict[str, Any]:
    """The conformance kit on the three saturating verifiers; one JSON report each."""
    out_dir.mkdir(parents=True, exist_ok=True)
    verdicts = {}
    for name in VERIFIERS:
        path = out_dir / f"{name}.json"
        if not path.is_file():
            spec = f"exitlaw.simulate.verifiers:{name}"
            report = run_kit(load_verifier(spec), name=spec, seed=seed).to_json()
            atomic_write_text(path, json.dumps(report, indent=1) + "\n")
        report = json.loads(path.read_text(encoding="utf-8"))
        verdicts[name] = {
            "verdict": report["verdict"],
            "exit_code": report["exit_code"],
            "samples": report["total_samples"],
            "min_power": report["min_power"],
            "family_alpha": report["family_alpha"],
            "report": str(path),
        }
        log(
            f"check {name:<9} {report['verdict']} (alpha {report['family_alpha']:g}, "
            f"min power {'none' if report['min_power'] is None else format(report['min_power'], '.4f')}, "
            f"{report['total_samples']} samples)"
        )
    return verdicts


def run_figures(
    out_dir: Path, mini_dir: Path | None, *, seed: int, quick: bool, log: Callable[[str], None]
) -> list[str]:
    done = []
    for name in FIGURES:
        if (out_dir / f"{name}.json").is_file():
            log(f"figure {name:<22} cached")
        else:
            t0 = time.perf_counter()
            make_figure(name, out_dir, seed=seed, quick=quick, mini_dir=mini_dir)
            log(f"figure {name:<22} {time.perf_counter() - t0:6.1f} s")
        done.append(name)
    return done


# what each stage of ``exitlaw repro all`` shows, printed with its counter
STAGES = {
    "checks": "the conformance kit: are exitlaw's predraw, residual and TEV exact and saturating "
    "(family false-failure rate 1e-6)?",
    "mini": "the mini-scale pipeline on the stdlib: objectives trained, tau and speed-up of predraw "
    "and TEV measured (a pipeline check, not evidence)",
    "figures": "every figure of the paper, from this run and from exact laws and simulation",
    "ledger": "one row per claim of the paper: its source, scale and verdict",
}


def reproduce(
    out: str | Path,
    *,
    quick: bool = False,
    from_scratch: bool = False,
    seed: int = 0,
    overwrite: bool = False,
    progress: bool = True,
    log: Callable[[str], None] = print,
    mini_config=None,
) -> dict[str, Any]:
    """Run every stage into ``out`` and return a summary (also written to ``out/summary.json``).

    The mini stage runs preset ``smoke`` (from the shipped base pair), ``full`` with ``from_scratch``
    (target and drafter trained here) or ``quick``; ``mini_config`` replaces it (tests pass a micro one).
    ``summary["times"]`` keeps each stage's seconds from the run that did its work; a rerun that finds a
    stage finished records it under ``rerun_times`` only.
    """
    if quick and from_scratch:
        raise ValueError("--quick and --from-scratch contradict each other: pick one preset")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    summary_path = out / "summary.json"
    marker = {"quick": quick, "seed": seed, "from_scratch": from_scratch}
    previous = _previous_summary(out, summary_path, marker, overwrite)
    mini_dir, fig_dir = out / "mini", out / "figures"
    finished = _finished_stages(out, mini_dir, fig_dir, overwrite)
    clock = _StageClock(finished, dict(previous.get("times", {})), log)
    stage, took = clock.start, clock.took

    t0 = stage(1, "checks")
    verdicts = run_checks(out / "checks", seed=seed, log=log)
    took("checks", t0)

    t0 = stage(2, "mini")
    preset = "quick" if quick else "full" if from_scratch else "smoke"
    cfg = mini_config if mini_config is not None else config_for(preset, seed=seed)
    run_mini(mini_dir, cfg, overwrite=overwrite, progress=progress, log=log)
    took("mini", t0)
    log(f"mini-scale run: {mini_dir / 'results.md'}")

    t0 = stage(3, "figures")
    run_figures(fig_dir, mini_dir, seed=seed, quick=quick, log=log)
    took("figures", t0)

    # the ledger is derived data: always refreshed
    t0 = stage(4, "ledger")
    _, md, js = make_ledger(
        fig_dir,
        out,
        mini_dir=mini_dir,
        checks_dir=out / "checks",
        quick=quick,
        seed=seed,
        overwrite=True,
    )
    took("ledger", t0)
    summary = {
        "config": marker,
        "mini_preset": cfg.preset,
        "checks": verdicts,
        "times": clock.times,
        "rerun_times": clock.rerun,
        "ledger": [str(md), str(js)],
        "figures": str(fig_dir),
        "mini": str(mini_dir),
    }
    atomic_write_text(summary_path, json.dumps(summary, indent=1) + "\n")
    return summary


class _StageClock:
    """Logs each stage as it starts and records its seconds: under ``times`` from the run that did its
    work, under ``rerun`` when an earlier run had finished it (``finished``) and this one only checked."""

    def __init__(self, finished: dict[str, bool], times: dict[str, float], log):
        self.finished, self.times, self.log = finished, times, log
        self.rerun: dict[str, float] = {}

    def start(self, i: int, name: str) -> float:
        self.log(f"stage {i}/{len(STAGES)} {name}: {STAGES[name]}")
        return time.perf_counter()

    def took(self, name: str, t0: float) -> None:
        s = time.perf_counter() - t0
        if self.finished[name] and f"{name}_s" in self.times:
            self.rerun[f"{name}_s"] = s
            self.log(f"stage {name}: already finished ({s:.0f} s to check)")
        else:
            self.times[f"{name}_s"] = s
            self.log(f"stage {name}: {s:.0f} s")


def _previous_summary(out: Path, summary_path: Path, marker: dict, overwrite: bool) -> dict:
    """The summary of an earlier run into ``out`` with the same config (empty when there is none, or
    with ``overwrite`` when its config differs); a different config without ``overwrite`` is refused."""
    if not summary_path.is_file():
        return {}
    previous = json.loads(summary_path.read_text(encoding="utf-8"))
    old = {"from_scratch": False, **previous.get("config", {})}
    if old == marker:
        return previous
    if not overwrite:
        raise FileExistsError(
            f"{out} holds a run with config {previous.get('config')}, not {marker}; "
            "use another --out or pass --overwrite"
        )
    return {}


def _finished_stages(out: Path, mini_dir: Path, fig_dir: Path, overwrite: bool) -> dict[str, bool]:
    """Which stages an earlier run already finished (their rerun time is recorded apart); the ledger is
    derived data, always refreshed."""
    return {
        "checks": all((out / "checks" / f"{v}.json").is_file() for v in VERIFIERS),
        "mini": (mini_dir / "results.json").is_file() and not overwrite,
        "figures": all((fig_dir / f"{f}.json").is_file() for f in FIGURES),
        "ledger": False,
    }
