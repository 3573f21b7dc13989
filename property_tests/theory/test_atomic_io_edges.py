"""Atomic I/O at its edges, both ways (issue 52): a target that is a folder, a writer that writes nothing
or raises (the old file stays, no ``.partial`` left), a bad JSON object (nothing opened), a ``.npy``
name checked, the stale-partial rule on each side (a dead writer's leftover of *this* output removed; its
own, a live one's, another output's, a name that only starts alike, a suffix that is not a process id
left alone; a missing folder is no error), and a folder output (the completion marker last, an existing
folder moved aside and never deleted, an interrupted one left visibly partial)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from exitlaw.theory.infra.atomic_io import (
    COMPLETE,
    atomic_dir,
    atomic_path,
    atomic_save_npy,
    atomic_write_json,
    atomic_write_text,
    is_complete_dir,
    partial_name,
    remove_stale_partials,
)


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _names(folder) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_the_partial_name_is_hidden_beside_the_output_and_names_this_process(tmp_path):
    p = partial_name(tmp_path / "out.json")
    assert p.parent == tmp_path and p.name == f".out.json.partial-{os.getpid()}"


def test_a_new_file_replaces_the_old_one_and_leaves_nothing_else(tmp_path):
    out = tmp_path / "sub" / "r.json"  # a missing folder is made
    atomic_write_text(out, "old\n")
    atomic_write_text(out, "new\n")
    assert out.read_text() == "new\n" and _names(out.parent) == ["r.json"]


def test_a_writer_that_raises_or_writes_nothing_keeps_the_old_file_and_no_partial(tmp_path):
    out = tmp_path / "r.txt"
    out.write_text("old")
    with pytest.raises(RuntimeError, match="boom"):
        with atomic_path(out) as tmp:
            tmp.write_text("half")
            raise RuntimeError("boom")
    assert out.read_text() == "old" and _names(tmp_path) == ["r.txt"]
    with pytest.raises(FileNotFoundError, match="nothing was written"):
        with atomic_path(out):
            pass
    assert out.read_text() == "old" and _names(tmp_path) == ["r.txt"]
    with pytest.raises(KeyboardInterrupt):  # not only Exception: Ctrl-C cleans up too
        with atomic_path(out) as tmp:
            tmp.write_text("half")
            raise KeyboardInterrupt
    assert out.read_text() == "old" and _names(tmp_path) == ["r.txt"]


def test_a_folder_in_the_outputs_place_is_refused_and_kept(tmp_path):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "keep").write_text("k")
    with pytest.raises(IsADirectoryError, match="is a directory"):
        atomic_write_text(tmp_path / "x", "t")
    assert (tmp_path / "x" / "keep").read_text() == "k"


def test_a_bad_json_object_writes_nothing(tmp_path):
    out = tmp_path / "r.json"
    out.write_text('{"old": 1}\n')
    with pytest.raises(TypeError):
        atomic_write_json(out, {"x": object()})
    assert json.loads(out.read_text()) == {"old": 1} and _names(tmp_path) == ["r.json"]
    atomic_write_json(out, {"a": [1, 2]}, indent=None)
    assert out.read_text() == '{"a": [1, 2]}\n'


def test_npy_outputs_must_end_in_npy(tmp_path):
    atomic_save_npy(tmp_path / "a.npy", np.arange(3))
    assert np.load(tmp_path / "a.npy").tolist() == [0, 1, 2]
    for bad in ("a", "a.npz", "a.npy.bak"):
        with pytest.raises(ValueError, match=r"must end in \.npy"):
            atomic_save_npy(tmp_path / bad, np.arange(3))
    assert _names(tmp_path) == ["a.npy"]


def test_stale_partials_are_removed_only_for_this_output_and_dead_writers(tmp_path):
    dead = _dead_pid()
    gone = tmp_path / f".out.json.partial-{dead}"  # this output, writer dead: removed
    gone.write_text("half")
    gone_dir = tmp_path / f".out.json.partial-{_dead_pid()}"  # a folder too
    gone_dir.mkdir()
    (gone_dir / "f").write_text("x")
    mine = tmp_path / f".out.json.partial-{os.getpid()}"  # this process: kept
    mine.write_text("mine")
    live = tmp_path / f".out.json.partial-{os.getppid()}"  # a live writer: kept
    live.write_text("live")
    alike = tmp_path / f".out.json2.partial-{dead}"  # a name that starts alike: another output
    alike.write_text("x")
    other = tmp_path / f".other.partial-{dead}"
    other.write_text("x")
    odd = tmp_path / ".out.json.partial-12a"  # not a process id
    odd.write_text("x")
    removed = remove_stale_partials(tmp_path / "out.json")
    assert sorted(p.name for p in removed) == sorted([gone.name, gone_dir.name])
    assert not gone.exists() and not gone_dir.exists()
    assert all(p.exists() for p in (mine, live, alike, other, odd))
    assert remove_stale_partials(tmp_path / "out.json") == []  # nothing left to remove
    assert remove_stale_partials(tmp_path / "no" / "such" / "out.json") == []


def test_a_folder_output_gets_its_marker_last_and_an_old_folder_is_moved_aside(tmp_path):
    out = tmp_path / "ckpt"
    with atomic_dir(out) as tmp:
        assert tmp == partial_name(out) and not out.exists()
        (tmp / "w.bin").write_bytes(b"1")
        assert not is_complete_dir(tmp)
    assert is_complete_dir(out) and _names(out) == [COMPLETE, "w.bin"]
    assert json.loads((out / COMPLETE).read_text())["complete"] is True
    with atomic_dir(out) as tmp:
        (tmp / "w.bin").write_bytes(b"2")
    assert (out / "w.bin").read_bytes() == b"2"
    aside = [p for p in tmp_path.iterdir() if p.name.startswith("ckpt.replaced-")]
    assert len(aside) == 1 and (aside[0] / "w.bin").read_bytes() == b"1"  # never deleted


def test_an_interrupted_folder_output_stays_partial_and_the_old_one_is_untouched(tmp_path):
    out = tmp_path / "ckpt"
    with atomic_dir(out) as tmp:
        (tmp / "w.bin").write_bytes(b"1")
    with pytest.raises(RuntimeError):
        with atomic_dir(out) as tmp:
            (tmp / "w.bin").write_bytes(b"half")
            raise RuntimeError("killed")
    assert (out / "w.bin").read_bytes() == b"1" and is_complete_dir(out)
    left = partial_name(out)
    assert left.is_dir() and not is_complete_dir(left)  # visibly incomplete
    assert not is_complete_dir(tmp_path / "nowhere")


def test_outputs_in_folders_that_do_not_exist_yet_are_made_at_any_depth(tmp_path):
    atomic_write_text(tmp_path / "a" / "b" / "c.txt", "t")
    atomic_save_npy(tmp_path / "d" / "e" / "f.npy", np.zeros(2))
    with atomic_dir(tmp_path / "g" / "h" / "ckpt") as tmp:
        (tmp / "w").write_text("w")
    assert (tmp_path / "a" / "b" / "c.txt").read_text() == "t"
    assert np.load(tmp_path / "d" / "e" / "f.npy").tolist() == [0.0, 0.0]
    assert is_complete_dir(tmp_path / "g" / "h" / "ckpt")


def test_json_is_written_with_an_indent_of_one_by_default(tmp_path):
    atomic_write_json(tmp_path / "r.json", {"a": [1]})
    assert (tmp_path / "r.json").read_text() == '{\n "a": [\n  1\n ]\n}\n'
