"""Decoding: device trees, sampling settings, verifiers and their one dispatch table, the generate loop, their batched twins, stage timing and bounds on work."""

from . import batch_draft, batch_generate, batch_tree, timing, verifiers, work_bounds
from .batch_draft import *
from .batch_generate import *
from .batch_tree import *
from .device_tree import DeviceTree, to_device_tree
from .dispatch import DISPATCH, EngineVerifier, verify, verify_batch
from .loop import (
    METHODS,
    DecodeConfig,
    DecodeState,
    GenerationResult,
    Generators,
    RoundRecord,
    build_stage,
    commit_stage,
    decide_stage,
    draft_stage,
    generate,
    generate_ar,
    prefill_stage,
    sample_token,
    speculative_round,
    trace_round,
    verify_forward_stage,
)
from .sampling_settings import (
    filter_logits,
    processed_draft_logprobs,
    processed_probs,
    rows_processor,
)
from .timing import *
from .verifiers import *
from .work_bounds import *

__all__ = [
    *batch_draft.__all__,
    *batch_generate.__all__,
    *batch_tree.__all__,
    *timing.__all__,
    *verifiers.__all__,
    *work_bounds.__all__,
    "DISPATCH",
    "DecodeConfig",
    "DecodeState",
    "DeviceTree",
    "EngineVerifier",
    "GenerationResult",
    "Generators",
    "METHODS",
    "RoundRecord",
    "build_stage",
    "commit_stage",
    "decide_stage",
    "draft_stage",
    "filter_logits",
    "generate",
    "generate_ar",
    "prefill_stage",
    "processed_draft_logprobs",
    "processed_probs",
    "rows_processor",
    "sample_token",
    "speculative_round",
    "to_device_tree",
    "trace_round",
    "verify",
    "verify_batch",
    "verify_forward_stage",
]
