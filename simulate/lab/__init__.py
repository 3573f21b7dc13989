"""The lab: synthetic targets and drafters, multi-round simulated decoding with the builders of :mod:`exitlaw.simulate.builders`, presets and runs, the field lab and sharded Monte Carlo (the fast samplers live beside their verifiers, in :mod:`exitlaw.simulate.verifiers.fast`).

The JAX-backed sharded sampler loads on first access.
"""

from typing import TYPE_CHECKING

from exitlaw.theory.infra.lazy import lazy_attributes

from . import field_lab, toy_target
from .decoding import RoundRecord, SimulationResult, aggregate, simulate_decoding, tree_coverage
from .field_lab import *
from .models import (
    AutoregressiveDrafter,
    NGramTarget,
    PositionWiseDrafter,
    exponent_for_entropy,
    kl_divergence,
    mean_depth1_kl,
    zipf_entropy,
)
from .presets import (
    SimConfig,
    WorkBoundError,
    check_work_bounds,
    estimated_work,
    get_preset,
    row_label,
    sampled_verifier_fn,
    verifier_fn,
    with_overrides,
)
from .run import commit_outputs, output_paths, row_names, run_simulation, table_header, table_row
from .toy_target import *

if TYPE_CHECKING:
    from .sharded import tev_samples


# PEP 562: names whose module imports JAX load on first access (static tools read the block above)
__getattr__, __dir__ = lazy_attributes(__name__, {"sharded": "tev_samples"})


__all__ = [
    *field_lab.__all__,
    *toy_target.__all__,
    "AutoregressiveDrafter",
    "NGramTarget",
    "PositionWiseDrafter",
    "RoundRecord",
    "SimConfig",
    "SimulationResult",
    "WorkBoundError",
    "aggregate",
    "check_work_bounds",
    "commit_outputs",
    "estimated_work",
    "exponent_for_entropy",
    "get_preset",
    "kl_divergence",
    "mean_depth1_kl",
    "output_paths",
    "row_label",
    "row_names",
    "run_simulation",
    "sampled_verifier_fn",
    "simulate_decoding",
    "table_header",
    "table_row",
    "tev_samples",
    "tree_coverage",
    "verifier_fn",
    "with_overrides",
    "zipf_entropy",
]
