"""exitlaw.simulate: samplers for every verifier, builders, synthetic models,
calibrated statistics, Hypothesis strategies (``exitlaw.simulate.strategies``)
and the conformance kit. Submodules are imported explicitly by their users.
"""

# Synthetic models, builders, simulated decoding (numpy; JAX loads on first law evaluation).
from .builders import Built, chain, ddtree, ddtree_order, eagle_dynamic, oracle, static_tree, tsubame
from .caddtree import LatencyModel, caddtree, first_decrease, throughput_curve
from .decoding import RoundRecord, SimulationResult, simulate_decoding
from .models import AutoregressiveDrafter, NGramTarget, PositionWiseDrafter, exponent_for_entropy, zipf_entropy
from .presets import PRESETS, SimConfig, get_preset, verifier_fn
