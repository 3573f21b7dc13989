"""Writing files so that nothing is ever half-written (numpy only; every part may import it).

A file is written under a temporary name in its own folder (``.NAME.partial-PID``),
flushed to disk, and renamed over ``NAME`` (``os.replace``: atomic on POSIX). A
reader therefore sees the old file or the complete new one, never a truncated one,
and a killed writer leaves only a ``.partial`` file beside it. A folder (a
checkpoint) is built as ``.NAME.partial-PID/``, gets a completion marker file
(:data:`COMPLETE`) as its last entry, and is renamed into place; an existing folder
of that name is moved aside (``NAME.replaced-TIME``), never deleted. Before writing
``NAME``, leftovers of earlier writers of ``NAME`` that were killed (a ``.partial``
whose process no longer exists) are removed; a live writer's are left alone.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import numpy as np

COMPLETE = ".complete"


def partial_name(path: Path) -> Path:
    """The temporary name used while ``path`` is written."""
    return path.with_name(f".{path.name}.partial-{os.getpid()}")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def remove_stale_partials(path: str | Path) -> list[Path]:
    """Remove ``.NAME.partial-PID`` leftovers of ``path`` whose writer process is gone; return them."""
    path = Path(path)
    removed = []
    if not path.parent.is_dir():
        return removed
    for leftover in path.parent.glob(f".{path.name}.partial-*"):
        pid = leftover.name.rsplit("-", 1)[-1]
        if not pid.isdigit() or int(pid) == os.getpid() or _pid_alive(int(pid)):
            continue
        if leftover.is_dir() and not leftover.is_symlink():
            shutil.rmtree(leftover, ignore_errors=True)
        else:
            leftover.unlink(missing_ok=True)
        removed.append(leftover)
    return removed


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path to write (by any library: ``np.save``, ``torch.save``, ``save_file``);
    on success it is flushed and renamed to ``path``, on an exception removed."""
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a directory; cannot write a file there")
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_partials(path)
    tmp = partial_name(path)
    try:
        yield tmp
        if not tmp.exists():
            raise FileNotFoundError(f"nothing was written to {tmp} (for {path})")
        _fsync_file(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)
    return Path(path)


def atomic_write_text(path: str | Path, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | Path, obj: Any, *, indent: int | None = 1) -> Path:
    """JSON of ``obj`` (serialised before anything is opened: a bad object writes nothing)."""
    return atomic_write_text(path, json.dumps(obj, indent=indent) + "\n")


def atomic_save_npy(path: str | Path, array) -> Path:
    """``np.save`` through a temporary name (``path`` must end in ``.npy``, as np.save would add it)."""
    path = Path(path)
    if path.suffix != ".npy":
        raise ValueError(f"{path}: a .npy output must end in .npy")
    with atomic_path(path) as tmp:
        with tmp.open("wb") as fh:
            np.save(fh, array)
    return path


@contextmanager
def atomic_dir(path: str | Path) -> Iterator[Path]:
    """Yield a temporary folder to fill; on success it gets the :data:`COMPLETE` marker and is renamed
    to ``path`` (an existing ``path`` is moved aside first, never deleted); on an exception it is left
    as ``.NAME.partial-PID`` (visibly incomplete) and the exception propagates."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_partials(path)
    tmp = partial_name(path)
    tmp.mkdir()
    yield tmp
    (tmp / COMPLETE).write_text(
        json.dumps({"complete": True, "time": time.time()}) + "\n", encoding="utf-8"
    )
    for f in tmp.iterdir():
        if f.is_file():
            _fsync_file(f)
    if path.exists():
        os.replace(
            path,
            path.with_name(f"{path.name}.replaced-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"),
        )
    os.replace(tmp, path)


def is_complete_dir(path: str | Path) -> bool:
    """Whether ``path`` is a folder written by :func:`atomic_dir` to the end."""
    return (Path(path) / COMPLETE).is_file()


__all__ = [
    "COMPLETE",
    "atomic_dir",
    "atomic_path",
    "atomic_save_npy",
    "atomic_write_bytes",
    "atomic_write_json",
    "atomic_write_text",
    "is_complete_dir",
    "partial_name",
    "remove_stale_partials",
]
