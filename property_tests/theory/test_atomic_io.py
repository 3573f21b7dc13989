"""Atomic outputs: a killed writer's leftovers are removed by the next writer of the same output, a live
writer's are not, and the output itself is only ever the old or the complete new one."""

import os
import subprocess
import sys

from exitlaw.theory.infra.atomic_io import (
    atomic_dir,
    atomic_write_text,
    is_complete_dir,
    remove_stale_partials,
)


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid  # reaped: no process has this id (until the kernel reuses it)


def test_next_writer_removes_a_killed_writers_leftovers(tmp_path):
    dead = _dead_pid()
    stale_dir = tmp_path / f".target.partial-{dead}"
    stale_dir.mkdir()
    (stale_dir / "model.safetensors").write_bytes(b"half")
    stale_file = tmp_path / f".results.json.partial-{dead}"
    stale_file.write_text('{"cut', encoding="utf-8")
    with atomic_dir(tmp_path / "target") as tmp:
        (tmp / "config.json").write_text("{}", encoding="utf-8")
    atomic_write_text(tmp_path / "results.json", "{}\n")
    assert not stale_dir.exists() and not stale_file.exists()
    assert (
        is_complete_dir(tmp_path / "target") and (tmp_path / "results.json").read_text() == "{}\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.json", "target"]


def test_a_live_writers_partial_and_other_outputs_are_left_alone(tmp_path):
    live = tmp_path / f".target.partial-{os.getppid()}"  # the parent process is alive
    live.mkdir()
    other = tmp_path / f".other.partial-{_dead_pid()}"  # another output's leftover
    other.mkdir()
    odd = tmp_path / ".target.partial-notapid"
    odd.mkdir()
    assert remove_stale_partials(tmp_path / "target") == []
    assert live.exists() and other.exists() and odd.exists()
