"""Shared plotting helpers: the Agg backend, one palette, and saving PNG + PDF.

Every figure module calls :func:`new_figure` and :func:`save` so all figures
share sizes, fonts and the refusal to overwrite earlier output without a flag.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # headless; set before pyplot is imported anywhere in this package

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from exitlaw.theory import registry  # noqa: E402
from exitlaw.theory.infra.atomic_io import atomic_write_text  # noqa: E402
from exitlaw.theory.infra.json_read import read_json_file  # noqa: E402

# one colour per concept, used by every figure; a verifier's is its registry fact (COLORS reads it)
OTHER_COLORS = {
    "exact": "#000000",
    "ddtree": "#1f77b4",
    "chain": "#ff7f0e",
    "oracle": "#2ca02c",
    "pretrained": "#7f7f7f",
    "token-only": "#1f77b4",
    "prefix-weighted": "#ff7f0e",
    "exit-guided": "#d62728",
}


class _Colors(Mapping[str, str]):
    """Every registered verifier's colour (read from the registry when asked, so a verifier added
    there has one without an entry here) and :data:`OTHER_COLORS`."""

    def __getitem__(self, name: str) -> str:
        for v in registry.VERIFIERS:
            if v.name == name:
                return v.color
        return OTHER_COLORS[name]

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys([*(v.name for v in registry.VERIFIERS), *OTHER_COLORS]))

    def __len__(self) -> int:
        return len(dict.fromkeys([*(v.name for v in registry.VERIFIERS), *OTHER_COLORS]))


COLORS: Mapping[str, str] = _Colors()

RC = {
    "font.size": 9,
    "axes.titlesize": 9.5,
    "axes.labelsize": 9,
    "legend.fontsize": 8,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "figure.dpi": 100,
    "savefig.dpi": 150,
    "pdf.fonttype": 42,
    "svg.hashsalt": "exitlaw",
}


def new_figure(ncols: int = 1, nrows: int = 1, *, width: float = 4.2, height: float = 3.4, **kw):
    """``(fig, axes)`` with the house style; ``axes`` is always a flat array."""
    plt.rcParams.update(RC)
    fig, axes = plt.subplots(
        nrows,
        ncols,
        figsize=(width * ncols, height * nrows),
        squeeze=False,
        constrained_layout=True,
        **kw,
    )
    return fig, axes.ravel()


# the words that say a figure's scale and setting (docs/design.md §1.11: a result says its scale)
SCALE_WORDS = ("simulation", "CPU", "mini-scale", "synthetic tree", "exact enumeration")


def scale_words(text: str) -> list[str]:
    """The scale words :data:`SCALE_WORDS` that ``text`` contains (case-insensitive)."""
    low = str(text).lower()
    return [w for w in SCALE_WORDS if w.lower() in low]


def headline(fig, data: dict, *, fontsize: float = 8.5) -> None:
    """The figure's title (``data["title"]``, which must name its scale) and, below the axes, the
    definitions of its symbols (``data["symbols"]``) and its notes (``data["notes"]``)."""
    title = str(data.get("title", ""))
    if not scale_words(title):
        raise ValueError(
            f"figure {data.get('figure')!r}: its title {title!r} names no scale "
            f"({', '.join(SCALE_WORDS)})"
        )
    fig.suptitle(title, fontsize=fontsize)
    lines = [f"{k}: {v}" for k, v in (data.get("symbols") or {}).items()]
    lines += list(data.get("notes") or ())
    if lines:
        fig.text(0.01, 0.0, "\n".join(lines), fontsize=6.5, va="top", ha="left", wrap=True)


def figure_paths(out_dir: str | Path, name: str) -> tuple[Path, Path, Path]:
    """``NAME.png``, ``NAME.pdf`` and ``NAME.json`` (the data, written last: it marks a complete figure)."""
    out = Path(out_dir)
    return out / f"{name}.png", out / f"{name}.pdf", out / f"{name}.json"


def check_out(out_dir: str | Path, name: str, overwrite: bool) -> tuple[Path, Path]:
    """Paths of ``name.png`` / ``name.pdf`` in ``out_dir``; refuse to replace a complete figure unless ``overwrite``.

    A figure is complete when its data ``name.json`` is there (:func:`commit_figure` moves it in last);
    images without it are what an interrupted write left, and are replaced.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    png, pdf, data = figure_paths(out, name)
    if not overwrite and data.exists():
        existing = [str(p) for p in (png, pdf, data) if p.exists()]
        raise FileExistsError(
            f"{', '.join(existing)} already exist(s); pass overwrite=True (--overwrite) to replace"
        )
    return png, pdf


def commit_figure(stage: str | Path, out_dir: str | Path, name: str) -> list[Path]:
    """Move a figure drawn into ``stage`` (PNG, PDF, JSON) into ``out_dir``: an old ``name.json`` out first,
    then the images, the new ``name.json`` last, so ``out_dir`` never shows new data beside old images."""
    staged, final = figure_paths(stage, name), figure_paths(out_dir, name)
    missing = [str(p) for p in staged if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"figure {name!r} was not fully drawn: {missing} missing")
    final[2].unlink(missing_ok=True)
    for src, dst in zip(staged, final):
        os.replace(src, dst)
    return list(final)


def save(fig, out_dir: str | Path, name: str, *, overwrite: bool = False) -> list[Path]:
    """Write ``fig`` as PNG and PDF (deterministic metadata) and close it."""
    png, pdf = check_out(out_dir, name, overwrite)
    fig.savefig(png, metadata={"Software": None}, bbox_inches="tight")
    fig.savefig(
        pdf, metadata={"Creator": None, "Producer": None, "CreationDate": None}, bbox_inches="tight"
    )
    plt.close(fig)
    return [png, pdf]


def _jsonable(x: Any) -> Any:
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return _jsonable(x.tolist())
    if isinstance(x, (np.floating,)):
        return float(x)
    if isinstance(x, (np.integer,)):
        return int(x)
    return x


def write_data(data: dict, out_dir: str | Path, name: str, *, overwrite: bool = False) -> Path:
    """The data behind figure ``name`` as ``name.json`` (read back by the claims ledger)."""
    path = Path(out_dir) / f"{name}.json"
    if path.exists() and not overwrite:
        raise FileExistsError(
            f"{path} already exists; pass overwrite=True (--overwrite) to replace"
        )
    atomic_write_text(path, json.dumps(_jsonable(data), indent=1) + "\n")
    return path


def read_data(path: str | Path) -> dict:
    return read_json_file(path, "figure data")


def require(data: dict, keys, figure: str) -> None:
    """Clear error when a data dict lacks fields a figure needs."""
    missing = [k for k in keys if k not in data]
    if missing:
        raise ValueError(f"figure {figure!r}: data lacks field(s) {missing}")
