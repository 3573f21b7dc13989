"""The lab: synthetic targets and drafters, multi-round simulated decoding with the builders of :mod:`exitlaw.simulate.builders`, presets and runs, the field lab and sharded Monte Carlo (the fast samplers live beside their verifiers, in :mod:`exitlaw.simulate.verifiers.fast`).

The JAX-backed sharded sampler loads on first access.
"""

from typing import TYPE_CHECKING

from exitlaw.theory.infra.lazy import lazy_attributes

from .decoding import aggregate, RoundRecord, simulate_decoding, SimulationResult, tree_coverage
from .field_lab import (
    FieldLabConfig,
    PAIRS,
    render_markdown,
    RULES,
    run_field_lab,
    run_seed,
    summarise,
)
from .models import (
    AutoregressiveDrafter,
    exponent_for_entropy,
    kl_divergence,
    mean_depth1_kl,
    NGramTarget,
    PositionWiseDrafter,
    zipf_entropy,
)
from .presets import (
    check_work_bounds,
    estimated_work,
    get_preset,
    row_label,
    sampled_verifier_fn,
    SimConfig,
    verifier_fn,
    with_overrides,
    WorkBoundError,
)
from .run import commit_outputs, output_paths, row_names, run_simulation, table_header, table_row
from .toy_target import block_tokens, complete_block, decode_rounds, ToyModel

if TYPE_CHECKING:
    from .sharded import tev_samples


# PEP 562: names whose module imports JAX load on first access (static tools read the block above)
_LAZY = {"tev_samples": ("sharded", "tev_samples")}


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY)


__all__ = [
    "tree_coverage",
    "RoundRecord",
    "SimulationResult",
    "aggregate",
    "simulate_decoding",
    "FieldLabConfig",
    "run_field_lab",
    "run_seed",
    "summarise",
    "render_markdown",
    "RULES",
    "PAIRS",
    "zipf_entropy",
    "exponent_for_entropy",
    "NGramTarget",
    "PositionWiseDrafter",
    "AutoregressiveDrafter",
    "kl_divergence",
    "mean_depth1_kl",
    "SimConfig",
    "WorkBoundError",
    "estimated_work",
    "check_work_bounds",
    "row_label",
    "verifier_fn",
    "sampled_verifier_fn",
    "get_preset",
    "with_overrides",
    "commit_outputs",
    "row_names",
    "output_paths",
    "table_header",
    "table_row",
    "run_simulation",
    "tev_samples",
    "ToyModel",
    "block_tokens",
    "complete_block",
    "decode_rounds",
]
