"""Theory's infrastructure, shared by every part: atomic file writes, a result's provenance (git commit and CPU) and loading a ``MODULE:CALLABLE`` spec (standard library and numpy only, no JAX)."""

from .atomic_io import (
    COMPLETE,
    atomic_dir,
    atomic_path,
    atomic_save_npy,
    atomic_write_bytes,
    atomic_write_json,
    atomic_write_text,
    is_complete_dir,
    partial_name,
    remove_stale_partials,
)
from .callable_spec import CallableSpecError, load_callable
from .provenance import cpu_fields, cpu_info, git_commit

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
    "CallableSpecError",
    "load_callable",
    "cpu_fields",
    "cpu_info",
    "git_commit",
]
