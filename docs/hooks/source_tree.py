"""MkDocs hook: lay the distribution out as ``exitlaw/<part>`` for the API reference.

The parts live in top-level folders (``theory/``, ``simulate/``, ...) that ``pyproject.toml``
maps to ``exitlaw.<part>`` with ``package-dir``. mkdocstrings' Python handler reads the
source statically and follows folders, not that mapping, so before the build this hook
links the folders into a temporary ``exitlaw/`` tree and points the handler's ``paths``
at it. Nothing is imported and nothing in the repository is written.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path

from mkdocs.plugins import event_priority

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: read the one table this hook needs by hand
    tomllib = None

_TREES: list[Path] = []


def package_layout(root: Path) -> dict[str, Path]:
    """``{dotted package: folder}`` from ``[tool.setuptools] package-dir`` in ``pyproject.toml``."""
    if tomllib is not None:
        with open(root / "pyproject.toml", "rb") as f:
            mapping = tomllib.load(f)["tool"]["setuptools"]["package-dir"]
    else:
        text = (root / "pyproject.toml").read_text(encoding="utf-8")
        line = re.search(r"^package-dir\s*=\s*\{(.*)\}\s*$", text, re.M).group(1)
        mapping = dict(re.findall(r'"([\w.]+)"\s*=\s*"([\w./-]+)"', line))
    return {name: (root / folder).resolve() for name, folder in mapping.items()}


def link_tree(root: Path, dest: Path) -> Path:
    """Link every mapped folder of ``root`` under ``dest`` at its dotted place; return ``dest``."""
    layout = package_layout(root)
    for name in sorted(layout, key=lambda n: n.count(".")):
        target = dest.joinpath(*name.split("."))
        if "." not in name:  # the root package: a real folder, so its parts can be linked inside
            target.mkdir(parents=True)
            for entry in layout[name].iterdir():
                if entry.name != "__pycache__" and not (target / entry.name).exists():
                    (target / entry.name).symlink_to(entry)
        else:
            if target.is_symlink() or target.exists():
                raise ValueError(f"{name} would shadow a module already in {target.parent}")
            target.symlink_to(layout[name], target_is_directory=True)
    return dest


@event_priority(100)  # before mkdocstrings reads its handler options
def on_config(config, **kwargs):
    root = Path(config["config_file_path"]).resolve().parent
    dest = link_tree(root, Path(tempfile.mkdtemp(prefix="exitlaw-api-")))
    _TREES.append(dest)
    python = config["plugins"]["mkdocstrings"].config["handlers"].setdefault("python", {})
    python["paths"] = [str(dest)]
    return config


def on_shutdown(**kwargs):
    while _TREES:
        shutil.rmtree(_TREES.pop(), ignore_errors=True)
