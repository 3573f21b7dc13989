"""Theory's infrastructure, shared by every part: atomic file writes, reading a JSON file, a result's provenance (git commit and CPU) and loading a ``MODULE:CALLABLE`` spec (standard library and numpy only, no JAX)."""

from . import atomic_io, callable_spec, json_read
from .atomic_io import *
from .callable_spec import *
from .json_read import *
from .provenance import cpu_fields, cpu_info, git_commit

__all__ = [
    *atomic_io.__all__,
    *callable_spec.__all__,
    *json_read.__all__,
    "cpu_fields",
    "cpu_info",
    "git_commit",
]
