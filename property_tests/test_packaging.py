"""The built wheel ships every sub-package: the editable install CI uses would hide a missing one.

The wheel is built from the repository (``pip wheel --no-deps``), its package folders are compared
with the source tree's, and it is installed into a fresh virtual environment (no editable finder,
no repository on ``sys.path``) where every sub-package and the command line's face are imported.
"""

import os
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PARTS = {
    "theory": "theory",
    "simulate": "simulate",
    "engine": "engine",
    "figures": "figures",
    "paper_repro": "paper_repro",
    "exitlaw": "exitlaw",
}


def _source_packages() -> set[str]:
    out = set()
    for name, folder in PARTS.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder).parts
            out.add(".".join(["exitlaw", *([] if name == "exitlaw" else [name]), *rel]))
    return out


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # a copy of the project, so the build's own folders (build/, *.egg-info) never land in the checkout
    src = tmp_path_factory.mktemp("src") / "exitlaw"
    shutil.copytree(
        ROOT,
        src,
        ignore=shutil.ignore_patterns(
            ".git",
            ".venv",
            "build",
            "dist",
            "runs",
            "*.egg-info",
            "__pycache__",
            ".hypothesis",
            ".pytest_cache",
        ),
    )
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(src)],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    wheels = list(out.glob("exitlaw-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def test_the_wheel_holds_every_sub_package_of_the_source_tree(wheel):
    with zipfile.ZipFile(wheel) as zf:
        shipped = {
            ".".join(Path(n).parent.parts) for n in zf.namelist() if n.endswith("/__init__.py")
        }
    source = _source_packages()
    assert source - shipped == set(), (
        f"sub-packages missing from the wheel: {sorted(source - shipped)}"
    )
    assert len(source) >= 20


def test_every_sub_package_imports_from_the_installed_wheel(wheel, tmp_path):
    env_dir = tmp_path / "fresh"
    venv.create(env_dir, with_pip=True)
    py = env_dir / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    proc = subprocess.run(
        [str(py), "-m", "pip", "install", "--no-deps", "-q", str(wheel)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # dependencies come from this interpreter's site-packages, put on PYTHONPATH (.pth files there, such
    # as the editable finder of the development install, are not processed that way)
    deps = [p for p in sys.path if p.endswith("site-packages")]
    code = (
        "import importlib, sys, exitlaw\n"
        f"assert exitlaw.__file__.startswith({str(env_dir)!r}), exitlaw.__file__\n"
        f"for name in {sorted(_source_packages())!r}:\n"
        "    m = importlib.import_module(name)\n"
        "    assert m.__file__.startswith(" + repr(str(env_dir)) + "), m.__file__\n"
        "import exitlaw.simulate.prove.sampled, exitlaw.engine.decode.verifiers\n"
        "from exitlaw.cli import build_parser; build_parser()\n"
        "print('ok', len(sys.modules))\n"
    )
    proc = subprocess.run(
        [str(py), "-c", code],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(deps)},
    )
    assert proc.returncode == 0 and proc.stdout.startswith("ok"), proc.stdout + proc.stderr
