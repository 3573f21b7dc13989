"""What each figure is given when it draws from a run: the only place that knows a mini run's layout.

``figure_inputs(name, mini_dir=, latency_json=)`` returns the keyword inputs of
``exitlaw.figures.<name>.compute``: the mini run's target and base drafter for
``tree_exit``, its ``results.json`` for ``exittrain_ablation``, a latency JSON
(``exitlaw bench verifiers --json`` or ``--out DIR``/results.json) for
``verifier_latency``. Figures themselves never import ``paper_repro``.
"""

from __future__ import annotations

from pathlib import Path

from exitlaw.figures.registry import make


def mini_models(mini_dir: str | Path) -> tuple[str, str, str]:
    """``(target_dir, base_drafter_dir, label)`` of an ``exitlaw repro mini`` run."""
    mini = Path(mini_dir)
    target, draft = mini / "target", mini / "drafter_base" / "final"
    for p in (target, draft):
        if not (p / "config.json").is_file():
            raise FileNotFoundError(
                f"mini run {str(mini)!r} lacks {str(p)!r} (run `exitlaw repro mini --out {mini}`)"
            )
    return str(target), str(draft), "mini-scale target + distilled DFlash drafter (stdlib corpus)"


def mini_results(mini_dir: str | Path) -> Path:
    res = Path(mini_dir) / "results.json"
    if not res.is_file():
        raise FileNotFoundError(
            f"{res} does not exist: finish `exitlaw repro mini --out {mini_dir}` first"
        )
    return res


def figure_inputs(
    name: str, *, mini_dir: str | Path | None = None, latency_json: str | Path | None = None
) -> dict:
    """Keyword inputs of figure ``name`` (empty: the figure's embedded defaults)."""
    if name == "tree_exit" and mini_dir is not None:
        return {"models": mini_models(mini_dir)}
    if name == "exittrain_ablation" and mini_dir is not None:
        return {"mini_results": mini_results(mini_dir)}
    if name == "verifier_latency" and latency_json is not None:
        return {"source": latency_json}
    return {}


def make_figure(
    name: str,
    out_dir: str | Path,
    *,
    seed: int = 0,
    quick: bool = False,
    overwrite: bool = False,
    mini_dir: str | Path | None = None,
    latency_json: str | Path | None = None,
) -> list[Path]:
    """Draw figure ``name`` from a run's data (or its embedded defaults)."""
    return make(
        name,
        out_dir,
        seed=seed,
        quick=quick,
        overwrite=overwrite,
        inputs=figure_inputs(name, mini_dir=mini_dir, latency_json=latency_json),
    )
