"""Theory's infrastructure, shared by every part: atomic file writes, reading a JSON file, a result's provenance (git commit and CPU), one registration slot per name and loading a ``MODULE:CALLABLE`` spec (standard library and numpy only, no JAX)."""

from . import atomic_io, callable_spec, json_read, registration
from .atomic_io import *
from .callable_spec import *
from .json_read import *
from .provenance import cpu_fields, cpu_info, git_commit
from .registration import *

__all__ = [
    *atomic_io.__all__,
    *callable_spec.__all__,
    *json_read.__all__,
    *registration.__all__,
    "cpu_fields",
    "cpu_info",
    "git_commit",
]
