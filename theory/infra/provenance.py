"""Provenance of a result: the git commit it was made from and the CPU it ran on (standard library only).

Results are bit-for-bit reproducible only on one kind of machine and one commit,
so every shipped result records both.
"""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path


def git_commit(root: str | Path) -> str:
    """HEAD of the checkout containing ``root`` (``-dirty`` with uncommitted tracked changes), or ``"unknown"``."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10
        )
        if head.returncode != 0:
            return "unknown"
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=10,
        )
        return head.stdout.strip() + (
            "-dirty" if dirty.returncode == 0 and dirty.stdout.strip() else ""
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def cpu_fields() -> dict[str, str]:
    """``{"model name", "flags"}`` as ``/proc/cpuinfo`` states them for the first CPU (empty where unreadable)."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return {}
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, val = line.partition(":")
        key = key.strip()
        if sep and key in ("model name", "flags") and key not in out:
            out[key] = val.strip()
    return out


def cpu_info() -> dict[str, str]:
    """``{"cpu_model", "cpu_flags_sha256"}`` from ``/proc/cpuinfo`` (empty where it cannot be read)."""
    fields = cpu_fields()
    if not fields:
        return {}
    return {
        "cpu_model": fields.get("model name", "unknown"),
        "cpu_flags_sha256": hashlib.sha256(fields.get("flags", "").encode()).hexdigest()[:16],
    }
