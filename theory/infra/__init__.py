"""Theory's infrastructure, shared by every part: atomic file writes, a result's provenance (git commit and CPU) and loading a ``MODULE:CALLABLE`` spec (standard library and numpy only, no JAX)."""

from .atomic_io import *
from .callable_spec import *
from .provenance import cpu_fields, cpu_info, git_commit
from . import atomic_io, callable_spec

__all__ = [*atomic_io.__all__, *callable_spec.__all__, "cpu_fields", "cpu_info", "git_commit"]
