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
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10)
        if head.returncode != 0:
            return "unknown"
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=10)
        return head.stdout.strip() + ("-dirty" if dirty.returncode == 0 and dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def cpu_info() -> dict[str, str]:
    """``{"cpu_model", "cpu_flags_sha256"}`` from ``/proc/cpuinfo`` (empty where it cannot be read)."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8")
    except OSError:
        return {}
    info = {k.strip(): v.strip() for k, v in (line.split(":", 1) for line in text.splitlines() if ":" in line)}
    flags = info.get("flags", "")
    return {"cpu_model": info.get("model name", "unknown"),
            "cpu_flags_sha256": hashlib.sha256(flags.encode()).hexdigest()[:16]}
